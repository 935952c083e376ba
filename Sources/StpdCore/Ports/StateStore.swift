import Foundation
import JSONRPC

/// Where the domain keeps its objects and the event log. Implemented over SQLite by StpdStore
/// (one daemon), over PostgreSQL by StpdPostgres (a fleet sharing one database), and in memory
/// by the domain's tests (`Tests/StpdCoreTests/Support`); the domain never sees which
/// (`RecordTable` is its only user for objects).
///
/// Invariants every store keeps:
/// - `apply` is one transaction: every change's object write, its key rows and its event, or
///   none of them. A change whose `precondition` does not hold fails the whole transaction with
///   `StoreConflict`, so a change computed from a stale copy is never written.
/// - Each committed change of an object bumps its `version` by one (a new object starts at 1).
/// - `seq` is global, gap-free and increasing in commit order.
public protocol StateStore: Sendable {
    /// Commits the changes with one event each; returns the events with their `seq`, in order.
    /// Kind, owner and creation time of an object are fixed when it is created.
    func apply(_ changes: [StateChange], at time: Date) async throws -> [Event]
    /// The object, unless it was set aside; with `owner`, only if that uid owns it, decided on the
    /// row's owner column before anything is unsealed or decoded (so another uid's id costs what
    /// a missing one does).
    func object(id: String, owner: UInt32?) async throws -> StoredObject?
    /// Objects of one kind matching `query`, ordered by (creation time, id); with
    /// `query.maxBytes`, the store stops once the objects read hold that many bytes.
    func objects(_ query: ObjectQuery) async throws -> [StoredObject]
    /// The objects filed under `key` (see `StateChange.keys`), ordered by the `seq` of the change
    /// that filed each (ties by id), after the hit `after`, at most `limit`.
    func lookup(key: String, owner: UInt32?, after: KeyHit?, limit: Int) async throws -> [KeyHit]
    /// How many objects are filed under `key`, counting no further than `cap`.
    func keyCount(key: String, cap: Int) async throws -> Int
    /// Takes an object that cannot be decoded out of every query, keeping its row for a human.
    func setAside(id: String, reason: String) async throws
    /// How many objects were set aside.
    func setAsideCount() async throws -> Int
    /// How many objects of `kind` there are by derived status (objects without one are not counted).
    func statusCounts(kind: ObjectKind) async throws -> [String: Int]
    /// Events with `seq > after`, oldest first, at most `limit`.
    func events(after: Int64, limit: Int) async throws -> [Event]
    /// Events with `seq > after` that `filter` matches, oldest first, at most `limit` and no more
    /// once they hold `maxBytes` (`PageBytes`), with the cursor to continue from and the
    /// log's bounds, all from one snapshot. The work done is proportional to the events the
    /// filter's viewer owns (all of them for no viewer), never to other users' events; only the
    /// events returned are decoded.
    func events(after: Int64, matching filter: EventFilter, limit: Int, maxBytes: Int) async throws -> EventPage
    func eventBounds() async throws -> EventBounds
    /// Drops events older than the retention allows; returns how many were dropped.
    @discardableResult
    func prune(_ retention: EventRetention, now: Date) async throws -> Int
}

extension StateStore {
    public func object(id: String) async throws -> StoredObject? { try await object(id: id, owner: nil) }

    public func events(after: Int64, matching filter: EventFilter, limit: Int) async throws -> EventPage {
        try await events(after: after, matching: filter, limit: limit, maxBytes: .max)
    }
}

/// How much of a page's byte budget a store has read: each object or event counts the bytes of
/// its JSON (`JSONText.size`), so every store measures alike. A page stops after the item that
/// brings it to the budget; that item is in the page, so a page is never empty for want of room.
public struct PageBytes: Sendable {
    public let budget: Int
    public private(set) var used = 0

    public init(budget: Int) { self.budget = budget }

    public var isFull: Bool { used >= budget }

    public mutating func add(_ value: JSONValue) { used += JSONText.size(value) }
}

/// A change's precondition did not hold: the object moved on (or appeared, or went) since the
/// change was computed. Nothing of the transaction was written.
public struct StoreConflict: Error, Sendable, Equatable {
    public var objectId: String
    public init(objectId: String) { self.objectId = objectId }
}

/// An object filed under a lookup key, with the `seq` of the change that filed it.
public struct KeyHit: Sendable, Hashable, Comparable {
    public var objectId: String
    public var ordinal: Int64
    public init(objectId: String, ordinal: Int64) {
        self.objectId = objectId
        self.ordinal = ordinal
    }

    public static func < (a: KeyHit, b: KeyHit) -> Bool { (a.ordinal, a.objectId) < (b.ordinal, b.objectId) }
}

/// Which objects of a kind to read. Every member but `kind` narrows; nil does not.
public struct ObjectQuery: Sendable, Hashable {
    public var kind: String
    public var owner: UInt32?
    public var status: String?
    public var live: Bool?
    /// Finished objects last changed before this time (the retention sweep).
    public var finishedBefore: Date?
    /// Objects after this one in (creation time, id) order: a page cursor.
    public var startingAfter: String?
    public var limit: Int?
    /// Stop after the object whose state brings the states read to this many bytes (`PageBytes`).
    public var maxBytes: Int?

    public init(
        kind: String, owner: UInt32? = nil, status: String? = nil, live: Bool? = nil, finishedBefore: Date? = nil,
        startingAfter: String? = nil, limit: Int? = nil, maxBytes: Int? = nil
    ) {
        self.kind = kind
        self.owner = owner
        self.status = status
        self.live = live
        self.finishedBefore = finishedBefore
        self.startingAfter = startingAfter
        self.limit = limit
        self.maxBytes = maxBytes
    }

    /// Whether `object` is one this query asks for (cursor and limit aside).
    public func matches(_ object: StoredObject) -> Bool {
        object.kind == kind && (owner.map { $0 == object.ownerUID } ?? true)
            && (status.map { $0 == object.status } ?? true) && (live.map { $0 == object.live } ?? true)
            && (finishedBefore.map { object.finished && object.updatedAt < $0 } ?? true)
    }
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

extension Duration {
    public var seconds: TimeInterval {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}

/// The store could not be reached, or failed a transaction for a reason of its own (a shared
/// database that is down). Nothing of the transaction was committed, unless `outcomeUnknown`:
/// the connection went while its COMMIT was on the way and the database could not be asked in
/// time, so it may have committed (its event is then in the log). The call can be retried.
public struct StoreUnavailable: Error, Sendable, Equatable, CustomStringConvertible {
    public var reason: String
    /// The daemon that answered (its `STPD_INSTANCE`), so a client of a fleet can tell which.
    public var instance: String?
    public var outcomeUnknown: Bool
    public init(reason: String, instance: String? = nil, outcomeUnknown: Bool = false) {
        self.reason = reason
        self.instance = instance
        self.outcomeUnknown = outcomeUnknown
    }

    public var description: String { "store unavailable: \(reason)" }
}

/// A stored object's (or event's) sealed state cannot be opened by this daemon: it was sealed
/// with a state key this daemon does not have, or it was damaged. The row is left as it is (in a
/// fleet another instance may hold the key).
public struct StateUnreadable: Error, Sendable, Equatable, CustomStringConvertible {
    public var objectId: String
    public var reason: String
    public var instance: String?
    public init(objectId: String, reason: String, instance: String? = nil) {
        self.objectId = objectId
        self.reason = reason
        self.instance = instance
    }

    public var description: String { "state unreadable: \(reason)" }
}
