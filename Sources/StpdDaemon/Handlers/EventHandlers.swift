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
            let sink = ConnectionEventSink(connection: context.connection, registry: subscriptions, subscription: id)
            let subscription = try await log.subscribe(
                id: id, since: params.since, filter: filter(params.filter, context), sink: sink)
            subscriptions.add(id, connection: context.connection.id)
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
            let wanted = filter(params.filter, context)
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
    static func filter(_ params: EventFilterParams?, _ context: CallContext) -> EventFilter {
        EventFilter(
            objectIds: params?.objects.map(Set.init), types: params?.types, viewerUID: context.caller.ownerFilter)
    }
}
