import DequeModule
import NIOConcurrencyHelpers
import NIOCore

/// The frames waiting to be written to one connection, bounded in bytes.
///
/// The budget counts what is queued and what is reserved: bytes held for replies still being
/// built (`reserve`, `tryReserve`), released once the reply is queued. A call starts only with
/// room for its reply, and one that builds a large reply (a page of events) first waits for room
/// for it, so a client that does not read its replies makes the daemon build no more of them
/// than its budget holds: it only slows itself.
///
/// Notifications use `offer`, which never waits and reports `false` when the budget is spent,
/// so an event fan-out is never held up by one slow subscriber; the caller then drops that
/// subscriber. `send` queues a frame once there is room.
///
/// The connection's handler takes frames with `poll` on its event loop, as fast as the socket
/// takes them; `wake` asks it to, once per batch of frames queued while it was not looking.
///
/// A notification still queued can be withdrawn (`withdrawNotifications`), so that the final
/// notice to a subscriber that fell behind goes out ahead of the frames it could not take
/// (`finish(first:)`) instead of behind them; each withdrawn frame's tag tells its sender which
/// one it was.
///
/// With an `OutboundAccount`, what every outbox of one uid holds is bounded together too: bytes
/// are admitted only when they fit both budgets, and the account is told of every change (one
/// place, `withState`). A detached outbox (its connection closed) gives all it held back at once.
public final class Outbox: Sendable {
    public let limit: Int
    private let wake: @Sendable () -> Void
    private let account: OutboundAccount?

    private struct Queued {
        var frame: ByteBuffer
        /// Nil for a reply; a notification carries its sender's tag (or `Untagged`).
        var notification: (any Sendable)?
    }

    private struct Untagged: Sendable {}

    private struct State {
        var queue = Deque<Queued>()
        var queuedBytes = 0
        /// Held for replies being built.
        var reservedBytes = 0
        var finished = false
        /// Takes no more frames, as once finished, but the writer waits for `finish(first:)`.
        var sealed = false
        var closed: Bool { finished || sealed }
        var writer: CheckedContinuation<ByteBuffer?, Never>?
        var spaceWaiters: [CheckedContinuation<Bool, Never>] = []
        /// A wake is on its way and no `poll` has found the queue empty since.
        var wakePending = false
        /// What the account was told this outbox holds.
        var charged = 0
        /// The connection closed: nothing more is charged to the account.
        var detached = false

        /// Whether `bytes` more fit: within the budget, or into an outbox with nothing queued or
        /// reserved (a frame larger than the whole budget still goes, alone).
        func fits(_ bytes: Int, limit: Int) -> Bool {
            queuedBytes + reservedBytes + bytes <= limit || (queue.isEmpty && reservedBytes == 0)
        }
    }

    private let state = NIOLockedValueBox(State())

    init(limit: Int, account: OutboundAccount?, wake: @escaping @Sendable () -> Void = {}) {
        self.limit = limit
        self.account = account
        self.wake = wake
    }

    public convenience init(limit: Int, wake: @escaping @Sendable () -> Void = {}) {
        self.init(limit: limit, account: nil, wake: wake)
    }

    /// Runs `body` under the lock and tells the account what changed; the wakes of other outboxes
    /// that waited for the account's room run after the lock is let go.
    private func withState<T>(_ body: (inout State) -> T) -> T {
        let (result, wakes): (T, [@Sendable () -> Void]) = state.withLockedValue { s in
            let result = body(&s)
            guard let account else { return (result, []) }
            let now = s.detached ? 0 : s.queuedBytes + s.reservedBytes
            let delta = now - s.charged
            s.charged = now
            return (result, account.adjust(by: delta))
        }
        for wake in wakes { wake() }
        return result
    }

    /// Whether `bytes` more fit this outbox's budget and its uid's; when only the uid's is short,
    /// this outbox asks to be told of room (`roomElsewhere`).
    private func admits(_ bytes: Int, _ s: State, share: Bool = false) -> Bool {
        guard s.fits(bytes, limit: limit) else { return false }
        guard let account, !s.detached, !account.fits(bytes, share: share) else { return true }
        account.starve(ObjectIdentifier(self)) { [weak self] in self?.roomElsewhere() }
        return false
    }

    /// Another outbox of the uid gave bytes back: whoever waits for room here looks again.
    private func roomElsewhere() {
        let waiters = state.withLockedValue { s in
            let waiters = s.spaceWaiters
            s.spaceWaiters = []
            return waiters
        }
        for waiter in waiters { waiter.resume(returning: true) }
        // The handler starts the calls that wait for room, and reads again.
        wake()
    }

    /// The connection closed: what this outbox holds is given back to the uid's account now (a
    /// call still running gives its reservation back to nobody).
    func detach() {
        account?.forget(ObjectIdentifier(self))
        withState { $0.detached = true }
    }

    public var queuedBytes: Int { state.withLockedValue { $0.queuedBytes } }

    /// Queued and reserved: what the budget counts.
    var committedBytes: Int { state.withLockedValue { $0.queuedBytes + $0.reservedBytes } }

    /// Nothing is queued.
    var isEmpty: Bool { state.withLockedValue { $0.queue.isEmpty } }

    /// Finished, and everything queued has been taken.
    var isDone: Bool { state.withLockedValue { $0.finished && $0.queue.isEmpty } }

    /// Queues a reply, waiting for room first. Returns false once the outbox is finished.
    @discardableResult
    public func send(_ frame: ByteBuffer) async -> Bool {
        while true {
            guard await room(for: frame.readableBytes) else { return false }
            if enqueue(Queued(frame: frame, notification: nil), force: false) { return true }
        }
    }

    /// Waits until a frame of `bytes` fits the budget (or nothing is queued or reserved); false
    /// once the outbox takes no more frames. Another sender may take the room first.
    public func room(for bytes: Int) async -> Bool {
        await waitForRoom(bytes, reserving: false)
    }

    /// Waits for room for `bytes`, as `room(for:)`, and holds it for a reply being built until
    /// `release`. False (nothing held) once the outbox takes no more frames.
    public func reserve(_ bytes: Int) async -> Bool {
        await waitForRoom(bytes, reserving: true)
    }

    /// Holds `bytes` if they fit now, a call's share (in the lower half of the uid's account); false
    /// (nothing held) if not.
    func tryReserve(_ bytes: Int) -> Bool {
        withState { s in
            guard !s.closed, admits(bytes, s, share: true) else { return false }
            s.reservedBytes += bytes
            return true
        }
    }

    /// Gives back what `reserve` or `tryReserve` held (the reply is queued, or was never built).
    public func release(_ bytes: Int) {
        guard bytes > 0 else { return }
        let waiters = withState { s in
            s.reservedBytes -= bytes
            let waiters = s.spaceWaiters
            s.spaceWaiters = []
            return waiters
        }
        for waiter in waiters { waiter.resume(returning: true) }
    }

    private func waitForRoom(_ bytes: Int, reserving: Bool) async -> Bool {
        func admit(_ s: inout State) -> Bool? {
            if s.closed { return false }
            guard admits(bytes, s) else { return nil }
            if reserving { s.reservedBytes += bytes }
            return true
        }
        while true {
            if let admitted = withState({ admit(&$0) }) { return admitted }
            // Resumed with true to look again (room was made), false once closed.
            let again = await withCheckedContinuation { (c: CheckedContinuation<Bool, Never>) in
                let resumeNow: Bool? = state.withLockedValue { s in
                    if s.closed { return false }
                    if admits(bytes, s) { return true }
                    s.spaceWaiters.append(c)
                    return nil
                }
                if let resumeNow { c.resume(returning: resumeNow) }
            }
            if !again { return false }
        }
    }

    /// Queues a notification if it fits the budget; `force` admits it regardless (a final notice).
    /// `tag` comes back from `withdrawNotifications` if the frame is withdrawn.
    public func offer(_ frame: ByteBuffer, force: Bool = false, tag: (any Sendable)? = nil) -> Bool {
        enqueue(Queued(frame: frame, notification: tag ?? Untagged()), force: force)
    }

    private func enqueue(_ queued: Queued, force: Bool) -> Bool {
        let (accepted, writer, wakeNow): (Bool, CheckedContinuation<ByteBuffer?, Never>?, Bool) =
            withState { s in
                if s.closed { return (false, nil, false) }
                if !force, !admits(queued.frame.readableBytes, s) { return (false, nil, false) }
                if let writer = s.writer {
                    s.writer = nil
                    return (true, writer, false)
                }
                s.queue.append(queued)
                s.queuedBytes += queued.frame.readableBytes
                let wakeNow = !s.wakePending
                s.wakePending = true
                return (true, nil, wakeNow)
            }
        writer?.resume(returning: queued.frame)
        if wakeNow { wake() }
        return accepted
    }

    /// Takes no more frames and removes the notifications still queued (those the writer has
    /// not taken), returning the tags they were offered with (nil if none), oldest first.
    /// Replies stay queued. The writer goes on with them, then waits for `finish(first:)`.
    public func withdrawNotifications() -> [(any Sendable)?] {
        let (withdrawn, waiters) = withState { s in
            s.sealed = true
            var withdrawn: [(any Sendable)?] = []
            s.queue.removeAll { queued in
                guard let tag = queued.notification else { return false }
                withdrawn.append(tag is Untagged ? nil : tag)
                s.queuedBytes -= queued.frame.readableBytes
                return true
            }
            let waiters = s.spaceWaiters
            s.spaceWaiters = []
            return (withdrawn, waiters)
        }
        for waiter in waiters { waiter.resume(returning: false) }
        return withdrawn
    }

    /// Puts `frames` ahead of everything still queued, past the budget, and finishes.
    public func finish(first frames: [ByteBuffer]) {
        let (handOff, wakeNow): ((CheckedContinuation<ByteBuffer?, Never>, ByteBuffer?)?, Bool) =
            withState { s in
                if s.finished { return (nil, false) }
                s.finished = true
                s.queue.insert(contentsOf: frames.map { Queued(frame: $0, notification: nil) }, at: 0)
                s.queuedBytes += frames.reduce(0) { $0 + $1.readableBytes }
                // A waiting writer means the queue was empty: it takes the first frame, or learns the end.
                guard let writer = s.writer else { return (nil, true) }
                s.writer = nil
                guard let first = s.queue.popFirst() else { return ((writer, nil), false) }
                s.queuedBytes -= first.frame.readableBytes
                return ((writer, first.frame), false)
            }
        if let (writer, frame) = handOff { writer.resume(returning: frame) }
        if wakeNow { wake() }
    }

    /// The next frame to write, or nil once finished and drained. Only one writer may call it.
    public func next() async -> ByteBuffer? {
        await withCheckedContinuation { (c: CheckedContinuation<ByteBuffer?, Never>) in
            let (frame, done, waiters): (ByteBuffer?, Bool, [CheckedContinuation<Bool, Never>]) = withState { s in
                if let queued = s.queue.popFirst() {
                    s.queuedBytes -= queued.frame.readableBytes
                    let waiters = s.spaceWaiters
                    s.spaceWaiters = []
                    return (queued.frame, false, waiters)
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
        let (frame, waiters): (ByteBuffer?, [CheckedContinuation<Bool, Never>]) = withState { s in
            guard let queued = s.queue.popFirst() else {
                s.wakePending = false
                return (nil, [])
            }
            s.queuedBytes -= queued.frame.readableBytes
            let waiters = s.spaceWaiters
            s.spaceWaiters = []
            return (queued.frame, waiters)
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
