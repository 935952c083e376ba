import JSONRPC
import Logging
import RPCTransport
import Synchronization

/// The daemon's answer to every call: the router built from the method declarations.
final class StpdService: RPCService {
    let router: MethodRouter<CallContext>
    let logger: Logger

    let connections: ConnectionCount

    init(router: MethodRouter<CallContext>, logger: Logger, connections: ConnectionCount) {
        self.router = router
        self.logger = logger
        self.connections = connections
    }

    func handle(_ request: Request, on connection: RPCConnection) async -> Response? {
        let response = await router.handle(request, context: CallContext(connection: connection))
        if case .failure(let error)? = response?.outcome, error.code == RPCError.internalErrorCode {
            logger.error("\(request.method) failed: \(error.message)", metadata: ["connection": "\(connection.id)"])
        }
        return response
    }

    func connectionOpened(_ connection: RPCConnection) { connections.opened() }
    func connectionClosed(_ connection: RPCConnection) { connections.closed() }
}

/// Open connections, counted where they open and close so status (and idle exit) can read it.
final class ConnectionCount: Sendable {
    private let count = Mutex(0)
    var current: Int { count.withLock { $0 } }
    func opened() { count.withLock { $0 += 1 } }
    func closed() { count.withLock { $0 -= 1 } }
}
