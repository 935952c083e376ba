import Foundation
import StpdCore

/// A store that hands every call to `inner`; test stores implement only what they change.
protocol ForwardingStore: StateStore {
    var inner: any StateStore { get }
}

extension ForwardingStore {
    func apply(_ changes: [StateChange], at time: Date) async throws -> [Event] {
        try await inner.apply(changes, at: time)
    }
    func object(id: String, owner: UInt32?) async throws -> StoredObject? {
        try await inner.object(id: id, owner: owner)
    }
    func objects(_ query: ObjectQuery) async throws -> [StoredObject] { try await inner.objects(query) }
    func lookup(key: String, owner: UInt32?, after: KeyHit?, limit: Int) async throws -> [KeyHit] {
        try await inner.lookup(key: key, owner: owner, after: after, limit: limit)
    }
    func keyCount(key: String, cap: Int) async throws -> Int { try await inner.keyCount(key: key, cap: cap) }
    func setAside(id: String, reason: String) async throws { try await inner.setAside(id: id, reason: reason) }
    func setAsideCount() async throws -> Int { try await inner.setAsideCount() }
    func statusCounts(kind: ObjectKind) async throws -> [String: Int] { try await inner.statusCounts(kind: kind) }
    func events(after: Int64, limit: Int) async throws -> [Event] { try await inner.events(after: after, limit: limit) }
    func events(after: Int64, matching filter: EventFilter, limit: Int, maxBytes: Int) async throws -> EventPage {
        try await inner.events(after: after, matching: filter, limit: limit, maxBytes: maxBytes)
    }
    func eventBounds() async throws -> EventBounds { try await inner.eventBounds() }
    func prune(_ retention: EventRetention, now: Date) async throws -> Int {
        try await inner.prune(retention, now: now)
    }
}
