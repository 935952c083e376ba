import Foundation

extension URL {
    /// `text` as a URL the way the SDK's `URL(string:)` read it: nil when it is not a valid URL.
    /// Swift 6's Foundation percent-encodes what it cannot parse (`not a url` becomes
    /// `not%20a%20url`), which would open redirect sessions the SDK never makes.
    public static func strict(_ text: String) -> URL? {
        URL(string: text, encodingInvalidCharacters: false)
    }
}
