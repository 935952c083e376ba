import Foundation
import JSONRPC
import RPCTransport
import StpdCore
import StpdProtocol
import Synchronization

/// Delivers a subscription's events to its connection as `event` notifications.
struct ConnectionEventSink: EventSink {
    let connection: RPCConnection
    let registry: SubscriptionRegistry

    func offer(_ event: Event, subscription: String) -> Bool {
        connection.notify(Self.notification(event, subscription))
    }

    func send(_ event: Event, subscription: String) async -> Bool {
        await connection.notifyWaiting(Self.notification(event, subscription))
    }

    func dropped(subscription: String, resumeSince: Int64, reason: DropReason) {
        registry.forget(subscription)
        let params = Notifications.DroppedParams(
            subscription: subscription, reason: reason.rawValue, resumeSince: resumeSince)
        let final = Request(id: nil, method: Notifications.dropped.method, params: try? JSONCoding.value(of: params))
        connection.close(after: final, grace: .seconds(30))
    }

    static func notification(_ event: Event, _ subscription: String) -> Request {
        let params = Notifications.EventParams(subscription: subscription, record: EventRecord(event))
        return Request(id: nil, method: Notifications.event.method, params: try? JSONCoding.value(of: params))
    }
}

extension EventRecord {
    init(_ event: Event) {
        self.init(
            seq: event.seq, type: event.type, time: event.time.formatted(.iso8601), objectId: event.objectId,
            object: event.object)
    }
}

/// The live subscriptions, by the connection that made them: a connection may end only its own,
/// and they all end with it.
final class SubscriptionRegistry: Sendable {
    private let byID = Mutex<[String: UInt64]>([:])
    let log: EventLog

    init(log: EventLog) { self.log = log }

    var count: Int { byID.withLock { $0.count } }

    func add(_ id: String, connection: UInt64) {
        byID.withLock { $0[id] = connection }
    }

    /// Ends a subscription if `connection` owns it.
    func end(_ id: String, connection: UInt64) -> Bool {
        let owned = byID.withLock { map in
            guard map[id] == connection else { return false }
            map[id] = nil
            return true
        }
        if owned { log.unsubscribe(id: id) }
        return owned
    }

    /// Whether `connection` holds a subscription.
    func hasAny(connection: UInt64) -> Bool {
        byID.withLock { map in map.values.contains(connection) }
    }

    func forget(_ id: String) {
        _ = byID.withLock { $0.removeValue(forKey: id) }
    }

    func endAll(connection: UInt64) {
        let ids = byID.withLock { map in
            let ids = map.filter { $0.value == connection }.map(\.key)
            for id in ids { map[id] = nil }
            return ids
        }
        for id in ids { log.unsubscribe(id: id) }
    }
}
