import Logging
import NIOCore
import NIOHTTP1
import StpdCore

/// One connection to the loopback listener: one request, one answer, then the connection closes.
/// `GET /return/TOKEN…` (no body) completes the session the token names and answers its page;
/// anything else is 404 with no detail. The head must arrive within `headTimeout` of the
/// connect, however slowly it trickles in.
final class LoopbackHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    struct Settings: Sendable {
        var pageWait: Duration
        var headTimeout: TimeAmount
        var logger: Logger
        var redirects: @Sendable () -> RedirectSessions?
    }

    private enum State {
        case awaitingHead
        /// The head arrived; the answer starts at its end. `token` is nil for anything but a return.
        case awaitingEnd(token: String?, uri: String)
        case answering
    }

    private let settings: Settings
    private var state = State.awaitingHead
    private var headDeadline: Scheduled<Void>?

    init(_ settings: Settings) { self.settings = settings }

    func handlerAdded(context: ChannelHandlerContext) {
        let channel = context.channel
        headDeadline = context.eventLoop.scheduleTask(in: settings.headTimeout) { channel.close(promise: nil) }
    }

    func handlerRemoved(context: ChannelHandlerContext) { headDeadline?.cancel() }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch (unwrapInboundIn(data), state) {
        case (.head(let head), .awaitingHead):
            // A body is never read: a request announcing one is refused before it is sent.
            if head.headers.contains(name: "transfer-encoding")
                || head.headers["content-length"].contains(where: { $0 != "0" })
            {
                state = .answering
                return answer(context, LoopbackPage.notFound)
            }
            let path = head.uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            let token = head.method == .GET ? LoopbackReturn.token(inPath: String(path)) : nil
            state = .awaitingEnd(token: token, uri: head.uri)
        case (.end, .awaitingEnd(let token, let uri)):
            headDeadline?.cancel()
            state = .answering
            guard let token, let redirects = settings.redirects() else { return answer(context, LoopbackPage.notFound) }
            visit(context, redirects, token: token, uri: uri)
        default:
            break  // Body bytes, or anything after the one request: ignored.
        }
    }

    private func visit(_ context: ChannelHandlerContext, _ redirects: RedirectSessions, token: String, uri: String) {
        let port = context.channel.localAddress?.port ?? 0
        let url = "http://127.0.0.1:\(port)\(uri)"
        let settings = settings
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        let eventLoop = context.eventLoop
        Task {
            let page: LoopbackPage
            do {
                let visit = try await redirects.visitLoopback(token: token, url: url)
                if visit.arrival == .completed, let session = visit.session {
                    settings.logger.info(
                        "a customer came back through the loopback return", metadata: ["session": "\(session)"])
                }
                page = LoopbackPage(await redirects.awaitOutcome(visit, timeout: settings.pageWait))
            } catch {
                settings.logger.error("a loopback return could not be recorded: \(error)")
                page = LoopbackPage.unavailable
            }
            eventLoop.execute {
                let (handler, context) = bound.value
                handler.answer(context, page)
            }
        }
    }

    private func answer(_ context: ChannelHandlerContext, _ page: LoopbackPage) {
        let body = context.channel.allocator.buffer(string: page.html)
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "text/html; charset=utf-8")
        headers.add(name: "Content-Length", value: "\(body.readableBytes)")
        headers.add(name: "Cache-Control", value: "no-store")
        headers.add(name: "Content-Security-Policy", value: LoopbackPage.contentSecurityPolicy)
        headers.add(name: "Referrer-Policy", value: "no-referrer")
        headers.add(name: "X-Content-Type-Options", value: "nosniff")
        headers.add(name: "X-Frame-Options", value: "DENY")
        headers.add(name: "Connection", value: "close")
        let head = HTTPResponseHead(version: .http1_1, status: page.status, headers: headers)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
    }
}
