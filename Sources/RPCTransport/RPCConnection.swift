import Foundation
import JSONRPC
import NIOConcurrencyHelpers
import NIOCore

/// One client connection as the application sees it: who the peer is, and a way to push
/// notifications to it.
public final class RPCConnection: Sendable {
    public let id: UInt64
    /// The peer's pid, uid and gid from the kernel; nil only if the platform cannot tell.
    public let peer: PeerCredentials?
    let outbox: Outbox
    let channel: Channel
    /// Work that lives as long as the connection (a subscription's feed); run by the server.
    let work: AsyncStream<@Sendable () async -> Void>
    private let workSink: AsyncStream<@Sendable () async -> Void>.Continuation

    init(id: UInt64, peer: PeerCredentials?, outbox: Outbox, channel: Channel) {
        self.id = id
        self.peer = peer
        self.outbox = outbox
        self.channel = channel
        (work, workSink) = AsyncStream.makeStream()
    }

    /// Runs `action` once the reply to the request being handled is queued (so nothing it
    /// sends can overtake that reply), as work of this connection. Outside a request it runs now.
    public func afterReply(_ action: @escaping @Sendable () async -> Void) {
        if let hooks = ReplyHooks.current { hooks.add(action) } else { spawn(action) }
    }

    /// Runs `work` concurrently for as long as the connection is open; it is cancelled when the
    /// connection ends.
    public func spawn(_ work: @escaping @Sendable () async -> Void) {
        workSink.yield(work)
    }

    func endWork() { workSink.finish() }

    /// Queues a notification, waiting while the connection is over its outbound budget.
    /// False once the connection is closing.
    public func notifyWaiting(_ notification: Request) async -> Bool {
        guard let frame = try? Framing.frame(notification) else { return false }
        return await outbox.send(frame)
    }

    /// Queues a notification without waiting. False when the connection's outbound budget is
    /// spent or the connection is closing: the caller must treat this subscriber as gone.
    public func notify(_ notification: Request) -> Bool {
        guard let frame = try? Framing.frame(notification) else { return false }
        return outbox.offer(frame)
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
        if let final, let frame = try? Framing.frame(final) { _ = outbox.offer(frame, force: true) }
        outbox.finish()
        let channel = self.channel
        channel.eventLoop.scheduleTask(in: grace) { channel.close(promise: nil) }
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
        outbox.finish(first: final(withdrawn).compactMap { try? Framing.frame($0) })
        let channel = self.channel
        channel.eventLoop.scheduleTask(in: grace) { channel.close(promise: nil) }
    }

    /// Runs `action` once the connection is closed: by the server, or because the peer went
    /// away entirely (a peer that only shut down its sending side is still there for replies).
    public func whenClosed(_ action: @escaping @Sendable () -> Void) {
        channel.closeFuture.whenComplete { _ in action() }
    }

    /// The end of the writer: closes the sending side once every byte handed to the socket is
    /// written (a plain close would discard NIO's pending writes, which may hold the last
    /// replies or an `events.dropped` notice), then the connection. A peer that does not read
    /// them within `grace` is cut off.
    func closeAfterWritten(grace: TimeAmount) async {
        let channel = self.channel
        let deadline = channel.eventLoop.scheduleTask(in: grace) { channel.close(promise: nil) }
        try? await channel.close(mode: .output)
        deadline.cancel()
        try? await channel.close()
    }
}

/// The after-reply actions of the frame being answered, bound for the duration of its handling.
final class ReplyHooks: Sendable {
    @TaskLocal static var current: ReplyHooks?
    private let actions = NIOLockedValueBox<[@Sendable () async -> Void]>([])

    func add(_ action: @escaping @Sendable () async -> Void) { actions.withLockedValue { $0.append(action) } }
    func take() -> [@Sendable () async -> Void] {
        actions.withLockedValue { a in
            defer { a = [] }
            return a
        }
    }
}

enum Framing {
    static let newline = UInt8(ascii: "\n")

    static func frame<T: Encodable>(_ message: T) throws -> ByteBuffer {
        var data = try JSONCoding.encode(message)
        data.append(newline)
        return ByteBuffer(bytes: data)
    }
}
