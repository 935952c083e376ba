import Foundation
import JSONRPC
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOExtras
import NIOPosix
import ServiceLifecycle

/// What the server calls into: the application that answers requests.
public protocol RPCService: Sendable {
    /// Answers one call; nil for a notification.
    func handle(_ request: Request, on connection: RPCConnection) async -> Response?
    func connectionOpened(_ connection: RPCConnection)
    func connectionClosed(_ connection: RPCConnection)
}

public struct RPCServerConfiguration: Sendable {
    /// A frame longer than this gets an error reply and its connection is closed.
    public var maxFrameBytes = 1 << 20
    /// Bytes queued for one connection before its notifications are refused.
    public var maxOutboundBytes = 4 << 20
    /// Requests of one connection that run at once before it stops reading.
    public var maxInFlightPerConnection = 64

    public init() {}
}

/// JSON-RPC 2.0 over a Unix stream socket: newline-delimited frames, pipelined requests
/// answered concurrently and out of order, batches, server-to-client notifications.
/// On graceful shutdown it stops accepting, stops reading, lets in-flight requests finish and
/// closes each connection after its replies are written.
public final class RPCServer: Service, Sendable {
    private let socket: ListeningSocket
    private let configuration: RPCServerConfiguration
    private let service: any RPCService
    private let logger: Logger
    private let group: any EventLoopGroup
    private let onListening: @Sendable () -> Void
    private let nextConnectionID = NIOLockedValueBox(UInt64(1))

    public init(
        socket: ListeningSocket, configuration: RPCServerConfiguration, service: any RPCService, logger: Logger,
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        onListening: @escaping @Sendable () -> Void = {}
    ) {
        self.socket = socket
        self.configuration = configuration
        self.service = service
        self.logger = logger
        self.group = group
        self.onListening = onListening
    }

    public func run() async throws {
        let maxFrame = configuration.maxFrameBytes
        let listener = try await ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 256)
            .childChannelOption(.allowRemoteHalfClosure, value: true)
            .bind(socket.fileDescriptor) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(
                        ByteToMessageHandler(LineBasedFrameDecoder(), maximumBufferSize: maxFrame))
                    return try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
        defer {
            if socket.ownsPath { unlink(socket.path) }
        }
        logger.info("listening", metadata: ["socket": "\(socket.path)"])
        onListening()
        try await withThrowingDiscardingTaskGroup { group in
            try await listener.executeThenClose { inbound in
                for try await connection in inbound.cancelOnGracefulShutdown() {
                    group.addTask { await self.serve(connection) }
                }
            }
            logger.info("stopped accepting connections")
        }
    }

    private func serve(_ async: NIOAsyncChannel<ByteBuffer, ByteBuffer>) async {
        let channel = async.channel
        let peer = await PeerCredentials.of(channel)
        let id = nextConnectionID.withLockedValue { next in
            defer { next += 1 }
            return next
        }
        let connection = RPCConnection(
            id: id, peer: peer, outbox: Outbox(limit: configuration.maxOutboundBytes), channel: channel)
        var logger = self.logger
        logger[metadataKey: "connection"] = "\(id)"
        if let peer {
            logger[metadataKey: "peer_uid"] = "\(peer.uid)"
            logger[metadataKey: "peer_pid"] = "\(peer.pid)"
        }
        logger.debug("connection opened")
        service.connectionOpened(connection)
        defer {
            service.connectionClosed(connection)
            logger.debug("connection closed")
        }
        do {
            try await async.executeThenClose { inbound, outbound in
                await withGracefulShutdownHandler {
                    await withDiscardingTaskGroup { group in
                        group.addTask {
                            while let frame = await connection.outbox.next() {
                                do { try await outbound.write(frame) } catch { break }
                            }
                            connection.outbox.finish()
                            // Drains whatever was queued after a failed write.
                            while await connection.outbox.next() != nil {}
                            // Everything is written (or the peer is gone): ends the read side too.
                            await connection.closeAfterWritten(grace: .seconds(10))
                        }
                        group.addTask {
                            await withDiscardingTaskGroup { workers in
                                for await work in connection.work { workers.addTask(operation: work) }
                                workers.cancelAll()
                            }
                        }
                        await self.readRequests(inbound, connection, logger)
                        connection.endWork()
                        connection.outbox.finish()
                    }
                } onGracefulShutdown: {
                    channel.close(mode: .input, promise: nil)
                }
            }
        } catch {
            logger.debug("connection ended: \(error)")
        }
    }

    /// Reads frames until the peer stops sending, a frame is too large, or shutdown begins;
    /// returns once every request it started has been answered.
    private func readRequests(
        _ inbound: NIOAsyncChannelInboundStream<ByteBuffer>, _ connection: RPCConnection, _ logger: Logger
    ) async {
        let limiter = InFlightLimiter(limit: configuration.maxInFlightPerConnection)
        await withDiscardingTaskGroup { requests in
            do {
                for try await frame in inbound {
                    // A whole oversized line can arrive in one read, past the decoder's buffer cap.
                    guard frame.readableBytes <= configuration.maxFrameBytes else {
                        await rejectOversizedFrame(connection, logger)
                        return
                    }
                    if frame.readableBytes == 0 { continue }
                    let parsed = Inbound.parse(Data(frame.readableBytesView))
                    await limiter.acquire()
                    requests.addTask {
                        defer { limiter.release() }
                        let hooks = ReplyHooks()
                        let reply = await ReplyHooks.$current.withValue(hooks) { await self.answer(parsed, connection) }
                        if let reply, let bytes = try? Framing.frame(reply) {
                            await connection.outbox.send(bytes)
                        }
                        for action in hooks.take() { connection.spawn(action) }
                    }
                }
            } catch is ByteToMessageDecoderError.PayloadTooLargeError {
                await rejectOversizedFrame(connection, logger)
            } catch {
                logger.debug("read ended: \(error)")
            }
        }
    }

    private func rejectOversizedFrame(_ connection: RPCConnection, _ logger: Logger) async {
        logger.warning("frame over \(configuration.maxFrameBytes) bytes; closing connection")
        let error = RPCError.invalidRequest(
            "frame exceeds \(configuration.maxFrameBytes) bytes; closing the connection",
            data: ["maxFrameBytes": .int(Int64(configuration.maxFrameBytes))])
        if let bytes = try? Framing.frame(Response(id: .null, error: error)) {
            _ = connection.outbox.offer(bytes, force: true)
        }
        connection.channel.close(mode: .input, promise: nil)
    }

    /// The reply to a frame: one response, an array of them for a batch, or nothing when
    /// every call in it was a notification.
    private func answer(_ inbound: Inbound, _ connection: RPCConnection) async -> ReplyFrame? {
        switch inbound {
        case .single(let entry):
            return await answer(entry, connection).map(ReplyFrame.single)
        case .batch(let entries):
            let replies = await withTaskGroup(of: (Int, Response?).self) { group in
                for (index, entry) in entries.enumerated() {
                    group.addTask { (index, await self.answer(entry, connection)) }
                }
                var collected = [(Int, Response)]()
                for await (index, reply) in group { if let reply { collected.append((index, reply)) } }
                return collected.sorted { $0.0 < $1.0 }.map(\.1)
            }
            return replies.isEmpty ? nil : .batch(replies)
        }
    }

    private func answer(_ entry: Inbound.Entry, _ connection: RPCConnection) async -> Response? {
        switch entry {
        case .invalid(let response): return response
        case .call(let request): return await service.handle(request, on: connection)
        }
    }
}

enum ReplyFrame: Encodable {
    case single(Response)
    case batch([Response])

    func encode(to encoder: Encoder) throws {
        switch self {
        case .single(let response): try response.encode(to: encoder)
        case .batch(let responses): try responses.encode(to: encoder)
        }
    }
}
