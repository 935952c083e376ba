import Foundation
import Logging
import PostgresNIO
import Synchronization

/// A database failure as the log and `daemon.status` show it: the operation, the SQLSTATE and
/// the server's message, or what happened to the connection. Never a query's text or parameters
/// (they may hold secrets), never a password (the URL holds none).
public struct DatabaseFailure: Error, Sendable, Hashable, CustomStringConvertible {
    /// The store operation that failed (`apply`, `lease renewal`, …).
    public var operation: String
    /// The server's SQLSTATE; nil when no server answered (connection refused, lost, timed out).
    public var sqlState: String?
    /// The server's message (what a client is told), or what happened to the connection.
    public var message: String
    /// The server's detail, for the log only: it may name key values, so `description` (what
    /// `daemon.status` shows any client) leaves it out.
    public var detail: String?
    /// The connection could not be made or was lost: the database counts as down until an
    /// operation succeeds again. Otherwise the server refused one statement.
    public var connectionLost: Bool

    public var description: String {
        "\(operation): " + (sqlState.map { "SQLSTATE \($0): " } ?? "") + message
    }

    var detailSuffix: String { detail.map { " (\($0))" } ?? "" }

    /// SQLSTATE classes and codes that mean the server is going away or cannot take connections.
    static let lostStates: Set<String> = ["57P01", "57P02", "57P03", "53300"]

    init(operation: String, sqlState: String? = nil, message: String, detail: String? = nil, connectionLost: Bool) {
        self.operation = operation
        self.sqlState = sqlState
        self.message = message
        self.detail = detail
        self.connectionLost = connectionLost
    }

    init(_ error: any Error, operation: String) {
        guard let error = error as? PSQLError else {
            // The pool's own errors (no connection could be made) and the transport's.
            self.init(operation: operation, message: "\(error)", connectionLost: true)
            return
        }
        if error.code == .server, let info = error.serverInfo {
            let state = info[.sqlState]
            let lost = state.map { $0.hasPrefix("08") || $0.hasPrefix("28") || Self.lostStates.contains($0) } ?? true
            self.init(
                operation: operation, sqlState: state, message: info[.message] ?? "server error", detail: info[.detail],
                connectionLost: lost)
            return
        }
        let underlying = error.underlying.map { ": \($0)" } ?? ""
        self.init(operation: operation, message: "\(error.code)\(underlying)", connectionLost: true)
    }
}

/// What this daemon knows of its database: up or down (since when, why), how often it came back.
/// Every store operation reports its outcome here; `daemon.status` and `daemon.metrics` read it.
///
/// One private state, changed only by `succeeded` and `failed`. Each transition is logged once:
/// going down as an error naming the operation, SQLSTATE and message; coming back as a notice
/// with how long it was down. Failures while down are logged at most once per `quiet` for each
/// distinct cause, with how many were left out, so an outage under load does not flood the journal.
public final class DatabaseHealth: Sendable {
    public struct Snapshot: Sendable, Hashable {
        /// nil until the first operation ended (the daemon may start with the database down).
        public var up: Bool?
        /// When it last went up or down.
        public var since: Date?
        /// How many times the database was reached again after it was down.
        public var reconnects: Int
        /// The last failure, up or down.
        public var lastError: String?
    }

    private enum Phase {
        case unknown
        case up(since: Date)
        case down(since: Date)
    }

    private struct State {
        var phase = Phase.unknown
        var reconnects = 0
        var lastError: DatabaseFailure?
        /// Per cause: when it was last logged, and how many like it were not.
        var logged: [DatabaseFailure: (at: ContinuousClock.Instant, suppressed: Int)] = [:]

        var isDown: Bool {
            if case .down = phase { return true }
            return false
        }
    }

    private let state = Mutex(State())
    private let logger: Logger
    private let quiet: Duration
    private let database: String

    public init(database: String, logger: Logger, quiet: Duration = .seconds(10)) {
        self.database = database
        self.logger = logger
        self.quiet = quiet
    }

    public var snapshot: Snapshot {
        state.withLock { s in
            switch s.phase {
            case .unknown: Snapshot(up: nil, since: nil, reconnects: s.reconnects, lastError: s.lastError?.description)
            case .up(let since):
                Snapshot(up: true, since: since, reconnects: s.reconnects, lastError: s.lastError?.description)
            case .down(let since):
                Snapshot(up: false, since: since, reconnects: s.reconnects, lastError: s.lastError?.description)
            }
        }
    }

    public var isUp: Bool { snapshot.up == true }

    func succeeded() {
        let outage: Duration? = state.withLock { s in
            switch s.phase {
            case .up: return nil
            case .unknown:
                s.phase = .up(since: Date())
                return nil
            case .down(let since):
                s.phase = .up(since: Date())
                s.reconnects += 1
                s.logged = [:]
                return .seconds(Date().timeIntervalSince(since))
            }
        }
        if let outage {
            logger.notice(
                "the database is reachable again", metadata: ["database": "\(database)", "down_for": "\(outage)"])
        }
    }

    func failed(_ failure: DatabaseFailure) {
        enum Line {
            case wentDown
            case again(suppressed: Int)
            case none
        }
        let line: Line = state.withLock { s in
            s.lastError = failure
            let now = ContinuousClock.now
            if failure.connectionLost, !s.isDown {
                s.phase = .down(since: Date())
                s.logged[failure] = (now, 0)
                return .wentDown
            }
            guard let last = s.logged[failure], now - last.at < quiet else {
                let suppressed = s.logged[failure]?.suppressed ?? 0
                s.logged[failure] = (now, 0)
                return .again(suppressed: suppressed)
            }
            s.logged[failure]?.suppressed += 1
            return .none
        }
        var metadata: Logger.Metadata = ["database": "\(database)", "operation": "\(failure.operation)"]
        if let sqlState = failure.sqlState { metadata["sqlstate"] = "\(sqlState)" }
        switch line {
        case .wentDown:
            logger.error("the database is unreachable: \(failure.message)\(failure.detailSuffix)", metadata: metadata)
        case .again(let suppressed):
            if suppressed > 0 { metadata["suppressed"] = "\(suppressed)" }
            logger.warning("database operation failed: \(failure.message)\(failure.detailSuffix)", metadata: metadata)
        case .none:
            break
        }
    }
}
