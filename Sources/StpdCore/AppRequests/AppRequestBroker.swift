import Foundation
import JSONRPC
import StpdProtocol
import Synchronization

/// Asks the app itself over the socket, for the customer-session adapter and the ephemeral key
/// provider whose kind is "the app": `ask` records a request (an object of kind `appRequest`,
/// announced by an `appRequest.pending` event that only the owner's uid and root see), the app
/// answers it with an RPC that calls `answer`, and `ask` returns what the app answered.
///
/// Every request ends in exactly one recorded state, claimed under the lock by whoever gets
/// there first:
/// - `answered` by `answer` (recorded before `answer` returns and before `ask` resumes: `ask`
///   returns a result only once `appRequest.answered` is committed);
/// - `timedOut` when the timeout passes on the injected clock (`ask` throws `.timedOut`);
/// - `cancelled` when the asking task is cancelled (`ask` throws `CancellationError`).
///
/// Requests live in memory only: the asker is in this process. An answer or result is never put
/// in the store or the event log (the app may answer with an ephemeral key's secret), only that
/// it came and, for an error answer, the error. At start, `abandonLeftovers` marks requests an
/// earlier process left pending as `abandoned`.
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
    }

    let table: RecordTable<AppRequestRecord>
    private let clock: any Clock<Duration>
    private let now: @Sendable () -> Date
    private let entries = Mutex<[String: Entry]>([:])

    public init(
        log: EventLog, clock: any Clock<Duration> = ContinuousClock(), now: @escaping @Sendable () -> Date = Date.init,
        reportSetAside: @escaping SetAsideReporter = { _, _, _ in }
    ) {
        table = RecordTable(log: log, now: now, reportSetAside: reportSetAside)
        self.clock = clock
        self.now = now
    }

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
        // Registered before the event goes out, so an answer arriving at once finds it.
        entries.withLock { $0[id] = Entry(request: request) }
        do {
            try await table.insert(request.record(.pending, at: created), .entered(.pending))
        } catch {
            entries.withLock { $0[id] = nil }
            throw error
        }
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { [clock] in
                try await clock.sleep(for: timeout)
                await self.expire(id)
            }
            defer { group.cancelAll() }
            do {
                return try await outcome(of: id)
            } catch is CancellationError {
                if let request = takeIfCancelled(id) {
                    try? await record(request, .cancelled)
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

    /// The timeout passed: ends the request as timed out unless something else ended it first.
    private func expire(_ id: String) async {
        guard let request = claim(id, as: .timedOut) else { return }
        // The asker's outcome is the timeout even if the store failed to record it.
        try? await record(request, .timedOut)
        deliver(id, .failure(AppRequestError.timedOut(operation: request.operation, after: request.timeout)))
    }

    // MARK: - Answering

    /// The app's answer: `result` (null when absent), or `error` (a null `result` may come with it).
    /// Only the request's owner or root may answer; to anyone else it does not exist. Throws
    /// `AppRequestError.notFound`,
    /// `.alreadyFinished` (naming the state it ended in) or `.ambiguousAnswer`,
    /// or the store's error, in which case the asker gets that error too (nothing proceeds on an
    /// answer that was not recorded).
    public func answer(id: String, for caller: Caller, result: JSONValue?, error: AppRequestFailure?) async throws {
        // A null result next to an error is no result.
        if let result, result != .null, error != nil { throw AppRequestError.ambiguousAnswer(id: id) }
        enum Claim {
            case claimed(Request)
            case finished(AppRequestState)
            case notInMemory
        }
        let claim = entries.withLock { entries -> Claim in
            guard var entry = entries[id] else { return .notInMemory }
            guard caller.sees(entry.request.ownerUID) else { return .notInMemory }
            if let finishing = entry.finishing { return .finished(finishing) }
            entry.finishing = .answered
            entries[id] = entry
            return .claimed(entry.request)
        }
        switch claim {
        case .finished(let state):
            throw AppRequestError.alreadyFinished(id: id, state: state.rawValue)
        case .notInMemory:
            try await explainMissing(id, for: caller)
        case .claimed(let request):
            do {
                try await record(request, .answered, error: error)
            } catch let storeError {
                deliver(id, .failure(storeError))
                throw storeError
            }
            if let error {
                let failure = AppRequestError.failed(
                    message: error.message, code: error.code, operation: request.operation)
                deliver(id, .failure(failure))
            } else {
                deliver(id, .success(result ?? .null))
            }
        }
    }

    /// Why an id that no asker here waits for cannot be answered; always throws.
    private func explainMissing(_ id: String, for caller: Caller) async throws -> Never {
        guard let record = try? await table.get(id, for: caller) else { throw AppRequestError.notFound(id: id) }
        // Pending in the store but asked by no one here: an earlier process's, not yet marked.
        let state = record.state == .pending ? AppRequestState.abandoned : record.state
        throw AppRequestError.alreadyFinished(id: id, state: state.rawValue)
    }

    // MARK: - Leftovers

    /// Marks every request still `pending` in the store that no asker in this process waits for
    /// as `abandoned` (one event each, in one transaction). Call it at start, before serving.
    /// Returns how many it marked.
    @discardableResult
    public func abandonLeftovers() async throws -> Int {
        let asked = entries.withLock { Set($0.keys) }
        var count = 0
        for record in try await table.restore() where !asked.contains(record.id) {
            let change = try await table.update(record.id, for: .daemon) { record in
                guard record.state == .pending else { return nil }
                record.state = .abandoned
                return .entered(.abandoned)
            }
            if change.event != nil { count += 1 }
        }
        return count
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

    /// Records a request's end. In a task of its own: it must be recorded even when the task
    /// ending the request is cancelled (the SQLite store refuses work from a cancelled task).
    private func record(_ request: Request, _ state: AppRequestState, error: AppRequestFailure? = nil) async throws {
        let table = table
        _ = try await Task {
            try await table.update(request.id, for: .daemon) { record in
                guard record.state == .pending else { return nil }
                record.state = state
                record.error = error
                return .entered(state)
            }
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

extension AppRequestBroker: Sweepable {
    /// A request is finished once answered, timed out, cancelled or abandoned.
    public func sweep(before cutoff: Date) async throws -> Int { try await table.sweep(before: cutoff) }
}

/// What is stored of an app request: its public state (the event object) and whose it is.
/// Results are never stored (an app may answer with an ephemeral key's secret).
struct AppRequestRecord: DurableRecord {
    static let kind = ObjectKind.appRequest
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
    var createdAt: Date
    var updatedAt: Date

    var queryStatus: String? { state.rawValue }
    /// A pending one at start was asked by an earlier process: `abandonLeftovers` ends it.
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
