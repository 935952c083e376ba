import DequeModule
import JSONRPC
import Logging
import NIOCore

#if canImport(Glibc)
    import Glibc
#endif

/// Serves one connection on its event loop: cuts frames, answers what can be answered at once,
/// starts the rest as tasks of the connection, writes replies and notifications, and enforces
/// the connection's limits. Every property is confined to the event loop.
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

    private enum ReadEnd {
        /// The peer sent EOF: frames already read are still answered.
        case peerClosed
        /// Reading stopped for good (shutdown, a bad frame): frames not yet handled are dropped.
        case dropRest
    }

    /// A call waiting for (or holding) an in-flight slot.
    private struct Work {
        var run: @Sendable () async -> Response?
        var batch: Batch?
        var index: Int
    }

    private let connection: RPCConnection
    private let service: any RPCService
    private let configuration: RPCServerConfiguration
    private let census: ConnectionCensus
    private let logger: Logger

    private var context: ChannelHandlerContext?
    /// Bytes read and not yet cut into frames; the first `scanned` hold no newline.
    private var pending = ByteBuffer()
    private var scanned = 0
    private var waiting = Deque<Work>()
    private var inFlight = 0
    private var readHeld = false
    private var backlogScheduled = false
    /// A large frame is being read and routed as a task; later frames wait for it.
    private var preparing = false
    private var readEnd: ReadEnd?
    private var closing = false
    private var closed = false
    private var unflushed = false
    /// The outbox may hold frames (or have finished): set by its wake and by replies queued
    /// behind it, cleared when a `poll` finds it empty. While clear, the hot path skips its lock.
    private var outboxDirty = false
    /// Bytes read and not yet told to the census (told in batches).
    private var unreportedBytes = 0
    /// Reused to encode replies on the event loop.
    private var scratch: [UInt8] = []
    private var partialSince: NIODeadline?
    private var lastActive = NIODeadline.now()
    /// When the current read began (saves reading the clock again to budget the turn).
    private var turnStarted: NIODeadline?
    private var frameTimer: Scheduled<Void>?
    private var idleTimer: Scheduled<Void>?
    /// Closes a connection that does not take its last bytes (cancelled at close: it holds the channel).
    private var closeAnyway: Scheduled<Void>?

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
        closed = true
        idleTimer?.cancel()
        frameTimer?.cancel()
        closeAnyway?.cancel()
        waiting.removeAll()
        pending = ByteBuffer()
        connection.outbox.finish()
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
        guard readEnd == nil else { return }
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
        if mayRead(context) { context.read() } else { readHeld = true }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            pump(context)
            resumeReading(context)
        }
        context.fireChannelWritabilityChanged()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        switch event {
        case is OutboxWake:
            outboxDirty = true
            pump(context)
            resumeReading(context)
        case ChannelEvent.inputClosed:
            // A last frame without its newline, then EOF: it is a frame all the same.
            if readEnd == nil, pending.readableBytes > 0 { pending.writeInteger(UInt8(ascii: "\n")) }
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
        guard let context, !closed else { return }
        endReading(.dropRest)
        finishIfDone(context)
    }

    // MARK: Reading and framing

    /// Whether calls may be started now (frames cut and dispatched).
    private var mayDispatch: Bool {
        readEnd != .dropRest && !closing && !preparing && waiting.isEmpty
            && inFlight < configuration.maxInFlightPerConnection
    }

    private func mayRead(_ context: ChannelHandlerContext) -> Bool {
        readEnd == nil && mayDispatch && !backlogScheduled && context.channel.isWritable
            && (!outboxDirty || connection.outbox.queuedBytes <= connection.outbox.limit)
    }

    private func resumeReading(_ context: ChannelHandlerContext) {
        guard readHeld, mayRead(context) else { return }
        readHeld = false
        // Time spent not reading is not the sender's.
        if partialSince != nil { partialSince = .now() }
        context.read()
    }

    private func endReading(_ end: ReadEnd) {
        guard readEnd != .dropRest else { return }
        readEnd = end
        if end == .dropRest {
            pending = ByteBuffer()
            scanned = 0
            partialSince = nil
            frameTimer?.cancel()
            frameTimer = nil
        }
    }

    /// Cuts and handles frames while the limits allow, for at most one turn's budget.
    private func processFrames(_ context: ChannelHandlerContext) {
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
    private func nextFrame(_ context: ChannelHandlerContext) -> ByteBuffer? {
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

    private func scheduleBacklog(_ context: ChannelHandlerContext) {
        guard !backlogScheduled else { return }
        backlogScheduled = true
        let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
        context.eventLoop.execute { handler.value.runBacklog() }
    }

    private func runBacklog() {
        backlogScheduled = false
        guard let context, !closed else { return }
        processFrames(context)
        pump(context)
        resumeReading(context)
        finishIfDone(context)
    }

    private func rejectOversizedFrame(_ context: ChannelHandlerContext) {
        let limit = configuration.maxFrameBytes
        logger.warning("frame over \(limit) bytes; closing connection")
        let error = RPCError.invalidRequest(
            "frame exceeds \(limit) bytes; closing the connection", data: ["maxFrameBytes": .int(Int64(limit))])
        reply(Framing.encode(Response(id: .null, error: error)), context)
        endReading(.dropRest)
        // Senders still writing the rest of the frame get EPIPE instead of blocking.
        context.close(mode: .input, promise: nil)
    }

    // MARK: Calls

    /// A frame read and routed: what is answered already and what still has to run.
    enum PreparedFrame: Sendable {
        case single(PreparedEntry)
        case batch([PreparedEntry])
    }

    enum PreparedEntry: Sendable {
        /// The reply (without newline; nil for a notification) and its after-reply actions.
        case answered([UInt8]?, [@Sendable () async -> Void])
        case pending(@Sendable () async -> Response?)
    }

    /// Frames up to this size are read and routed on the event loop; larger ones (big batches)
    /// as a task of the connection, so the loop's other connections do not wait for them.
    static let inlineFrameBytes = 16 << 10

    private func handle(_ frame: ByteBuffer, _ context: ChannelHandlerContext) {
        let (service, connection, maxBatch) = (service, connection, configuration.maxBatchRequests)
        guard frame.readableBytes > Self.inlineFrameBytes else {
            let inbound = frame.withUnsafeReadableBytes { Inbound.parse($0, maximumBatch: maxBatch) }
            // The usual frame, one request, is answered without anything in between.
            if case .single(let entry) = inbound {
                switch entry {
                case .invalid(let response): reply(response, context)
                case .call(let request):
                    switch service.route(request, on: connection) {
                    case .answered(let response): if let response { reply(response, context) }
                    case .pending(let run):
                        waiting.append(Work(run: run, batch: nil, index: 0))
                        startWaiting(context)
                    }
                }
                return
            }
            apply(Self.prepare(inbound, service, connection), context)
            return
        }
        preparing = true
        let loop = context.eventLoop
        let handler = NIOLoopBound(self, eventLoop: loop)
        connection.spawn {
            let inbound = frame.withUnsafeReadableBytes { Inbound.parse($0, maximumBatch: maxBatch) }
            let prepared = Self.prepare(inbound, service, connection)
            loop.execute { handler.value.prepared(prepared) }
        }
    }

    private func prepared(_ prepared: PreparedFrame) {
        preparing = false
        guard let context, !closed else { return }
        apply(prepared, context)
        processFrames(context)
        pump(context)
        resumeReading(context)
        finishIfDone(context)
    }

    /// Routes the calls of a frame; runs anywhere (`RPCService.route` must not block).
    static func prepare(_ inbound: Inbound, _ service: any RPCService, _ connection: RPCConnection) -> PreparedFrame {
        func prepare(_ entry: Inbound.Entry) -> PreparedEntry {
            switch entry {
            case .invalid(let response): return .answered(Framing.encode(response), [])
            case .call(let request):
                switch service.route(request, on: connection) {
                case .answered(let response): return .answered(response.map(Framing.encode), [])
                case .pending(let run): return .pending(run)
                }
            }
        }
        switch inbound {
        case .single(let entry): return .single(prepare(entry))
        case .batch(let entries): return .batch(entries.map(prepare))
        }
    }

    /// Sends what is answered and queues the rest for in-flight slots, on the event loop.
    private func apply(_ prepared: PreparedFrame, _ context: ChannelHandlerContext) {
        switch prepared {
        case .single(.answered(let bytes, let actions)):
            if let bytes { reply(bytes, context) }
            start(actions)
        case .single(.pending(let run)):
            waiting.append(Work(run: run, batch: nil, index: 0))
            startWaiting(context)
        case .batch(let entries):
            let batch = Batch(count: entries.count)
            for (index, entry) in entries.enumerated() {
                switch entry {
                case .answered(let bytes, let actions): batch.complete(index, bytes, actions)
                case .pending(let run): waiting.append(Work(run: run, batch: batch, index: index))
                }
            }
            startWaiting(context)
            if batch.isComplete { emit(batch, context) }
        }
    }

    /// Starts waiting calls while in-flight slots are free.
    private func startWaiting(_ context: ChannelHandlerContext) {
        while inFlight < configuration.maxInFlightPerConnection, let work = waiting.popFirst() {
            inFlight += 1
            let loop = context.eventLoop
            let handler = NIOLoopBound(self, eventLoop: loop)
            let bound = NIOLoopBound(work, eventLoop: loop)
            let run = work.run
            connection.spawn {
                let hooks = ReplyHooks()
                let response = await ReplyHooks.$current.withValue(hooks) { await run() }
                // Encoded here, off the event loop.
                let bytes = response.map(Framing.encode)
                let actions = hooks.take()
                loop.execute { handler.value.finished(bound.value, bytes, actions) }
            }
        }
    }

    private func finished(_ work: Work, _ bytes: [UInt8]?, _ actions: [@Sendable () async -> Void]) {
        guard let context, !closed else { return }
        inFlight -= 1
        if inFlight == 0 { lastActive = .now() }
        if let batch = work.batch {
            batch.complete(work.index, bytes, actions)
            if batch.isComplete { emit(batch, context) }
        } else {
            if let bytes { reply(bytes, context) }
            start(actions)
        }
        startWaiting(context)
        if !backlogScheduled { processFrames(context) }
        pump(context)
        resumeReading(context)
        finishIfDone(context)
    }

    private func emit(_ batch: Batch, _ context: ChannelHandlerContext) {
        if let frame = batch.frame() { reply(frame, context) }
        start(batch.actions)
    }

    private func start(_ actions: [@Sendable () async -> Void]) {
        for action in actions { connection.spawn(action) }
    }

    // MARK: Writing

    /// Writes a reply (`bytes` and a newline): straight to the channel when nothing is queued
    /// before it, else behind what is queued (replies are never refused; the in-flight limit
    /// bounds them).
    private func reply(_ bytes: [UInt8], _ context: ChannelHandlerContext) {
        guard !closing else { return }
        var buffer = context.channel.allocator.buffer(capacity: bytes.count + 1)
        buffer.writeBytes(bytes)
        buffer.writeInteger(Framing.newline)
        write(buffer, context)
    }

    /// A reply encoded here, in a buffer kept for it.
    private func reply(_ response: Response, _ context: ChannelHandlerContext) {
        guard !closing else { return }
        scratch.removeAll(keepingCapacity: true)
        response.write(to: &scratch)
        scratch.append(Framing.newline)
        var buffer = context.channel.allocator.buffer(capacity: scratch.count)
        buffer.writeBytes(scratch)
        if scratch.capacity > 65536 { scratch = [] }
        write(buffer, context)
    }

    private func write(_ buffer: ByteBuffer, _ context: ChannelHandlerContext) {
        if context.channel.isWritable, !outboxDirty || connection.outbox.isEmpty {
            context.write(wrapOutboundOut(buffer), promise: nil)
            unflushed = true
        } else {
            _ = connection.outbox.offer(buffer, force: true)
            outboxDirty = true
        }
    }

    /// Moves queued frames to the channel while it takes them, flushes, and closes once the
    /// outbox is finished and empty.
    private func pump(_ context: ChannelHandlerContext) {
        guard !closed else { return }
        var drained = false
        if outboxDirty {
            while context.channel.isWritable {
                guard let frame = connection.outbox.poll() else {
                    outboxDirty = false
                    drained = true
                    break
                }
                context.write(wrapOutboundOut(frame), promise: nil)
                unflushed = true
            }
        }
        if unflushed {
            unflushed = false
            context.flush()
        }
        if drained, !closing, connection.outbox.isFinished { closeWhenFlushed(context) }
    }

    /// Once reading has ended and every call read is answered: no more output, then close.
    private func finishIfDone(_ context: ChannelHandlerContext) {
        guard readEnd != nil, !closing, !closed, inFlight == 0, waiting.isEmpty, !backlogScheduled, !preparing,
            pending.readableBytes == 0
        else { return }
        connection.outbox.finish()
        outboxDirty = true
        pump(context)
    }

    private func closeWhenFlushed(_ context: ChannelHandlerContext) {
        closing = true
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

    // MARK: Timers

    /// After a read: when the bytes left are the start of a frame, since when.
    private func trackPartialFrame(_ cutAny: Bool, _ context: ChannelHandlerContext) {
        guard readEnd != .dropRest, pending.readableBytes > 0 else {
            partialSince = nil
            return
        }
        if cutAny || partialSince == nil { partialSince = .now() }
        if frameTimer == nil, let since = partialSince {
            armFrameTimer(context, at: since + configuration.frameTimeout)
        }
    }

    private func armFrameTimer(_ context: ChannelHandlerContext, at deadline: NIODeadline) {
        let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
        frameTimer = context.eventLoop.scheduleTask(deadline: deadline) { handler.value.frameTimerFired() }
    }

    private func frameTimerFired() {
        frameTimer = nil
        guard let context, !closed, !closing, readEnd == nil, let since = partialSince else { return }
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

    private func armIdleTimer(_ context: ChannelHandlerContext, at deadline: NIODeadline) {
        let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
        idleTimer = context.eventLoop.scheduleTask(deadline: deadline) { handler.value.idleTimerFired() }
    }

    /// Closes the connection if nothing happened on it for `idleTimeout`; busy or kept-alive
    /// connections are looked at again later.
    private func idleTimerFired() {
        guard let context, !closed, !closing, let idle = configuration.idleTimeout else { return }
        let now = NIODeadline.now()
        let busy =
            inFlight > 0 || !waiting.isEmpty || preparing || connection.keepAlive || pending.readableBytes > 0
            || readEnd != nil
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

/// The replies of one batch, gathered until every entry is answered; then sent as one array.
private final class Batch {
    private var replies: [[UInt8]?]
    private var remaining: Int
    private(set) var actions: [@Sendable () async -> Void] = []

    init(count: Int) {
        replies = Array(repeating: nil, count: count)
        remaining = count
    }

    var isComplete: Bool { remaining == 0 }

    func complete(_ index: Int, _ reply: [UInt8]?, _ actions: [@Sendable () async -> Void]) {
        replies[index] = reply
        remaining -= 1
        self.actions += actions
    }

    /// The array reply; nil when every entry was a notification.
    func frame() -> [UInt8]? {
        let parts = replies.compactMap { $0 }
        guard !parts.isEmpty else { return nil }
        var out: [UInt8] = [UInt8(ascii: "[")]
        for (index, part) in parts.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            out += part
        }
        out.append(UInt8(ascii: "]"))
        return out
    }
}
