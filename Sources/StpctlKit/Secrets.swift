import JSONRPC
import StripeAPI

/// stpctl's output policy for credentials (design brief §4: client secrets and keys are redacted
/// in stpctl output): members named like one print as `[REDACTED]`, and a client secret anywhere
/// else (in a redirect URL's query, where Stripe puts one) keeps only its object id, unless
/// `--show-secrets`. A redirect URL needs its secret to be opened: `--show-secrets` prints it
/// whole, as `stpctl redirect start --url` does (its output is for a browser, not a person).
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
        case .string(let text):
            return .string(Redaction.redactClientSecrets(text))
        default:
            return value
        }
    }

    /// Text for people, with the client secrets in it redacted (`redacted` does it for JSON).
    public static func redacted(text: String) -> String { Redaction.redactClientSecrets(text) }
}
