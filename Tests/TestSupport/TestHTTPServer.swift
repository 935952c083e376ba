import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// A tiny HTTP/1.1 server on 127.0.0.1 (an ephemeral port) that records every request and answers
/// each as its script says: a response, closing the connection without one, or never answering.
public final class TestHTTPServer: Sendable {
    public enum Action: Sendable {
        /// `chunked`: no Content-Length (NIO then sends the body chunked).
        case respond(status: Int, headers: [(String, String)] = [], body: String = "", chunked: Bool = false)
        case close
        case hang
    }

    public struct Received: Sendable {
        public var method: String
        public var uri: String
        public var headers: [(name: String, value: String)]
        public var body: Data

        public func values(_ name: String) -> [String] {
            headers.filter { $0.name.caseInsensitiveCompare(name) == .orderedSame }.map(\.value)
        }
    }

    private let state = Mutex<(received: [Received], children: [any Channel], listener: (any Channel)?)>(([], [], nil))
    private let script: @Sendable (_ index: Int, _ request: Received) -> Action
    private let serverPort = Mutex(0)

    public var port: Int { serverPort.withLock { $0 } }
    public var baseURL: String { "http://127.0.0.1:\(port)" }
    public var received: [Received] { state.withLock { $0.received } }

    /// `script` gets the 0-based index of the request among all received so far.
    public static func start(
        _ script: @escaping @Sendable (_ index: Int, _ request: Received) -> Action
    ) async throws -> TestHTTPServer {
        let server = TestHTTPServer(script: script)
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { child in
                child.eventLoop.makeCompletedFuture {
                    server.state.withLock { $0.children.append(child) }
                    try child.pipeline.syncOperations.configureHTTPServerPipeline()
                    try child.pipeline.syncOperations.addHandler(Handler(server: server))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        server.serverPort.withLock { $0 = channel.localAddress?.port ?? 0 }
        server.state.withLock { $0.listener = channel }
        return server
    }

    private init(script: @escaping @Sendable (Int, Received) -> Action) {
        self.script = script
    }

    /// Stops listening and closes every connection it accepted.
    public func shutdown() async {
        let (listener, children) = state.withLock { ($0.listener, $0.children) }
        try? await listener?.close()
        for child in children { try? await child.close() }
    }

    fileprivate func record(_ request: Received) -> Action {
        let index = state.withLock { s in
            s.received.append(request)
            return s.received.count - 1
        }
        return script(index, request)
    }

    private final class Handler: ChannelInboundHandler {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart

        let server: TestHTTPServer
        var head: HTTPRequestHead?
        var body = ByteBuffer()

        init(server: TestHTTPServer) { self.server = server }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let head):
                self.head = head
                body.clear()
            case .body(var chunk):
                body.writeBuffer(&chunk)
            case .end:
                guard let head else { return }
                let request = Received(
                    method: head.method.rawValue, uri: head.uri,
                    headers: head.headers.map { (name: $0.name, value: $0.value) },
                    body: Data(body.readableBytesView))
                switch server.record(request) {
                case .respond(let status, let fields, let text, let chunked):
                    var headers = HTTPHeaders(fields)
                    if !chunked { headers.replaceOrAdd(name: "Content-Length", value: String(text.utf8.count)) }
                    let responseHead = HTTPResponseHead(
                        version: .http1_1, status: HTTPResponseStatus(statusCode: status), headers: headers)
                    context.write(wrapOutboundOut(.head(responseHead)), promise: nil)
                    context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(string: text)))), promise: nil)
                    context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
                case .close:
                    context.close(promise: nil)
                case .hang:
                    break
                }
            }
        }
    }
}
