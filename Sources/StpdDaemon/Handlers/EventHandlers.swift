import Foundation
import JSONRPC
import StpdCore
import StpdProtocol

/// `events.*`.
enum EventHandlers {
    static func register(
        into router: inout MethodRouter<CallContext>, log: EventLog, subscriptions: SubscriptionRegistry,
        waits: EventWaits
    ) {
        router.register(EventsSubscribe.self) { params, context in
            let id = ObjectID.make("sub_")
            let wanted = try filter(params.filter, context)
            try subscriptions.reserve(
                id, connection: context.connection.id, uid: context.caller.uid, filterBytes: params.filter?.bytes ?? 0)
            let sink = ConnectionEventSink(connection: context.connection, registry: subscriptions, subscription: id)
            let subscription: Subscription
            do {
                subscription = try await log.subscribe(id: id, since: params.since, filter: wanted, sink: sink)
            } catch {
                subscriptions.cancel(id)
                throw error
            }
            // Closed meanwhile: `endAll` ran before the subscription was on the bus.
            if !context.connection.isOpen {
                subscriptions.cancel(id)
                log.unsubscribe(id: id)
            }
            holdIdleTimeout(context, subscriptions)
            context.connection.afterReply { await log.start(subscription) }
            return .init(subscription: id, latestSeq: subscription.joinedAfter)
        }

        router.register(EventsUnsubscribe.self) { params, context in
            guard subscriptions.end(params.subscription, connection: context.connection.id) else {
                throw StpdErrors.subscriptionNotFound(params.subscription)
            }
            holdIdleTimeout(context, subscriptions)
            return .init()
        }

        router.register(EventsWait.self) { params, context in
            let wanted = try filter(params.filter, context)
            let output = context.output
            let result = try await waits.run(connection: context.connection, uid: context.caller.uid) {
                try await log.wait(
                    since: params.since, filter: wanted, limit: params.limit ?? 100,
                    timeout: .milliseconds(Int64((params.timeout ?? 30) * 1000)), room: output)
            }
            return .init(events: result.events.map(EventRecord.init), next: result.next, endedEarly: result.endedEarly)
        }
    }

    /// A subscriber waiting quietly for events is not idle: the connection's idle timeout is held
    /// off while it has a subscription.
    static func holdIdleTimeout(_ context: CallContext, _ subscriptions: SubscriptionRegistry) {
        context.connection.keepAlive = subscriptions.hasAny(connection: context.connection.id)
    }

    /// Root sees every user's events; anyone else only those of objects they created.
    /// A filter over `EventFilterParams.maxBytes` is refused, naming it (its counts the schema bounds).
    static func filter(_ params: EventFilterParams?, _ context: CallContext) throws(RPCError) -> EventFilter {
        if let params, params.bytes > EventFilterParams.maxBytes {
            var error = RPCError.invalidParams(
                "its ids and types are \(params.bytes) bytes; at most \(EventFilterParams.maxBytes) are accepted",
                parameter: "filter")
            error.data = ["parameter": "filter", "maxBytes": .int(Int64(EventFilterParams.maxBytes))]
            throw error
        }
        return EventFilter(
            objectIds: params?.objects.map(Set.init), types: params?.types, viewerUID: context.caller.ownerFilter)
    }
}
