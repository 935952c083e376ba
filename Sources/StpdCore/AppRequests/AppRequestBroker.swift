import Foundation
import JSONRPC
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
    /// The `kind` of the stored objects and the prefix of their events.
    public static let kind = "appRequest"
    /// Requests' `object` field, as Stripe objects name their type.
    public static let objectName = "app_request"
    public static let rootUID: UInt32 = 0

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

        /// The object's JSON state in the store and in events.
        func state(_ state: AppRequestState, error: AppRequestFailure? = nil) -> JSONValue {
            var fields: [String: JSONValue] = [
                "id": .string(id), "object": .string(AppRequestBroker.objectName), "session": .string(session),
                "operation": .string(operation), "params": params, "state": .string(state.rawValue),
                "deadline": .string(deadline.formatted(.iso8601)),
            ]
            if let error { fields["error"] = error.json }
            return .object(fields)
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

    private let log: EventLog
    private let clock: any Clock<Duration>
    private let now: @Sendable () -> Date
    private let entries = Mutex<[String: Entry]>([:])

    public init(
        log: EventLog, clock: any Clock<Duration> = ContinuousClock(), now: @escaping @Sendable () -> Date = Date.init
    ) {
        self.log = log
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
            try await log.apply([change(request, .pending)])
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
    /// Only the request's owner or root may answer. Throws `AppRequestError.notFound`,
    /// `.permissionDenied`, `.alreadyFinished` (naming the state it ended in) or `.ambiguousAnswer`,
    /// or the store's error, in which case the asker gets that error too (nothing proceeds on an
    /// answer that was not recorded).
    public func answer(id: String, by uid: UInt32, result: JSONValue?, error: AppRequestFailure?) async throws {
        // A null result next to an error is no result.
        if let result, result != .null, error != nil { throw AppRequestError.ambiguousAnswer(id: id) }
        enum Claim {
            case claimed(Request)
            case denied
            case finished(AppRequestState)
            case notInMemory
        }
        let claim = entries.withLock { entries -> Claim in
            guard var entry = entries[id] else { return .notInMemory }
            guard Self.may(uid, answerFor: entry.request.ownerUID) else { return .denied }
            if let finishing = entry.finishing { return .finished(finishing) }
            entry.finishing = .answered
            entries[id] = entry
            return .claimed(entry.request)
        }
        switch claim {
        case .denied:
            throw AppRequestError.permissionDenied(id: id)
        case .finished(let state):
            throw AppRequestError.alreadyFinished(id: id, state: state.rawValue)
        case .notInMemory:
            try await explainMissing(id, uid: uid)
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
    private func explainMissing(_ id: String, uid: UInt32) async throws -> Never {
        guard let object = try await log.store.object(id: id), object.kind == Self.kind else {
            throw AppRequestError.notFound(id: id)
        }
        guard Self.may(uid, answerFor: object.ownerUID) else { throw AppRequestError.permissionDenied(id: id) }
        var state = object.state["state"]?.stringValue ?? "unknown"
        // Pending in the store but asked by no one here: an earlier process's, not yet marked.
        if state == AppRequestState.pending.rawValue { state = AppRequestState.abandoned.rawValue }
        throw AppRequestError.alreadyFinished(id: id, state: state)
    }

    static func may(_ uid: UInt32, answerFor owner: UInt32) -> Bool {
        uid == rootUID || uid == owner
    }

    // MARK: - Leftovers

    /// Marks every request still `pending` in the store that no asker in this process waits for
    /// as `abandoned` (one event each, in one transaction). Call it at start, before serving.
    /// Returns how many it marked.
    @discardableResult
    public func abandonLeftovers() async throws -> Int {
        let live = entries.withLock { Set($0.keys) }
        let time = now()
        let changes = try await log.store.objects(kind: Self.kind).compactMap { object -> StateChange? in
            guard !live.contains(object.id), object.state["state"]?.stringValue == AppRequestState.pending.rawValue,
                case .object(var fields) = object.state
            else { return nil }
            fields["state"] = .string(AppRequestState.abandoned.rawValue)
            var updated = object
            updated.state = .object(fields)
            updated.updatedAt = time
            return StateChange(object: updated, eventType: AppRequestState.abandoned.eventType)
        }
        if !changes.isEmpty { try await log.apply(changes) }
        return changes.count
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
    /// ending the request is cancelled (the SQLite store refuses writes from a cancelled task).
    private func record(_ request: Request, _ state: AppRequestState, error: AppRequestFailure? = nil) async throws {
        let change = change(request, state, error: error)
        let log = log
        _ = try await Task { try await log.apply([change]) }.value
    }

    private func change(_ request: Request, _ state: AppRequestState, error: AppRequestFailure? = nil) -> StateChange {
        StateChange(
            object: StoredObject(
                id: request.id, kind: Self.kind, ownerUID: request.ownerUID, state: request.state(state, error: error),
                createdAt: request.createdAt, updatedAt: state == .pending ? request.createdAt : now()),
            eventType: state.eventType)
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
    public func sweep(before cutoff: Date) async throws -> Int {
        let changes = try await log.store.objects(kind: Self.kind).compactMap { stored -> StateChange? in
            guard stored.updatedAt < cutoff, stored.state["state"]?.stringValue != AppRequestState.pending.rawValue
            else { return nil }
            return StateChange(object: stored, eventType: "\(Self.kind).removed", removesObject: true)
        }
        if !changes.isEmpty { try await log.apply(changes) }
        return changes.count
    }
}
