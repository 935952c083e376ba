import Foundation
import JSONRPC
import StpdValues

/// A durable object of the daemon (customer session, payment context, Source, redirect session...),
/// stored as its JSON state with the uid that created it, and what the store derives from the
/// state to query it without decoding it (`status`, `live`, `finished`).
public struct StoredObject: Sendable, Hashable, Codable {
    public var id: String
    public var kind: String
    public var ownerUID: UInt32
    public var state: JSONValue
    public var createdAt: Date
    public var updatedAt: Date
    /// 1 when created, bumped by each committed change.
    public var version: Int64
    /// The status a list can be filtered by, if the kind has one.
    public var status: String?
    /// Needs this process's attention (a running poll, a deadline, a follow-up): loaded at start.
    public var live: Bool
    /// Done: the retention sweep removes it once untouched for the retention age.
    public var finished: Bool

    public init(
        id: String, kind: String, ownerUID: UInt32, state: JSONValue, createdAt: Date, updatedAt: Date,
        version: Int64 = 0, status: String? = nil, live: Bool = false, finished: Bool = false
    ) {
        self.id = id
        self.kind = kind
        self.ownerUID = ownerUID
        self.state = state
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.version = version
        self.status = status
        self.live = live
        self.finished = finished
    }
}

/// One state change to commit: the object's new state and the event that announces it.
/// `removesObject` deletes the object after recording its last state in the event.
/// `publicState` is what the event carries when the stored state holds secrets (a backend's
/// bearer token, say) that subscribers must not see; by default the event carries the state.
public struct StateChange: Sendable {
    /// What must hold for the change to be written.
    public enum Precondition: Sendable, Hashable {
        /// The object does not exist yet.
        case absent
        /// The object is at this version: the change was computed from it.
        case version(Int64)
        /// Whatever is there (objects written by one writer only, such as debug objects).
        case none
    }

    public var object: StoredObject
    public var eventType: EventType
    public var removesObject: Bool
    public var publicState: JSONValue?
    public var precondition: Precondition
    /// The lookup keys the object is filed under from now on (nil: unchanged). A key it keeps
    /// keeps its ordinal; a new one gets the `seq` of this change's event.
    public var keys: [String]?

    public init(
        object: StoredObject, eventType: EventType, removesObject: Bool = false, publicState: JSONValue? = nil,
        precondition: Precondition = .none, keys: [String]? = nil
    ) {
        self.object = object
        self.eventType = eventType
        self.removesObject = removesObject
        self.publicState = publicState
        self.precondition = precondition
        self.keys = keys
    }

    /// What the event records as the object's new state.
    public var eventObject: JSONValue { publicState ?? object.state }

    /// Whether `current` (nil: no such object) satisfies the precondition.
    public func admits(_ current: StoredObject?) -> Bool {
        switch precondition {
        case .absent: current == nil
        case .version(let version): current?.version == version
        case .none: true
        }
    }
}

/// An entry of the event log. `seq` is global, gap-free and increasing.
public struct Event: Sendable, Hashable, Codable {
    public var seq: Int64
    public var time: Date
    public var type: String
    public var objectId: String
    public var objectKind: String
    public var ownerUID: UInt32
    public var object: JSONValue

    public init(
        seq: Int64, time: Date, type: String, objectId: String, objectKind: String, ownerUID: UInt32, object: JSONValue
    ) {
        self.seq = seq
        self.time = time
        self.type = type
        self.objectId = objectId
        self.objectKind = objectKind
        self.ownerUID = ownerUID
        self.object = object
    }
}

/// Which events a reader wants. Types match exactly, or by prefix when written `kind.*`.
/// `viewerUID` limits events to objects that user created (nil: every user's, as for root).
/// Strings compare byte for byte (UTF-8), as SQLite compares them, so a store that filters in
/// SQL and `matches` always agree.
public struct EventFilter: Sendable, Hashable {
    public var objectIds: Set<String>?
    public var types: [String]?
    public var viewerUID: UInt32?

    public init(objectIds: Set<String>? = nil, types: [String]? = nil, viewerUID: UInt32? = nil) {
        self.objectIds = objectIds
        self.types = types
        self.viewerUID = viewerUID
    }

    public func matches(_ event: Event) -> Bool {
        if let viewerUID, event.ownerUID != viewerUID { return false }
        if let objectIds {
            // A Set finds canonically equivalent strings; the bytes must be the same too.
            guard let index = objectIds.firstIndex(of: event.objectId),
                objectIds[index].utf8.elementsEqual(event.objectId.utf8)
            else { return false }
        }
        if let types, !types.contains(where: { Self.type($0, matches: event.type) }) { return false }
        return true
    }

    static func type(_ pattern: String, matches type: String) -> Bool {
        if let prefix = typePrefix(pattern) { return type.utf8.starts(with: prefix.utf8) }
        return pattern.utf8.elementsEqual(type.utf8)
    }

    /// The prefix a `kind.*` pattern stands for (`kind.`), or nil for an exact type.
    public static func typePrefix(_ pattern: String) -> Substring? {
        pattern.hasSuffix(".*") ? pattern.dropLast() : nil
    }
}

/// One read of the log through a filter (`StateStore.events(after:matching:limit:maxBytes:)`),
/// taken from one snapshot of the store.
public struct EventPage: Sendable, Hashable {
    /// The matching events after the cursor, oldest first.
    public var events: [Event]
    /// Every matching event with a `seq` up to here is in `events` (or was before the cursor):
    /// the cursor for the next read. It is the last event returned when the page ended early,
    /// else the latest `seq` of the log when it was read.
    public var through: Int64
    /// The log's span at the same moment.
    public var bounds: EventBounds
    /// The page stopped at its count or its bytes, not at the end of the log: more matching
    /// events may follow `through` at once.
    public var endedEarly: Bool

    public init(events: [Event], through: Int64, bounds: EventBounds, endedEarly: Bool = false) {
        self.events = events
        self.through = through
        self.bounds = bounds
        self.endedEarly = endedEarly
    }

    /// The page of `events` read for `limit` and `bytes` after `after`.
    public init(events: [Event], after: Int64, limit: Int, bytes: PageBytes, bounds: EventBounds) {
        let endedEarly = events.count == limit || bytes.isFull
        self.init(
            events: events, through: endedEarly ? events.last?.seq ?? after : max(after, bounds.latestSeq),
            bounds: bounds, endedEarly: endedEarly)
    }
}

/// How much of the event log is kept. Whichever limit is reached first prunes.
public struct EventRetention: Sendable, Hashable {
    public var maxAge: Duration
    public var maxCount: Int

    public init(maxAge: Duration = .seconds(7 * 24 * 3600), maxCount: Int = 100_000) {
        self.maxAge = maxAge
        self.maxCount = maxCount
    }

    /// Events appended between two prunes of a growing log (1% of `maxCount`, at least 100): the
    /// log is pruned a little at a time as it grows, so a restart never meets a large backlog.
    public var pruneEvery: Int { max(100, maxCount / 100) }
}

/// Ids of the daemon's objects: a kind prefix and 24 random lower-case hex digits (`cses_3f…`).
public enum ObjectID {
    public static func make(_ prefix: String) -> String {
        prefix + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(24)
    }
}
