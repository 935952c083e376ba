import JSONRPC

/// A notification the daemon sends to clients (never a reply; it carries no id).
public struct NotificationDeclaration: Sendable {
    public var method: String
    public var summary: String
    public var paramsSchema: JSONSchema
}

public enum Notifications {
    /// Server-to-client notifications; subscriptions (`events.*`) deliver through `event`.
    public static let all: [NotificationDeclaration] = [event]

    public static let event = NotificationDeclaration(
        method: "event",
        summary: "One event of a subscription: the object's new state after a change, in `seq` order.",
        paramsSchema: .object(
            [
                "subscription": .string("The subscription id returned by events.subscribe"),
                "seq": .integer("Global, gap-free sequence number of the event", minimum: 1),
                "type": .string("Event type, `<kind>.<change>`"),
                "time": .string("When the change happened (RFC 3339)", format: "date-time"),
                "objectId": .string("Id of the object that changed"),
                "object": JSONSchema(["type": "object", "description": "The object's new state"]),
            ],
            required: ["subscription", "seq", "type", "time", "objectId", "object"]))
}
