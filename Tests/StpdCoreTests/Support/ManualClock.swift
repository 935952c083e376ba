import Synchronization

/// A clock that moves only when a test calls `advance(by:)`, so timeouts fire exactly when the
/// test decides instead of after real time has passed.
final class ManualClock: Clock, Sendable {
    struct Instant: InstantProtocol, Sendable {
        var offset: Duration

        func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
        func duration(to other: Instant) -> Duration { other.offset - offset }
        static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.offset < rhs.offset }
    }

    private struct Sleeper {
        var deadline: Instant
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now = Instant(offset: .zero)
        var sleepers: [Int: Sleeper] = [:]
        var nextID = 0
        /// Tasks waiting in `sleepersArrived` for that many sleepers.
        var watchers: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
    }

    private let state = Mutex(State())

    init() {}

    var now: Instant { state.withLock { $0.now } }
    var minimumResolution: Duration { .zero }
    var sleeperCount: Int { state.withLock { $0.sleepers.count } }

    func sleep(until deadline: Instant, tolerance: Duration?) async throws {
        let id = state.withLock { s in
            defer { s.nextID += 1 }
            return s.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let (outcome, ready) = state.withLock {
                    s -> (Result<Void, any Error>?, [CheckedContinuation<Void, Never>]) in
                    // Checked under the lock: a cancellation that ran its handler before we got
                    // here has already set the flag, so it cannot be missed.
                    if Task.isCancelled { return (.failure(CancellationError()), []) }
                    if deadline <= s.now { return (.success(()), []) }
                    s.sleepers[id] = Sleeper(deadline: deadline, continuation: continuation)
                    return (nil, Self.takeReadyWatchers(&s))
                }
                if let outcome { continuation.resume(with: outcome) }
                for watcher in ready { watcher.resume() }
            }
        } onCancel: {
            state.withLock { $0.sleepers.removeValue(forKey: id) }?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Moves time on and wakes every sleeper whose deadline is now reached.
    func advance(by duration: Duration) {
        let due = state.withLock { s in
            s.now = s.now.advanced(by: duration)
            let due = s.sleepers.filter { $0.value.deadline <= s.now }
            for id in due.keys { s.sleepers[id] = nil }
            return due.values.map(\.continuation)
        }
        for continuation in due { continuation.resume() }
    }

    /// Returns once at least `count` tasks are sleeping on this clock: the test's cue that the
    /// code under test reached its timed wait.
    func sleepersArrived(_ count: Int = 1) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let resumeNow = state.withLock { s in
                if s.sleepers.count >= count { return true }
                s.watchers.append((count, continuation))
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }

    private static func takeReadyWatchers(_ s: inout State) -> [CheckedContinuation<Void, Never>] {
        let count = s.sleepers.count
        let ready = s.watchers.filter { $0.count <= count }.map(\.continuation)
        s.watchers.removeAll { $0.count <= count }
        return ready
    }
}
