import Synchronization

/// A one-shot latch: `wait()` suspends until `open()` is called (or returns at once if it
/// was). Tests order concurrent events with it instead of sleeping. A waiter whose task is
/// cancelled returns too, so a failed test unwinds instead of hanging.
public final class Gate: Sendable {
    private struct State {
        var isOpen = false
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
        var nextWaiter = 0
    }

    private let state = Mutex(State())

    public init() {}

    public var isOpen: Bool { state.withLock { $0.isOpen } }

    public func open() {
        let waiters = state.withLock { s in
            s.isOpen = true
            defer { s.waiters = [:] }
            return Array(s.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    public func wait() async {
        let token = state.withLock { s in
            defer { s.nextWaiter += 1 }
            return s.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { s in
                    if s.isOpen || Task.isCancelled { return true }
                    s.waiters[token] = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: token) }?.resume()
        }
    }
}
