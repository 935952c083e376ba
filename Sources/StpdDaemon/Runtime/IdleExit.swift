import Logging
import ServiceLifecycle
import Synchronization

/// What keeps the daemon from being idle: open connections, and holds taken by work that must
/// run in this process (a poll's next request, a pending timer). Persisted objects do not count:
/// they resume on the next start.
final class Activity: Sendable {
    private struct State {
        var connections = 0
        var holds = 0
        var idleSince: ContinuousClock.Instant? = .now
    }

    private let state = Mutex(State())

    var connections: Int { state.withLock { $0.connections } }

    func connectionOpened() { change { $0.connections += 1 } }
    func connectionClosed() { change { $0.connections -= 1 } }
    func hold() { change { $0.holds += 1 } }
    func release() { change { $0.holds -= 1 } }

    /// When the daemon became idle, or nil while it is busy.
    var idleSince: ContinuousClock.Instant? { state.withLock { $0.idleSince } }

    private func change(_ body: (inout State) -> Void) {
        state.withLock { s in
            body(&s)
            let idle = s.connections == 0 && s.holds == 0
            if !idle {
                s.idleSince = nil
            } else if s.idleSince == nil {
                s.idleSince = .now
            }
        }
    }
}

/// Ends the process after `timeout` of idleness, when socket-activated: systemd keeps the
/// listening socket and starts stpd again for the next client. Returning from `run` shuts the
/// service group down gracefully (STOPPING=1 first).
struct IdleExit: Service {
    let activity: Activity
    let timeout: Duration
    let logger: Logger

    func run() async throws {
        do {
            try await idle()
        } catch is CancellationError {
            return  // Shutdown began for another reason; nothing to do.
        }
        logger.notice("idle for \(timeout); exiting until the next connection")
    }

    /// Returns once the daemon has been idle for `timeout`.
    private func idle() async throws {
        try await cancelWhenGracefulShutdown {
            while true {
                guard let since = activity.idleSince else {
                    // Busy: look again soon; a second of lateness on a 30 s timer is fine.
                    try await Task.sleep(for: min(timeout, .seconds(1)))
                    continue
                }
                if ContinuousClock.now - since >= timeout { break }
                try await Task.sleep(until: since + timeout, clock: .continuous)
            }
        }
    }
}
