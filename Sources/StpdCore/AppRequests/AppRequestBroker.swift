import Foundation
import JSONRPC
import StpdValues
import Synchronization

/// Asks the app itself over the socket, for the customer-session adapter and the ephemeral key
/// provider whose kind is "the app": `ask` records a request (an object of kind `appRequest`,
/// announced by an `appRequest.pending` event that only the owner's uid and root see), the app
/// answers it with an RPC that calls `answer`, and `ask` returns what the app answered.
///
/// Every request ends in exactly one recorded state. In this process whoever gets there first
/// claims the end under the lock; across processes the store decides (a versioned update from
/// `pending`), and a claimant whose update finds the request ended otherwise delivers that end:
/// - `answered` by `answer` (recorded before `answer` returns and before `ask` resumes: `ask`
///   returns a result only once `appRequest.answered` is committed);
/// - `timedOut` when the timeout passes on the injected clock (`ask` throws `.timedOut`);
/// - `cancelled` when the asking task is cancelled (`ask` throws `CancellationError`);
/// - `abandoned` when its asker is gone (see below).
///
/// The asker is in this process, but the answer may come to any daemon sharing the store:
/// - The asker holds the lease `appRequest:<id>` while it waits, so the others can tell it lives.
/// - An answer to a request asked elsewhere is recorded (`answered`) with the answer in the
///   record (`handoff`, sealed at rest with the rest of the state; never in an event), if the
///   asker's lease is held; the asker hears of the commit through the event log (`appRequest.
///   answered` on its bus) and takes the answer from the record.
/// - A request whose asker's lease is free is abandoned: by the answer that finds it so, and by
///   adoption (at start, and in a fleet wherever the asker died).
/// An answer answered in the asker's process is never put in the store or the event log (the app
/// may answer with an ephemeral key's secret), only that it came and, for an error answer, the error.
public final class AppRequestBroker: Sendable {
    /// Requests' `object` field, as Stripe objects name their type.
    public static let objectName = "app_request"

    /// What was asked: the fields of the stored object.
    public struct Request: Sendable, Hashable {
        public var id: String
        public var ownerUID: UInt32
        public var session: String
        public var operation: String
        public var params: JSONValue
        public var deadline: Date
        public var timeout: Duration
        public var createdAt: Date

        /// What is stored of it once it is in `state`.
        func record(_ state: AppRequestState, error: AppRequestFailure? = nil, at time: Date) -> AppRequestRecord {
            AppRequestRecord(
                id: id, owner: ownerUID, session: session, operation: operation, params: params, state: state,
                deadline: deadline.formatted(.iso8601), error: error, createdAt: createdAt, updatedAt: time)
        }
    }

    private struct Entry {
        var request: Request
        /// Set by whoever claimed the request's end; nobody else may end it.
        var finishing: AppRequestState?
        /// The asker, once it waits.
        var continuation: CheckedContinuation<JSONValue, any Error>?
        /// The outcome, when it came before the asker waited.
        var outcome: Result<JSONValue, any Error>?
        /// Fired when another daemon recorded an answer.
        let answeredElsewhere = Signal()
    }

    let table: RecordTable<AppRequestRecord>
    private let clock: any Clock<Duration>
    private let now: @Sendable () -> Date
    private let work: LeasedWork
    private let entries = Mutex<[String: Entry]>([:])

    public init(
        log: EventLog, clock: any Clock<Duration> = ContinuousClock(), now: @escaping @Sendable () -> Date = Date.init,
        work: LeasedWork = LeasedWork(background: BackgroundWork()),
        reportSetAside: @escaping SetAsideReporter = { _, _, _ in }
    ) {
        table = RecordTable(log: log, now: now, reportSetAside: reportSetAside)
        self.clock = clock
        self.now = now
        self.work = work
        log.bus.add(id: "appRequest.broker.\(UUID().uuidString)") { _ in
            AnswersElsewhere { [weak self] id in self?.wakeAnsweredElsewhere(id) }
        }
        // Pending requests asked by no one here whose asker's lease is free: their asker is gone.
        work.adopt { [self, table] in
            let asked = entries.withLock { Set($0.keys) }
            return try await table.live(for: .daemon).filter { !asked.contains($0.id) }.map { record in
                LeasedWork.Job(name: Self.lease(record.id)) { _ = try? await self.abandon(record.id) }
            }
        }
    }

    static func lease(_ id: String) -> String { "appRequest:\(id)" }

    /// Requests asked and not yet over for their asker (the daemon does not exit idle while > 0).
    public var pendingCount: Int { entries.withLock { $0.count } }

    /// The requests in flight, oldest first.
    public var pendingRequests: [Request] {
        entries.withLock { $0.values.map(\.request) }.sorted { ($0.createdAt, $0.id) < ($1.createdAt, $1.id) }
    }

    // MARK: - Asking

    /// Asks the app that `owner` runs to perform `operation` for `session` and waits for its
    /// answer. Throws `AppRequestError.failed` for an error answer, `.timedOut` when no answer
    /// came within `timeout`, `CancellationError` when the calling task is cancelled, or the
    /// store's error when the request could not be recorded.
    public func ask(owner: UInt32, session: String, operation: String, params: JSONValue, timeout: Duration)
        async throws -> JSONValue
    {
        let created = now()
        let request = Request(
            id: Self.newID(), ownerUID: owner, session: session, operation: operation, params: params,
            deadline: created.addingTimeInterval(max(timeout, .zero).seconds), timeout: timeout, createdAt: created)
        let id = request.id
        // Registered before the event goes out, so an answer arriving at once finds it; the lease
        // tells the other daemons that its asker lives.
        entries.withLock { $0[id] = Entry(request: request) }
        _ = await work.leases.acquire(Self.lease(id), lost: {})
        do {
            try await table.insert(request.record(.pending, at: created), .entered(.pending))
        } catch {
            entries.withLock { $0[id] = nil }
            await work.leases.release(Self.lease(id))
            throw error
        }
        do {
            let answer = try await wait(for: id, timeout: timeout)
            await work.leases.release(Self.lease(id))
            return answer
        } catch {
            await work.leases.release(Self.lease(id))
            throw error
        }
    }

    private func wait(for id: String, timeout: Duration) async throws -> JSONValue {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { [clock] in
                try await clock.sleep(for: timeout)
                await self.expire(id)
            }
            group.addTask {
                guard let signal = self.entries.withLock({ $0[id]?.answeredElsewhere }) else { return }
                await signal.wait()
                await self.takeAnswerFromStore(id)
            }
            defer { group.cancelAll() }
            do {
                return try await outcome(of: id)
            } catch is CancellationError {
                if let request = takeIfCancelled(id) {
                    _ = try? await record(request, .cancelled)
                }
                throw CancellationError()
            }
        }
    }

    /// Waits for the request's outcome. The entry is gone when it returns or throws the outcome; after
    /// a `CancellationError` (the cancellation ended the request), `takeIfCancelled` removes it.
    private func outcome(of id: String) async throws -> JSONValue {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<JSONValue, any Error>) in
                let ready = entries.withLock { entries -> Result<JSONValue, any Error>? in
                    guard var entry = entries[id] else {
                        return .failure(AppRequestError.notFound(id: id))  // Not reached: only the asker removes it.
                    }
                    if let outcome = entry.outcome {
                        entries[id] = nil
                        return outcome
                    }
                    // Under the lock: a cancellation whose handler ran before we got here set the
                    // flag already, so it cannot be missed.
                    if entry.finishing == .cancelled || (entry.finishing == nil && Task.isCancelled) {
                        entry.finishing = .cancelled
                        entries[id] = entry
                        return .failure(CancellationError())
                    }
                    entry.continuation = continuation
                    entries[id] = entry
                    return nil
                }
                if let ready { continuation.resume(with: ready) }
            }
        } onCancel: {
            // Only a request nobody else is ending is cancelled; otherwise its outcome is coming.
            let continuation = entries.withLock { entries -> CheckedContinuation<JSONValue, any Error>? in
                guard var entry = entries[id], entry.finishing == nil else { return nil }
                entry.finishing = .cancelled
                defer {
                    entry.continuation = nil
                    entries[id] = entry
                }
                return entry.continuation
            }
            continuation?.resume(throwing: CancellationError())
        }
    }

    /// After a `CancellationError`: the request if the cancellation ended it, removed from memory.
    private func takeIfCancelled(_ id: String) -> Request? {
        entries.withLock { entries in
            guard let entry = entries[id], entry.finishing == .cancelled else { return nil }
            entries[id] = nil
            return entry.request
        }
    }

    /// The timeout passed: ends the request as timed out unless something else ended it first
    /// (here, or an answer another daemon recorded: then that answer is the outcome).
    private func expire(_ id: String) async {
        guard let request = claim(id, as: .timedOut) else { return }
        // The asker's outcome is the timeout even if the store failed to record it.
        let stored = try? await record(request, .timedOut)
        if let stored, stored.state == .answered {
            deliver(id, Self.outcome(of: stored))
        } else {
            deliver(id, .failure(AppRequestError.timedOut(operation: request.operation, after: request.timeout)))
        }
    }

    /// An answer to the request was committed: wakes its asker, unless this process claimed its
    /// end (then it delivers that end itself).
    private func wakeAnsweredElsewhere(_ id: String) {
        entries.withLock { entries in entries[id].flatMap { $0.finishing == nil ? $0.answeredElsewhere : nil } }?.fire()
    }

    /// Another daemon recorded an answer: it is the outcome, unless this process ended the
    /// request first (its own record then found the answer, and delivers it).
    private func takeAnswerFromStore(_ id: String) async {
        guard !Task.isCancelled, let stored = try? await table.find(id), stored.state == .answered,
            claim(id, as: .answered) != nil
        else { return }
        deliver(id, Self.outcome(of: stored))
    }

    /// What the asker gets from a request answered in the store.
    private static func outcome(of stored: AppRequestRecord) -> Result<JSONValue, any Error> {
        if let error = stored.error {
            return .failure(
                AppRequestError.failed(message: error.message, code: error.code, operation: stored.operation))
        }
        return .success(stored.handoff ?? .null)
    }

    // MARK: - Reading

    /// The caller's request `id` as its events show it; another uid's answers NotFound as a
    /// missing one does.
    public func get(id: String, for caller: Caller) async throws -> JSONValue {
        guard let record = try await table.find(id, for: caller) else { throw AppRequestError.notFound(id: id) }
        return try JSONCoding.value(of: table.view(record))
    }

    // MARK: - Answering

    /// The app's answer: a result or an error (the params' schema takes exactly one). Only the request's owner or root may answer; to anyone else it does not exist. Any daemon
    /// sharing the store takes it. Throws `AppRequestError.notFound`, `.alreadyFinished` (naming
    /// the state it ended in: `abandoned` when its asker is gone), or the
    /// store's error, in which case the asker gets that error too (nothing proceeds on an answer
    /// that was not recorded).
    public func answer(id: String, for caller: Caller, _ reply: AppRequestReply) async throws {
        let (result, error): (JSONValue, AppRequestFailure?) =
            switch reply {
            case .result(let result): (result, nil)
            case .failure(let failure): (.null, failure)
            }
        enum Claim {
            case claimed(Request)
            case finished(AppRequestState)
            case askedElsewhere
        }
        let claim = entries.withLock { entries -> Claim in
            guard var entry = entries[id], caller.sees(entry.request.ownerUID) else { return .askedElsewhere }
            if let finishing = entry.finishing { return .finished(finishing) }
            entry.finishing = .answered
            entries[id] = entry
            return .claimed(entry.request)
        }
        switch claim {
        case .finished(let state):
            throw AppRequestError.alreadyFinished(id: id, state: state.rawValue)
        case .askedElsewhere:
            try await answerElsewhere(id, for: caller, result: result, error: error)
        case .claimed(let request):
            let stored: AppRequestRecord
            do {
                stored = try await record(request, .answered, error: error)
            } catch let storeError {
                deliver(id, .failure(storeError))
                throw storeError
            }
            guard stored.state == .answered else {
                // Ended meanwhile by another daemon (it took the asker for gone).
                let finished = AppRequestError.alreadyFinished(id: id, state: stored.state.rawValue)
                deliver(id, .failure(finished))
                throw finished
            }
            if let error {
                let failure = AppRequestError.failed(
                    message: error.message, code: error.code, operation: request.operation)
                deliver(id, .failure(failure))
            } else {
                deliver(id, .success(result))
            }
        }
    }

    /// An answer to a request no asker in this process waits for: recorded with the answer for
    /// its asker on another daemon, or, when no daemon holds its lease, abandoned (its asker is gone).
    private func answerElsewhere(_ id: String, for caller: Caller, result: JSONValue, error: AppRequestFailure?)
        async throws
    {
        guard let record = try await table.find(id), caller.sees(record.owner) else {
            throw AppRequestError.notFound(id: id)
        }
        guard record.state == .pending else {
            throw AppRequestError.alreadyFinished(id: id, state: record.state.rawValue)
        }
        if await !work.leases.free(among: [Self.lease(id)]).isEmpty {
            let ended = try await abandon(id)
            throw AppRequestError.alreadyFinished(id: id, state: ended.rawValue)
        }
        let change = try await table.update(id, for: .daemon) { record in
            guard record.state == .pending else { return nil }
            record.state = .answered
            record.error = error
            record.handoff = error == nil ? result : nil
            return .entered(.answered)
        }
        guard change.event != nil else {
            throw AppRequestError.alreadyFinished(id: id, state: change.record.state.rawValue)
        }
    }

    /// Ends a request whose asker is gone; returns the state it ended in.
    @discardableResult
    func abandon(_ id: String) async throws -> AppRequestState {
        try await table.update(id, for: .daemon) { record in
            guard record.state == .pending else { return nil }
            record.state = .abandoned
            return .entered(.abandoned)
        }.record.state
    }

    // MARK: - Ending

    /// Claims the end of a request for `state`; nil when it is gone or someone else claimed it.
    private func claim(_ id: String, as state: AppRequestState) -> Request? {
        entries.withLock { entries in
            guard var entry = entries[id], entry.finishing == nil else { return nil }
            entry.finishing = state
            entries[id] = entry
            return entry.request
        }
    }

    /// Hands the outcome to the asker, or keeps it for when it waits.
    private func deliver(_ id: String, _ outcome: Result<JSONValue, any Error>) {
        let continuation = entries.withLock { entries -> CheckedContinuation<JSONValue, any Error>? in
            guard var entry = entries[id] else { return nil }
            if let continuation = entry.continuation {
                entries[id] = nil
                return continuation
            }
            entry.outcome = outcome
            entries[id] = entry
            return nil
        }
        continuation?.resume(with: outcome)
    }

    /// Records a request's end; returns the record as stored after it, which may have ended
    /// otherwise (another daemon's answer, or abandonment). In a task of its own: it must be
    /// recorded even when the task ending the request is cancelled (the SQLite store refuses
    /// work from a cancelled task).
    private func record(_ request: Request, _ state: AppRequestState, error: AppRequestFailure? = nil) async throws
        -> AppRequestRecord
    {
        let table = table
        return try await Task {
            try await table.update(request.id, for: .daemon) { record in
                guard record.state == .pending else { return nil }
                record.state = state
                record.error = error
                return .entered(state)
            }.record
        }.value
    }

    /// `areq_` and 32 random hex digits.
    static func newID() -> String {
        var generator = SystemRandomNumberGenerator()
        let hex = (0..<2).map { _ in
            let digits = String(generator.next() as UInt64, radix: 16)
            return String(repeating: "0", count: 16 - digits.count) + digits
        }
        return "areq_" + hex.joined()
    }
}

/// Hears of every `appRequest.answered` on the bus: those another daemon recorded reach it through
/// the fleet's event log.
private final class AnswersElsewhere: EventListener {
    private let wake: @Sendable (String) -> Void
    private static let answered = AppRequestEvent.entered(.answered).type.name
    var routing: EventFilter? { EventFilter(types: [Self.answered]) }

    init(wake: @escaping @Sendable (String) -> Void) { self.wake = wake }

    func receive(_ event: Event) -> Bool {
        if event.type == Self.answered { wake(event.objectId) }
        return true
    }
}

extension AppRequestBroker: Sweepable {
    /// A request is finished once answered, timed out, cancelled or abandoned.
    public func sweep(before cutoff: Date) async throws -> Int { try await table.sweep(before: cutoff) }
}

/// What is stored of an app request: its public state (the event object) and whose it is.
/// A result is stored only to hand it to an asker on another daemon (`handoff`), never in its view.
struct AppRequestRecord: DurableRecord {
    static let kind = ObjectKind.appRequest
    /// Its stored form (`StoredForm`): 1 is the form of release 0.1.0.
    static let schemaVersion = 1
    static let removed: AppRequestEvent? = .removed

    var id: String
    var object = AppRequestBroker.objectName
    var owner: UInt32
    var session: String
    var operation: String
    var params: JSONValue
    var state: AppRequestState
    /// RFC 3339, as the event carries it.
    var deadline: String
    var error: AppRequestFailure?
    /// The result of an answer given on another daemon than the asker's, for the asker to take.
    var handoff: JSONValue?
    var createdAt: Date
    var updatedAt: Date

    var queryStatus: String? { state.rawValue }
    /// Pending: its asker waits, or is gone (adoption abandons it then).
    var isLive: Bool { state == .pending }
    var isFinished: Bool { state != .pending }
    var isTerminal: Bool { state != .pending }

    func view(_: any FailureRenderer) -> View {
        View(
            id: id, object: object, session: session, operation: operation, params: params, state: state,
            deadline: deadline, error: error)
    }

    struct View: Codable, Sendable {
        var id: String
        var object: String
        var session: String
        var operation: String
        var params: JSONValue
        var state: AppRequestState
        var deadline: String
        var error: AppRequestFailure?
    }
}
