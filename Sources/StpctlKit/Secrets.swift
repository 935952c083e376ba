import JSONRPC

/// stpctl's output policy for credentials (design brief §4: client secrets and keys are redacted
/// in stpctl output): members named like one print as `[REDACTED]` unless `--show-secrets`.
/// URLs are left whole, even when Stripe put a client secret in their query: a redirect URL is
/// useless without it, and opening it is the point.
public enum Secrets {
    public static let marker: JSONValue = "[REDACTED]"

    /// `clientSecret`, `client_secret`, `secret`, `authorization`, `password`, any case.
    public static func isSecretName(_ name: String) -> Bool {
        let lower = name.lowercased()
        return lower.contains("secret") || lower.contains("password") || lower == "authorization"
    }

    public static func redacted(_ value: JSONValue) -> JSONValue {
        switch value {
        case .object(let members):
            var out: [String: JSONValue] = [:]
            for (name, member) in members {
                out[name] = isSecretName(name) && member.stringValue != nil ? marker : redacted(member)
            }
            return .object(out)
        case .array(let items):
            return .array(items.map(redacted))
        default:
            return value
        }
    }
}
