import Foundation
import JSONRPC

/// How `stpctl redirect ...`, `handle-url` and `app ...` print for people. Works on the JSON of a
/// `redirect_session`, so it is tested without a daemon.
public enum RedirectRender {
    public static let tableHeader = ["ID", "STATUS", "KIND", "OBJECT", "MODE", "OUTCOME", "UPDATED"]

    public static func sessions(_ sessions: [JSONValue], timeZone: TimeZone = .current) -> String {
        guard !sessions.isEmpty else { return "no redirect sessions" }
        let rows = sessions.map { session in
            [
                text(session["id"]), text(session["status"]), text(session["kind"]), object(session),
                text(session["mode"]), session["outcome"].flatMap { $0["result"]?.stringValue } ?? "-",
                SourceRender.time(session["updatedAt"], timeZone),
            ]
        }
        return CustomerRender.grid([tableHeader] + rows)
    }

    /// One session, `key: value` lines; the URL to open first once started, as that is what the
    /// caller of `redirect start` acts on.
    public static func session(_ session: JSONValue, timeZone: TimeZone = .current) -> String {
        var rows: [(String, String)] = [
            ("session", text(session["id"])), ("status", text(session["status"])),
            (kindLabel(session), object(session)),
        ]
        if let mode = session["mode"]?.stringValue {
            rows.append(("mode", mode + (session["opener"]?.stringValue.map { ", opened by the \($0)" } ?? "")))
        }
        if let open = session["openURL"]?.stringValue {
            // In progress, the URL to open is what the reader acts on: first.
            if session["status"]?.stringValue == "inProgress" {
                rows.insert(("open", open), at: 0)
            } else {
                rows.append(("open", open))
            }
        }
        for (label, key) in [("redirect URL", "redirectURL"), ("native URL", "nativeURL"), ("return URL", "returnURL")]
        {
            if let url = session[key]?.stringValue { rows.append((label, url)) }
        }
        if session["kind"]?.stringValue == "source", let seconds = session["followUpTimeout"] {
            switch seconds {
            case .int(let whole): rows.append(("follow-up poll", Render.seconds(Double(whole))))
            case .double(let value): rows.append(("follow-up poll", Render.seconds(value)))
            default: break
            }
        }
        if let completion = session["completion"], completion.objectValue != nil {
            rows.append(("completed", completionLine(completion, timeZone: timeZone)))
        }
        if let outcome = session["outcome"], outcome.objectValue != nil {
            rows.append(("outcome", outcomeLine(outcome)))
        }
        rows.append(("created", SourceRender.time(session["createdAt"], timeZone)))
        rows.append(("updated", SourceRender.time(session["updatedAt"], timeZone)))
        return Render.table(rows)
    }

    /// `by the return URL at 2025-01-02 03:04:05`, `by app.foreground ...`, `with error 4002: ...`.
    public static func completionLine(_ completion: JSONValue, timeZone: TimeZone = .current) -> String {
        if let error = completion["error"], error != .null { return "with " + SourceRender.errorLine(error) }
        let trigger: String
        switch completion["trigger"]?.stringValue {
        case "url": trigger = "by the return URL"
        case "foreground": trigger = "by app.foreground"
        case "closed": trigger = "by the page being closed"
        case let other: trigger = "by \(other ?? "?")"
        }
        return trigger + " at " + SourceRender.time(completion["at"], timeZone)
    }

    /// The follow-up's result (`chargeable`, `succeeded`, ...) or its error.
    public static func outcomeLine(_ outcome: JSONValue) -> String {
        if let error = outcome["error"], error != .null { return SourceRender.errorLine(error) }
        return text(outcome["result"])
    }

    /// The line redrawn while waiting, short enough for 80 columns: status, what the session
    /// waits for, and for how long so far.
    public static func progress(_ session: JSONValue, waited seconds: Double) -> String {
        let status = session["status"]?.stringValue
        let phase: String? =
            switch status {
            case "notStarted": "not started yet"
            case "inProgress": "waiting for the return URL"
            case "completed": "waiting for the outcome"
            default: nil
            }
        return [text(session["id"]), status ?? "?", phase, Waiting.elapsed(seconds)].compactMap { $0 }.joined(
            separator: "  ")
    }

    /// Whether a wait on the session is over: an outcome arrived, it completed with an error (no
    /// follow-up then), or it was cancelled. Nil while it may still get an outcome.
    public static func end(_ session: JSONValue) -> WaitEnd? {
        if let outcome = session["outcome"], outcome.objectValue != nil {
            if let error = outcome["error"], error != .null { return .failed(error) }
            return .succeeded
        }
        if let error = session["completion"]?["error"], error != .null { return .failed(error) }
        if session["status"]?.stringValue == "cancelled" {
            return .ended("redirect session \(text(session["id"])) was cancelled; it reports no outcome")
        }
        return nil
    }

    /// app.foreground / app.background: what changed.
    public static func lifecycle(_ result: JSONValue, pollsVerb: String) -> String {
        func list(_ key: String) -> String {
            let ids = (result[key]?.arrayValue ?? []).compactMap(\.stringValue)
            return ids.isEmpty ? "none" : ids.joined(separator: ", ")
        }
        return Render.table([
            ("redirects completed", list("completedRedirects")), ("polls \(pollsVerb)", list("polls")),
        ])
    }

    static func kindLabel(_ session: JSONValue) -> String {
        switch session["kind"]?.stringValue {
        case "paymentIntent": "payment intent"
        case "setupIntent": "setup intent"
        default: "source"
        }
    }

    static func object(_ session: JSONValue) -> String {
        switch session["kind"]?.stringValue {
        case "paymentIntent": text(session["paymentIntentId"])
        case "setupIntent": text(session["setupIntentId"])
        default: text(session["sourceId"])
        }
    }

    static func text(_ value: JSONValue?) -> String { CustomerRender.text(value) }
}
