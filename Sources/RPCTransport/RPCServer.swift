import JSONRPC
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import ServiceLifecycle

/// What the server calls into: the application that answers requests.
public protocol RPCService: Sendable {
    /// Answers one call; nil for a notification.
    func handle(_ request: Request, on connection: RPCConnection) async -> Response?
    /// Decides, where the frame is read (on the connection's event loop, so it must not block),
    /// whether a call is answered at once or needs work that runs as a task. By default every
    /// call runs `handle` as a task. `RPCConnection.afterReply` has its ordering guarantee only
    /// inside that task: what an immediate answer registers runs at once.
    func route(_ request: Request, on connection: RPCConnection) -> RoutedCall
    /// Called once per accepted connection, before any of its calls.
    func connectionOpened(_ connection: RPCConnection)
    func connectionClosed(_ connection: RPCConnection)
}

extension RPCService {
    public func route(_ request: Request, on connection: RPCConnection) -> RoutedCall {
        .pending { await self.handle(request, on: connection) }
    }
}

/// The limits every connection is held to. Each has a daemon setting (docs/protocol.md, "Limits").
public struct RPCServerConfiguration: Sendable {
    /// A frame longer than this gets an error reply and its connection is closed.
    public var maxFrameBytes = 1 << 20
    /// Bytes queued for one connection before its notifications are refused and its reading stops.
    public var maxOutboundBytes = 4 << 20
    /// Bytes queued or reserved over all the connections of one uid: past it, each of them waits as
    /// one connection waits past `maxOutboundBytes`, so the number of connections of a uid does not
    /// multiply what it can make the daemon hold.
    public var maxOutboundBytesPerUID = 32 << 20
    /// Calls of one connection that run at once (each batch entry counts); past it the
    /// connection stops reading, so a client that floods requests only slows itself.
    public var maxInFlightPerConnection = 64
    /// A batch with more requests than this is refused whole with -32600.
    public var maxBatchRequests = 1000
    /// Connections open at once, in all and per uid; past either, new ones are refused. A uid's
    /// share is under half of all, so that no two uids can take every connection.
    public var maxConnections = 4096
    public var maxConnectionsPerUID = 1024
    /// The last connections of `maxConnections` (at most half of them), kept for `privilegedUIDs`:
    /// when the others have taken all the rest, root (and the daemon's own user) can still connect.
    public var reservedConnections = 64
    public var privilegedUIDs: Set<UInt32> = [0, geteuid()]
    /// A connection with nothing in flight, no partial frame and no `keepAlive` is closed
    /// after this long without a frame; nil never.
    public var idleTimeout: TimeAmount? = .seconds(600)
    /// How long a frame may take from its first byte to its newline (slow senders hold memory).
    public var frameTimeout: TimeAmount = .seconds(10)

    public init() {}
}

/// JSON-RPC 2.0 over a Unix stream socket: newline-delimited frames, pipelined requests
/// answered concurrently and out of order, batches, server-to-client notifications.
///
/// Each connection is served on its event loop by a `ConnectionHandler`; calls that need to
/// wait run as tasks of the connection (`RPCConnection.work`), cancelled when it closes. On
/// graceful shutdown it stops accepting, stops reading, lets in-flight requests finish and
/// closes each connection after its replies are written.
public final class RPCServer: Service, Sendable {
    private let socket: ListeningSocket
    private let configuration: RPCServerConfiguration
    private let service: any RPCService
    private let logger: Logger
    private let group: any EventLoopGroup
    /// What each uid's connections hold to be written, together (`maxOutboundBytesPerUID`).
    let accounts: OutboundAccounts
    private let onListening: @Sendable () -> Void
    private let credentials: @Sendable (Channel) -> EventLoopFuture<PeerCredentials>
    private let census: ConnectionCensus

    /// `credentials` says who a peer is; the kernel's SO_PEERCRED unless a test stands in.
    public init(
        socket: ListeningSocket, configuration: RPCServerConfiguration, service: any RPCService, logger: Logger,
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        onListening: @escaping @Sendable () -> Void = {},
        credentials: @escaping @Sendable (Channel) -> EventLoopFuture<PeerCredentials> = PeerCredentials.of
    ) {
        self.socket = socket
        self.configuration = configuration
        self.service = service
        self.logger = logger
        self.group = group
        self.onListening = onListening
        self.credentials = credentials
        census = ConnectionCensus(configuration: configuration, logger: logger)
        accounts = OutboundAccounts(limit: configuration.maxOutboundBytesPerUID)
    }

    public func run() async throws {
        let listener = try await ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 256)
            .childChannelOption(.allowRemoteHalfClosure, value: true)
            .bind(socket.fileDescriptor) { channel in self.accept(channel) }
        defer {
            if socket.ownsPath { unlink(socket.path) }
        }
        logger.info("listening", metadata: ["socket": "\(socket.path)"])
        onListening()
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask { await cancelWhenGracefulShutdown { await self.census.trimMemoryAfterBursts() } }
            try await listener.executeThenClose { inbound in
                // Closing the listener ends `inbound` after the connections already accepted, so
                // each of those is served too (and drained at once).
                let server = listener.channel
                await withGracefulShutdownHandler {
                    do {
                        for try await accepted in inbound {
                            guard let accepted else { continue }
                            group.addTask { await self.serve(accepted) }
                        }
                    } catch {
                        logger.error("accepting connections failed: \(error)")
                    }
                } onGracefulShutdown: {
                    server.close(promise: nil)
                }
            }
            logger.info("stopped accepting connections")
        }
    }

    /// On the new connection's event loop: who it is, whether it may stay, and its handler.
    /// Never fails (a failed child initializer would reach the listening channel): a refused
    /// connection gets a handler that closes it, and nil.
    private func accept(_ channel: Channel) -> EventLoopFuture<Accepted?> {
        credentials(channel).map(Optional.some).recover { error in
            self.logger.warning("refusing a connection whose peer is unknown: \(error)")
            return nil
        }.map { peer in
            do {
                return try self.admit(channel, peer: peer)
            } catch {
                self.logger.error("cannot set up a connection: \(error)")
                channel.close(promise: nil)
                return nil
            }
        }
    }

    private func admit(_ channel: Channel, peer: PeerCredentials?) throws -> Accepted? {
        guard let peer else {
            try channel.pipeline.syncOperations.addHandler(RefusingHandler(reply: nil))
            return nil
        }
        if let refusal = census.admit(channel, uid: peer.uid) {
            try channel.pipeline.syncOperations.addHandler(RefusingHandler(reply: refusal.reply))
            return nil
        }
        let connection = RPCConnection(
            id: census.nextID(), peer: peer, outboxLimit: configuration.maxOutboundBytes,
            account: accounts.open(uid: peer.uid), channel: channel)
        var logger = self.logger
        logger[metadataKey: "connection"] = "\(connection.id)"
        logger[metadataKey: "peer_uid"] = "\(peer.uid)"
        logger[metadataKey: "peer_pid"] = "\(peer.pid)"
        let handler = ConnectionHandler(
            connection: connection, service: service, configuration: configuration, census: census, logger: logger)
        try channel.pipeline.syncOperations.addHandler(handler)
        service.connectionOpened(connection)
        logger.debug("connection opened")
        return Accepted(connection: connection, handler: NIOLoopBound(handler, eventLoop: channel.eventLoop))
    }

    /// Runs the connection's work until it closes; its work is cancelled then.
    private func serve(_ accepted: Accepted) async {
        let connection = accepted.connection
        let channel = connection.channel
        defer {
            accounts.close(uid: connection.peer.uid)
            service.connectionClosed(connection)
            logger.debug("connection closed", metadata: ["connection": "\(connection.id)"])
        }
        await withTaskCancellationHandler {
            await withGracefulShutdownHandler {
                await withDiscardingTaskGroup { workers in
                    for await work in connection.work { workers.addTask(operation: work) }
                    workers.cancelAll()
                }
            } onGracefulShutdown: {
                let handler = accepted.handler
                channel.eventLoop.execute { handler.value.beginShutdown() }
            }
        } onCancel: {
            channel.close(promise: nil)
        }
    }
}

/// A connection the server serves.
struct Accepted: Sendable {
    let connection: RPCConnection
    let handler: NIOLoopBound<ConnectionHandler>
}
