import JSONRPC
import NIOConcurrencyHelpers
import NIOCore
import Synchronization

/// One client connection as the application sees it: who the peer is, and a way to push
/// notifications to it.
public final class RPCConnection: Sendable {
    public let id: UInt64
    /// The peer's pid, uid and gid from the kernel (SO_PEERCRED). A connection whose
    /// credentials cannot be read is refused before the application sees it.
    public let peer: PeerCredentials
    let outbox: Outbox
    let channel: Channel
    /// Work that lives as long as the connection (requests being answered, a subscription's
    /// feed); run by the server and cancelled when the connection closes.
    let work: AsyncStream<@Sendable () async -> Void>
    private let workSink: AsyncStream<@Sendable () async -> Void>.Continuation
    private let keepAliveFlag = Atomic<Bool>(false)

    init(id: UInt64, peer: PeerCredentials, outboxLimit: Int, account: OutboundAccount? = nil, channel: Channel) {
        self.id = id
        self.peer = peer
        self.channel = channel
        let pipeline = channel.pipeline
        let loop = channel.eventLoop
        // Always a task of its own, never a call back into the handler that queued the frame.
        outbox = Outbox(limit: outboxLimit, account: account) {
            loop.execute { pipeline.fireUserInboundEventTriggered(OutboxWake()) }
        }
        (work, workSink) = AsyncStream.makeStream()
    }

    /// The channel is still open (false once the peer is gone or the server closed it).
    public var isOpen: Bool { channel.isActive }

    /// While true the connection is exempt from the idle timeout (set while it holds a
    /// subscription: a subscriber waiting quietly for events is not idle).
    public var keepAlive: Bool {
        get { keepAliveFlag.load(ordering: .relaxed) }
        set { keepAliveFlag.store(newValue, ordering: .relaxed) }
    }

    /// Runs `action` once the reply to the request being handled is queued (so nothing it
    /// sends can overtake that reply), as work of this connection. Outside a request it runs now.
    public func afterReply(_ action: @escaping @Sendable () async -> Void) {
        if let hooks = ReplyHooks.current { hooks.add(action) } else { spawn(action) }
    }

    /// Waits for room for `bytes` more of the reply the current call is building (a page it is
    /// about to read), and holds them in the connection's outbound budget until the reply is
    /// queued: a client that does not read its replies gets no more built than its budget holds.
    /// At most half the budget is held, which the calls' own shares always leave free once the
    /// client has read what is queued, so calls reserving at once cannot wait on one another for
    /// good. False once the connection takes no more frames (the call should end). Outside a
    /// call handled by the server, nothing is held.
    public func reserveReply(bytes: Int) async -> Bool {
        guard let hooks = ReplyHooks.current else { return true }
        let held = min(bytes, outbox.limit / 2)
        guard await outbox.reserve(held) else { return false }
        hooks.reserved(held)
        return true
    }

    /// Gives back bytes `reserveReply` held that the reply will not need (a page read empty).
    public func releaseReply(bytes: Int) {
        guard let hooks = ReplyHooks.current else { return }
        outbox.release(hooks.unreserved(bytes))
    }

    /// Runs `work` concurrently for as long as the connection is open; it is cancelled when the
    /// connection ends.
    public func spawn(_ work: @escaping @Sendable () async -> Void) {
        workSink.yield(work)
    }

    func endWork() { workSink.finish() }

    /// Queues a notification without waiting. False when the connection's outbound budget is
    /// spent or the connection is closing: the caller must treat this subscriber as gone.
    public func notify(_ notification: Request) -> Bool {
        outbox.offer(Framing.frame(notification))
    }

    /// Queues an encoded notification (one JSON text and its newline) without waiting; as
    /// `notify`. `tag` is handed back by `close(withdrawingNotifications:)` if the frame is withdrawn.
    public func notify(frame: ByteBuffer, tag: (any Sendable)? = nil) -> Bool {
        outbox.offer(frame, tag: tag)
    }

    /// Waits until a frame of `bytes` would fit the outbound budget; false once the connection
    /// takes no more frames. Then `notify(frame:tag:)` is likely, not sure, to take it.
    public func room(for bytes: Int) async -> Bool {
        await outbox.room(for: bytes)
    }

    /// Sends `final` even past the budget, then closes the connection once it is written
    /// (or after `grace`, if the peer does not read it).
    public func close(after final: Request? = nil, grace: TimeAmount = .seconds(5)) {
        if let final { _ = outbox.offer(Framing.frame(final), force: true) }
        outbox.finish()
        let channel = self.channel
        let closeAnyway = channel.eventLoop.scheduleTask(in: grace) { channel.close(promise: nil) }
        // The timer holds the channel: it goes as soon as the connection does.
        channel.closeFuture.whenComplete { _ in closeAnyway.cancel() }
    }

    /// Closes the connection with final notices that must not wait behind notifications it
    /// could not take: the notifications still queued (not yet handed to the socket) are
    /// withdrawn, and `final` is given their tags (oldest first; nil for untagged ones) and
    /// returns the notifications to send first, ahead of any replies still queued. The connection
    /// closes once everything is written, or after `grace` if the peer does not read.
    /// Frames already handed to the socket still arrive before the notices.
    public func close(
        withdrawingNotifications final: ([(any Sendable)?]) -> [Request], grace: TimeAmount = .seconds(5)
    ) {
        let withdrawn = outbox.withdrawNotifications()
        outbox.finish(first: final(withdrawn).map(Framing.frame))
        let channel = self.channel
        let closeAnyway = channel.eventLoop.scheduleTask(in: grace) { channel.close(promise: nil) }
        channel.closeFuture.whenComplete { _ in closeAnyway.cancel() }
    }

    /// Runs `action` once the connection is closed: by the server, or because the peer went
    /// away entirely (a peer that only shut down its sending side is still there for replies).
    public func whenClosed(_ action: @escaping @Sendable () -> Void) {
        channel.closeFuture.whenComplete { _ in action() }
    }
}

/// Tells a connection's handler that its outbox has frames (or finished).
struct OutboxWake: Sendable {}

/// What the call being answered brings along, bound for the duration of its handling: its
/// after-reply actions, and the outbound bytes it reserved for its reply (`reserveReply`).
final class ReplyHooks: Sendable {
    @TaskLocal static var current: ReplyHooks?
    private let state = NIOLockedValueBox((actions: [@Sendable () async -> Void](), reserved: 0))

    func add(_ action: @escaping @Sendable () async -> Void) { state.withLockedValue { $0.actions.append(action) } }
    func take() -> [@Sendable () async -> Void] {
        state.withLockedValue { s in
            defer { s.actions = [] }
            return s.actions
        }
    }

    func reserved(_ bytes: Int) { state.withLockedValue { $0.reserved += bytes } }

    /// Takes up to `bytes` off what the call holds; returns how many.
    func unreserved(_ bytes: Int) -> Int {
        state.withLockedValue { s in
            let given = min(bytes, s.reserved)
            s.reserved -= given
            return given
        }
    }

    /// What the call holds when it ends, handed back with its reply.
    var reservedBytes: Int { state.withLockedValue { $0.reserved } }
}

/// Messages as frames: one compact JSON text and a newline.
enum Framing {
    static let newline = UInt8(ascii: "\n")

    /// The reply with its newline.
    static func bytes(_ response: Response) -> [UInt8] {
        var out = encode(response)
        out.append(newline)
        return out
    }

    /// The reply without a newline (a member of a batch's array).
    static func encode(_ response: Response) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(128)
        response.write(to: &out)
        return out
    }

    static func frame(_ response: Response) -> ByteBuffer { ByteBuffer(bytes: bytes(response)) }

    static func frame(_ request: Request) -> ByteBuffer {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        request.write(to: &out)
        out.append(newline)
        return ByteBuffer(bytes: out)
    }
}
