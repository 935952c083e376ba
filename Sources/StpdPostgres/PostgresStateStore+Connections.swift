import Foundation
import Logging
import PostgresNIO
import StpdCore
import Synchronization

/// How every store operation reaches the database: on a pooled connection, within a bound, its
/// outcome reported to `health`, its failure turned into what the domain understands.
///
/// - **Bounded.** An operation a call waits on gets `callBound` from asking the pool for a
///   connection to its last answer. When the bound passes, the connection it holds is closed (a
///   query in flight cannot be cancelled, but it fails at once when its connection goes, and the
///   server rolls back an open transaction) and the operation fails as `StoreUnavailable`,
///   whether or not its query ever answers. So no call waits on a database that went away, and
///   nothing waits for TCP to notice.
/// - **A commit in flight is resolved, not guessed** (`PostgresStateStore+Apply.swift`): a CALL
///   sent whose answer was lost is looked into on another connection within `commitCheckBound`.
/// - **Gated until open.** Until the daemon has migrated the schema and started its log (`open`),
///   every operation fails at once as `StoreUnavailable`: a daemon that started with its database
///   down answers 1010 meanwhile.
/// - Deadlocks and serialisation failures (40P01, 40001) are `StoreConflict`, which the record
///   core retries from the latest state.
extension PostgresStateStore {
    /// How long an operation a call waits on may take (docs/fleet.md: with `commitCheckBound`,
    /// the 5 s a call may wait on the database).
    public static let callBound: Duration = .seconds(4)
    /// How long a commit whose connection was lost may be looked into.
    static let commitCheckBound: Duration = .seconds(1)
    /// Work nobody waits on (pruning, re-sealing) may take this long.
    static let maintenanceBound: Duration = .seconds(120)
    /// A daemon starting retries its migrations until the database answers: each try this long.
    public static let migrationBound: Duration = .seconds(10)

    /// Runs `body` in a transaction.
    func write<T: Sendable>(
        _ operation: String = #function, bound: Duration = callBound,
        _ body: @escaping @Sendable (PostgresConnection, Logger) async throws -> T
    ) async throws -> T {
        try await withConnection(operation, bound: bound) { [logger] connection in
            try await Self.transaction(connection, logger) { try await body($0, logger) }
        }
    }

    /// A read-only transaction with one snapshot for all of `body`'s queries (its BEGIN says so:
    /// no round trip of its own).
    func read<T: Sendable>(
        _ operation: String = #function, _ body: @escaping @Sendable (PostgresConnection, Logger) async throws -> T
    ) async throws -> T {
        try await withConnection(operation) { [logger] connection in
            try await Self.transaction(connection, logger, begin: "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY") {
                try await body($0, logger)
            }
        }
    }

    @discardableResult
    func query(
        _ query: PostgresQuery, _ operation: String = #function, bound: Duration = callBound, gated: Bool = true
    ) async throws -> [PostgresRow] {
        try await withConnection(operation, bound: bound, gated: gated) { [logger] connection in
            try await connection.run(query, logger: logger).collect()
        }
    }

    /// Runs `body` on a pooled connection within `bound` (see the type's comment).
    func withConnection<T: Sendable>(
        _ operation: String, bound: Duration = callBound, gated: Bool = true,
        _ body: @escaping @Sendable (PostgresConnection) async throws -> T
    ) async throws -> T {
        if gated, !isOpen {
            throw StoreUnavailable(
                reason: "the database has not been reached since this daemon started", instance: instance)
        }
        let held = HeldConnection()
        let race = Race<T>()
        // The operation runs in a task of its own, not a child: postgres-nio can leave a query
        // unanswered for good (one written just as its connection closes: `run` narrows that to a
        // race), and a child would hold the call with it. When the bound wins, that task is left
        // to its fate: its connection is closed, so it can change nothing, and the pool has
        // given its place to another.
        let work = Task { [client] in
            do {
                race.finish(
                    .success(
                        try await client.withConnection { connection in
                            try held.attach(connection)
                            defer { held.detach() }
                            return try await body(connection)
                        }))
            } catch {
                race.finish(.failure(error))
            }
        }
        let timer = Task {
            guard (try? await Task.sleep(for: bound)) != nil else { return }
            held.expire()
            work.cancel()
            race.finish(.failure(CancellationError()))
        }
        let outcome = await withTaskCancellationHandler {
            await race.outcome
        } onCancel: {
            work.cancel()
        }
        timer.cancel()
        switch outcome {
        case .success(let value):
            health.succeeded()
            return value
        case .failure(let error):
            throw failure(error, operation, expiredAfter: held.expired ? bound : nil)
        }
    }

    /// What the domain is told of a failed operation; the health tracker hears of it too.
    private func failure(_ error: any Error, _ operation: String, expiredAfter bound: Duration?) -> any Error {
        if error is StoreConflict || error is StateUnreadable {
            health.succeeded()
            return error
        }
        if let error = error as? PSQLError, let state = error.serverInfo?[.sqlState] {
            // A precondition `stpd_apply` found not to hold names its object; a deadlock or a
            // serialisation failure is retried the same way.
            if state == PostgresApplyProcedure.conflictState {
                health.succeeded()
                return StoreConflict(objectId: error.serverInfo?[.message] ?? "")
            }
            if ["40001", "40P01"].contains(state) {
                health.succeeded()
                return StoreConflict(objectId: "")
            }
        }
        if error is CancellationError, bound == nil { return error }
        let failure =
            bound.map { DatabaseFailure(operation: operation, message: "no answer within \($0)", connectionLost: true) }
            ?? DatabaseFailure(error, operation: operation)
        health.failed(failure)
        let reason = failure.connectionLost ? "the database cannot be reached (\(failure.message))" : failure.message
        return StoreUnavailable(reason: reason, instance: instance)
    }

    static func transaction<T: Sendable>(
        _ connection: PostgresConnection, _ logger: Logger, begin: PostgresQuery = "BEGIN",
        _ body: @Sendable (PostgresConnection) async throws -> T
    ) async throws -> T {
        try await connection.run(begin, logger: logger)
        do {
            let value = try await body(connection)
            try await connection.run("COMMIT", logger: logger)
            return value
        } catch {
            // The original error is the one that matters (a StoreConflict, say); a failed
            // rollback means the connection is gone, and the server rolls back on its own.
            _ = try? await connection.run("ROLLBACK", logger: logger)
            throw error
        }
    }
}

extension PostgresConnection {
    /// A query that fails at once on a connection that has closed. postgres-nio drops a query
    /// written to a closed channel (its handlers are gone) without ever answering it, so the
    /// caller would wait forever: this is how calls hung when the database went away (issue 20).
    /// Every query of the store goes through here.
    @discardableResult
    func run(_ query: PostgresQuery, logger: Logger) async throws -> PostgresRowSequence {
        guard !isClosed else { throw ConnectionClosed() }
        return try await self.query(query, logger: logger)
    }
}

struct ConnectionClosed: Error, CustomStringConvertible {
    var description: String { "the connection to the database closed" }
}

/// The first outcome of an operation or its bound; later ones are dropped.
final class Race<T: Sendable>: Sendable {
    private let state = Mutex<
        (outcome: Result<T, any Error>?, waiter: CheckedContinuation<Result<T, any Error>, Never>?)
    >(
        (nil, nil))

    func finish(_ outcome: Result<T, any Error>) {
        let waiter = state.withLock { s -> CheckedContinuation<Result<T, any Error>, Never>? in
            guard s.outcome == nil else { return nil }
            s.outcome = outcome
            defer { s.waiter = nil }
            return s.waiter
        }
        waiter?.resume(returning: outcome)
    }

    var outcome: Result<T, any Error> {
        get async {
            await withCheckedContinuation { continuation in
                let ready = state.withLock { s in
                    if s.outcome == nil { s.waiter = continuation }
                    return s.outcome
                }
                if let ready { continuation.resume(returning: ready) }
            }
        }
    }
}

/// The connection an operation holds, so that its bound can close it.
final class HeldConnection: Sendable {
    private let state = Mutex<(connection: PostgresConnection?, expired: Bool)>((nil, false))

    var expired: Bool { state.withLock { $0.expired } }

    func attach(_ connection: PostgresConnection) throws {
        try state.withLock { s in
            // The bound passed while the pool was handing the connection over: use nothing.
            if s.expired { throw CancellationError() }
            s.connection = connection
        }
    }

    func detach() { state.withLock { $0.connection = nil } }

    func expire() {
        let connection = state.withLock { s in
            s.expired = true
            defer { s.connection = nil }
            return s.connection
        }
        let _: EventLoopFuture<Void>? = connection?.close()
    }
}
