import Foundation
import Hummingbird
import JSONRPC
import Logging
import NIOCore
import ServiceLifecycle
import StripeAPI

enum FormEncoderBridge {
    static func escape(_ s: String) -> String { FormEncoder.escape(s) }
}

/// The request context: Hummingbird's core storage plus the channel (to drop a connection).
public struct StripeRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    public let channel: any Channel

    public init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
        self.channel = source.channel
    }
}

struct DroppedConnection: Error {}

/// HTTPTypes' field type, reached through Hummingbird's re-exported `HTTPFields`.
public typealias HTTPFieldType = HTTPFields.Element

/// Hands every request to `StripeTestState.handle` and writes (or drops) what it answers.
public struct StripeResponder: HTTPResponder {
    public let state: StripeTestState

    public func respond(to request: Request, context: StripeRequestContext) async throws -> Response {
        var buffer = try await request.body.collect(upTo: 16 << 20)
        let bytes = buffer.readBytes(length: buffer.readableBytes) ?? []
        var headers: [String: String] = [:]
        for field in request.headers { headers[field.name.canonicalName] = field.value }
        // HTTP/1 `Host` arrives as the :authority pseudo-header, not among the fields.
        if headers["host"] == nil, let authority = request.head.authority { headers["host"] = authority }
        let testRequest = TestHTTPRequest(
            method: request.method.rawValue, path: request.uri.path,
            query: request.uri.query ?? "", headers: headers, body: bytes)
        let answer = await state.handle(testRequest)
        if answer.drop {
            try? await context.channel.close(mode: .all).get()
            throw DroppedConnection()
        }
        var fields = HTTPFields()
        for (name, value) in answer.headers {
            if let n = HTTPFieldType.Name(name) { fields.append(HTTPFieldType(name: n, value: value)) }
        }
        return Response(
            status: .init(code: answer.status), headers: fields, body: .init(byteBuffer: ByteBuffer(bytes: answer.body))
        )
    }
}

/// The project's own Stripe API test server: in-memory, on 127.0.0.1 (port 0 = ephemeral).
public final class StripeTestServer: Sendable {
    public let state: StripeTestState
    public var configuration: StripeTestServerConfiguration { state.configuration }

    public init(configuration: StripeTestServerConfiguration = .init()) {
        self.state = StripeTestState(configuration: configuration)
    }

    /// The Hummingbird application; `onRunning` gets the bound port.
    public func makeApplication(logger: Logger? = nil, onRunning: @escaping @Sendable (Int) async -> Void = { _ in })
        -> Application<StripeResponder>
    {
        var logger = logger ?? Logger(label: "stripe-test-server")
        if logger.logLevel < .notice { logger.logLevel = .notice }
        return Application(
            responder: StripeResponder(state: state),
            configuration: .init(
                address: .hostname(configuration.host, port: configuration.port), serverName: "stripe-test-server"),
            onServerRunning: { channel in await onRunning(channel.localAddress?.port ?? 0) },
            logger: logger
        )
    }

    /// Runs until the task is cancelled (or SIGTERM/SIGINT when `signals`).
    public func run(signals: Bool = false, onRunning: @escaping @Sendable (Int) async -> Void = { _ in }) async throws {
        let app = makeApplication(onRunning: onRunning)
        if signals {
            try await app.runService()
        } else {
            let group = ServiceGroup(configuration: .init(services: [app], logger: app.logger))
            try await withTaskCancellationHandler {
                try await group.run()
            } onCancel: {
                Task { await group.triggerGracefulShutdown() }
            }
        }
    }
}

/// A running server for one test: its base URL (`http://127.0.0.1:PORT`), port and state.
public struct RunningStripeTestServer: Sendable {
    public let baseURL: String
    public let port: Int
    public let state: StripeTestState
}

/// Starts a server on an ephemeral port, runs `body`, and shuts the server down.
public func withStripeTestServer<T: Sendable>(
    configuration: StripeTestServerConfiguration = .init(),
    _ body: @Sendable (RunningStripeTestServer) async throws -> T
) async throws -> T {
    var configuration = configuration
    configuration.port = 0
    let server = StripeTestServer(configuration: configuration)
    let (ports, continuation) = AsyncStream<Int>.makeStream()
    let app = server.makeApplication { port in
        continuation.yield(port)
        continuation.finish()
    }
    let group = ServiceGroup(configuration: .init(services: [app], logger: app.logger))
    return try await withThrowingTaskGroup(of: Void.self) { tasks in
        tasks.addTask { try await group.run() }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() else {
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
            throw CancellationError()
        }
        let running = RunningStripeTestServer(
            baseURL: "http://\(configuration.host):\(port)", port: port, state: server.state)
        do {
            let result = try await body(running)
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
            return result
        } catch {
            await group.triggerGracefulShutdown()
            try? await tasks.waitForAll()
            throw error
        }
    }
}
