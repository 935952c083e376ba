/// A Stripe API key or ephemeral key secret. Its kind comes from the prefix, and it prints redacted
/// (`pk_test_…1234`) through `description`, `debugDescription` and `dump`, so interpolating one into a
/// log line can never leak it. Only `secret` gives the full text, for the Authorization header.
/// Deliberately not Codable: it cannot slip into a JSON result or event by accident.
public struct StripeKey: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    public enum Kind: String, Sendable, CaseIterable {
        case publishable = "pk"
        case secret = "sk"
        case restricted = "rk"
        /// An ephemeral key's `secret` (`ek_…`), used for customer calls in the SDK's client model.
        case ephemeral = "ek"
    }

    public enum Mode: Sendable { case test, live, unknown }

    public let kind: Kind
    public let secret: String

    /// Nil for text that is not a key (wrong prefix or nothing after it).
    public init?(_ text: String) {
        guard text.count > 3, text.allSatisfy({ !$0.isWhitespace }),
            let kind = Kind(rawValue: String(text.prefix(2))), text.dropFirst(2).first == "_"
        else { return nil }
        self.kind = kind
        self.secret = text
    }

    public var mode: Mode {
        if secret.dropFirst(3).hasPrefix("test_") { return .test }
        if secret.dropFirst(3).hasPrefix("live_") { return .live }
        return .unknown
    }

    public var description: String { Self.redact(secret) }
    public var debugDescription: String { "StripeKey(\(Self.redact(secret)))" }
    public var customMirror: Mirror { Mirror(self, children: ["redacted": description]) }

    /// `pk_test_…1234`: the prefix through the mode, and the last four characters only when at least
    /// 12 others stay hidden (short test strings show no tail at all).
    public static func redact(_ key: String) -> String {
        let parts = key.split(separator: "_", maxSplits: 2, omittingEmptySubsequences: false)
        let head: String
        if parts.count == 3, parts[1] == "test" || parts[1] == "live" {
            head = "\(parts[0])_\(parts[1])_"
        } else {
            head = String(key.prefix(3))
        }
        let hidden = key.count - head.count
        return head + "…" + (hidden >= 16 ? String(key.suffix(4)) : "")
    }
}
