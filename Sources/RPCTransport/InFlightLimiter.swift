import NIOConcurrencyHelpers

/// Bounds how many requests of one connection run at once; past the bound the connection
/// stops reading, so a client that floods requests is slowed by TCP-style backpressure.
final class InFlightLimiter: Sendable {
    private struct State {
        var available: Int
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state: NIOLockedValueBox<State>

    init(limit: Int) {
        state = NIOLockedValueBox(State(available: limit))
    }

    func acquire() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let granted = state.withLockedValue { s in
                if s.available > 0 {
                    s.available -= 1
                    return true
                }
                s.waiters.append(c)
                return false
            }
            if granted { c.resume() }
        }
    }

    func release() {
        let next: CheckedContinuation<Void, Never>? = state.withLockedValue { s in
            if s.waiters.isEmpty {
                s.available += 1
                return nil
            }
            return s.waiters.removeFirst()
        }
        next?.resume()
    }
}
