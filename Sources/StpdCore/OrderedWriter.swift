import Synchronization

/// Commits state changes in the order they were enqueued. Services that keep their objects in
/// memory mutate under their own lock and enqueue the write inside it, so a later state can never
/// be overwritten by an earlier one that happened to reach the store last.
public final class OrderedWriter: Sendable {
    public typealias Pending = Task<Result<[Event], any Error>, Never>

    private let log: EventLog
    private let tail = Mutex<Pending?>(nil)

    public init(log: EventLog) { self.log = log }

    /// Call while holding the lock that guarded the mutation; await the result outside it.
    public func enqueue(_ changes: [StateChange]) -> Pending {
        tail.withLock { tail in
            let previous = tail
            let next: Pending = Task { [log] in
                _ = await previous?.value
                do { return Result.success(try await log.apply(changes)) } catch { return Result.failure(error) }
            }
            tail = next
            return next
        }
    }
}
