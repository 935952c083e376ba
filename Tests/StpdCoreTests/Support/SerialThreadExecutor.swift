import Foundation

/// A task executor with one thread of its own that runs jobs strictly in the order they were
/// enqueued. Code run with it as the task executor preference (child tasks inherit it) has a
/// deterministic interleaving: e.g. of a task group's children, the first added runs first until
/// it suspends. `idle()` returns once no job is queued or running, which, when every `await` of
/// the code under test stays on this executor (no actor hops), means it finished or is stuck.
final class SerialThreadExecutor: TaskExecutor, @unchecked Sendable {
    // @unchecked: every stored var is guarded by `condition`.
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []
    private var running = false
    private var stopped = false
    private var idleWatchers: [CheckedContinuation<Void, Never>] = []

    init() {
        let thread = Thread { [self] in runLoop() }
        thread.name = "SerialThreadExecutor"
        thread.start()
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    /// Ends the thread once the queue is empty. Tests call it when done (the thread keeps the
    /// executor alive until then).
    func shutdown() {
        condition.lock()
        stopped = true
        condition.signal()
        condition.unlock()
    }

    func idle() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            condition.lock()
            if jobs.isEmpty && !running {
                condition.unlock()
                continuation.resume()
            } else {
                idleWatchers.append(continuation)
                condition.unlock()
            }
        }
    }

    private func runLoop() {
        condition.lock()
        while true {
            if jobs.isEmpty {
                if !idleWatchers.isEmpty {
                    let watchers = idleWatchers
                    idleWatchers = []
                    condition.unlock()
                    for watcher in watchers { watcher.resume() }
                    condition.lock()
                    continue
                }
                if stopped { break }
                condition.wait()
                continue
            }
            let job = jobs.removeFirst()
            running = true
            condition.unlock()
            job.runSynchronously(on: asUnownedTaskExecutor())
            condition.lock()
            running = false
        }
        condition.unlock()
    }
}
