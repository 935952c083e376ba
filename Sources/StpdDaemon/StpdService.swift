import JSONRPC
import Logging
import RPCTransport
import StpdProtocol

/// The daemon's answer to every call: the router built from the method declarations.
final class StpdService: RPCService {
    let router: MethodRouter<CallContext>
    let logger: Logger
    let activity: Activity
    let subscriptions: SubscriptionRegistry

    init(router: MethodRouter<CallContext>, logger: Logger, activity: Activity, subscriptions: SubscriptionRegistry) {
        self.router = router
        self.logger = logger
        self.activity = activity
        self.subscriptions = subscriptions
    }

    func handle(_ request: Request, on connection: RPCConnection) async -> Response? {
        switch route(request, on: connection) {
        case .answered(let response): return response
        case .pending(let run): return await run()
        }
    }

    /// Unknown methods, bad params and immediate methods (`daemon.ping`) are answered where the
    /// frame is read; everything else runs as a task of the connection.
    func route(_ request: Request, on connection: RPCConnection) -> RoutedCall {
        switch router.route(request, context: CallContext(connection: connection)) {
        case .answered(let response):
            logFailure(request, response, connection)
            return .answered(response)
        case .pending(let run):
            return .pending { [self] in
                let response = await run()
                logFailure(request, response, connection)
                if request.method == EventsSubscribe.name || request.method == EventsUnsubscribe.name {
                    // A subscriber waiting quietly for events is not idle.
                    connection.keepAlive = subscriptions.hasAny(connection: connection.id)
                }
                return response
            }
        }
    }

    private func logFailure(_ request: Request, _ response: Response?, _ connection: RPCConnection) {
        if case .failure(let error)? = response?.outcome, error.code == RPCError.internalErrorCode {
            logger.error("\(request.method) failed: \(error.message)", metadata: ["connection": "\(connection.id)"])
        }
    }

    func connectionOpened(_ connection: RPCConnection) { activity.connectionOpened() }

    func connectionClosed(_ connection: RPCConnection) {
        subscriptions.endAll(connection: connection.id)
        activity.connectionClosed()
    }
}
