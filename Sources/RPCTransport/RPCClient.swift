import Foundation
import JSONRPC
import NIOConcurrencyHelpers
import NIOCore
import NIOExtras
import NIOPosix

public enum RPCClientError: Error, CustomStringConvertible {
    /// Nothing accepts connections at the socket path.
    case cannotConnect(path: String, reason: String)
    /// The daemon closed the connection before answering.
    case connectionClosed
    /// The reply did not match the method's declared result type.
    case unexpectedResult(String)

    public var description: String {
        switch self {
        case .cannotConnect(let path, let reason): return "cannot connect to stpd at \(path): \(reason)"
        case .connectionClosed: return "the daemon closed the connection before answering"
        case .unexpectedResult(let detail): return "unexpected result: \(detail)"
        }
    }
}

/// A JSON-RPC client over a Unix socket: concurrent calls matched to replies by id, and a
/// stream of the notifications the daemon pushes.
public final class RPCClient: Sendable {
    private struct State {
        var nextID: Int64 = 1
        var pending: [Int64: EventLoopPromise<Response>] = [:]
        var closed = false
    }

    private let state = NIOLockedValueBox(State())
    private let outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>
    private let eventLoop: any EventLoop
    public let notifications: AsyncStream<Request>
    private let notificationSink: AsyncStream<Request>.Continuation

    private init(outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>, eventLoop: any EventLoop) {
        self.outbound = outbound
        self.eventLoop = eventLoop
        (notifications, notificationSink) = AsyncStream.makeStream(bufferingPolicy: .unbounded)
    }

    /// Connects, runs `body`, then closes the connection.
    public static func withConnection<R: Sendable>(
        to path: String, maxFrameBytes: Int = 64 << 20,
        _ body: @Sendable (RPCClient) async throws -> R
    ) async throws -> R {
        let channel: NIOAsyncChannel<ByteBuffer, ByteBuffer>
        do {
            channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .connect(unixDomainSocketPath: path) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(
                            ByteToMessageHandler(LineBasedFrameDecoder(), maximumBufferSize: maxFrameBytes))
                        return try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                    }
                }
        } catch {
            throw RPCClientError.cannotConnect(path: path, reason: Self.reason(error))
        }
        return try await channel.executeThenClose { inbound, outbound in
            let client = RPCClient(outbound: outbound, eventLoop: channel.channel.eventLoop)
            return try await withThrowingTaskGroup(of: R?.self) { group in
                group.addTask {
                    do {
                        for try await frame in inbound { client.receive(frame) }
                    } catch {}
                    client.closeAll()
                    return nil
                }
                defer { group.cancelAll() }
                return try await body(client)
            }
        }
    }

    /// Sends a request and waits for its reply (error replies are returned, not thrown).
    public func call(_ method: String, params: JSONValue? = nil) async throws -> Response {
        let reply = eventLoop.makePromise(of: Response.self)
        let id: Int64? = state.withLockedValue { s in
            if s.closed { return nil }
            defer { s.nextID += 1 }
            s.pending[s.nextID] = reply
            return s.nextID
        }
        guard let id else {
            reply.fail(RPCClientError.connectionClosed)
            throw RPCClientError.connectionClosed
        }
        do {
            try await send(Request(id: RequestID(id), method: method, params: params))
        } catch {
            state.withLockedValue { $0.pending.removeValue(forKey: id) }?.fail(RPCClientError.connectionClosed)
        }
        return try await reply.futureResult.get()
    }

    /// Calls a declared method with typed params; an error reply is thrown as `RPCError`.
    public func call<M: RPCMethod>(_ method: M.Type, _ params: M.Params) async throws -> M.Result {
        let response = try await call(M.name, params: try JSONCoding.value(of: params))
        switch response.outcome {
        case .failure(let error): throw error
        case .success(let value):
            do { return try JSONCoding.typed(M.Result.self, from: value) } catch {
                throw RPCClientError.unexpectedResult(String(describing: error))
            }
        }
    }

    /// Sends a notification (no reply expected).
    public func notify(_ method: String, params: JSONValue? = nil) async throws {
        try await send(Request(id: nil, method: method, params: params))
    }

    private func send(_ request: Request) async throws {
        try await outbound.write(Framing.frame(request))
    }

    private func receive(_ frame: ByteBuffer) {
        guard let message = try? frame.withUnsafeReadableBytes({ try ServerMessage.parse($0) }) else { return }
        switch message {
        case .notification(let notification):
            notificationSink.yield(notification)
        case .response(let response):
            guard let id = response.id.intValue else { return }
            state.withLockedValue { $0.pending.removeValue(forKey: id) }?.succeed(response)
        }
    }

    private func closeAll() {
        let pending = state.withLockedValue { s in
            s.closed = true
            defer { s.pending = [:] }
            return s.pending
        }
        for reply in pending.values { reply.fail(RPCClientError.connectionClosed) }
        notificationSink.finish()
    }

    static func reason(_ error: any Error) -> String {
        if case SocketAddressError.unixDomainSocketPathTooLong = error {
            return "the path is longer than a Unix socket address holds (107 bytes)"
        }
        if let io = error as? IOError { return String(cString: strerror(io.errnoCode)) }
        if let connect = error as? NIOConnectionError, let first = connect.connectionErrors.first {
            return reason(first.error)
        }
        return String(describing: error)
    }
}
