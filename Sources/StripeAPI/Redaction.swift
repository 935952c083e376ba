import Foundation
import JSONRPC

/// Masks secrets in text and JSON bound for logs and stpctl output. Keys keep their prefix and last
/// four characters (enough to tell keys apart), client secrets keep the object id, card numbers and
/// CVCs go entirely (only a PAN's last four survive, as on a receipt).
public enum Redaction {
    public static let mask = "[REDACTED]"
    /// Dropped from JSON wherever they appear: card data (`card[number]`, `card[cvc]`).
    public static let removedFields: Set<String> = ["number", "cvc"]
    /// String values masked whole even when they match no pattern.
    public static let secretFields: Set<String> = ["client_secret", "secret", "authorization"]

    public static func redact(_ text: String) -> String {
        guard mayHoldSecret(text) else { return text }
        // Client secrets before keys: `pi_1_secret_x` must keep `pi_1`.
        var out = redactClientSecrets(text)
        out = replace(apiKey, in: out) { StripeKey.redact($0[0]) }
        out = replace(formCardField, in: out) { "\($0[1])=\(mask)" }
        out = replace(jsonCardField, in: out) { "\($0[1]):\"\(mask)\"" }
        out = replace(panLike, in: out) { luhnValid($0[0]) ? "••••" + $0[0].suffix(4) : $0[0] }
        out = replace(urlPassword, in: out) { "\($0[1]):\(mask)@" }
        return out
    }

    /// Only the client secrets (`pi_1_secret_x` keeps `pi_1`), wherever they are: in a redirect
    /// URL's query as anywhere else; and a loopback return's token (`/return/TOKEN` keeps four
    /// characters), the one key to its session.
    public static func redactClientSecrets(_ text: String) -> String {
        guard text.utf8.count >= 8 else { return text }
        let lowered = text.lowercased()
        var out = text
        if lowered.contains("/return/") {
            out = replace(loopbackToken, in: out) { "\($0[1])\(mask)" }
        }
        guard lowered.contains("secret") else { return out }
        out = replace(clientSecret, in: out) { "\($0[1])_secret_\(mask)" }
        return replace(sourceClientSecret, in: out) { _ in "src_client_secret_\(mask)" }
    }

    public static func redact(_ value: JSONValue) -> JSONValue {
        switch value {
        case .string(let s): return .string(redact(s))
        case .array(let a): return .array(a.map(redact))
        case .object(let o):
            var out: [String: JSONValue] = [:]
            for (key, child) in o where !removedFields.contains(key.lowercased()) {
                if secretFields.contains(key.lowercased()), case .string(let s) = child {
                    let masked = redact(s)
                    out[key] = .string(masked == s ? mask : masked)
                } else {
                    out[key] = redact(child)
                }
            }
            return .object(out)
        default: return value
        }
    }

    /// False when no pattern below can match: each needs one of these words, an `@` or a run of
    /// 13 digits. Most texts (every Stripe call's path is logged) skip the seven regexes. One pass
    /// over the bytes: Foundation's `contains` per word cost more than the rest of a log line.
    static func mayHoldSecret(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        var digits = 0
        for (index, byte) in bytes.enumerated() {
            digits = (48...57).contains(byte) ? digits + 1 : 0
            if digits >= 13 || byte == UInt8(ascii: "@") { return true }
            let first = lower(byte)
            let rest = bytes[index...]
            if markers.contains(where: { $0[0] == first && rest.starts(with: $0, by: { lower($0) == $1 }) }) {
                return true
            }
        }
        return false
    }

    private static let markers = ["secret", "number", "cvc", "sk_", "rk_", "pk_", "ek_", "uk_", "/return/"].map {
        Array($0.utf8)
    }

    private static func lower(_ byte: UInt8) -> UInt8 {
        (65...90).contains(byte) ? byte + 32 : byte
    }

    // `(?<![A-Za-z0-9])` rather than `\b`: `_` is a word character, so `\b` would miss `x_sk_live_…`.
    private static let apiKey = regex(#"(?<![A-Za-z0-9])(?:sk|rk|pk|ek|uk)_[A-Za-z0-9_]{4,}"#)
    private static let clientSecret = regex(#"(?<![A-Za-z0-9])((?:pi|seti|src|pm)_[A-Za-z0-9]+)_secret_[A-Za-z0-9]+"#)
    /// The password of a URL's userinfo (`postgresql://user:secret@host`), which a setting may carry by mistake.
    private static let urlPassword = regex(#"(?<=://)([^:/@\s]+):[^@/\s]+@"#)
    private static let sourceClientSecret = regex(#"src_client_secret_[A-Za-z0-9]+"#)
    /// A loopback return URL's token (`LoopbackReturn`): 127.0.0.1, any port, `/return/` and base64url.
    private static let loopbackToken = regex(#"(127\.0\.0\.1:[0-9]+/return/[A-Za-z0-9_-]{4})[A-Za-z0-9_-]{8,}"#)
    /// `card[number]=4242…` in form bodies and queries, brackets literal or %-escaped.
    private static let formCardField = regex(#"((?:\[|%5B)(?:number|cvc)(?:\]|%5D))=[^&\s"]*"#)
    private static let jsonCardField = regex(#"("(?:number|cvc)")\s*:\s*(?:"[^"]*"|\d+)"#)
    private static let panLike = regex(#"(?<![0-9])[0-9]{13,19}(?![0-9])"#)

    private static func regex(_ pattern: String) -> NSRegularExpressionBox {
        NSRegularExpressionBox(try! NSRegularExpression(pattern: pattern, options: [.caseInsensitive]))
    }

    /// Replaces each match with `transform(groups)`, where groups[0] is the whole match.
    private static func replace(
        _ box: NSRegularExpressionBox, in text: String, _ transform: ([String]) -> String
    ) -> String {
        let ns = text as NSString
        var out = ""
        var last = 0
        for match in box.regex.matches(in: text, range: NSRange(location: 0, length: ns.length)) {
            let groups = (0..<match.numberOfRanges).map {
                match.range(at: $0).location == NSNotFound ? "" : ns.substring(with: match.range(at: $0))
            }
            out += ns.substring(with: NSRange(location: last, length: match.range.location - last))
            out += transform(groups)
            last = match.range.location + match.range.length
        }
        return out + ns.substring(from: last)
    }

    /// Card numbers pass the Luhn check; most other long digit runs (ms timestamps, ids) do not.
    static func luhnValid(_ digits: String) -> Bool {
        var sum = 0
        for (i, ch) in digits.reversed().enumerated() {
            guard var d = ch.wholeNumberValue else { return false }
            if i % 2 == 1 {
                d *= 2
                if d > 9 { d -= 9 }
            }
            sum += d
        }
        return sum % 10 == 0
    }
}

/// NSRegularExpression is immutable and documented thread-safe, but not marked Sendable.
private struct NSRegularExpressionBox: @unchecked Sendable {
    let regex: NSRegularExpression
    init(_ regex: NSRegularExpression) { self.regex = regex }
}
