import GRDB
import StpdCore
import Synchronization

/// Group commit: writes that arrive while a transaction is being written wait and then share
/// the next one, so a burst of N concurrent commits costs one `fsync` instead of N, and each
/// is as durable as if it had committed alone (it is answered only after its group's COMMIT).
///
/// Each write runs in a savepoint of its own: one that throws (a failed precondition, a broken
/// constraint) is rolled back alone, and the others in its group still commit. A failure of the
/// COMMIT itself (disk full, I/O error) fails every write of the group. Nothing waits for a
/// timer: a write that finds no transaction in progress starts one at once, so a lone writer
/// pays nothing for the grouping.
final class GroupCommit: Sendable {
    typealias Write = @Sendable (Database) throws -> [Event]

    private struct Waiting {
        let write: Write
        let continuation: CheckedContinuation<[Event], any Error>
    }

    private struct State {
        var queue: [Waiting] = []
        var writing = false
    }

    private let pool: DatabasePool
    private let state = Mutex(State())
    /// Caps a group, so one transaction (and the writers waiting behind it) stays short.
    private let maxGroup: Int

    init(pool: DatabasePool, maxGroup: Int = 256) {
        self.pool = pool
        self.maxGroup = maxGroup
    }

    func write(_ write: @escaping Write) async throws -> [Event] {
        try await withCheckedThrowingContinuation { continuation in
            let start = state.withLock { s in
                s.queue.append(Waiting(write: write, continuation: continuation))
                guard !s.writing else { return false }
                s.writing = true
                return true
            }
            if start { Task { await self.drain() } }
        }
    }

    /// Writes groups until no writer is waiting; only the task that set `writing` runs it.
    private func drain() async {
        while true {
            let group = state.withLock { s -> [Waiting] in
                let group = Array(s.queue.prefix(maxGroup))
                s.queue.removeFirst(group.count)
                if group.isEmpty { s.writing = false }
                return group
            }
            guard !group.isEmpty else { return }
            let outcomes: [Result<[Event], any Error>]
            do {
                outcomes = try await pool.write { db in
                    group.map { waiting in
                        Result {
                            var events: [Event] = []
                            try db.inSavepoint {
                                events = try waiting.write(db)
                                return .commit
                            }
                            return events
                        }
                    }
                }
            } catch {
                for waiting in group { waiting.continuation.resume(throwing: error) }
                continue
            }
            for (waiting, outcome) in zip(group, outcomes) { waiting.continuation.resume(with: outcome) }
        }
    }
}
