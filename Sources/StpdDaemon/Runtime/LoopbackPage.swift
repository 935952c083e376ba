import Crypto
import Foundation
import JSONRPC
import NIOHTTP1
import StpdCore
import StripeAPI

/// The page a customer's browser shows at a loopback return: small, self-contained, English,
/// no script, no secret (only the outcome and the app's name, escaped). It says what the app will
/// be told: the follow-up's verdict when it came within the wait, else that the app is still
/// confirming.
struct LoopbackPage: Sendable {
    var status: HTTPResponseStatus
    var title: String
    var message: String

    var html: String {
        """
        <!doctype html>
        <html lang="en"><head><meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>\(Self.escape(title))</title>
        <style>\(Self.style)</style>
        </head><body><main>
        <h1>\(Self.escape(title))</h1>
        <p id="message">\(Self.escape(message))</p>
        </main></body></html>

        """
    }

    static let style =
        "body{font:16px/1.5 system-ui,sans-serif;margin:0;display:flex;min-height:100vh;align-items:center;justify-content:center;background:#f6f7f9;color:#1a1f36}main{max-width:32em;padding:2em;background:#fff;border-radius:8px;box-shadow:0 1px 4px #0002}h1{font-size:1.4em;margin-top:0}"

    /// Nothing may load or run; the one inline style is allowed by its hash.
    static let contentSecurityPolicy: String = {
        let hash = Data(SHA256.hash(data: Data(style.utf8))).base64EncodedString()
        return
            "default-src 'none'; style-src 'sha256-\(hash)'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    }()

    static let notFound = LoopbackPage(status: .notFound, title: "Not found", message: "Not found.")
    static let unavailable = LoopbackPage(
        status: .serviceUnavailable, title: "Please try again",
        message: "Your return could not be recorded just now. Reload this page in a moment.")

    init(status: HTTPResponseStatus, title: String, message: String) {
        self.status = status
        self.title = title
        self.message = message
    }

    init(_ visit: LoopbackVisit) {
        let app = visit.appName.flatMap { $0.isEmpty ? nil : $0 } ?? "the app"
        let close = "you can close this window and return to \(app)."
        guard visit.arrival != .unknown else {
            self.init(
                status: .notFound, title: "Link not recognised",
                message:
                    "This payment return link is not known, or its payment no longer waits for it. Nothing was changed: \(close)"
            )
            return
        }
        let (title, sentence) = Self.verdict(visit, app: app)
        let message =
            visit.arrival == .earlier
            ? "This return link was used before; nothing was changed. \(title): \(sentence ?? close)"
            : "\(title): \(sentence ?? close)"
        self.init(status: .ok, title: title, message: message)
    }

    /// The title and, when it is not the plain "you can close this window", what to say next.
    private static func verdict(_ visit: LoopbackVisit, app: String) -> (String, String?) {
        let close = "you can close this window and return to \(app)."
        let thing = visit.kind == "setupIntent" ? "Payment method" : "Payment"
        if visit.status == .cancelled { return ("\(thing) cancelled", "\(app) cancelled it; \(close)") }
        if let error = visit.completionError {
            return error.isRedirectCancelled
                ? ("\(thing) cancelled", "the page was closed before you came back; \(close)")
                : ("\(thing) not completed", "\(reason(error)) \(close.capitalizedFirst)")
        }
        guard let outcome = visit.outcome else {
            return ("Thank you", "\(app) is still confirming your \(thing.lowercased()); \(close)")
        }
        if let result = outcome.intentResult {
            switch result {
            case .succeeded, .pending: return ("\(thing) authorised", nil)
            case .canceled: return ("\(thing) not completed", "it was not authorised; \(close)")
            case .failed:
                return (
                    "\(thing) failed", "\(outcome.error.map(reason) ?? "it was declined.") \(close.capitalizedFirst)"
                )
            }
        }
        switch outcome.result {
        case "chargeable", "consumed": return ("\(thing) authorised", nil)
        case "failed": return ("\(thing) failed", "your bank did not authorise it. \(close.capitalizedFirst)")
        case "canceled": return ("\(thing) cancelled", close)
        case "pending": return ("\(thing) pending", "\(app) will be told when your bank confirms it; \(close)")
        default:
            return (
                "\(thing) not confirmed",
                "\(outcome.error.map(reason) ?? "its state could not be read.") \(close.capitalizedFirst)"
            )
        }
    }

    /// A failure's message as the app sees it (Stripe's own words for a decline), secrets masked.
    private static func reason(_ failure: Failure) -> String {
        let message = WireFailures().render(failure)["message"]?.stringValue ?? "it failed."
        let text = Redaction.redact(message)
        return text.hasSuffix(".") ? text : text + "."
    }

    static func escape(_ text: String) -> String {
        var out = ""
        for character in text {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.append(character)
            }
        }
        return out
    }
}

extension String {
    fileprivate var capitalizedFirst: String { prefix(1).uppercased() + dropFirst() }
}
