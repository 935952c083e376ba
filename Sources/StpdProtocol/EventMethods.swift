import JSONRPC

/// Which events a subscriber or waiter wants; absent members match everything.
public struct EventFilterParams: Codable, Sendable, Hashable {
    public var objects: [String]?
    public var types: [String]?

    public init(objects: [String]? = nil, types: [String]? = nil) {
        self.objects = objects
        self.types = types
    }

    /// A filter's bounds: every event type there is fits `maxTypes` many times over, and a filter
    /// is read into the store's query and held by a subscription for its life.
    public static let maxObjects = 1000
    public static let maxTypes = 100
    /// The bytes of a filter's ids and types together.
    public static let maxBytes = 64 << 10

    /// The bytes of its ids and types, as `maxBytes` counts them.
    public var bytes: Int {
        (objects ?? []).reduce(0) { $0 + $1.utf8.count } + (types ?? []).reduce(0) { $0 + $1.utf8.count }
    }

    static let schema = JSONSchema.object(
        [
            "objects": .array(of: .string, "Only events of these object ids", maxItems: maxObjects),
            "types": .array(
                of: .string, "Only these event types; `kind.*` matches every type of a kind", maxItems: maxTypes),
        ], description: "Absent members match every event")
}

/// An event as clients receive it, in `event` notifications and from `events.wait`.
public struct EventRecord: Codable, Sendable, Hashable {
    public var seq: Int64
    public var type: String
    public var time: String
    public var objectId: String
    public var object: JSONValue

    public init(seq: Int64, type: String, time: String, objectId: String, object: JSONValue) {
        self.seq = seq
        self.type = type
        self.time = time
        self.objectId = objectId
        self.object = object
    }

    static let properties: [String: JSONSchema] = [
        "seq": .integer("Global, gap-free sequence number of the event", minimum: 1),
        "type": .string("Event type, `<kind>.<change>`"),
        "time": .string("When the change happened (RFC 3339)", format: "date-time"),
        "objectId": .string("Id of the object that changed"),
        "object": JSONSchema(["type": "object", "description": "The object's new state"]),
    ]
    static let schema = JSONSchema.object(properties, required: ["seq", "type", "time", "objectId", "object"])
}

public enum EventsSubscribe: RPCMethod {
    public struct Params: Codable, Sendable {
        public var since: Int64?
        public var filter: EventFilterParams?
        public init(since: Int64? = nil, filter: EventFilterParams? = nil) {
            self.since = since
            self.filter = filter
        }
    }
    public struct Result: Codable, Sendable, Hashable {
        public var subscription: String
        public var latestSeq: Int64
        public init(subscription: String, latestSeq: Int64) {
            self.subscription = subscription
            self.latestSeq = latestSeq
        }
    }
    public static let name = "events.subscribe"
    public static let summary = "Streams events on this connection as `event` notifications."
    public static let description: String? = """
        With `since`, every matching event after that seq is replayed first, then live events follow \
        with no gap and no duplicate. The reply comes before any event of the subscription. A \
        subscriber that cannot keep up gets one `events.dropped` notification naming the seq to \
        resume from, and its connection is closed. Only events of objects the caller created are \
        sent (root sees all). The subscriptions a connection and a user hold, and their filters' \
        bytes, are bounded (TooManySubscriptions); a filter holds at most 1000 object ids, 100 types \
        and 64 KiB.
        """
    public static let paramsSchema = JSONSchema.object([
        "since": .integer("Replay events after this seq first (0: the whole retained log)", minimum: 0),
        "filter": EventFilterParams.schema,
    ])
    public static let resultSchema = JSONSchema.object(
        [
            "subscription": .string("Subscription id, named in each `event` notification"),
            "latestSeq": .integer(
                "The last seq published when the subscription began; every later event reaches it", minimum: 0),
        ], required: ["subscription", "latestSeq"])
    public static let errors = [StpdErrors.cursorExpired, StpdErrors.cursorAhead, StpdErrors.tooManySubscriptions]
}

public enum EventsUnsubscribe: RPCMethod {
    public struct Params: Codable, Sendable {
        public var subscription: String
        public init(subscription: String) { self.subscription = subscription }
    }
    public struct Result: Codable, Sendable, Hashable {
        public var unsubscribed: Bool
        public init() { unsubscribed = true }
    }
    public static let name = "events.unsubscribe"
    public static let summary = "Ends a subscription of this connection."
    public static let paramsSchema = JSONSchema.object(
        ["subscription": .string("The id events.subscribe returned")], required: ["subscription"])
    public static let resultSchema = JSONSchema.object(
        ["unsubscribed": JSONSchema(["const": true])], required: ["unsubscribed"])
    public static let errors = [StpdErrors.subscriptionNotFound]
}

public enum EventsWait: RPCMethod {
    public struct Params: Codable, Sendable {
        public var since: Int64
        public var filter: EventFilterParams?
        public var timeout: Double?
        public var limit: Int?
        public init(since: Int64, filter: EventFilterParams? = nil, timeout: Double? = nil, limit: Int? = nil) {
            self.since = since
            self.filter = filter
            self.timeout = timeout
            self.limit = limit
        }
    }
    public struct Result: Codable, Sendable, Hashable {
        public var events: [EventRecord]
        public var next: Int64
        public var endedEarly: Bool
        public init(events: [EventRecord], next: Int64, endedEarly: Bool) {
            self.events = events
            self.next = next
            self.endedEarly = endedEarly
        }
    }
    public static let name = "events.wait"
    public static let summary =
        "Long-poll: matching events after `since`, waiting up to `timeout` seconds for the first."
    public static let description: String? = """
        For clients that cannot hold a connection open. Pass the returned `next` as `since` on the next call. \
        A page holds at most `limit` events and stops after the event that brings it to STPD_MAX_PAGE_BYTES \
        (1 MiB by default) of event objects: then `endedEarly` is true and more events may follow `next` at \
        once. The calls waiting at once are bounded per connection and per user (TooManyWaits); a call whose \
        connection closes ends at once.
        """
    public static let paramsSchema = JSONSchema.object(
        [
            "since": .integer("Return events after this seq", minimum: 0),
            "filter": EventFilterParams.schema,
            "timeout": JSONSchema([
                "type": "number", "minimum": 0, "maximum": 300,
                "description": "Seconds to wait when nothing matches yet (default 30)",
            ]),
            "limit": .integer("Most events returned (default 100)", minimum: 1, maximum: 1000),
        ], required: ["since"])
    public static let resultSchema = JSONSchema.object(
        [
            "events": .array(of: .ref("Event")),
            "next": .integer("Pass as `since` next time", minimum: 0),
            "endedEarly": .boolean(
                "The page stopped at `limit` or at its byte bound, not at the end of the log: call again at once"),
        ], required: ["events", "next", "endedEarly"])
    public static let errors = [StpdErrors.cursorExpired, StpdErrors.cursorAhead, StpdErrors.tooManyWaits]
}

public enum DebugEmit: RPCMethod {
    public struct Params: Codable, Sendable {
        public var count: Int?
        public var objectId: String?
        public var payload: JSONValue?
        public init(count: Int? = nil, objectId: String? = nil, payload: JSONValue? = nil) {
            self.count = count
            self.objectId = objectId
            self.payload = payload
        }
    }
    public struct Result: Codable, Sendable, Hashable {
        public var firstSeq: Int64
        public var lastSeq: Int64
        public init(firstSeq: Int64, lastSeq: Int64) {
            self.firstSeq = firstSeq
            self.lastSeq = lastSeq
        }
    }
    public static let name = "debug.emit"
    public static let summary = "Appends `debug.test` events to the log, for testing clients' event handling."
    public static let description: String? =
        "Only when the daemon runs with --debug-methods (STPD_DEBUG_METHODS=1); otherwise it answers Disabled."
    public static let paramsSchema = JSONSchema.object([
        "count": .integer(
            "How many events (default 1); count times the payload's size is at most 16 MiB", minimum: 1,
            maximum: 10_000),
        "objectId": .string(
            "The test object's id (default: a new one): a dbg_ id, new or of the caller's own debug object. "
                + "Anyone but root names it dbg_<uid>_…, with their own uid",
            pattern: "^dbg_[A-Za-z0-9_-]{1,64}$"),
        "payload": JSONSchema(["description": "Any JSON, carried in each event's object as `payload`"]),
    ])
    public static let resultSchema = JSONSchema.object(
        [
            "firstSeq": .integer("Seq of the first event", minimum: 1),
            "lastSeq": .integer("Seq of the last event", minimum: 1),
        ],
        required: ["firstSeq", "lastSeq"])
    /// The most bytes one call writes: `count` times the payload's size (as JSON).
    public static let maxTotalBytes = 16 << 20
    /// PermissionDenied: objectId names an object that is not a debug object of the caller's.
    public static let errors = [StpdErrors.disabled, StpdErrors.permissionDenied, StpdErrors.objectTooLarge]
}
