import Foundation
import JSONRPC
import StpdProtocol
import StripeAPI

/// Starting, completing and cancelling sessions, and the follow-up once they complete.
extension RedirectSessions: PollFollower {
    /// The SDK's three start variants; a no-op unless the session is notStarted.
    public func start(id: String, viewer: UInt32?, mode: RedirectMode?, opener: RedirectOpener?) async throws
        -> RedirectSessionView
    {
        let record = try record(id, viewer)
        guard record.status == .notStarted else { return record.view }
        let mode = mode ?? .automatic
        let opener = opener ?? .app
        if opener == .daemon, self.opener == nil {
            throw StpdErrors.disabled("set STPD_URL_OPENER to let stpd open URLs", data: ["setting": "STPD_URL_OPENER"])
        }
        var url = mode == .automatic ? record.nativeURL ?? record.redirectURL : record.redirectURL
        guard let first = url else {
            throw StpdErrors.redirectUnavailable(
                "the session has no web URL; start it in automatic mode", data: ["reason": "mode"])
        }
        if opener == .daemon, let urlOpener = self.opener {
            do {
                try await urlOpener.open(first)
            } catch {
                // As the SDK: a native URL that fails to open falls back to the web page (WeChat has none).
                guard mode == .automatic, first == record.nativeURL else { throw Self.openFailed(first, error) }
                if record.isWeChat {
                    return try await completeWithOpenFailure(id, "opening the WeChat app failed: \(error)")
                }
                guard let web = record.redirectURL else { throw Self.openFailed(first, error) }
                do { try await urlOpener.open(web) } catch { throw Self.openFailed(web, error) }
                url = web
            }
        }
        return try await transition(id) { record, state in
            guard record.status == .notStarted else { return nil }
            record.status = .inProgress
            record.mode = mode
            record.opener = opener
            record.openURL = url
            record.order = state.nextOrder
            state.nextOrder += 1
            Self.register(record, in: &state.index)
            return "redirect.started"
        }.view
    }

    private static func openFailed(_ url: String, _ error: any Error) -> RPCError {
        StpdErrors.redirectOpenFailed(String(describing: error), data: ["url": .string(Redaction.redact(url))])
    }

    private func completeWithOpenFailure(_ id: String, _ detail: String) async throws -> RedirectSessionView {
        let error = RPCError.json(StpdErrors.redirectOpenFailed(detail, data: ["reason": "appRedirectError"]))
        return try await transition(id) { record, _ in
            record.status = .completed
            record.completion = .init(trigger: "error", url: nil, error: error, at: now().formatted(.iso8601))
            return "redirect.completed"
        }.view
    }

    /// handle-url: completes the earliest-started matching session the viewer may see.
    public func handleURL(_ text: String, viewer: UInt32?) async throws -> String? {
        guard let incoming = ReturnURL(text), incoming.scheme != nil else {
            // Never echoed, not even redacted: a return URL's query holds a client secret in any spelling.
            throw RPCError.invalidParams(
                "not a URL with a scheme (\(text.utf8.count) bytes; not repeated here)", parameter: "url")
        }
        // Matching and completing under one lock: two deliveries of one URL complete one session once.
        var matched: String?
        let (view, event) = try await transitionMatching { state in
            matched = state.index.match(incoming, viewer: viewer)
            return matched
        } mutate: { record, state in
            self.complete(&record, &state, trigger: "url", url: text)
        }
        guard let matched else { return nil }
        if event != nil, let view { startFollowUp(view) }
        return matched
    }

    /// app.foreground: completes the viewer's automatic/browser sessions in progress.
    public func foreground(viewer: UInt32?) async throws -> [String] {
        let ids = list(viewer: viewer).filter { $0.status == "inProgress" && $0.mode != .inApp }.map(\.id)
        var completed: [String] = []
        for id in ids {
            let (view, event) = try await transition(id) { record, state in
                guard record.completesOnForeground else { return nil }
                return self.complete(&record, &state, trigger: "foreground", url: nil)
            }
            if event != nil {
                completed.append(id)
                startFollowUp(view)
            }
        }
        return completed
    }

    /// Only an inProgress session is cancelled; it never reports completion.
    public func cancel(id: String, viewer: UInt32?) async throws -> RedirectSessionView {
        _ = try record(id, viewer)
        return try await transition(id) { record, state in
            guard record.status == .inProgress else { return nil }
            record.status = .cancelled
            state.index.unregister(session: record.id)
            return "redirect.cancelled"
        }.view
    }

    private func complete(_ record: inout RedirectRecord, _ state: inout State, trigger: String, url: String?)
        -> String?
    {
        guard record.status == .inProgress else { return nil }
        state.index.unregister(session: record.id)
        record.status = .completed
        record.completion = .init(
            trigger: trigger, url: url.map(Redaction.redact), error: nil, at: now().formatted(.iso8601))
        return "redirect.completed"
    }

    private func transitionMatching(
        _ find: (inout State) -> String?, mutate: (inout RedirectRecord, inout State) -> String?
    ) async throws -> (RedirectSessionView?, String?) {
        let (view, event, pending) = try state.withLock {
            s -> (RedirectSessionView?, String?, OrderedWriter.Pending?) in
            guard let id = find(&s), var record = s.records[id] else { return (nil, nil, nil) }
            guard let event = mutate(&record, &s) else { return (record.view, nil, nil) }
            record.updatedAt = now()
            s.records[id] = record
            return (record.view, event, writer.enqueue([try record.change(event)]))
        }
        try await pending?.value.get()
        return (view, event)
    }
}
