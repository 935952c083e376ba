import Foundation
import JSONRPC

/// The test "bank" or 3-D Secure page a redirect opens, as a customer sees it in a browser: what
/// is being paid, and one button per thing the customer can do. Each button submits
/// `action=…` to the same page, which drives the object and sends the browser back to the return
/// URL (`redirectPage`). The buttons' ids (`authorise`, `fail`, `cancel`) are what browser tests
/// press.
struct BankPage {
    var id: String
    var object: Obj
    var secret: String
    var isSource: Bool

    var html: String {
        let buttons = [
            ("authorise", isSource ? "authorize" : "succeed", "Authorise test payment"),
            ("fail", "fail", "Fail test payment"),
            ("cancel", "cancel", "Cancel and return"),
        ].map { id, action, label in
            """
            <form method="get"><input type="hidden" name="client_secret" value="\(escape(secret))">\
            <button type="submit" id="\(id)" name="action" value="\(action)">\(label)</button></form>
            """
        }.joined(separator: "\n")
        return """
            <!doctype html>
            <html lang="en"><head><meta charset="utf-8"><title>Stripe test bank: \(escape(what))</title>
            <style>body{font-family:sans-serif;max-width:30em;margin:2em auto}form{display:inline-block;margin:0 .5em .5em 0}</style>
            </head><body>
            <h1>\(escape(what))</h1>
            <p id="summary">\(escape(summary))</p>
            \(buttons)
            <p><small>Test mode: \(escape(id)). No real money moves.</small></p>
            </body></html>

            """
    }

    /// What the page is for: 3-D Secure for a card, else the payment method type's page.
    private var what: String {
        let type =
            isSource
            ? object["type"]?.stringValue
            : object["payment_method_types"]?.arrayValue?.first?.stringValue
        switch type {
        case "card", "three_d_secure": return "3D Secure authentication"
        case let type?: return "\(type.replacingOccurrences(of: "_", with: " ").capitalized) payment"
        case nil: return "Test payment"
        }
    }

    private var summary: String {
        guard let amount = object["amount"]?.intValue, let currency = object["currency"]?.stringValue else {
            return "Authorise saving this payment method for later payments."
        }
        let major = String(format: "%d.%02d", Int(amount) / 100, Int(amount) % 100)
        return "Authorise the payment of \(major) \(currency.uppercased())."
    }

    private func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }
}
