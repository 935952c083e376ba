import DequeModule
import JSONRPC
import Logging
import NIOCore

#if canImport(Glibc)
    import Glibc
#endif

/// Serves one connection on its event loop: cuts frames, answers what can be answered at once,
/// starts the rest as tasks of the connection, writes replies and notifications, and enforces
/// the connection's limits. Every property is confined to the event loop. Where the connection is
/// in its life is one `ConnectionState`, changed only by its transitions, whose actions `perform`
/// takes (a broken invariant closes this connection with a log line, never the daemon). Calls are in
/// `ConnectionHandler+Calls.swift`, the frame and idle timers in `ConnectionHandler+Timers.swift`.
///
/// Invariants:
/// - at most `maxInFlightPerConnection` calls (batch entries one by one) run as tasks; while
///   the limit is reached, or calls wait to start, or the peer does not take its replies,
///   nothing more is read, so a client can only slow itself;
/// - at most `framesPerTurn` frames are handled per turn of the event loop, then the connection
///   yields to the others on the loop;
/// - a reply is queued before the after-reply actions of its call are started;
/// - once reading ends (peer's EOF, shutdown, a bad frame), the calls already read are still
///   answered, then the output is flushed and the connection closed.
final class ConnectionHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    static let framesPerTurn = 32
    /// ...or as many as fit in this much time, whichever is fewer.
    static let timePerTurn = TimeAmount.microseconds(500)
    /// How long a connection that is done may take to flush before it is closed regardless.
    static let closingGrace = TimeAmount.seconds(30)

    /// A call waiting for (or holding) an in-flight slot.
    struct Work {
        var run: @Sendable () async -> Response?
        var batch: Batch?
        var index: Int
        /// The request's id, for a batch entry that is answered without running.
        var id: RequestID?
    }

    let connection: RPCConnection
    let service: any RPCService
    let configuration: RPCServerConfiguration
    let census: ConnectionCensus
    let logger: Logger

    var context: ChannelHandlerContext?
    /// Where the connection is in its life and what it waits on.
    var state = ConnectionState()
    /// Bytes read and not yet cut into frames; the first `scanned` hold no newline.
    var pending = ByteBuffer()
    var scanned = 0
    var waiting = Deque<Work>()
    var inFlight = 0
    /// Bytes read and not yet told to the census (told in batches).
    var unreportedBytes = 0
    /// Reused to encode replies on the event loop.
    var scratch: [UInt8] = []
    var partialSince: NIODeadline?
    var lastActive = NIODeadline.now()
    /// When the current read began (saves reading the clock again to budget the turn).
    var turnStarted: NIODeadline?
    var frameTimer: Scheduled<Void>?
    var idleTimer: Scheduled<Void>?
    /// Closes a connection that does not take its last bytes (cancelled at close: it holds the channel).
    var closeAnyway: Scheduled<Void>?

    init(
        connection: RPCConnection, service: any RPCService, configuration: RPCServerConfiguration,
        census: ConnectionCensus, logger: Logger
    ) {
        self.connection = connection
        self.service = service
        self.configuration = configuration
        self.census = census
        self.logger = logger
    }

    // MARK: Channel events

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }
    func handlerRemoved(context: ChannelHandlerContext) { self.context = nil }

    func channelActive(context: ChannelHandlerContext) {
        lastActive = .now()
        if let idle = configuration.idleTimeout { armIdleTimer(context, at: lastActive + idle) }
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        if case .forceClose(let reason) = state.channelClosed() {
            logger.error("connection state broken: \(reason); nothing left to close")
            return
        }
        // Said once here; each call cancelled is the application's to log (at debug).
        if inFlight + waiting.count > 0 {
            logger.info("connection closed with \(inFlight + waiting.count) calls unanswered; they are cancelled")
        }
        idleTimer?.cancel()
        frameTimer?.cancel()
        closeAnyway?.cancel()
        waiting.removeAll()
        pending = ByteBuffer()
        connection.outbox.finish()
        // What is still queued or reserved here no longer counts against the uid's other connections.
        connection.outbox.detach()
        // The connection's tasks (calls in flight, subscription feeds) are cancelled with it.
        connection.endWork()
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var bytes = unwrapInboundIn(data)
        unreportedBytes += bytes.readableBytes
        if unreportedBytes > 65536 {
            census.didRead(unreportedBytes)
            unreportedBytes = 0
        }
        lastActive = .now()
        turnStarted = lastActive
        guard state.isOpen else { return }
        if pending.readableBytes == 0 {
            pending = bytes
            scanned = 0
        } else {
            if pending.readerIndex > 65536 { pending.discardReadBytes() }
            pending.writeBuffer(&bytes)
        }
        processFrames(context)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        pump(context)
        context.fireChannelReadComplete()
    }

    func read(context: ChannelHandlerContext) {
        if mayRead(context) { context.read() } else { state.holdRead() }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            pump(context)
            startWaiting(context)
            resumeReading(context)
        }
        context.fireChannelWritabilityChanged()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        switch event {
        case is OutboxWake:
            state.outboxWoke()
            pump(context)
            startWaiting(context)
            resumeReading(context)
        case ChannelEvent.inputClosed:
            // A last frame without its newline, then EOF: it is a frame all the same.
            if state.isOpen, pending.readableBytes > 0 { pending.writeInteger(UInt8(ascii: "\n")) }
            endReading(.peerClosed)
            processFrames(context)
            pump(context)
            finishIfDone(context)
        default:
            context.fireUserInboundEventTriggered(event)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        logger.debug("connection failed: \(error)")
        context.close(promise: nil)
    }

    /// Graceful shutdown: read nothing more, answer what is in flight, then close.
    func beginShutdown() {
        guard let context = liveContext else { return }
        endReading(.dropRest)
        finishIfDone(context)
    }

    // MARK: Reading and framing

    /// The context while the channel is open; nil once it closed (a late completion does nothing).
    var liveContext: ChannelHandlerContext? { state.isClosed ? nil : context }

    /// Whether calls may be started now (frames cut and dispatched).
    var mayDispatch: Bool {
        state.mayDispatch && waiting.isEmpty && inFlight < configuration.maxInFlightPerConnection
    }

    func mayRead(_ context: ChannelHandlerContext) -> Bool {
        state.mayRead && mayDispatch && context.channel.isWritable
            && (!state.outboxDirty || connection.outbox.committedBytes <= connection.outbox.limit)
    }

    func resumeReading(_ context: ChannelHandlerContext) {
        guard state.readHeld, mayRead(context) else { return }
        perform(state.resumeRead())
    }

    func endReading(_ end: ConnectionState.ReadEnd) { perform(state.endReading(end)) }

    /// Does what a transition of `state` asks.
    func perform(_ action: ConnectionState.Action) {
        switch action {
        case .none: break
        case .read:
            // Time spent not reading is not the sender's.
            if partialSince != nil { partialSince = .now() }
            context?.read()
        case .dropInput:
            pending = ByteBuffer()
            scanned = 0
            partialSince = nil
            frameTimer?.cancel()
            frameTimer = nil
        case .scheduleBacklog:
            guard let context else { return }
            let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
            context.eventLoop.execute { handler.value.runBacklog() }
        case .flush: context?.flush()
        case .closeWhenFlushed: if let context { closeWhenFlushed(context) }
        case .forceClose(let reason):
            // A bug of this handler: this connection cannot go on, every other one can.
            logger.error("connection state broken: \(reason); closing this connection")
            context?.close(promise: nil)
        }
    }

    /// Cuts and handles frames while the limits allow, for at most one turn's budget.
    func processFrames(_ context: ChannelHandlerContext) {
        var budget = Self.framesPerTurn
        var cutAny = false
        let started = turnStarted ?? .now()
        turnStarted = nil
        while mayDispatch, let frame = nextFrame(context) {
            cutAny = true
            handle(frame, context)
            budget -= 1
            // A lone frame (the usual case) does not need the clock read again.
            if budget == 0 || (pending.readableBytes > 0 && NIODeadline.now() - started > Self.timePerTurn) {
                if pending.readableBytes > 0 { scheduleBacklog(context) }
                break
            }
        }
        trackPartialFrame(cutAny, context)
    }

    /// The next complete frame without its newline (and `\r`); nil when none is complete. A
    /// frame over the size limit ends reading with an error reply.
    func nextFrame(_ context: ChannelHandlerContext) -> ByteBuffer? {
        while pending.readableBytes > 0 {
            let from = scanned
            let newline: Int? = pending.withUnsafeReadableBytes { raw in
                guard raw.count > from, let base = raw.baseAddress,
                    let found = memchr(base + from, Int32(UInt8(ascii: "\n")), raw.count - from)
                else { return nil }
                return base.distance(to: UnsafeRawPointer(found))
            }
            guard let newline else {
                scanned = pending.readableBytes
                if scanned > configuration.maxFrameBytes { rejectOversizedFrame(context) }
                return nil
            }
            var length = newline
            if length > configuration.maxFrameBytes {
                rejectOversizedFrame(context)
                return nil
            }
            if length > 0, pending.getInteger(at: pending.readerIndex + length - 1, as: UInt8.self) == 0x0D {
                length -= 1
            }
            let frame = pending.getSlice(at: pending.readerIndex, length: length)!
            pending.moveReaderIndex(forwardBy: newline + 1)
            scanned = 0
            if pending.readableBytes == 0 { pending = ByteBuffer() }
            if length > 0 { return frame }
        }
        return nil
    }

    func scheduleBacklog(_ context: ChannelHandlerContext) { perform(state.scheduleBacklog()) }

    func runBacklog() {
        state.backlogRan()
        guard let context = liveContext else { return }
        processFrames(context)
        pump(context)
        resumeReading(context)
        finishIfDone(context)
    }

    func rejectOversizedFrame(_ context: ChannelHandlerContext) {
        let limit = configuration.maxFrameBytes
        logger.warning("frame over \(limit) bytes; closing connection")
        let error = RPCError.invalidRequest(
            "frame exceeds \(limit) bytes; closing the connection", data: ["maxFrameBytes": .int(Int64(limit))])
        reply(Framing.encode(Response(id: .null, error: error)), context)
        endReading(.dropRest)
        // Senders still writing the rest of the frame get EPIPE instead of blocking.
        context.close(mode: .input, promise: nil)
    }

    // MARK: Writing

    /// Writes a reply (`bytes` and a newline): straight to the channel when nothing is queued
    /// before it, else behind what is queued (replies are never refused; the in-flight limit
    /// bounds them).
    func reply(_ bytes: [UInt8], _ context: ChannelHandlerContext) {
        guard state.takesReplies else { return }
        var buffer = context.channel.allocator.buffer(capacity: bytes.count + 1)
        buffer.writeBytes(bytes)
        buffer.writeInteger(Framing.newline)
        write(buffer, context)
    }

    /// A reply encoded here, in a buffer kept for it.
    func reply(_ response: Response, _ context: ChannelHandlerContext) {
        guard state.takesReplies else { return }
        scratch.removeAll(keepingCapacity: true)
        response.write(to: &scratch)
        scratch.append(Framing.newline)
        var buffer = context.channel.allocator.buffer(capacity: scratch.count)
        buffer.writeBytes(scratch)
        if scratch.capacity > 65536 { scratch = [] }
        write(buffer, context)
    }

    func write(_ buffer: ByteBuffer, _ context: ChannelHandlerContext) {
        if context.channel.isWritable, !state.outboxDirty || connection.outbox.isEmpty {
            context.write(wrapOutboundOut(buffer), promise: nil)
            perform(state.wrote())
        } else {
            _ = connection.outbox.offer(buffer, force: true)
            state.outboxWoke()
        }
    }

    /// Moves queued frames to the channel while it takes them, flushes, and closes once the
    /// outbox is finished and empty.
    func pump(_ context: ChannelHandlerContext) {
        guard state.takesReplies else { return }
        var drained = false
        if state.outboxDirty {
            while state.takesReplies, context.channel.isWritable {
                guard let frame = connection.outbox.poll() else {
                    state.outboxDrained()
                    drained = true
                    break
                }
                context.write(wrapOutboundOut(frame), promise: nil)
                perform(state.wrote())
            }
        }
        perform(state.flush())
        // `isDone` (finished *and* empty, in one look): a final notice put ahead of the queue by
        // `finish(first:)` after the poll above found it empty must still be written (its wake
        // pumps again); closing on `isFinished` alone flushed and closed without it.
        // The flush may have closed the channel on the spot (a peer that reset the connection):
        // channelInactive has run then, and there is nothing left to close.
        if drained, state.takesReplies, connection.outbox.isDone { perform(state.startClosing()) }
    }

    /// Once reading has ended and every call read is answered: no more output, then close.
    func finishIfDone(_ context: ChannelHandlerContext) {
        guard state.mayFinish, inFlight == 0, waiting.isEmpty, pending.readableBytes == 0 else { return }
        connection.outbox.finish()
        state.outboxWoke()
        pump(context)
    }

    /// Flushes the last bytes, then closes (the state is closing: nothing more is read or written).
    func closeWhenFlushed(_ context: ChannelHandlerContext) {
        idleTimer?.cancel()
        frameTimer?.cancel()
        let channel = context.channel
        // Armed first: the write below may close the channel at once (the peer is gone), and
        // channelInactive must find the timer to cancel it (it holds the channel).
        closeAnyway = channel.eventLoop.scheduleTask(in: Self.closingGrace) { channel.close(promise: nil) }
        let flushed = context.eventLoop.makePromise(of: Void.self)
        // Completes after every earlier write: then everything is with the kernel.
        context.writeAndFlush(wrapOutboundOut(ByteBuffer()), promise: flushed)
        flushed.futureResult.whenComplete { _ in channel.close(promise: nil) }
    }
}
