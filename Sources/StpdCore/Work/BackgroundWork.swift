import Synchronization

/// Work the domain starts that must outlive the request that started it (a session's prefetch),
/// run inside the daemon's service tree rather than as stray tasks: `run()` executes queued
/// jobs concurrently until it is cancelled.
public final class BackgroundWork: Sendable {
    private let jobs: AsyncStream<@Sendable () async -> Void>
    private let sink: AsyncStream<@Sendable () async -> Void>.Continuation

    private let began: @Sendable () -> Void
    private let ended: @Sendable () -> Void

    /// `began` and `ended` bracket each job (the daemon holds off idle exit meanwhile).
    public init(began: @escaping @Sendable () -> Void = {}, ended: @escaping @Sendable () -> Void = {}) {
        (jobs, sink) = AsyncStream.makeStream()
        self.began = began
        self.ended = ended
    }

    /// `holdsOffIdleExit`: false for work that never ends by itself (the hourly retention), which
    /// must not keep an idle daemon up.
    public func start(holdsOffIdleExit: Bool = true, _ job: @escaping @Sendable () async -> Void) {
        guard holdsOffIdleExit else {
            sink.yield(job)
            return
        }
        began()
        let ended = self.ended
        sink.yield {
            defer { ended() }
            await job()
        }
    }

    public func run() async {
        await withDiscardingTaskGroup { group in
            await withTaskCancellationHandler {
                for await job in jobs { group.addTask(operation: job) }
            } onCancel: {
                sink.finish()
            }
        }
    }
}
