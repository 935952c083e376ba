import HeapModule
import Synchronization

/// Timed wake-ups for many waiters on one clock. One task sleeps until the earliest deadline and
/// then fires every timer due by then, and those due within `tolerance` after it, so nearby
/// deadlines cost one wake-up between them. Thousands of polls waiting out their 1.5 s cost one
/// sleeping task instead of a timer each in libdispatch's heap, and a cancelled timer is gone at
/// once, where a cancelled `Task.sleep` stays armed until its deadline. While no timer is set,
/// nothing sleeps: an idle daemon wakes for nothing.
///
/// Any periodic work of the domain can use one (`schedule`, `cancel`; `sleep` for a plain wait
/// that only cancellation cuts short); a waiter typically keeps a continuation that either the
/// timer or something else (a pause, a stop) resumes, whichever comes first, and cancels the
/// timer when the other wins. `fire` runs on the queue's task, so it must
/// only hand off (resume a continuation), never block.
public final class TimerQueue: Sendable {
    public struct Timer: Sendable, Hashable {
        fileprivate let id: UInt64
    }

    private struct Entry: Comparable {
        var deadline: Duration
        var id: UInt64
        static func < (a: Entry, b: Entry) -> Bool { (a.deadline, a.id) < (b.deadline, b.id) }
    }

    private struct State {
        /// Every timer set, cancelled ones included until they reach the top (`fires` says which live).
        var heap = Heap<Entry>()
        var fires: [UInt64: @Sendable () -> Void] = [:]
        var lastID: UInt64 = 0
        /// The sleeping task, the deadline it wakes at, and its generation (a newer one replaced it).
        var driver: (task: Task<Void, Never>, deadline: Duration, generation: UInt64)?
        var generation: UInt64 = 0
    }

    private let state = Mutex(State())
    private let now: @Sendable () -> Duration
    private let sleep: @Sendable (_ until: Duration) async throws -> Void
    public let tolerance: Duration

    /// Times are read from `clock` (tests pass a clock they move themselves).
    public init(clock: some Clock<Duration> = ContinuousClock(), tolerance: Duration = .milliseconds(10)) {
        let origin = clock.now
        now = { origin.duration(to: clock.now) }
        // An explicit tolerance: without one, libdispatch lets a sleep end up to a tenth of its
        // length late (150 ms of a lone poll's 1.5 s, the whole of its 10% schedule margin).
        sleep = { try await clock.sleep(until: origin.advanced(by: $0), tolerance: .milliseconds(1)) }
        self.tolerance = tolerance
    }

    /// Calls `fire` once `delay` has passed, unless the timer is cancelled first.
    @discardableResult
    public func schedule(after delay: Duration, _ fire: @escaping @Sendable () -> Void) -> Timer {
        let deadline = now() + delay
        let (timer, replaced) = state.withLock { s -> (Timer, Task<Void, Never>?) in
            s.lastID += 1
            s.heap.insert(Entry(deadline: deadline, id: s.lastID))
            s.fires[s.lastID] = fire
            guard s.driver.map({ $0.deadline > deadline }) ?? true else { return (Timer(id: s.lastID), nil) }
            // A task sleeping until this deadline replaces the one that slept until later.
            let replaced = s.driver?.task
            s.generation += 1
            let generation = s.generation
            s.driver = (Task { await self.drive(generation, from: deadline) }, deadline, generation)
            return (Timer(id: s.lastID), replaced)
        }
        replaced?.cancel()
        return timer
    }

    /// True when the timer had not fired yet (it never will now).
    @discardableResult
    public func cancel(_ timer: Timer) -> Bool {
        let (cancelled, idle) = state.withLock { s -> (Bool, Task<Void, Never>?) in
            guard s.fires.removeValue(forKey: timer.id) != nil else { return (false, nil) }
            guard s.fires.isEmpty else { return (true, nil) }
            // The last timer: nothing is left to sleep for.
            defer { s.driver = nil }
            s.heap = Heap()
            return (true, s.driver?.task)
        }
        idle?.cancel()
        return cancelled
    }

    /// Waits `delay` on one of the queue's timers: true once it passed, false as soon as the task
    /// is cancelled (the timer is gone then, where a cancelled `Task.sleep` stays armed).
    public func sleep(for delay: Duration) async -> Bool {
        let sleep = Sleep()
        let timer = schedule(after: delay) { sleep.end(fired: true) }
        let fired = await withTaskCancellationHandler {
            await withCheckedContinuation { sleep.wait($0) }
        } onCancel: {
            sleep.end(fired: false)
        }
        if !fired { cancel(timer) }
        return fired
    }

    /// One `sleep`: whichever of its timer and its task's cancellation ends it first decides.
    private final class Sleep: Sendable {
        private let state = Mutex<(continuation: CheckedContinuation<Bool, Never>?, fired: Bool?)>((nil, nil))

        func wait(_ continuation: CheckedContinuation<Bool, Never>) {
            let ended = state.withLock { s -> Bool? in
                if s.fired == nil { s.continuation = continuation }
                return s.fired
            }
            if let ended { continuation.resume(returning: ended) }
        }

        func end(fired: Bool) {
            state.withLock { s -> CheckedContinuation<Bool, Never>? in
                guard s.fired == nil else { return nil }
                s.fired = fired
                defer { s.continuation = nil }
                return s.continuation
            }?.resume(returning: fired)
        }
    }

    /// Timers set and not yet fired or cancelled.
    public var count: Int { state.withLock { $0.fires.count } }

    private func drive(_ generation: UInt64, from first: Duration) async {
        var deadline = first
        while true {
            do { try await sleep(deadline) } catch { return }
            let limit = now() + tolerance
            let (due, next) = state.withLock { s -> ([@Sendable () -> Void], Duration?) in
                guard s.driver?.generation == generation else { return ([], nil) }
                var due: [@Sendable () -> Void] = []
                while let head = s.heap.min, head.deadline <= limit || s.fires[head.id] == nil {
                    s.heap.removeMin()
                    if let fire = s.fires.removeValue(forKey: head.id) { due.append(fire) }
                }
                guard let head = s.heap.min else {
                    s.driver = nil
                    return (due, nil)
                }
                s.driver?.deadline = head.deadline
                return (due, head.deadline)
            }
            for fire in due { fire() }
            guard let next else { return }
            deadline = next
        }
    }
}
