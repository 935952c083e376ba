import PostgresNIO
import StpdCore

/// Brings the events other daemons commit to this daemon's subscribers: it LISTENs on
/// `stpd_events` on a connection of its own, and on each notification (and after every
/// (re)connection, for what was committed while it was away) publishes the rows after the last
/// seq this daemon published (`EventLog.catchUp`). The payload is only a hint; the rows are the
/// truth, so a lost or coalesced notification loses nothing and the bus drops what it already has.
public struct PostgresEventFollower: Sendable {
    public static let channel = "stpd_events"

    let store: PostgresStateStore
    let log: EventLog
    /// Also read the log this often without a notification: a connection silently lost by a
    /// middlebox is noticed no later than this.
    let sweepInterval: Duration

    public init(store: PostgresStateStore, log: EventLog, sweepInterval: Duration = .seconds(5)) {
        self.store = store
        self.log = log
        self.sweepInterval = sweepInterval
    }

    /// Runs until its task is cancelled, reconnecting a second after a failure (the database
    /// went away: it catches up from the table once it is back).
    public func run() async {
        while !Task.isCancelled {
            do {
                try await store.client.withConnection { connection in
                    try await connection.listen(on: Self.channel) { notifications in
                        try await follow(notifications)
                    }
                }
            } catch {
                if Task.isCancelled { return }
                // A catch-up's own failure was reported by the store already.
                if !(error is StoreUnavailable) {
                    store.health.failed(DatabaseFailure(error, operation: "following the event log"))
                }
                try? await Task.sleep(for: .seconds(1))
            }
        }
    }

    /// Whether a notification (`<last seq> <origin>`) announces a commit of this daemon's own
    /// store, which the committing call publishes itself: read, it would cost a statement per
    /// commit for nothing. A commit of its own whose answer was lost is read at the next commit
    /// that finds its seq missing (`EventLog.append`), or by the sweep.
    private func isOwn(_ payload: String) -> Bool {
        payload.split(separator: " ").last.map { $0 == store.origin } ?? false
    }

    private func follow(_ notifications: PostgresNotificationSequence) async throws {
        try await log.catchUp()
        try await withThrowingTaskGroup(of: Void.self) { group in
            // Wake-ups from notifications and from the sweep timer go through one stream, so
            // catch-ups run one at a time and a burst of notifications collapses into a few reads.
            let (wakeups, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
            group.addTask {
                for try await notification in notifications where !isOwn(notification.payload) { wake.yield() }
                wake.finish()
                throw NotificationsEnded()
            }
            group.addTask {
                while !Task.isCancelled {
                    try await Task.sleep(for: sweepInterval)
                    wake.yield()
                }
            }
            group.addTask {
                for await _ in wakeups { try await log.catchUp() }
            }
            try await group.next()
            group.cancelAll()
        }
    }
}

/// The LISTEN connection's notifications ended (the connection closed): listen again.
struct NotificationsEnded: Error {}
