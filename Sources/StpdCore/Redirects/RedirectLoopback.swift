import Foundation
import StpdValues
import StripeAPI

/// What a customer's browser found at a loopback return URL.
public struct LoopbackVisit: Sendable {
    public enum Arrival: Sendable {
        /// This request completed the session.
        case completed
        /// The session was completed (or cancelled) before: nothing changed.
        case earlier
        /// No session has this token (never issued, or removed since): nothing changed.
        case unknown
    }

    public var arrival: Arrival
    public var session: String?
    /// `source`, `paymentIntent` or `setupIntent`.
    public var kind: String?
    public var appName: String?
    public var status: RedirectStatus?
    /// The follow-up's result, when it has one (see `RedirectSessions.awaitOutcome`).
    public var outcome: RedirectOutcome?
    /// How the session completed, when it ended with an error and no follow-up (the app reported
    /// the page closed first).
    public var completionError: Failure?

    static let unknown = LoopbackVisit(arrival: .unknown)

    public init(
        arrival: Arrival, session: String? = nil, kind: String? = nil, appName: String? = nil,
        status: RedirectStatus? = nil, outcome: RedirectOutcome? = nil, completionError: Failure? = nil
    ) {
        self.arrival = arrival
        self.session = session
        self.kind = kind
        self.appName = appName
        self.status = status
        self.outcome = outcome
        self.completionError = completionError
    }

    init(arrival: Arrival, record: RedirectRecord) {
        self.init(
            arrival: arrival, session: record.id, kind: record.kind.rawValue, appName: record.loopback?.appName,
            status: record.status, outcome: record.outcome, completionError: record.completion?.error)
    }

    /// Nothing more will change what the page should say.
    public var isSettled: Bool {
        arrival == .unknown || outcome != nil || completionError != nil || status == .cancelled
    }
}

/// Loopback returns (`LoopbackReturn`): the listener's requests, and what keeps it listening.
extension RedirectSessions {
    /// The customer's browser is back at the loopback URL `url` whose token is `token`: completes
    /// the session as `handle-url` would (the completion, the follow-up, the events) when it still
    /// waits, whether or not it was started. `caller` narrows it to one uid's sessions (handle-url);
    /// the listener asks as stpd, since the token alone is the key.
    public func visitLoopback(token: String, url: String, for caller: Caller = .daemon) async throws -> LoopbackVisit {
        let found = try await table.firstFiled(under: [LoopbackReturn.lookupKey(token)], for: caller) { record in
            record.loopback?.matches(token) == true
        }
        guard let found else { return .unknown }
        let change = try await table.update(found.id, for: caller) { record in
            self.complete(&record, trigger: "url", url: url)
        }
        guard change.event != nil else { return LoopbackVisit(arrival: .earlier, record: change.record) }
        startFollowUp(change.record)
        return LoopbackVisit(arrival: .completed, record: change.record)
    }

    /// `visit` again once it is settled (its follow-up read the intent or polled the Source), or
    /// as it stands after `timeout`: the return page shows what the app will be told.
    public func awaitOutcome(_ visit: LoopbackVisit, timeout: Duration) async -> LoopbackVisit {
        guard !visit.isSettled, let id = visit.session else { return visit }
        let deadline = ContinuousClock.now + timeout
        var latest = visit
        // The follow-up may run on another daemon of a fleet: the record is the one place to look.
        while ContinuousClock.now < deadline {
            if (try? await Task.sleep(for: .milliseconds(100))) == nil { break }
            guard let record = try? await table.find(id) else { continue }
            latest = LoopbackVisit(arrival: visit.arrival, record: record)
            if latest.isSettled { break }
        }
        return latest
    }

    /// Sessions waiting on `instance`'s listener, counting no further than `cap`.
    public func loopbackWaiting(instance: String, cap: Int = 100_000) async throws -> Int {
        try await table.count(filedUnder: LoopbackReturn.waitingKey(instance), cap: cap)
    }

    /// The ports that sessions waiting on `instance`'s listener name: what a restarted stpd must
    /// listen on again for those customers to come back.
    public func loopbackPorts(instance: String) async throws -> Set<Int> {
        let waiting = try await table.filed(under: LoopbackReturn.waitingKey(instance), for: .daemon)
        return Set(waiting.compactMap { $0.loopback?.port })
    }
}

extension RedirectSessions {
    /// Runs `body` with `returnURL`, or with a loopback return issued for it when it is
    /// `"loopback"` (`LoopbackReturns.resolve`): what every call taking a `returnURL` does first.
    public func resolveReturnURL<T: Sendable>(
        _ returnURL: String?, appName: @autoclosure () -> String?, _ body: (String?) async throws -> T
    ) async throws -> T {
        guard returnURL == LoopbackReturn.request else { return try await body(returnURL) }
        guard let loopback else {
            throw DomainError.disabled(setting: "loopback", detail: "this stpd serves no loopback return")
        }
        return try await loopback.resolve(returnURL, appName: appName()) { url, _ in try await body(url) }
    }
}
