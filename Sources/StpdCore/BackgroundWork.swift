import Synchronization

/// Work the domain starts that must outlive the request that started it (a session's prefetch),
/// run inside the daemon's service tree rather than as stray tasks: `run()` executes queued
/// jobs concurrently until it is cancelled.
public final class BackgroundWork: Sendable {
    private let jobs: AsyncStream<@Sendable () async -> Void>
    private let sink: AsyncStream<@Sendable () async -> Void>.Continuation

    public init() {
        (jobs, sink) = AsyncStream.makeStream()
    }

    public func start(_ job: @escaping @Sendable () async -> Void) {
        sink.yield(job)
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
