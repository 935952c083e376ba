import JSONRPC
import NIOCore

// Timers: the frame timeout (slow senders) and the idle timeout, each one scheduled task per
// connection, looked at again when it fires rather than rescheduled on every frame.

extension ConnectionHandler {

    /// After a read: when the bytes left are the start of a frame, since when.
    func trackPartialFrame(_ cutAny: Bool, _ context: ChannelHandlerContext) {
        guard !state.dropsInput, pending.readableBytes > 0 else {
            partialSince = nil
            return
        }
        if cutAny || partialSince == nil { partialSince = .now() }
        if frameTimer == nil, let since = partialSince {
            armFrameTimer(context, at: since + configuration.frameTimeout)
        }
    }

    func armFrameTimer(_ context: ChannelHandlerContext, at deadline: NIODeadline) {
        let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
        frameTimer = context.eventLoop.scheduleTask(deadline: deadline) { handler.value.frameTimerFired() }
    }

    func frameTimerFired() {
        frameTimer = nil
        guard let context, state.isOpen, let since = partialSince else { return }
        let now = NIODeadline.now()
        let timeout = configuration.frameTimeout
        // Only a frame the peer is slow to finish counts: not one waiting for us to read on.
        let peerIsSlow = mayRead(context) && pending.readableBytes > 0 && scanned == pending.readableBytes
        guard peerIsSlow, now - since >= timeout else {
            armFrameTimer(context, at: peerIsSlow ? since + timeout : now + timeout)
            return
        }
        let seconds = Double(timeout.nanoseconds) / 1e9
        logger.warning("frame not completed within \(seconds) s; closing connection")
        let error = RPCError.invalidRequest(
            "frame not completed within \(seconds) s; closing the connection",
            data: ["frameTimeoutSeconds": .double(seconds)])
        reply(Framing.encode(Response(id: .null, error: error)), context)
        endReading(.dropRest)
        context.close(mode: .input, promise: nil)
        pump(context)
        finishIfDone(context)
    }

    func armIdleTimer(_ context: ChannelHandlerContext, at deadline: NIODeadline) {
        let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
        idleTimer = context.eventLoop.scheduleTask(deadline: deadline) { handler.value.idleTimerFired() }
    }

    /// Closes the connection if nothing happened on it for `idleTimeout`; busy or kept-alive
    /// connections are looked at again later.
    func idleTimerFired() {
        guard let context = liveContext, !state.isClosing, let idle = configuration.idleTimeout else { return }
        let now = NIODeadline.now()
        let busy =
            inFlight > 0 || !waiting.isEmpty || state.busyReading || connection.keepAlive || pending.readableBytes > 0
        if busy {
            armIdleTimer(context, at: now + idle)
        } else if now - lastActive < idle {
            armIdleTimer(context, at: lastActive + idle)
        } else {
            logger.debug("closing a connection idle for \(idle.nanoseconds / 1_000_000_000) s")
            context.close(promise: nil)
        }
    }
}
