import Foundation
import JSONRPC
import StripeAPI
import Synchronization

/// Polls one Source the way the SDK's `STPSourcePoller` does (spec §1.4), from a `PollProgress` its
/// owner persists, so a poll survives a daemon restart and keeps its deadline.
///
/// - A 200 resets the interval to 1.5 s and the retry count, and keeps the source (even nil); pending
///   polls again after 1.5 s, any other status finishes with no error.
/// - 4xx and non-connectivity transport failures finish with their error.
/// - Other statuses double the wait (3, 6, 12, 24 s, capped at 24); connectivity errors keep it.
/// - Before each wait, the SDK's check `requestCount > 0 && (elapsed >= timeout || retryCount >= 5)`
///   finishes with the latest source and the last error. `requestCount` counts a response only after it
///   is handled, so at least two requests go out before a timeout or retry limit ends the poll.
///
/// A cancelled `run()` task returns `.paused` with the progress intact, as for a shutdown: unlike
/// `stop()`, it is not the app giving up on the poll.
///
/// Its waits are timers of a `TimerQueue` shared by every poll, and a wait is one continuation that
/// the timer, a pause, a stop or the task's cancellation resumes, whichever comes first: a poll
/// costs no task of its own between requests, and a paused one holds no timer.
public final class SourcePoller: Sendable {
    public static let defaultInterval = 1.5
    public static let maxInterval = 24.0
    public static let maxTimeout = 300.0
    public static let maxRetries = 5

    public let sourceID: String
    private let clientSecret: String
    private let timers: TimerQueue
    private let now: @Sendable () -> Date
    private let fetch: @Sendable (_ id: String, _ clientSecret: String) async -> PollFetchResult
    private let state: Mutex<State>

    private struct State {
        var progress: PollProgress
        var paused = false
        var stopRequested = false
        /// Finished or cancelled: nothing more to do or report.
        var over = false
        var running = false
        var runs = 0
        /// `run()` waiting out an interval (woken by its timer, a pause, a stop or a cancellation).
        var waiter: Waiter?
        /// The wait whose timer fired last (it may fire before its waiter is in place).
        var fired: UInt64 = 0
        var waits: UInt64 = 0
        /// The request in flight, which a stop cancels.
        var fetching: Task<PollFetchResult, Never>?

        mutating func takeWaiter() -> Waiter? {
            defer { waiter = nil }
            return waiter
        }
    }

    private struct Waiter {
        var continuation: CheckedContinuation<Void, Never>
        var timer: TimerQueue.Timer
        var wait: UInt64
    }

    private enum Next {
        case poll
        case wait(seconds: Double)
        /// Record the progress, then report.
        case finish(PollEnd)
        /// Return at once: nothing changed worth recording.
        case quit(PollEnd)
    }

    public init(
        sourceID: String, clientSecret: String, progress: PollProgress, timers: TimerQueue,
        now: @escaping @Sendable () -> Date,
        fetch: @escaping @Sendable (_ id: String, _ clientSecret: String) async -> PollFetchResult
    ) {
        self.sourceID = sourceID
        self.clientSecret = clientSecret
        self.timers = timers
        self.now = now
        self.fetch = fetch
        state = Mutex(State(progress: progress))
    }

    public var progress: PollProgress { state.withLock { $0.progress } }

    /// Paused by the app (`pause()`), as opposed to a run that ended because its task was cancelled.
    public var isPaused: Bool { state.withLock { $0.paused } }

    /// Polls from the stored progress until it finishes (`.finished`, reported once), is paused
    /// (`.paused`) or stopped (`.stopped`, never reports). After every response it awaits `record`, so the
    /// caller can persist the progress before the next step. One `run()` at a time: a second concurrent
    /// call returns `.paused` at once.
    ///
    /// The first run of a poller sends its poll at once: for a new poll that is the SDK's first poll; for
    /// one restored from saved progress it is the poll that was due (its timeout check ran when it was
    /// scheduled), so a poll restored past its deadline makes one request, then finishes. Running again
    /// after `.paused` is the SDK's restart, `Schedule(0)`: the timeout check first, then a poll at once.
    ///
    /// `restart`: this first run resumes a paused poll (from stored progress after a daemon restart),
    /// so it is the SDK's restart too, with its timeout check first.
    public func run(restart: Bool = false, record: @escaping @Sendable (PollProgress) async -> Void) async -> PollEnd {
        let startedAt = progress.startedAt
        let date = now()
        var run = 0
        var next: Next = state.withLock { s in
            if s.over || s.stopRequested { return .quit(.stopped) }
            if s.running { return .quit(.paused) }
            s.running = true
            s.paused = false
            s.runs += 1
            run = s.runs
            return (restart || s.runs > 1) && Self.shouldTimeout(s.progress, elapsed: date.timeIntervalSince(startedAt))
                ? .finish(finish(&s, error: nil)) : .poll
        }
        if case .quit(let end) = next { return end }
        // A run that returned .paused already cleared `running` (see `interruption`): a later run may own it.
        defer { state.withLock { if $0.runs == run { $0.running = false } } }

        while true {
            switch next {
            case .quit(let end):
                return end
            case .finish(let end):
                await record(progress)
                return state.withLock { $0.stopRequested } ? .stopped : end
            case .wait(let seconds):
                await record(progress)
                if let end = interruption(afterFetch: false) { return end }
                await wait(seconds)
                if let end = interruption(afterFetch: false) { return end }
            case .poll:
                break
            }
            let result = await fetchUnlessStopped()
            if let end = interruption(afterFetch: true) { return end }
            guard let result else { return .stopped }
            let date = now()
            next = state.withLock { handle(result, &$0, elapsed: date.timeIntervalSince(startedAt)) }
        }
    }

    /// The SDK's pause: a waiting `run()` returns `.paused` at once; a request in flight is not cancelled:
    /// its response is handled (it may finish the poll), then `run()` returns `.paused`.
    public func pause() {
        wake(
            state.withLock { s in
                s.paused = true
                return s.takeWaiter()
            })
    }

    /// The SDK's restart: clears the pause. True when no `run()` is under way, so the caller must
    /// run it again (a restart: timeout check, then a poll at once); false when a run still has its
    /// request in flight and simply carries on, or the poll is over: then nothing more is sent.
    public func resume() -> Bool {
        state.withLock { s in
            s.paused = false
            return !s.running && !s.over && !s.stopRequested
        }
    }

    /// `run()` returns `.stopped` as soon as it can (the request in flight is cancelled, its response
    /// ignored) and never reports afterwards.
    public func stop() {
        let (waiter, fetching) = state.withLock { s in
            s.stopRequested = true
            return (s.takeWaiter(), s.fetching)
        }
        fetching?.cancel()
        wake(waiter)
    }

    // MARK: Steps

    private static func shouldTimeout(_ p: PollProgress, elapsed: Double) -> Bool {
        p.requestCount > 0 && (elapsed >= p.timeout || p.retryCount >= maxRetries)
    }

    /// The SDK's Continue and the Schedule it calls.
    private func handle(_ result: PollFetchResult, _ s: inout State, elapsed: Double) -> Next {
        var p = s.progress
        var finishing = false
        let error: PollError?
        switch result {
        case .cancelled:
            s.over = true
            return .quit(.stopped)
        case .source(let source):
            p.interval = Self.defaultInterval
            p.retryCount = 0
            p.latestSource = source?.allResponseFields
            finishing = !SourceOutcomes.continuesPolling(source?.status)
            error = nil
        case .httpError(let status, let stripeError) where (400..<500).contains(status):
            finishing = true
            error = PollError(stripeError)
        case .httpError(_, let stripeError):
            p.interval = min(p.interval * 2, Self.maxInterval)
            p.retryCount += 1
            error = PollError(stripeError)
        case .connectivity(let stripeError):
            p.retryCount += 1
            error = PollError(stripeError)
        case .transportFailure(let stripeError):
            finishing = true
            error = PollError(stripeError)
        }
        // Schedule checks the timeout before this response is counted.
        finishing = finishing || Self.shouldTimeout(p, elapsed: elapsed)
        p.requestCount += 1
        p.lastError = error
        s.progress = p
        return finishing ? .finish(finish(&s, error: error)) : .wait(seconds: p.interval)
    }

    /// The SDK's `cleanupAndFireCompletion`: a poll ending knowing nothing gets the generic error.
    private func finish(_ s: inout State, error: PollError?) -> PollEnd {
        s.over = true
        let error = error ?? (s.progress.latestSource == nil ? .genericConnection : nil)
        s.progress.lastError = error
        return .finished(source: s.progress.latestSource, error: error)
    }

    // MARK: Waiting

    /// How `run()` ends now, if it must: stopped, paused (only between requests), or its task cancelled.
    private func interruption(afterFetch: Bool) -> PollEnd? {
        state.withLock { s in
            if s.stopRequested {
                s.over = true
                return .stopped
            }
            if Task.isCancelled { return .paused }
            guard !afterFetch && s.paused else { return nil }
            // Decided under the lock with `resume()`: a resume from now on must run the poller again.
            s.running = false
            return .paused
        }
    }

    /// Waits `seconds`, unless a pause, a stop or the task's cancellation comes first. The timer
    /// is set before the waiter is in place, so it may fire first (`fired`).
    private func wait(_ seconds: Double) async {
        let wait = state.withLock { s in
            s.waits += 1
            return s.waits
        }
        let timer = timers.schedule(after: .seconds(seconds)) { [self] in
            wake(
                state.withLock { s in
                    s.fired = wait
                    return s.waiter?.wait == wait ? s.takeWaiter() : nil
                })
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let waiting = state.withLock { s in
                    // Checked under the lock, so a pause, stop or cancellation that came first is not missed.
                    if Task.isCancelled || s.stopRequested || s.paused || s.fired == wait { return false }
                    s.waiter = Waiter(continuation: continuation, timer: timer, wait: wait)
                    return true
                }
                if !waiting {
                    timers.cancel(timer)
                    continuation.resume()
                }
            }
        } onCancel: {
            wake(state.withLock { $0.takeWaiter() })
        }
    }

    /// Resumes a waiter taken from the state, its timer cancelled first (so a paused poll holds
    /// none by the time its run returns).
    private func wake(_ waiter: Waiter?) {
        guard let waiter else { return }
        timers.cancel(waiter.timer)
        waiter.continuation.resume()
    }

    /// The response to one request, or nil when a stop came first (the request is then
    /// cancelled and its response ignored). A pause lets it finish. The request runs as a task of
    /// its own so that a stop can cancel it; this task's cancellation is passed on to it.
    private func fetchUnlessStopped() async -> PollFetchResult? {
        let fetching = Task { [fetch, sourceID, clientSecret] in await fetch(sourceID, clientSecret) }
        let stopped = state.withLock { s in
            if !s.stopRequested { s.fetching = fetching }
            return s.stopRequested
        }
        if stopped { fetching.cancel() }
        let result = await withTaskCancellationHandler {
            await fetching.value
        } onCancel: {
            fetching.cancel()
        }
        return state.withLock { s in
            s.fetching = nil
            return s.stopRequested ? nil : result
        }
    }
}
