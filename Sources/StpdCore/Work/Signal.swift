import Synchronization

/// A one-shot signal: `wait()` returns once `fire()` was called, or at once if it was, or when
/// the waiting task is cancelled. Any number of tasks may wait.
final class Signal: Sendable {
    private struct State {
        var fired = false
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
        var next = 0
    }

    private let state = Mutex(State())

    var hasFired: Bool { state.withLock { $0.fired } }

    func fire() {
        let waiters = state.withLock { s in
            s.fired = true
            defer { s.waiters = [:] }
            return Array(s.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    func wait() async {
        let token = state.withLock { s in
            defer { s.next += 1 }
            return s.next
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLock { s in
                    // Under the lock: a fire or cancellation that came first is not missed.
                    if s.fired || Task.isCancelled { return true }
                    s.waiters[token] = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: token) }?.resume()
        }
    }
}
