import Foundation
import StpdCore

/// A store in memory, for tests of the domain: the `StateStore` contract (its suite runs against
/// this and SQLite alike) without a file. Only tests use it, so it lives with them, not in the product.
public actor InMemoryStateStore: StateStore {
    private struct Filed: Hashable {
        var objectId: String
        var owner: UInt32
        var ordinal: Int64
    }

    private var objectsByID: [String: StoredObject] = [:]
    private var setAsideIDs: Set<String> = []
    private var keys: [String: [String: Filed]] = [:]
    private var log: [Event] = []
    private var bounds = EventBounds(latestSeq: 0, prunedThrough: 0)

    public init() {}

    public func apply(_ changes: [StateChange], at time: Date) throws -> [Event] {
        // Checked first: a failed precondition writes nothing, as SQLite's rollback does.
        var shadow: [String: StoredObject?] = [:]
        for change in changes {
            let id = change.object.id
            let current = shadow[id] ?? objectsByID[id]
            guard change.admits(current) else { throw StoreConflict(objectId: id) }
            shadow[id] = change.removesObject ? .some(nil) : change.object
        }
        return changes.map { change in
            let id = change.object.id
            bounds.latestSeq += 1
            if change.removesObject {
                objectsByID[id] = nil
                file(id, owner: change.object.ownerUID, under: [], seq: bounds.latestSeq)
            } else {
                var stored = change.object
                if let existing = objectsByID[id] {
                    // As in SQLite: kind, owner and creation time are fixed when an object is created.
                    stored.kind = existing.kind
                    stored.ownerUID = existing.ownerUID
                    stored.createdAt = existing.createdAt
                }
                stored.version = (objectsByID[id]?.version ?? 0) + 1
                objectsByID[id] = stored
                if let newKeys = change.keys { file(id, owner: stored.ownerUID, under: newKeys, seq: bounds.latestSeq) }
            }
            let event = Event(
                seq: bounds.latestSeq, time: time, type: change.eventType.name, objectId: id,
                objectKind: change.object.kind, ownerUID: change.object.ownerUID, object: change.eventObject)
            log.append(event)
            return event
        }
    }

    private func file(_ id: String, owner: UInt32, under newKeys: [String], seq: Int64) {
        for key in keys.keys where !newKeys.contains(key) {
            keys[key]?[id] = nil
            if keys[key]?.isEmpty == true { keys[key] = nil }
        }
        for key in newKeys where keys[key]?[id] == nil {
            keys[key, default: [:]][id] = Filed(objectId: id, owner: owner, ordinal: seq)
        }
    }

    public func object(id: String, owner: UInt32?) -> StoredObject? {
        guard !setAsideIDs.contains(id), let object = objectsByID[id], owner.map({ $0 == object.ownerUID }) ?? true
        else { return nil }
        return object
    }

    public func objects(_ query: ObjectQuery) -> [StoredObject] {
        let sorted = objectsByID.values.filter { query.matches($0) && !setAsideIDs.contains($0.id) }
            .sorted { ($0.createdAt, $0.id) < ($1.createdAt, $1.id) }
        var page = sorted[...]
        if let cursor = query.startingAfter, let after = objectsByID[cursor] {
            page = page.drop { ($0.createdAt, $0.id) <= (after.createdAt, after.id) }
        }
        var bytes = PageBytes(budget: query.maxBytes ?? .max)
        return Array(
            page.prefix(query.limit ?? .max).prefix { object in
                defer { bytes.add(object.state) }
                return !bytes.isFull
            })
    }

    public func lookup(key: String, owner: UInt32?, after: KeyHit?, limit: Int) -> [KeyHit] {
        let hits = (keys[key].map { Array($0.values) } ?? []).compactMap { entry -> KeyHit? in
            let hit = KeyHit(objectId: entry.objectId, ordinal: entry.ordinal)
            guard owner.map({ $0 == entry.owner }) ?? true, !setAsideIDs.contains(entry.objectId),
                after.map({ $0 < hit }) ?? true
            else { return nil }
            return hit
        }
        return Array(hits.sorted().prefix(limit))
    }

    public func keyCount(key: String, cap: Int) -> Int { min(keys[key]?.count ?? 0, cap) }

    public func setAside(id: String, reason: String) { setAsideIDs.insert(id) }

    public func setAsideCount() -> Int { setAsideIDs.count }

    public func statusCounts(kind: ObjectKind) -> [String: Int] {
        objectsByID.values.reduce(into: [:]) { counts, object in
            guard object.kind == kind.rawValue, !setAsideIDs.contains(object.id), let status = object.status else {
                return
            }
            counts[status, default: 0] += 1
        }
    }

    public func events(after: Int64, limit: Int) -> [Event] {
        Array(log.lazy.filter { $0.seq > after }.prefix(limit))
    }

    public func events(after: Int64, matching filter: EventFilter, limit: Int, maxBytes: Int) -> EventPage {
        var matched: [Event] = []
        var bytes = PageBytes(budget: maxBytes)
        for event in log where event.seq > after && filter.matches(event) {
            guard matched.count < limit, !bytes.isFull else { break }
            matched.append(event)
            bytes.add(event.object)
        }
        return EventPage(events: matched, after: after, limit: limit, bytes: bytes, bounds: bounds)
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
