import Foundation
import JSONRPC

/// How `stpctl watch` and `stpctl events wait` print an event: the params of an `event`
/// notification, or a member of `events.wait`'s `events`.
public enum EventRender {
    /// The event's members in the order the contract lists them; any others follow, sorted.
    public static let fieldOrder = ["seq", "type", "time", "objectId", "object"]

    /// One compact JSON object on one line: the event without `subscription` (the id of a
    /// subscription that ends at the next reconnect means nothing to a reader of the stream).
    public static func jsonLine(_ event: JSONValue) -> String {
        guard var members = event.objectValue else { return Render.json(event, pretty: false) }
        members["subscription"] = nil
        let keys = fieldOrder.filter { members[$0] != nil } + members.keys.filter { !fieldOrder.contains($0) }.sorted()
        let body = keys.map { key in
            Render.json(JSONValue.string(key), pretty: false) + ":" + Render.json(members[key]!, pretty: false)
        }
        return "{" + body.joined(separator: ",") + "}"
    }

    /// One line for people: local time, seq, type, object id and a short summary of the object.
    public static func humanLine(_ event: JSONValue, timeZone: TimeZone = .current) -> String {
        let seq = event["seq"].map(Render.scalar) ?? "?"
        let time = event["time"]?.stringValue.map { localTime($0, timeZone: timeZone) } ?? "-"
        let type = event["type"]?.stringValue ?? "?"
        let objectId = event["objectId"]?.stringValue ?? "-"
        let summary = event["object"].map { summarize($0, objectId: objectId) } ?? ""
        let line = "\(time)  #\(seq)  \(Render.pad(type, 24))  \(objectId)" + (summary.isEmpty ? "" : "  " + summary)
        return line
    }

    /// Members shown first when an object has them, in this order; the rest follow sorted.
    static let preferredMembers = ["status", "state", "amount", "currency", "reason", "url"]

    /// `key=value` pairs of the object's scalar members, the interesting ones first, cut at
    /// `limit` characters. Leaves out what the line already says (`id`, `object`) and anything
    /// named like a secret (client secrets, keys), which stpctl never prints for people.
    public static func summarize(_ object: JSONValue, objectId: String? = nil, limit: Int = 100) -> String {
        guard let members = object.objectValue else { return truncate(Render.scalar(object), limit) }
        let keys = members.keys.filter { key in
            !(key == "id" && (objectId == nil || members[key]?.stringValue == objectId)) && key != "object"
                && !isSecret(key) && members[key] != .null
        }
        let ordered = preferredMembers.filter(keys.contains) + keys.filter { !preferredMembers.contains($0) }.sorted()
        let pairs = ordered.map { key in "\(key)=\(brief(members[key]!))" }
        return truncate(pairs.joined(separator: " "), limit)
    }

    /// Member names whose values are credentials: `client_secret`, `clientSecret`, `secret`,
    /// `ephemeralKey`, `api_key`, `password`...
    public static func isSecret(_ key: String) -> Bool {
        let lower = key.lowercased()
        return lower.contains("secret") || lower.contains("password") || lower.hasSuffix("key")
    }

    /// RFC 3339 as `yyyy-MM-dd HH:mm:ss` in `timeZone`; anything unparsable as it is.
    public static func localTime(_ text: String, timeZone: TimeZone = .current) -> String {
        let plain = Date.ISO8601FormatStyle()
        let fractional = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
        guard let date = (try? plain.parse(text)) ?? (try? fractional.parse(text)) else { return text }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
        return String(
            format: "%04d-%02d-%02d %02d:%02d:%02d", c.year ?? 0, c.month ?? 0, c.day ?? 0, c.hour ?? 0, c.minute ?? 0,
            c.second ?? 0)
    }

    static func brief(_ value: JSONValue) -> String {
        switch value {
        case .object(let members): members.isEmpty ? "{}" : "{…}"
        case .array(let items): "[\(items.count)]"
        case .string(let s): s.contains(where: \.isWhitespace) ? Render.json(value, pretty: false) : s
        default: Render.scalar(value)
        }
    }

    static func truncate(_ text: String, _ limit: Int) -> String {
        text.count <= limit ? text : String(text.prefix(max(0, limit - 1))) + "…"
    }
}
