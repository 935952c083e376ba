import Foundation
import Logging
import PostgresNIO
import StpdCore
import StpdStore
import Synchronization

/// `apply`: one round trip, `CALL stpd_apply(...)` (`PostgresApplyProcedure`), which writes the
/// changes, takes the next seqs from the counter row and commits before it answers.
///
/// A commit whose answer was lost (the connection closed, or the call's bound passed, after the
/// CALL was sent) is resolved, not guessed: the backend that ran it is made to finish (it is
/// terminated, which waits for a commit under way and rolls back anything else), then the commit
/// token the events carry says whether it committed. Only when the database cannot be asked
/// within `commitCheckBound` is the outcome unknown (`StoreUnavailable.outcomeUnknown`). A
/// server's ERROR (a precondition, a constraint) is a rollback for certain: nothing to resolve.
extension PostgresStateStore {
    public func apply(_ changes: [StateChange], at time: Date) async throws -> [Event] {
        guard !changes.isEmpty else { return [] }
        let call = try ApplyCall(changes, at: time, sealer, origin: origin)
        let attempt = CommitAttempt()
        // A call's change or few get the call's bound; a sweep's batch of hundreds (or a test's) more.
        let bound = max(Self.callBound, .milliseconds(20) * changes.count)
        do {
            let (latest, hold) = try await withConnection("apply", bound: bound) { [logger, backends] connection in
                let backend = try await backends.identity(of: connection, logger)
                guard !connection.isClosed else { throw ConnectionClosed() }
                attempt.sending(on: backend)
                do {
                    return try await connection.run(call.query, logger: logger).single((Int64, Double).self)
                } catch let error as PSQLError where error.serverInfo?[.severity] == "ERROR" {
                    attempt.refused()
                    throw error
                }
            }
            commits.record(hold: hold)
            return call.events(latest: latest)
        } catch let error as StoreUnavailable {
            guard let backend = attempt.inDoubt else { throw error }
            switch await outcome(of: call, on: backend) {
            case .committed(let latest): return call.events(latest: latest)
            case .rolledBack: throw error
            case .unknown:
                throw StoreUnavailable(
                    reason: "\(error.reason); whether the commit was made is unknown", instance: instance,
                    outcomeUnknown: true)
            }
        }
    }

    enum CommitOutcome: Equatable {
        case committed(latest: Int64)
        case rolledBack, unknown
    }

    /// What became of `call`, sent on `backend` and unanswered: `unknown` when the database could
    /// not say within `bound` (`commitCheckBound`; tests of the resolution itself give more, so a
    /// loaded machine's slow new connection is not taken for a database that cannot say).
    func outcome(of call: ApplyCall, on backend: Backend, within bound: Duration = commitCheckBound) async
        -> CommitOutcome
    {
        let deadline = ContinuousClock.now + bound
        let outcome = try? await withConnection("commit check", bound: bound) {
            [logger] connection -> CommitOutcome in
            // The backend may still run the CALL (its input was read before the connection
            // closed): terminating it waits for a commit under way and rolls back anything else.
            let wait = Int64(max(0.1, (deadline - .now).seconds - 0.2) * 1000)
            let ended = try await connection.run(
                """
                SELECT coalesce((SELECT pg_terminate_backend(pid, \(wait)) FROM pg_stat_activity WHERE pid = \(backend.pid)
                AND (extract(epoch FROM backend_start) * 1000000)::bigint = \(backend.started)), TRUE)
                """, logger: logger
            ).single(Bool.self)
            guard ended else { return .unknown }
            // A statement of its own: its snapshot is taken after the backend ended.
            let latest = try await connection.run(
                "SELECT max(seq) FROM event WHERE time = \(call.stamp) AND commit_token = \(call.token)", logger: logger
            ).single(Int64?.self)
            return latest.map { .committed(latest: $0) } ?? .rolledBack
        }
        return outcome ?? .unknown
    }
}

/// An `apply`'s changes as the procedure's arguments, sealed before a connection is taken.
struct ApplyCall: Sendable {
    let changes: [StateChange]
    let time: Date
    let stamp: Double
    let token = Int64.random(in: .min ... .max)
    let query: PostgresQuery

    init(_ changes: [StateChange], at time: Date, _ sealer: StateSealer, origin: String = "") throws {
        self.changes = changes
        self.time = time
        stamp = time.timeIntervalSinceReferenceDate
        let objects = changes.map(\.object)
        let states = try changes.map {
            $0.removesObject ? "" : try sealer.seal(PostgresStateStore.text($0.object.state), for: $0.object.id)
        }
        let sealedEvents = try changes.map {
            try sealer.seal(PostgresStateStore.text($0.eventObject), for: $0.object.id)
        }
        var keyChanges: [Int32] = []
        var keys: [String] = []
        for (index, change) in changes.enumerated() where !change.removesObject {
            for key in change.keys ?? [] {
                keyChanges.append(Int32(index + 1))
                keys.append(key)
            }
        }
        let preconditions: [Int16] = changes.map {
            switch $0.precondition {
            case .none: 0
            case .absent: 1
            case .version: 2
            }
        }
        let versions: [Int64] = changes.map {
            if case .version(let version) = $0.precondition { version } else { 0 }
        }
        query = """
            CALL stpd_apply(\(objects.map(\.id)), \(objects.map(\.kind)), \(objects.map { Int64($0.ownerUID) }),
            \(states), \(objects.map { $0.createdAt.timeIntervalSinceReferenceDate }),
            \(objects.map { $0.updatedAt.timeIntervalSinceReferenceDate }), \(preconditions), \(versions),
            \(objects.map { $0.status ?? "" }), \(objects.map { $0.status != nil }), \(objects.map(\.live)),
            \(objects.map(\.finished)), \(changes.map(\.removesObject)), \(changes.map(\.eventType.name)),
            \(sealedEvents), \(changes.map { $0.keys != nil }), \(keyChanges), \(keys), \(sealer.keyID), \(stamp),
            \(token), \(origin))
            """
    }

    /// The events committed, the last with seq `latest`.
    func events(latest: Int64) -> [Event] {
        let first = latest - Int64(changes.count) + 1
        return changes.enumerated().map { offset, change in
            let object = change.object
            return Event(
                seq: first + Int64(offset), time: time, type: change.eventType.name,
                objectId: object.id, objectKind: object.kind, ownerUID: object.ownerUID, object: change.eventObject)
        }
    }
}

/// The server process behind a pooled connection: its pid and start time (microseconds since
/// 1970), so that a commit check terminates that process and never one that took its pid later.
struct Backend: Sendable, Hashable {
    var pid: Int32
    var started: Int64
}

/// Each pooled connection's backend, asked once per connection (a statement before its first commit).
final class Backends: Sendable {
    private let known = Mutex<[PostgresConnection.ID: Backend]>([:])

    func identity(of connection: PostgresConnection, _ logger: Logger) async throws -> Backend {
        let id = connection.id
        if let backend = known.withLock({ $0[id] }) { return backend }
        let (pid, started) = try await connection.run(
            """
            SELECT pid, (extract(epoch FROM backend_start) * 1000000)::bigint FROM pg_stat_activity
            WHERE pid = pg_backend_pid()
            """, logger: logger
        ).single((Int32, Int64).self)
        let backend = Backend(pid: pid, started: started)
        known.withLock { $0[id] = backend }
        connection.closeFuture.whenComplete { [self] _ in known.withLock { $0[id] = nil } }
        return backend
    }
}

/// An `apply`'s CALL: the backend it was sent on, and whether the server refused it (an ERROR,
/// after which nothing was committed).
final class CommitAttempt: Sendable {
    private let state = Mutex<(backend: Backend?, refused: Bool)>((nil, false))

    func sending(on backend: Backend) { state.withLock { $0.backend = backend } }
    func refused() { state.withLock { $0.refused = true } }

    /// The backend of a CALL that was sent and neither answered nor refused.
    var inDoubt: Backend? { state.withLock { $0.refused ? nil : $0.backend } }
}

/// How many commits this store made and how long they held the counter's row lock in all (as
/// the server measured it: from taking the counter to the end of COMMIT), for `daemon.metrics`
/// and the bench.
public final class CommitStats: Sendable {
    public struct Snapshot: Sendable, Hashable {
        public var commits: Int
        public var holdSeconds: Double
    }

    private let totals = Mutex(Snapshot(commits: 0, holdSeconds: 0))

    func record(hold: Double) {
        totals.withLock {
            $0.commits += 1
            $0.holdSeconds += hold
        }
    }

    public var snapshot: Snapshot { totals.withLock { $0 } }
}
