import Foundation

extension URL {
    /// `text` as a URL the way `URL(string:)` read it before iOS 17: nil when it is not a valid
    /// URL. A deliberate difference (docs/sdk-differences.md): Foundation since iOS 17 and Swift 6
    /// percent-encodes what it cannot parse (`not a url` becomes `not%20a%20url`), so the SDK on
    /// iOS 17 would open such a page; stpd refuses a page no browser can open.
    public static func strict(_ text: String) -> URL? {
        URL(string: text, encodingInvalidCharacters: false)
    }
}
