import Foundation
import JSONRPC
import StpdValues
import StripeAPI

/// Starting, completing and cancelling sessions.
extension RedirectSessions {
    /// How to start a session right after it is opened (a confirmation's `start`); nil members:
    /// the defaults of `start`.
    public struct StartOptions: Sendable, Hashable {
        public var mode: RedirectMode?
        public var opener: RedirectOpener?
        public init(mode: RedirectMode? = nil, opener: RedirectOpener? = nil) {
            self.mode = mode
            self.opener = opener
        }
    }

    /// The SDK's three start variants; a no-op unless the session is notStarted. Automatic opens the
    /// native URL when there is one; without one it runs the in-app flow on the web page (WeChat Pay,
    /// which has no web page to fall back to, completes with the SDK's app-redirect error).
    public func start(id: String, for caller: Caller, mode: RedirectMode?, opener: RedirectOpener?) async throws
        -> Shown<RedirectRecord>
    {
        let record = try await table.get(id, for: caller)
        guard record.status == .notStarted else { return Shown(record) }
        let mode = mode ?? .automatic
        let opener = opener ?? .app
        if opener == .daemon, self.opener == nil {
            throw DomainError.disabled(setting: "STPD_URL_OPENER", detail: "set STPD_URL_OPENER to let stpd open URLs")
        }
        if mode == .automatic, record.nativeURL == nil, record.isWeChat {
            return try await completeWithOpenFailure(id, caller, from: .notStarted, "WeChat Pay has no app URL to open")
        }
        var url = mode == .automatic ? record.nativeURL ?? record.redirectURL : record.redirectURL
        guard let first = url else {
            throw DomainError.redirectUnavailable(
                detail: "the session has no web URL; start it in automatic mode", data: ["reason": "mode"])
        }
        if opener == .daemon, let urlOpener = self.opener {
            do {
                try await urlOpener.open(first)
            } catch {
                // As the SDK: a native URL that fails to open falls back to the web page (WeChat has none).
                guard mode == .automatic, first == record.nativeURL else { throw Self.openFailed(first, error) }
                if record.isWeChat {
                    return try await completeWithOpenFailure(
                        id, caller, from: .notStarted, "opening the WeChat app failed: \(error)")
                }
                guard let web = record.redirectURL else { throw Self.openFailed(first, error) }
                do { try await urlOpener.open(web) } catch { throw Self.openFailed(web, error) }
                url = web
            }
        }
        // A loopback session is found by its token instead (`RedirectSessions.visitLoopback`).
        let returnKey = record.loopback == nil ? try await filingKey(record.returnURL) : nil
        return try await table.update(id, for: caller) { record in
            guard record.status == .notStarted else { return nil }
            record.status = .inProgress
            record.mode = mode
            record.opener = opener
            record.openURL = url
            record.returnKey = returnKey
            return .started
        }.shown
    }

    /// Of the keys the URL may be filed under, the one with the fewest sessions (ties: the first
    /// in order), so a list shared by many sessions that differ elsewhere is avoided.
    private func filingKey(_ returnURL: String?) async throws -> String? {
        guard let url = returnURL.flatMap(ReturnURL.init) else { return nil }
        var best: (count: Int, key: String)?
        for key in url.filingKeys.sorted() {
            let count = try await table.count(filedUnder: key, cap: 64)
            if best == nil || count < best!.count { best = (count, key) }
        }
        return best?.key
    }

    private static func openFailed(_ url: String, _ error: any Error) -> DomainError {
        .redirectOpenFailed(detail: String(describing: error), data: ["url": .string(Redaction.redact(url))])
    }

    /// The SDK's `STPRedirectContextErrorDomain` error 0 (WeChat could not be opened).
    private func completeWithOpenFailure(_ id: String, _ caller: Caller, from state: RedirectStatus, _ detail: String)
        async throws -> Shown<RedirectRecord>
    {
        let error = DomainError.redirectOpenFailed(
            detail: detail,
            data: ["reason": "appRedirectError", "sdkDomain": "STPRedirectContextErrorDomain", "sdkCode": 0])
        return try await completeWithError(id, caller, from: state, trigger: "error", error)
    }

    /// Completes with an error the SDK's completion would carry: no follow-up, the outcome is the error.
    private func completeWithError(
        _ id: String, _ caller: Caller, from state: RedirectStatus, trigger: String, _ error: DomainError
    ) async throws -> Shown<RedirectRecord> {
        let change = try await table.update(id, for: caller) { record in
            guard record.status == state else { return nil }
            let at = now().formatted(.iso8601)
            record.status = .completed
            record.completion = .init(trigger: trigger, url: nil, error: .domain(error), at: at)
            record.outcome = .init(result: "error", error: .domain(error), object: nil, at: at)
            return .completed
        }
        if change.event != nil, let outcome = change.record.outcome { await tellFollowers(id, outcome) }
        return change.shown
    }

    /// redirect.report: what the app's browser or web view did (spec §3.4's UI events).
    public func report(
        id: String, for caller: Caller, outcome: RedirectReportOutcome, url: String?, message: String?
    ) async throws -> Shown<RedirectRecord> {
        // The page that failed, which only the app's browser knows: Stripe's hook page
        // (hooks.stripe.com) redirects at once to the bank's, whose failures the SDK ignores.
        if outcome == .loadFailed, url == nil {
            throw DomainError.invalidInput(
                input: "url", detail: "loadFailed needs the URL whose load failed (the page may have left openURL)")
        }
        let record = try await table.get(id, for: caller)
        guard record.status == .inProgress else { return Shown(record) }
        var data: [String: JSONValue] = message.map { ["message": .string($0)] } ?? [:]
        switch outcome {
        case .closed, .loadFailed:
            guard record.showsWebPage else {
                let why =
                    record.opener == .daemon ? "stpd opened it in a browser" : "mode \(record.mode?.rawValue ?? "none")"
                throw DomainError.invalidState(
                    .redirect, id: id, state: record.mode?.rawValue ?? "none",
                    detail: "the app shows no web page in this session (\(why))")
            }
            if outcome == .closed {
                // STPRedirectContext v20+: an error only when a return URL was awaited; without one,
                // closing is the end. STPPaymentHandler re-reads an intent first: the customer may
                // have paid before closing (`_retrieveAndCheckIntentForCurrentAction`).
                guard record.kind == .source, record.returnURL != nil else {
                    return try await completeClosed(id, caller)
                }
                data["sdkDomain"] = "com.stripe.lib"
                data["sdkCode"] = 80
                return try await completeWithError(
                    id, caller, from: .inProgress, trigger: "closed", .redirectCancelled(detail: message, data: data))
            }
            let failed = url ?? ""
            // The SDK completes only when the page that failed is Stripe's; other hosts' failures are ignored.
            guard let host = URL.strict(failed)?.host?.lowercased(), host.contains("stripe.com") else {
                return Shown(record)
            }
            data["sdkDomain"] = "com.stripe.lib"
            data["sdkCode"] = 40
            data["url"] = .string(Redaction.redact(failed))
            return try await completeWithError(
                id, caller, from: .inProgress, trigger: "loadFailed", .redirectLoadFailed(detail: message, data: data))
        case .nativeOpenFailed:
            guard record.mode == .automatic, record.opensNativeApp else {
                throw DomainError.invalidState(
                    .redirect, id: id, state: record.mode?.rawValue ?? "none",
                    detail: "the session is not opening a native app URL")
            }
            if record.isWeChat {
                return try await completeWithOpenFailure(
                    id, caller, from: .inProgress, message ?? "the app could not open WeChat")
            }
            guard let web = record.redirectURL else {
                return try await completeWithOpenFailure(
                    id, caller, from: .inProgress, message ?? "the native app could not be opened")
            }
            return try await table.update(id, for: caller) { record in
                guard record.status == .inProgress, record.opensNativeApp else { return nil }
                record.openURL = web
                return .fallback
            }.shown
        }
    }

    private func completeClosed(_ id: String, _ caller: Caller) async throws -> Shown<RedirectRecord> {
        let change = try await table.update(id, for: caller) { record in
            self.complete(&record, trigger: "closed", url: nil)
        }
        if change.event != nil { startFollowUp(change.record) }
        return change.shown
    }

    /// handle-url: completes the earliest-started matching session the caller may see; nil when
    /// none matched. Two deliveries of one URL complete one session once: the second finds it
    /// completed (and no longer filed) and looks again.
    public func handleURL(_ text: String, for caller: Caller) async throws -> String? {
        guard let incoming = ReturnURL(text), incoming.scheme != nil else {
            throw DomainError.invalidInput(input: "url", detail: "not a URL with a scheme")
        }
        if let token = LoopbackReturn.token(in: text) {
            let visit = try await visitLoopback(token: token, url: text, for: caller)
            return visit.arrival == .completed ? visit.session : nil
        }
        while true {
            let candidate = try await table.firstFiled(under: incoming.candidateKeys, for: caller) { record in
                record.status == .inProgress && record.returnURL.flatMap(ReturnURL.init)?.matches(incoming) == true
            }
            guard let candidate else { return nil }
            let change = try await table.update(candidate.id, for: caller) { record in
                self.complete(&record, trigger: "url", url: text)
            }
            if change.event != nil {
                startFollowUp(change.record)
                return candidate.id
            }
        }
    }

    /// app.foreground: completes the caller's automatic/browser sessions in progress.
    public func foreground(for caller: Caller) async throws -> [String] {
        var completed: [String] = []
        for record in try await table.filed(under: RedirectRecord.foregroundKey, for: caller) {
            let change = try await table.update(record.id, for: caller) { record in
                guard record.completesOnForeground else { return nil }
                return self.complete(&record, trigger: "foreground", url: nil)
            }
            if change.event != nil {
                completed.append(record.id)
                startFollowUp(change.record)
            }
        }
        return completed
    }

    /// Only an inProgress session is cancelled (or a loopback one still waiting, which the app
    /// may abandon before starting it); it never reports completion.
    public func cancel(id: String, for caller: Caller) async throws -> Shown<RedirectRecord> {
        try await table.update(id, for: caller) { record in
            guard record.status == .inProgress || record.waitsForLoopback else { return nil }
            record.status = .cancelled
            return .cancelled
        }.shown
    }

    func complete(_ record: inout RedirectRecord, trigger: String, url: String?) -> RedirectEvent? {
        guard record.status == .inProgress || (record.waitsForLoopback && trigger == "url") else { return nil }
        record.status = .completed
        record.completion = .init(
            trigger: trigger, url: url.map(Redaction.redact), error: nil, at: now().formatted(.iso8601))
        return .completed
    }
}
