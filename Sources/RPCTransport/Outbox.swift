import DequeModule
import NIOConcurrencyHelpers
import NIOCore

/// The frames waiting to be written to one connection, bounded in bytes.
///
/// Replies use `send`, which waits while the connection is over its budget: a client that does
/// not read its replies only slows itself. Notifications use `offer`, which never waits and
/// reports `false` when the budget is spent, so an event fan-out is never held up by one slow
/// subscriber; the caller then drops that subscriber.
public final class Outbox: Sendable {
    public let limit: Int

    private struct State {
        var queue = Deque<ByteBuffer>()
        var queuedBytes = 0
        var finished = false
        var writer: CheckedContinuation<ByteBuffer?, Never>?
        var spaceWaiters: [CheckedContinuation<Bool, Never>] = []
    }

    private let state = NIOLockedValueBox(State())

    public init(limit: Int) {
        self.limit = limit
    }

    public var queuedBytes: Int { state.withLockedValue { $0.queuedBytes } }

    /// Queues a reply, waiting for room first. Returns false once the outbox is finished.
    @discardableResult
    public func send(_ frame: ByteBuffer) async -> Bool {
        while true {
            let admitted: Bool? = state.withLockedValue { s in
                if s.finished { return false }
                if s.queuedBytes + frame.readableBytes <= limit || s.queue.isEmpty { return true }
                return nil
            }
            switch admitted {
            case .some(false): return false
            case .some(true): if enqueue(frame, force: false) { return true }
            case .none:
                let stillOpen = await withCheckedContinuation { (c: CheckedContinuation<Bool, Never>) in
                    let resumeNow: Bool? = state.withLockedValue { s in
                        if s.finished { return false }
                        if s.queuedBytes + frame.readableBytes <= limit || s.queue.isEmpty { return true }
                        s.spaceWaiters.append(c)
                        return nil
                    }
                    if let resumeNow { c.resume(returning: resumeNow) }
                }
                if !stillOpen { return false }
            }
        }
    }

    /// Queues a notification if it fits the budget; `force` admits it regardless (a final notice).
    public func offer(_ frame: ByteBuffer, force: Bool = false) -> Bool {
        enqueue(frame, force: force)
    }

    private func enqueue(_ frame: ByteBuffer, force: Bool) -> Bool {
        let (accepted, writer): (Bool, CheckedContinuation<ByteBuffer?, Never>?) = state.withLockedValue { s in
            if s.finished { return (false, nil) }
            if !force, !s.queue.isEmpty, s.queuedBytes + frame.readableBytes > limit { return (false, nil) }
            if let writer = s.writer {
                s.writer = nil
                return (true, writer)
            }
            s.queue.append(frame)
            s.queuedBytes += frame.readableBytes
            return (true, nil)
        }
        writer?.resume(returning: frame)
        return accepted
    }

    /// The next frame to write, or nil once finished and drained. Only one writer may call it.
    public func next() async -> ByteBuffer? {
        await withCheckedContinuation { (c: CheckedContinuation<ByteBuffer?, Never>) in
            let (frame, done, waiters): (ByteBuffer?, Bool, [CheckedContinuation<Bool, Never>]) = state.withLockedValue
            { s in
                if let frame = s.queue.popFirst() {
                    s.queuedBytes -= frame.readableBytes
                    let waiters = s.spaceWaiters
                    s.spaceWaiters = []
                    return (frame, false, waiters)
                }
                if s.finished { return (nil, true, []) }
                s.writer = c
                return (nil, false, [])
            }
            for waiter in waiters { waiter.resume(returning: true) }
            if let frame { c.resume(returning: frame) } else if done { c.resume(returning: nil) }
        }
    }

    /// No more frames are accepted; what is queued is still written.
    public func finish() {
        let (writer, waiters) = state.withLockedValue { s in
            s.finished = true
            let writer = s.queue.isEmpty ? s.writer : nil
            if writer != nil { s.writer = nil }
            let waiters = s.spaceWaiters
            s.spaceWaiters = []
            return (writer, waiters)
        }
        writer?.resume(returning: nil)
        for waiter in waiters { waiter.resume(returning: false) }
    }
}
