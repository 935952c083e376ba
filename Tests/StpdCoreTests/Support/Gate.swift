import Synchronization

/// A one-shot latch that also tells the test when someone is blocked on it: `arrivals(_:)`
/// returns once that many tasks have called `wait()`. Tests use it to hold code under test at
/// a known point (e.g. inside a sink's `send`) and act while it is held, without sleeping.
final class Gate: Sendable {
    private struct State {
        var isOpen = false
        var arrived = 0
        var waiters: [CheckedContinuation<Void, Never>] = []
        var watchers: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
    }

    private let state = Mutex(State())

    init() {}

    func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let (resumeNow, ready) = state.withLock { s -> (Bool, [CheckedContinuation<Void, Never>]) in
                s.arrived += 1
                let arrived = s.arrived
                let ready = s.watchers.filter { $0.count <= arrived }.map(\.continuation)
                s.watchers.removeAll { $0.count <= arrived }
                if s.isOpen { return (true, ready) }
                s.waiters.append(continuation)
                return (false, ready)
            }
            for watcher in ready { watcher.resume() }
            if resumeNow { continuation.resume() }
        }
    }

    func open() {
        let waiters = state.withLock { s in
            s.isOpen = true
            defer { s.waiters = [] }
            return s.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns once `count` calls to `wait()` have been made (whether or not they still block).
    func arrivals(_ count: Int = 1) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let resumeNow = state.withLock { s in
                if s.arrived >= count { return true }
                s.watchers.append((count, continuation))
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }
}
