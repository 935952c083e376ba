import Foundation
import JSONRPC
import NIOCore
import RPCTransport
import StpdCore
import StpdProtocol
import Synchronization

/// Delivers one subscription's events to its connection as `event` notifications, each frame
/// tagged with its event so a frame withdrawn when the connection falls behind is known.
struct ConnectionEventSink: EventSink {
    let connection: RPCConnection
    let registry: SubscriptionRegistry
    /// `{"jsonrpc":"2.0","method":"event","params":{"subscription":"sub_…",`: the frame's start.
    let head: [UInt8]

    init(connection: RPCConnection, registry: SubscriptionRegistry, subscription: String) {
        self.connection = connection
        self.registry = registry
        head = EventFrames.head(subscription: subscription)
    }

    func offer(_ event: Event, subscription: String) -> Bool {
        let frame = registry.frames.frame(event, head: head)
        return connection.notify(frame: frame, tag: QueuedEvent(subscription: subscription, seq: event.seq))
    }

    func room(for event: Event, subscription: String) async -> Bool {
        await connection.room(for: registry.frames.frameSize(event, head: head))
    }

    func dropped(subscription: String, resumeSince: Int64, reason: DropReason) {
        registry.dropped(subscription, resumeSince: resumeSince, reason: reason, connection: connection)
    }
}

/// The tag of a queued `event` frame: which subscription's, which seq.
struct QueuedEvent: Sendable {
    var subscription: String
    var seq: Int64
}

extension EventRecord {
    init(_ event: Event) {
        self.init(
            seq: event.seq, type: event.type, time: event.time.formatted(.iso8601), objectId: event.objectId,
            object: event.object)
    }
}

/// `event` notifications, encoded once per event for every subscriber: the params are the
/// event's record with the `subscription` member first, so a frame is the subscriber's own
/// head, then the record's shared bytes. Recent events' bytes are kept, by `seq`, for the
/// subscribers that come next.
final class EventFrames: Sendable {
    private struct Cache {
        var bodies: [Int64: [UInt8]] = [:]
        var order: [Int64] = []
    }

    private let cache = Mutex(Cache())
    private let capacity: Int
    private let encodings = Atomic<Int>(0)

    /// How many events have been encoded (for tests: once per event, however many subscribers).
    var encodedCount: Int { encodings.load(ordering: .relaxed) }

    init(capacity: Int = 1024) { self.capacity = capacity }

    static func head(subscription: String) -> [UInt8] {
        let quoted = (try? JSONCoding.encode(subscription)).map(Array.init) ?? Array("\"\"".utf8)
        return Array(#"{"jsonrpc":"2.0","method":"event","params":{"subscription":"#.utf8) + quoted + [
            UInt8(ascii: ",")
        ]
    }

    func frame(_ event: Event, head: [UInt8]) -> ByteBuffer {
        let body = self.body(event)
        var frame = ByteBuffer()
        frame.reserveCapacity(head.count + body.count + 2)
        frame.writeBytes(head)
        frame.writeBytes(body)
        frame.writeBytes([UInt8(ascii: "}"), UInt8(ascii: "\n")])
        return frame
    }

    func frameSize(_ event: Event, head: [UInt8]) -> Int { head.count + body(event).count + 2 }

    /// The record's JSON without its opening brace: `"object":…,"type":"…"}`.
    private func body(_ event: Event) -> [UInt8] {
        if let body = cache.withLock({ $0.bodies[event.seq] }) { return body }
        encodings.add(1, ordering: .relaxed)
        let json = (try? JSONCoding.encode(EventRecord(event))) ?? Data("{}".utf8)
        // The record has members, so after `{` comes the first of them; `{}` would need no comma.
        let body = Array(json.dropFirst())
        cache.withLock { c in
            guard c.bodies.updateValue(body, forKey: event.seq) == nil else { return }
            c.order.append(event.seq)
            if c.order.count > capacity {
                c.bodies[c.order.removeFirst()] = nil
            }
        }
        return body
    }
}

/// How many subscriptions one connection and one uid may hold, and how many bytes of filters a
/// uid's subscriptions may hold together: each lives as long as its connection, and is matched
/// against every event (through the bus's index) and held in memory with its filter.
public struct SubscriptionLimits: Sendable, Hashable {
    public var perConnection = 64
    public var perUID = 1024
    public var filterBytesPerUID = 4 << 20

    public static let perConnectionRange = 1...10_000
    public static let perUIDRange = 1...1_000_000
    public static let filterBytesPerUIDRange = 65536...(1 << 30)

    public init() {}
}

/// The live subscriptions, by the connection that made them: a connection may end only its own,
/// and they all end with it. Counted per connection and per uid, with their filters' bytes.
final class SubscriptionRegistry: Sendable {
    private struct Entry {
        var connection: UInt64
        var uid: UInt32
        var bytes: Int
    }

    private struct State {
        var byID: [String: Entry] = [:]
        var byConnection: [UInt64: Set<String>] = [:]
        var byUID: [UInt32: (count: Int, bytes: Int)] = [:]

        mutating func insert(_ id: String, _ entry: Entry) {
            byID[id] = entry
            byConnection[entry.connection, default: []].insert(id)
            byUID[entry.uid, default: (0, 0)].count += 1
            byUID[entry.uid, default: (0, 0)].bytes += entry.bytes
        }

        mutating func remove(_ id: String) -> Entry? {
            guard let entry = byID.removeValue(forKey: id) else { return nil }
            byConnection[entry.connection]?.remove(id)
            if byConnection[entry.connection]?.isEmpty == true { byConnection[entry.connection] = nil }
            byUID[entry.uid]?.count -= 1
            byUID[entry.uid]?.bytes -= entry.bytes
            if byUID[entry.uid]?.count == 0 { byUID[entry.uid] = nil }
            return entry
        }
    }

    private let state = Mutex(State())
    let log: EventLog
    let limits: SubscriptionLimits
    let frames = EventFrames()
    /// How long a connection that fell behind gets to read its `events.dropped` notices.
    let dropGrace: TimeAmount
    let metrics: StpdMetrics?

    init(
        log: EventLog, limits: SubscriptionLimits = SubscriptionLimits(), dropGrace: TimeAmount = .seconds(30),
        metrics: StpdMetrics? = nil
    ) {
        self.log = log
        self.limits = limits
        self.dropGrace = dropGrace
        self.metrics = metrics
    }

    var count: Int { state.withLock { $0.byID.count } }

    /// What `uid` holds now: its subscriptions and their filters' bytes.
    func held(uid: UInt32) -> (count: Int, bytes: Int) { state.withLock { $0.byUID[uid] ?? (0, 0) } }

    /// Counts a subscription in before it is made, or throws TooManySubscriptions; `add` or
    /// `cancel` follows.
    func reserve(_ id: String, connection: UInt64, uid: UInt32, filterBytes: Int) throws(RPCError) {
        let refusal: RPCError? = state.withLock { s in
            if s.byConnection[connection, default: []].count >= limits.perConnection {
                return Self.refusal(
                    "connection", ["limit": .int(Int64(limits.perConnection))], "STPD_MAX_SUBSCRIPTIONS_PER_CONNECTION")
            }
            let held = s.byUID[uid] ?? (0, 0)
            if held.count >= limits.perUID {
                return Self.refusal("user", ["limit": .int(Int64(limits.perUID))], "STPD_MAX_SUBSCRIPTIONS_PER_UID")
            }
            if held.bytes + filterBytes > limits.filterBytesPerUID {
                return Self.refusal(
                    "user", ["maxBytes": .int(Int64(limits.filterBytesPerUID))],
                    "STPD_MAX_SUBSCRIPTION_BYTES_PER_UID")
            }
            s.insert(id, Entry(connection: connection, uid: uid, bytes: filterBytes))
            return nil
        }
        if let refusal { throw refusal }
    }

    /// A subscription reserved and then not made (its cursor was refused).
    func cancel(_ id: String) { _ = state.withLock { $0.remove(id) } }

    /// Ends a subscription if `connection` owns it.
    func end(_ id: String, connection: UInt64) -> Bool {
        let owned = state.withLock { s in
            guard s.byID[id]?.connection == connection else { return false }
            _ = s.remove(id)
            return true
        }
        if owned { log.unsubscribe(id: id) }
        return owned
    }

    /// Whether `connection` holds a subscription.
    func hasAny(connection: UInt64) -> Bool {
        state.withLock { $0.byConnection[connection] != nil }
    }

    func endAll(connection: UInt64) {
        for id in take(connection: connection) { log.unsubscribe(id: id) }
    }

    private func take(connection: UInt64) -> [String] {
        state.withLock { s in
            let ids = Array(s.byConnection[connection] ?? [])
            for id in ids { _ = s.remove(id) }
            return ids
        }
    }

    static func refusal(_ scope: String, _ bound: [String: JSONValue], _ setting: String) -> RPCError {
        let what =
            bound["limit"].map { "at most \($0) subscriptions" } ?? "at most \(bound["maxBytes"]!) bytes of filters"
        var data = bound
        data["scope"] = .string(scope)
        data["setting"] = .string(setting)
        return StpdErrors.tooManySubscriptions("\(what) per \(scope)", data: .object(data))
    }

    /// A subscription could not go on, and its connection closes. Its `events.dropped` goes
    /// out at once. When it fell behind (the connection's budget is spent), the events still
    /// queued for the connection are withdrawn so that the notices go first, and every
    /// subscription of the connection gets one, naming the last seq that is really on its way.
    func dropped(_ id: String, resumeSince: Int64, reason: DropReason, connection: RPCConnection) {
        guard state.withLock({ $0.remove(id) }) != nil else { return }  // the connection is closing already
        metrics?.subscriberDropped(reason)
        log.unsubscribe(id: id)
        // The others stop first, so none of them queues anything past what is withdrawn.
        var resume = [id: resumeSince]
        for other in take(connection: connection.id) {
            if let last = log.unsubscribe(id: other) { resume[other] = last }
        }
        guard reason == .slowConsumer else {
            // Nothing overflowed: the notice follows what is queued, which is on its way.
            connection.close(after: Self.notice(id, resumeSince, reason), grace: dropGrace)
            return
        }
        connection.close(
            withdrawingNotifications: { withdrawn in
                for case let event as QueuedEvent in withdrawn {
                    // Every matching event before the first one withdrawn was queued ahead of it.
                    if let since = resume[event.subscription] { resume[event.subscription] = min(since, event.seq - 1) }
                }
                return resume.sorted { $0.key < $1.key }.map { Self.notice($0.key, $0.value, .slowConsumer) }
            }, grace: dropGrace)
    }

    static func notice(_ subscription: String, _ resumeSince: Int64, _ reason: DropReason) -> Request {
        let params = Notifications.DroppedParams(
            subscription: subscription, reason: reason.rawValue, resumeSince: resumeSince)
        return Request(id: nil, method: Notifications.dropped.method, params: try? JSONCoding.value(of: params))
    }
}
