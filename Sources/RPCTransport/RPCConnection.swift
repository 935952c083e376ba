import Foundation
import JSONRPC
import NIOCore

/// One client connection as the application sees it: who the peer is, and a way to push
/// notifications to it.
public final class RPCConnection: Sendable {
    public let id: UInt64
    /// The peer's pid, uid and gid from the kernel; nil only if the platform cannot tell.
    public let peer: PeerCredentials?
    let outbox: Outbox
    let channel: Channel

    init(id: UInt64, peer: PeerCredentials?, outbox: Outbox, channel: Channel) {
        self.id = id
        self.peer = peer
        self.outbox = outbox
        self.channel = channel
    }

    /// Queues a notification without waiting. False when the connection's outbound budget is
    /// spent or the connection is closing: the caller must treat this subscriber as gone.
    public func notify(_ notification: Request) -> Bool {
        guard let frame = try? Framing.frame(notification) else { return false }
        return outbox.offer(frame)
    }

    /// Sends `final` even past the budget, then closes the connection once it is written
    /// (or after `grace`, if the peer does not read it).
    public func close(after final: Request? = nil, grace: TimeAmount = .seconds(5)) {
        if let final, let frame = try? Framing.frame(final) { _ = outbox.offer(frame, force: true) }
        outbox.finish()
        let channel = self.channel
        channel.eventLoop.scheduleTask(in: grace) { channel.close(promise: nil) }
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
