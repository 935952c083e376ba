import JSONRPC
import Logging
import RPCTransport

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
        let response = await router.handle(request, context: CallContext(connection: connection))
        if case .failure(let error)? = response?.outcome, error.code == RPCError.internalErrorCode {
            logger.error("\(request.method) failed: \(error.message)", metadata: ["connection": "\(connection.id)"])
        }
        return response
    }

    func connectionOpened(_ connection: RPCConnection) { activity.connectionOpened() }

    func connectionClosed(_ connection: RPCConnection) {
        subscriptions.endAll(connection: connection.id)
        activity.connectionClosed()
    }
}
