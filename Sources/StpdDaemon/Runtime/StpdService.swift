import JSONRPC
import Logging
import RPCTransport

/// The daemon's answer to every call: the router built from the method declarations.
final class StpdService: RPCService {
    let router: MethodRouter<CallContext>
    let logger: Logger
    let activity: Activity
    let subscriptions: SubscriptionRegistry
    let metrics: StpdMetrics?
    let pageBytes: Int

    init(
        router: MethodRouter<CallContext>, logger: Logger, activity: Activity, subscriptions: SubscriptionRegistry,
        pageBytes: Int, metrics: StpdMetrics? = nil
    ) {
        self.router = router
        self.pageBytes = pageBytes
        self.logger = logger
        self.activity = activity
        self.subscriptions = subscriptions
        self.metrics = metrics
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
        let start = ContinuousClock.now
        switch router.route(request, context: CallContext(connection: connection, pageBytes: pageBytes)) {
        case .answered(let response):
            finished(request, response, connection, since: start)
            return .answered(response)
        case .pending(let run):
            return .pending { [self] in
                let response = await run()
                finished(
                    request, response, connection, since: start, cancelled: Task.isCancelled || !connection.isOpen)
                return response
            }
        }
    }

    /// Counts the call (a notification, which gets no response, counts as `ok`: its outcome is
    /// not known) and logs an internal error, once, with its detail. A call cancelled (its
    /// connection closed, or its task was, as when a subscriber is dropped) is logged at debug only: nobody is there for its answer, and the transport says once that the
    /// connection closed with calls unanswered (a busy client hanging up must not flood the log).
    private func finished(
        _ request: Request, _ response: Response?, _ connection: RPCConnection, since start: ContinuousClock.Instant,
        cancelled: Bool = false
    ) {
        var error: RPCError?
        if case .failure(let failure)? = response?.outcome { error = failure }
        metrics?.request(method: request.method, error: error, duration: start.duration(to: .now))
        guard let error, error.code == RPCError.internalErrorCode else { return }
        let metadata: Logger.Metadata = ["connection": "\(connection.id)"]
        if cancelled || error.isCancellation {
            logger.debug("\(request.method) cancelled: its connection closed or its work ended", metadata: metadata)
        } else {
            // The detail only here: the client's error says "Internal error" (it may quote SQL).
            logger.error("\(request.method) failed: \(error.logDetail ?? error.message)", metadata: metadata)
        }
    }

    func connectionOpened(_ connection: RPCConnection) { activity.connectionOpened() }

    func connectionClosed(_ connection: RPCConnection) {
        subscriptions.endAll(connection: connection.id)
        activity.connectionClosed()
    }
}
