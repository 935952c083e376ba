import JSONRPC

/// A notification the daemon sends to clients (never a reply; it carries no id).
public struct NotificationDeclaration: Sendable {
    public var method: String
    public var summary: String
    public var paramsSchema: JSONSchema
}

public enum Notifications {
    /// Server-to-client notifications; subscriptions (`events.*`) deliver through `event`.
    public static let all: [NotificationDeclaration] = [event, dropped]

    public static let event = NotificationDeclaration(
        method: "event",
        summary: "One event of a subscription: the object's new state after a change, in `seq` order.",
        paramsSchema: .object(
            EventRecord.properties.merging(["subscription": .string("The subscription id returned by events.subscribe")]
            ) { a, _ in a },
            required: ["subscription", "seq", "type", "time", "objectId", "object"]))

    public static let dropped = NotificationDeclaration(
        method: "events.dropped",
        summary: "The last notification of a subscription that could not continue; the connection closes after it.",
        paramsSchema: .object(
            [
                "subscription": .string("The subscription dropped"),
                "reason": .enumeration(
                    ["slow-consumer", "retention"],
                    "`slow-consumer`: it did not read fast enough; `retention`: events it had not been sent yet were pruned (resuming gets CursorExpired)"
                ),
                "resumeSince": .integer(
                    "Every event up to this seq was sent; subscribe again with this as `since`", minimum: 0),
            ],
            required: ["subscription", "reason", "resumeSince"]))

    public struct EventParams: Codable, Sendable {
        public var subscription: String
        public var seq: Int64
        public var type: String
        public var time: String
        public var objectId: String
        public var object: JSONValue

        public init(subscription: String, record: EventRecord) {
            self.subscription = subscription
            seq = record.seq
            type = record.type
            time = record.time
            objectId = record.objectId
            object = record.object
        }
    }

    public struct DroppedParams: Codable, Sendable {
        public var subscription: String
        public var reason: String
        public var resumeSince: Int64

        public init(subscription: String, reason: String, resumeSince: Int64) {
            self.subscription = subscription
            self.reason = reason
            self.resumeSince = resumeSince
        }
    }
}
