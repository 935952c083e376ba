import Foundation
import JSONRPC

/// How `stpctl payment-intent ...` and `stpctl setup-intent ...` print for people. Works on the
/// JSON of the replies, so it is tested without a daemon.
public enum IntentRender {
    /// A confirmation's (or handleNextAction's, verifyMicrodeposits') answer: the result first, then
    /// what the reader acts on (the URL to open, the details to show, the poll to wait for).
    /// `member` is where the intent is (`paymentIntent`, `setupIntent`).
    public static func answer(_ answer: JSONValue, member: String, timeZone: TimeZone = .current) -> String {
        var rows: [(String, String)] = [("result", text(answer["result"]))]
        if let error = answer["error"], error != .null { rows.append(("error", SourceRender.errorLine(error))) }
        if let open = answer["redirect"]?["openURL"]?.stringValue { rows.append(("open", open)) }
        rows += intentRows(answer[member]) + actionRows(answer["nextAction"])
        if let session = answer["redirect"], session.objectValue != nil {
            rows.append(("redirect session", "\(text(session["id"])) (\(text(session["status"])))"))
        }
        if let poll = answer["poll"], poll.objectValue != nil { rows.append(("poll", pollLine(poll, timeZone))) }
        return Render.table(rows)
    }

    /// A retrieve's reply: the intent and its next action as read.
    public static func retrieved(_ reply: JSONValue, member: String) -> String {
        Render.table(intentRows(reply[member]) + actionRows(reply["nextAction"]))
    }

    /// An intent stpd polls (`paymentIntent.get`), `key: value` lines.
    public static func intent(_ view: JSONValue, timeZone: TimeZone = .current) -> String {
        var rows: [(String, String)] = [("id", text(view["id"])), ("status", text(view["status"]))]
        rows += actionRows(view["nextAction"])
        if let poll = view["poll"], poll.objectValue != nil {
            rows.append(("poll", pollLine(poll, timeZone)))
            if let error = poll["error"], error != .null { rows.append(("error", SourceRender.errorLine(error))) }
        }
        rows.append(("updated", SourceRender.time(view["updatedAt"], timeZone)))
        return Render.table(rows)
    }

    public static let tableHeader = ["ID", "STATUS", "NEXT ACTION", "POLL", "RESULT", "UPDATED"]

    public static func intents(_ views: [JSONValue], timeZone: TimeZone = .current) -> String {
        guard !views.isEmpty else { return "no intents polled" }
        let rows = views.map { view in
            [
                text(view["id"]), text(view["status"]), text(view["nextAction"]?["type"]),
                text(view["poll"]?["status"]), text(view["poll"]?["result"]),
                SourceRender.time(view["updatedAt"], timeZone),
            ]
        }
        return CustomerRender.grid([tableHeader] + rows)
    }

    private static func intentRows(_ intent: JSONValue?) -> [(String, String)] {
        [("intent", text(intent?["id"])), ("status", text(intent?["status"]))]
    }

    /// The action's type and kind, and the page Stripe hosts for it (voucher, QR code, microdeposits).
    private static func actionRows(_ action: JSONValue?) -> [(String, String)] {
        guard let action, action.objectValue != nil else { return [] }
        var rows = [("next action", "\(text(action["type"])) (\(text(action["kind"])))")]
        let details = action["details"]
        for key in ["hosted_voucher_url", "hosted_instructions_url", "hosted_verification_url"] {
            if let url = details?[key]?.stringValue { rows.append(("page", url)) }
        }
        // A voucher's number (OXXO, Boleto) or reference (Multibanco), which the customer pays with.
        for (label, key) in [("number", "number"), ("reference", "reference")] {
            if let value = details?[key]?.stringValue { rows.append((label, value)) }
        }
        if let qr = details?["image_url_png"]?.stringValue ?? details?["qr_code"]?["image_url_png"]?.stringValue {
            rows.append(("QR code", qr))
        }
        return rows
    }

    /// `polling until 2025-01-02 03:04:05`, `finished: succeeded`.
    static func pollLine(_ poll: JSONValue, _ timeZone: TimeZone) -> String {
        switch poll["status"]?.stringValue {
        case "polling":
            poll["deadline"].flatMap { $0 == .null ? nil : $0 }.map {
                "polling until " + SourceRender.time($0, timeZone)
            }
                ?? "polling (following up a redirect)"
        case "finished": "finished: \(text(poll["result"]))"
        case let other: text(other.map(JSONValue.string))
        }
    }

    static func text(_ value: JSONValue?) -> String { CustomerRender.text(value) }
}
