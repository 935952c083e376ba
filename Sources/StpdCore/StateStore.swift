import Foundation

/// Where the domain keeps its objects and the event log. Implemented over SQLite by StpdStore
/// and in memory here for tests; the domain never sees which.
public protocol StateStore: Sendable {
    /// Saves every object's new state (its kind, owner and creation time are kept from when it
    /// was created) and appends one event per change in one transaction
    /// (no event without its change, no change without its event). Returns the events with
    /// their `seq`, in order.
    func apply(_ changes: [StateChange], at time: Date) async throws -> [Event]
    func object(id: String) async throws -> StoredObject?
    func objects(kind: String) async throws -> [StoredObject]
    /// Events with `seq > after`, oldest first, at most `limit`.
    func events(after: Int64, limit: Int) async throws -> [Event]
    /// Events with `seq > after` that `filter` matches, oldest first, at most `limit`, with the
    /// cursor to continue from and the log's bounds, all from one snapshot. The work done is
    /// proportional to the events the filter's viewer owns (all of them for no viewer), never
    /// to other users' events; only the events returned are decoded.
    func events(after: Int64, matching filter: EventFilter, limit: Int) async throws -> EventPage
    func eventBounds() async throws -> EventBounds
    /// Drops events older than the retention allows; returns how many were dropped.
    @discardableResult
    func prune(_ retention: EventRetention, now: Date) async throws -> Int
}

/// The span of the event log: `latestSeq` is the last appended (0 if none ever was);
/// every event after `prunedThrough` is still kept.
public struct EventBounds: Sendable, Hashable, Codable {
    public var latestSeq: Int64
    public var prunedThrough: Int64

    public init(latestSeq: Int64, prunedThrough: Int64) {
        self.latestSeq = latestSeq
        self.prunedThrough = prunedThrough
    }

    /// The oldest `seq` a reader can still get.
    public var oldestKept: Int64 { prunedThrough + 1 }
}

/// A store in memory, for tests of the domain.
public actor InMemoryStateStore: StateStore {
    private var objectsByID: [String: StoredObject] = [:]
    private var log: [Event] = []
    private var bounds = EventBounds(latestSeq: 0, prunedThrough: 0)

    public init() {}

    public func apply(_ changes: [StateChange], at time: Date) -> [Event] {
        changes.map { change in
            if change.removesObject {
                objectsByID[change.object.id] = nil
            } else if var existing = objectsByID[change.object.id] {
                // As in SQLite: kind, owner and creation time are fixed when an object is created.
                existing.state = change.object.state
                existing.updatedAt = change.object.updatedAt
                objectsByID[change.object.id] = existing
            } else {
                objectsByID[change.object.id] = change.object
            }
            bounds.latestSeq += 1
            let event = Event(
                seq: bounds.latestSeq, time: time, type: change.eventType, objectId: change.object.id,
                objectKind: change.object.kind, ownerUID: change.object.ownerUID, object: change.eventObject)
            log.append(event)
            return event
        }
    }

    public func object(id: String) -> StoredObject? { objectsByID[id] }

    public func objects(kind: String) -> [StoredObject] {
        objectsByID.values.filter { $0.kind == kind }.sorted { $0.createdAt < $1.createdAt }
    }

    public func events(after: Int64, limit: Int) -> [Event] {
        Array(log.lazy.filter { $0.seq > after }.prefix(limit))
    }

    public func events(after: Int64, matching filter: EventFilter, limit: Int) -> EventPage {
        var matched: [Event] = []
        for event in log where event.seq > after && filter.matches(event) {
            guard matched.count < limit else { break }
            matched.append(event)
        }
        let through = matched.count == limit ? matched.last?.seq ?? after : max(after, bounds.latestSeq)
        return EventPage(events: matched, through: through, bounds: bounds)
    }

    public func eventBounds() -> EventBounds { bounds }

    public func prune(_ retention: EventRetention, now: Date) -> Int {
        let cutoff = now.addingTimeInterval(-retention.maxAge.seconds)
        let overCount = max(0, log.count - retention.maxCount)
        let dropped = log.enumerated().prefix { index, event in index < overCount || event.time < cutoff }.count
        if dropped > 0 {
            bounds.prunedThrough = log[dropped - 1].seq
            log.removeFirst(dropped)
        }
        return dropped
    }
}

extension Duration {
    public var seconds: TimeInterval {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
