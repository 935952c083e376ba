import Foundation
import JSONRPC
import StpdCore
import Synchronization

/// An `EventSink` the test reads from in order: `next()` returns the next event delivered,
/// waiting for it if none is there yet. How a test learns that a request is pending.
final class EventInbox: EventSink {
    private struct State {
        var buffered: [Event] = []
        var waiters: [(id: Int, continuation: CheckedContinuation<Event, any Error>)] = []
        var nextWaiterID = 0
        var all: [Event] = []
    }

    private let state = Mutex(State())

    /// Every event delivered so far.
    var received: [Event] { state.withLock { $0.all } }

    /// Throws `CancellationError` when the test's task is cancelled (its time limit), rather than hang.
    func next() async throws -> Event {
        let id = state.withLock { s in
            defer { s.nextWaiterID += 1 }
            return s.nextWaiterID
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Event, any Error>) in
                let ready = state.withLock { s -> Result<Event, any Error>? in
                    if !s.buffered.isEmpty { return .success(s.buffered.removeFirst()) }
                    if Task.isCancelled { return .failure(CancellationError()) }
                    s.waiters.append((id, continuation))
                    return nil
                }
                if let ready { continuation.resume(with: ready) }
            }
        } onCancel: {
            state.withLock { s -> CheckedContinuation<Event, any Error>? in
                guard let index = s.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                return s.waiters.remove(at: index).continuation
            }?.resume(throwing: CancellationError())
        }
    }

    func offer(_ event: Event, subscription: String) -> Bool {
        let waiter = state.withLock { s -> CheckedContinuation<Event, any Error>? in
            s.all.append(event)
            if !s.waiters.isEmpty { return s.waiters.removeFirst().continuation }
            s.buffered.append(event)
            return nil
        }
        waiter?.resume(returning: event)
        return true
    }

    func room(for event: Event, subscription: String) async -> Bool { true }

    func dropped(subscription: String, resumeSince: Int64, reason: DropReason) {}
}

/// A broker over an in-memory store and a manual clock, with an inbox subscribed to `appRequest.*`
/// as an app would be.
struct AppRequestFixture {
    let store: any StateStore
    let log: EventLog
    let clock = ManualClock()
    let background = BackgroundWork()
    let work: LeasedWork
    let broker: AppRequestBroker
    let inbox = EventInbox()

    init(store: any StateStore = InMemoryStateStore()) async throws {
        self.store = store
        log = try await EventLog(store: store, failures: DomainFailures(), now: { t0 })
        work = LeasedWork(background: background)
        broker = AppRequestBroker(log: log, clock: clock, now: { t0 }, work: work)
        let subscription = try await log.subscribe(
            id: "app", since: nil, filter: EventFilter(types: ["appRequest.*"]), sink: inbox)
        await log.start(subscription)
    }

    /// The next `appRequest.*` event.
    func next() async throws -> Event { try await inbox.next() }

    /// Runs `call`, waits for the request it makes, answers it as the request's owner, and returns
    /// the request's pending event, its answered event and the call's outcome.
    func roundTrip<T: Sendable>(
        result: JSONValue?, error: AppRequestFailure? = nil, _ call: @escaping @Sendable () async throws -> T
    ) async throws -> (pending: Event, answered: Event, outcome: Result<T, any Error>) {
        let task = Task { try await call() }
        let pending = try await next()
        try await broker.answer(
            id: pending.objectId, for: Caller(uid: pending.ownerUID),
            error.map { .failure($0) } ?? .result(result ?? .null))
        let outcome = await task.result
        let answered = try await next()
        return (pending, answered, outcome)
    }
}

/// A store whose `apply` fails once armed, for the answer-not-recorded path.
final class FailingApplyStore: ForwardingStore {
    struct Refused: Error, Equatable {}

    let inner: any StateStore = InMemoryStateStore()
    private let armed = Mutex(false)

    func arm() { armed.withLock { $0 = true } }

    func apply(_ changes: [StateChange], at time: Date) async throws -> [Event] {
        if armed.withLock({ $0 }) { throw Refused() }
        return try await inner.apply(changes, at: time)
    }
}

func appCardJSON(_ id: String, applePay: Bool = false) -> JSONValue {
    var card: [String: JSONValue] = ["brand": "visa", "last4": "4242", "exp_month": 12, "exp_year": 2030]
    if applePay { card["wallet"] = ["type": "apple_pay"] }
    return ["id": .string(id), "object": "payment_method", "type": "card", "card": .object(card)]
}

let appCustomerJSON: JSONValue = [
    "id": "cus_app", "object": "customer",
    "shipping": [
        "name": "Ada", "phone": "+4930123", "address": ["line1": "1 Main", "city": "Berlin", "country": "DE"],
    ],
]
