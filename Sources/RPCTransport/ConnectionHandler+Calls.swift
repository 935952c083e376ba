import JSONRPC
import NIOCore

// Calls: routing the requests of a frame, starting those that wait for in-flight slots, and
// gathering replies (a batch's as one array). On the connection's event loop unless noted.

extension ConnectionHandler {

    /// A frame read and routed: what is answered already and what still has to run.
    enum PreparedFrame: Sendable {
        case single(PreparedEntry)
        case batch([PreparedEntry])
    }

    enum PreparedEntry: Sendable {
        /// The reply (without newline; nil for a notification) and its after-reply actions.
        case answered([UInt8]?, [@Sendable () async -> Void])
        case pending(RequestID?, @Sendable () async -> Response?)
    }

    /// Frames up to this size are read and routed on the event loop; larger ones (big batches)
    /// as a task of the connection, so the loop's other connections do not wait for them.
    static let inlineFrameBytes = 16 << 10

    func handle(_ frame: ByteBuffer, _ context: ChannelHandlerContext) {
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
                        waiting.append(Work(run: run, batch: nil, index: 0, id: request.id))
                        startWaiting(context)
                    }
                }
                return
            }
            apply(Self.prepare(inbound, service, connection), context)
            return
        }
        let action = state.startPreparing()
        guard action == .none else { return perform(action) }
        let loop = context.eventLoop
        let handler = NIOLoopBound(self, eventLoop: loop)
        connection.spawn {
            let inbound = frame.withUnsafeReadableBytes { Inbound.parse($0, maximumBatch: maxBatch) }
            let prepared = Self.prepare(inbound, service, connection)
            loop.execute { handler.value.prepared(prepared) }
        }
    }

    func prepared(_ prepared: PreparedFrame) {
        state.finishPreparing()
        guard let context = liveContext else { return }
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
                case .pending(let run): return .pending(request.id, run)
                }
            }
        }
        switch inbound {
        case .single(let entry): return .single(prepare(entry))
        case .batch(let entries): return .batch(entries.map(prepare))
        }
    }

    /// Sends what is answered and queues the rest for in-flight slots, on the event loop.
    func apply(_ prepared: PreparedFrame, _ context: ChannelHandlerContext) {
        switch prepared {
        case .single(.answered(let bytes, let actions)):
            if let bytes { reply(bytes, context) }
            start(actions)
        case .single(.pending(let id, let run)):
            waiting.append(Work(run: run, batch: nil, index: 0, id: id))
            startWaiting(context)
        case .batch(let entries):
            let batch = Batch(count: entries.count)
            for (index, entry) in entries.enumerated() {
                switch entry {
                case .answered(let bytes, let actions): batch.complete(index, bytes, actions)
                case .pending(let id, let run): waiting.append(Work(run: run, batch: batch, index: index, id: id))
                }
            }
            startWaiting(context)
            if batch.isComplete { emit(batch, context) }
        }
    }

    /// What each call in flight holds of the outbound budget: an equal part of half of it, so the
    /// other half is always there for one call that reserves more (`RPCConnection.reserveReply`).
    var callShare: Int { max(configuration.maxOutboundBytes / (2 * configuration.maxInFlightPerConnection), 1) }

    /// Starts waiting calls while in-flight slots are free and the outbound budget holds each
    /// one's share (`callShare`, reserved until its reply is queued): a connection that does not
    /// read its replies starts no more calls than its budget holds, and they wait, unread, until
    /// its outbox drains. A batch whose gathered replies have outgrown the budget (they can only
    /// go out together) runs no more entries: each gets a -32000 error instead.
    func startWaiting(_ context: ChannelHandlerContext) {
        let share = callShare
        while let work = waiting.first, let batch = work.batch, batch.gathered > configuration.maxOutboundBytes {
            waiting.removeFirst()
            let error = RPCError(
                code: RPCError.serverBusyCode,
                message:
                    "Server error: this batch's replies outgrew the connection's outbound budget; send it again alone",
                data: ["maxOutboundBytes": .int(Int64(configuration.maxOutboundBytes))])
            batch.complete(work.index, work.id.map { Framing.encode(Response(id: $0, error: error)) }, [])
            if batch.isComplete { emit(batch, context) }
        }
        while inFlight < configuration.maxInFlightPerConnection, !waiting.isEmpty,
            connection.outbox.tryReserve(share)
        {
            let work = waiting.removeFirst()
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
                let reserved = share + hooks.reservedBytes
                loop.execute { handler.value.finished(bound.value, bytes, actions, reserved: reserved) }
            }
        }
    }

    /// A call's reply, with the outbound bytes it reserved: given back once the reply is queued
    /// (or gathered into its batch's).
    func finished(_ work: Work, _ bytes: [UInt8]?, _ actions: [@Sendable () async -> Void], reserved: Int) {
        guard let context = liveContext else { return }
        inFlight -= 1
        if inFlight == 0 { lastActive = .now() }
        if let batch = work.batch {
            batch.complete(work.index, bytes, actions)
            if batch.isComplete { emit(batch, context) }
        } else {
            if let bytes { reply(bytes, context) }
            start(actions)
        }
        connection.outbox.release(reserved)
        startWaiting(context)
        if !state.backlogScheduled { processFrames(context) }
        pump(context)
        resumeReading(context)
        finishIfDone(context)
    }

    func emit(_ batch: Batch, _ context: ChannelHandlerContext) {
        if let frame = batch.frame() { reply(frame, context) }
        start(batch.actions)
    }

    func start(_ actions: [@Sendable () async -> Void]) {
        for action in actions { connection.spawn(action) }
    }

}

/// The replies of one batch, gathered until every entry is answered; then sent as one array.
final class Batch {
    private var replies: [[UInt8]?]
    private var remaining: Int
    private(set) var actions: [@Sendable () async -> Void] = []
    /// Bytes of the replies gathered so far.
    private(set) var gathered = 0

    init(count: Int) {
        replies = Array(repeating: nil, count: count)
        remaining = count
    }

    var isComplete: Bool { remaining == 0 }

    func complete(_ index: Int, _ reply: [UInt8]?, _ actions: [@Sendable () async -> Void]) {
        replies[index] = reply
        remaining -= 1
        gathered += reply?.count ?? 0
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
