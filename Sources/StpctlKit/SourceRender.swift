import Foundation
import JSONRPC

/// How `stpctl source ...` prints for people. Works on the JSON of a `source_record` (the
/// daemon's Source view), so it is tested without a daemon.
public enum SourceRender {
    public static let tableHeader = ["ID", "TYPE", "FLOW", "STATUS", "AMOUNT", "POLL", "UPDATED"]

    /// Sources as an aligned table, one row per Source under a header.
    public static func sources(_ sources: [JSONValue], timeZone: TimeZone = .current) -> String {
        guard !sources.isEmpty else { return "no sources" }
        let rows = sources.map { source in
            [
                text(source["id"]), text(source["type"]), text(source["flow"]), text(source["status"]),
                amount(source) ?? "-", text(source["poll"]?["status"]), time(source["updatedAt"], timeZone),
            ]
        }
        return CustomerRender.grid([tableHeader] + rows)
    }

    /// One Source, `key: value` lines. The client secret (which only create and retrieve return)
    /// is hidden unless `showSecret`: a terminal may be shared, recorded or scrolled back.
    public static func source(
        _ source: JSONValue, clientSecret: String? = nil, showSecret: Bool = false, now: Date = Date(),
        timeZone: TimeZone = .current
    ) -> String {
        var rows: [(String, String)] = [
            ("source", text(source["id"])), ("type", text(source["type"])), ("flow", text(source["flow"])),
            ("status", text(source["status"])), ("usage", text(source["usage"])),
        ]
        if let amount = amount(source) { rows.append(("amount", amount)) }
        if let redirect = source["redirect"], redirect.objectValue != nil {
            rows.append(("redirect", "\(text(redirect["status"])) \(text(redirect["url"]))"))
            rows.append(("return URL", text(redirect["returnURL"])))
        }
        if let poll = source["poll"], poll.objectValue != nil {
            rows.append(("poll", self.poll(poll, now: now)))
            if let redirect = poll["redirect"]?.stringValue { rows.append(("poll follows", redirect)) }
        }
        if let clientSecret {
            rows.append(("client secret", showSecret ? clientSecret : "[REDACTED] (--show-secrets shows it)"))
        }
        rows.append(("created", time(source["createdAt"], timeZone)))
        rows.append(("updated", time(source["updatedAt"], timeZone)))
        return Render.table(rows)
    }

    /// A poll in words: `polling, 0 failed requests, 4m 12s left`, `finished: chargeable`,
    /// `finished with error 3003: ...`, `stopped`.
    public static func poll(_ poll: JSONValue, now: Date = Date()) -> String {
        let status = poll["status"]?.stringValue ?? "?"
        switch status {
        case "finished":
            if let error = poll["error"], error != .null { return "finished with " + errorLine(error) }
            return "finished: " + (poll["sourceStatus"]?.stringValue ?? "?")
        case "polling", "paused":
            var parts = [status == "paused" ? "paused (app in the background)" : "polling"]
            let failures = poll["retryCount"]?.intValue ?? 0
            parts.append(failures == 1 ? "1 failed request" : "\(failures) failed requests")
            if let deadline = Waiting.date(poll["deadline"]?.stringValue) {
                parts.append(Waiting.timeLeft(until: deadline, now: now))
            }
            return parts.joined(separator: ", ")
        default:
            return status
        }
    }

    /// The line redrawn while waiting, short enough for 80 columns:
    /// `src_123  pending  polling  retries 0  4m 12s left`.
    public static func progress(_ source: JSONValue, now: Date = Date()) -> String {
        var parts = [text(source["id"]), text(source["status"])]
        if let poll = source["poll"], poll.objectValue != nil {
            let status = poll["status"]?.stringValue ?? "?"
            parts.append(status)
            if status == "polling" || status == "paused" {
                parts.append("retries \(poll["retryCount"]?.intValue ?? 0)")
                if let deadline = Waiting.date(poll["deadline"]?.stringValue) {
                    parts.append(Waiting.timeLeft(until: deadline, now: now))
                }
            }
        } else {
            parts.append("no poll")
        }
        return parts.joined(separator: "  ")
    }

    /// Whether a wait on the Source's poll is over, and how; nil while it polls (or is paused).
    public static func pollEnd(_ source: JSONValue) -> WaitEnd? {
        let id = text(source["id"])
        guard let poll = source["poll"], poll.objectValue != nil else {
            return .ended("\(id) has no poll to wait for; start one with: stpctl source poll \(id)")
        }
        switch poll["status"]?.stringValue {
        case "finished":
            if let error = poll["error"], error != .null { return .failed(error) }
            return .succeeded
        case "stopped":
            return .ended("the poll of \(id) was stopped before it finished (source.stopPolling)")
        default:
            return nil
        }
    }

    /// `10.99 EUR`, from the record's `amount` (minor units) and `currency`; nil without an amount.
    public static func amount(_ source: JSONValue) -> String? {
        guard let minor = source["amount"]?.intValue else { return nil }
        let currency = source["currency"]?.stringValue ?? ""
        return money(minor, currency: currency)
    }

    /// Stripe's currencies without a minor unit, whose amounts are whole units.
    static let zeroDecimal: Set<String> = [
        "bif", "clp", "djf", "gnf", "jpy", "kmf", "krw", "mga", "pyg", "rwf", "ugx", "vnd", "vuv", "xaf", "xof", "xpf",
    ]

    public static func money(_ minor: Int64, currency: String) -> String {
        let code = currency.uppercased()
        guard !zeroDecimal.contains(currency.lowercased()) else {
            return "\(minor) \(code)".trimmingCharacters(in: .whitespaces)
        }
        let sign = minor < 0 ? "-" : ""
        let units = abs(minor)
        return "\(sign)\(units / 100).\(String(format: "%02d", Int(units % 100))) \(code)".trimmingCharacters(
            in: .whitespaces)
    }

    /// `error 3003: message`.
    public static func errorLine(_ error: JSONValue) -> String {
        "error \(error["code"].map(Render.scalar) ?? "?"): \(error["message"].map(Render.scalar) ?? "?")"
    }

    static func text(_ value: JSONValue?) -> String { CustomerRender.text(value) }

    static func time(_ value: JSONValue?, _ timeZone: TimeZone) -> String {
        CustomerRender.time(value, timeZone: timeZone)
    }
}
