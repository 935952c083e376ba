import Crypto
import Foundation

/// A loopback return (RFC 8252 §7.3, as native OAuth apps do it): a `returnURL` of `"loopback"`
/// asks stpd for `http://127.0.0.1:PORT/return/TOKEN`, which stpd itself serves while the session
/// waits, so an app that cannot register a URL scheme (a kiosk, a CLI, a Flatpak) still gets its
/// customer back. The token is the only key to the session:
/// - 256 random bits from the system's CSPRNG, base64url: no one guesses it;
/// - filed in the store under its SHA-256 (`lookupKey`), never under itself, so the time a lookup
///   takes depends on a hash the asker cannot steer, not on how much of a real token it got right;
/// - compared in constant time once found (`matches`);
/// - kept out of logs (`Redaction` masks it in any loopback return URL).
public struct LoopbackReturn: Codable, Sendable, Hashable {
    public var token: String
    public var port: Int
    /// The stpd that issued it (`STPD_INSTANCE`'s name): the one listening on `port`.
    public var instance: String
    /// The app's name for the return page ("return to APP"), as stpd names the merchant.
    public var appName: String?

    /// What a caller writes as `returnURL` to ask for one.
    public static let request = "loopback"
    static let tokenBytes = 32

    public init(port: Int, instance: String, appName: String?) {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<Self.tokenBytes).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        token = Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        self.port = port
        self.instance = instance
        self.appName = appName
    }

    public var url: String { "http://127.0.0.1:\(port)/return/\(token)" }
    var lookupKey: String { Self.lookupKey(token) }

    /// Constant time in the token's length: a wrong guess takes as long wherever it differs.
    public func matches(_ candidate: String) -> Bool {
        let a = Array(token.utf8)
        let b = Array(candidate.utf8)
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for index in a.indices { difference |= a[index] ^ b[index] }
        return difference == 0
    }

    static func lookupKey(_ token: String) -> String {
        let digest = SHA256.hash(data: Data(token.utf8)).map { String(format: "%02x", $0) }.joined()
        return LookupKey.make("loopback", digest)
    }

    /// The key every session waiting on `instance`'s listener is filed under.
    static func waitingKey(_ instance: String) -> String { LookupKey.make("loopback", "waiting", instance) }

    /// The token of a loopback return URL (`http://127.0.0.1:PORT/return/TOKEN`, any query), or
    /// nil when `url` is not one: what `handle-url` and the listener look up.
    public static func token(in url: String) -> String? {
        guard let components = URLComponents(string: url), components.scheme?.lowercased() == "http",
            components.host == "127.0.0.1", components.port != nil
        else { return nil }
        return token(inPath: components.percentEncodedPath)
    }

    /// The token of a path `/return/TOKEN`, when TOKEN could be one (base64url, 16 to 64 bytes).
    public static func token(inPath path: String) -> String? {
        guard path.hasPrefix("/return/") else { return nil }
        let token = path.dropFirst("/return/".count)
        guard (22...86).contains(token.utf8.count),
            token.utf8.allSatisfy({ isBase64URL($0) })
        else { return nil }
        return String(token)
    }

    private static func isBase64URL(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"):
            true
        default: false
        }
    }
}
