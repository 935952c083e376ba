import DequeModule
import NIOConcurrencyHelpers
import NIOCore

/// The frames waiting to be written to one connection, bounded in bytes.
///
/// Replies use `send`, which waits while the connection is over its budget: a client that does
/// not read its replies only slows itself. Notifications use `offer`, which never waits and
/// reports `false` when the budget is spent, so an event fan-out is never held up by one slow
/// subscriber; the caller then drops that subscriber.
///
/// The connection's handler takes frames with `poll` on its event loop, as fast as the socket
/// takes them; `wake` asks it to, once per batch of frames queued while it was not looking.
public final class Outbox: Sendable {
    public let limit: Int
    private let wake: @Sendable () -> Void

    private struct State {
        var queue = Deque<ByteBuffer>()
        var queuedBytes = 0
        var finished = false
        var writer: CheckedContinuation<ByteBuffer?, Never>?
        var spaceWaiters: [CheckedContinuation<Bool, Never>] = []
        /// A wake is on its way and no `poll` has found the queue empty since.
        var wakePending = false
    }

    private let state = NIOLockedValueBox(State())

    public init(limit: Int, wake: @escaping @Sendable () -> Void = {}) {
        self.limit = limit
        self.wake = wake
    }

    public var queuedBytes: Int { state.withLockedValue { $0.queuedBytes } }

    /// Nothing is queued.
    var isEmpty: Bool { state.withLockedValue { $0.queue.isEmpty } }

    /// Finished, and everything queued has been taken.
    var isDone: Bool { state.withLockedValue { $0.finished && $0.queue.isEmpty } }

    /// No more frames are accepted.
    var isFinished: Bool { state.withLockedValue { $0.finished } }

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
        let (accepted, writer, wakeNow): (Bool, CheckedContinuation<ByteBuffer?, Never>?, Bool) =
            state.withLockedValue { s in
                if s.finished { return (false, nil, false) }
                if !force, !s.queue.isEmpty, s.queuedBytes + frame.readableBytes > limit { return (false, nil, false) }
                if let writer = s.writer {
                    s.writer = nil
                    return (true, writer, false)
                }
                s.queue.append(frame)
                s.queuedBytes += frame.readableBytes
                let wakeNow = !s.wakePending
                s.wakePending = true
                return (true, nil, wakeNow)
            }
        writer?.resume(returning: frame)
        if wakeNow { wake() }
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

    /// The next frame to write, without waiting (the connection's handler, on its event loop).
    func poll() -> ByteBuffer? {
        let (frame, waiters): (ByteBuffer?, [CheckedContinuation<Bool, Never>]) = state.withLockedValue { s in
            guard let frame = s.queue.popFirst() else {
                s.wakePending = false
                return (nil, [])
            }
            s.queuedBytes -= frame.readableBytes
            let waiters = s.spaceWaiters
            s.spaceWaiters = []
            return (frame, waiters)
        }
        for waiter in waiters { waiter.resume(returning: true) }
        return frame
    }

    /// No more frames are accepted; what is queued is still written.
    public func finish() {
        let (writer, waiters, wakeNow) = state.withLockedValue { s in
            let wakeNow = !s.finished
            s.finished = true
            let writer = s.queue.isEmpty ? s.writer : nil
            if writer != nil { s.writer = nil }
            let waiters = s.spaceWaiters
            s.spaceWaiters = []
            return (writer, waiters, wakeNow)
        }
        writer?.resume(returning: nil)
        for waiter in waiters { waiter.resume(returning: false) }
        // The handler closes the connection once a finished outbox is empty.
        if wakeNow { wake() }
    }
}
