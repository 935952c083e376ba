import Foundation
import StpdCore
import Synchronization

/// Wraps a store and, once armed, holds the first filtered read that reaches the end of the log
/// (a page that is not full) on a gate *after* reading. That reproduces, on demand, the window
/// in which a subscription's replay has just seen the end of the log and events are committed
/// before it switches to live delivery.
final class GatedStore: ForwardingStore {
    let inner: any StateStore
    let gate = Gate()
    private let armed = Mutex(false)

    init(_ inner: any StateStore) { self.inner = inner }

    func arm() { armed.withLock { $0 = true } }

    func events(after: Int64, matching filter: EventFilter, limit: Int, maxBytes: Int) async throws -> EventPage {
        let page = try await inner.events(after: after, matching: filter, limit: limit, maxBytes: maxBytes)
        let hold =
            !page.endedEarly
            && armed.withLock { armed in
                defer { armed = false }
                return armed
            }
        if hold { await gate.wait() }
        return page
    }

}

/// A minimal store that is not an actor: its methods run on the caller's executor. With a
/// `SerialThreadExecutor` preference, code using it never leaves that executor, so the
/// executor going idle tells for sure that the code finished or is stuck. Only what the
/// `EventLog` tests use is implemented.
final class LockedStore: StateStore {
    private let log = Mutex<[Event]>([])

    init() {}

    func apply(_ changes: [StateChange], at time: Date) async throws -> [Event] {
        log.withLock { log in
            changes.map { change in
                let event = Event(
                    seq: Int64(log.count + 1), time: time, type: change.eventType.name, objectId: change.object.id,
                    objectKind: change.object.kind, ownerUID: change.object.ownerUID, object: change.object.state)
                log.append(event)
                return event
            }
        }
    }

    func events(after: Int64, limit: Int) async throws -> [Event] {
        log.withLock { Array($0.lazy.filter { $0.seq > after }.prefix(limit)) }
    }

    func events(after: Int64, matching filter: EventFilter, limit: Int, maxBytes: Int) async throws -> EventPage {
        log.withLock { log in
            let events = Array(log.lazy.filter { $0.seq > after && filter.matches($0) }.prefix(limit))
            let bounds = EventBounds(latestSeq: Int64(log.count), prunedThrough: 0)
            return EventPage(events: events, after: after, limit: limit, bytes: PageBytes(budget: .max), bounds: bounds)
        }
    }

    func eventBounds() async throws -> EventBounds {
        EventBounds(latestSeq: log.withLock { Int64($0.count) }, prunedThrough: 0)
    }

    func object(id: String, owner: UInt32?) async throws -> StoredObject? { nil }
    func objects(_ query: ObjectQuery) async throws -> [StoredObject] { [] }
    func lookup(key: String, owner: UInt32?, after: KeyHit?, limit: Int) async throws -> [KeyHit] { [] }
    func keyCount(key: String, cap: Int) async throws -> Int { 0 }
    func setAside(id: String, reason: String) async throws {}
    func setAsideCount() async throws -> Int { 0 }
    func statusCounts(kind: ObjectKind) async throws -> [String: Int] { [:] }
    func prune(_ retention: EventRetention, now: Date) async throws -> Int { 0 }
}
