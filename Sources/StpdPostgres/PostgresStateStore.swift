import Foundation
import JSONRPC
import Logging
import PostgresNIO
import StpdCore

/// The `StateStore` of a fleet: several daemons on one PostgreSQL database, with the semantics
/// of `SQLiteStateStore`.
///
/// - A change's object row, its lookup keys and its event are one transaction. Versions are
///   checked in the UPDATE's WHERE clause: under READ COMMITTED a concurrent writer of the same
///   row makes it wait, then re-check the version against the committed row, so the loser
///   matches nothing and throws `StoreConflict` (the whole transaction rolls back).
/// - `seq` comes from the single row of `event_counter`, incremented in the committing
///   transaction after its object writes. Its row lock is held until commit, so commits that
///   append events are serialised from that point on: seqs are handed out in commit order and a
///   rolled-back transaction gives its seqs back (gap-free). docs/fleet.md has why and what it costs.
/// - Every commit notifies `stpd_events` (delivered only on commit) so the other daemons read
///   the new rows (`PostgresEventFollower`).
/// - Times are DOUBLE PRECISION seconds since 2001, bit-exact as in SQLite.
/// - Object state is not sealed here (StateSealer is per host): the database's own access
///   control and TLS protect it.
public final class PostgresStateStore: StateStore {
    public let client: PostgresClient
    public let location: PostgresLocation
    /// Named in StoreUnavailable errors, so a client of a fleet can tell which daemon answered.
    public let instance: String?
    let logger: Logger
    private let running: Task<Void, Never>

    /// Connects (the pool runs until `close`) and migrates the schema.
    /// `connectTimeout` bounds the first connection and the migrations.
    public init(
        location: PostgresLocation, instance: String? = nil, connectTimeout: Duration = .seconds(30),
        logger: Logger = Logger(label: "stpd.postgres")
    ) async throws {
        self.location = location
        self.instance = instance
        self.logger = logger
        // The pool's own chatter (a lease requested a moment before `run()` began) is noise;
        // failures reach the caller as StoreUnavailable.
        var background = logger
        background.logLevel = .error
        let client = PostgresClient(configuration: try location.configuration, backgroundLogger: background)
        self.client = client
        running = Task { await client.run() }
        do {
            _ = try await Self.unavailableOnFailure(instance, timeout: connectTimeout) { connected in
                try await PostgresMigrations.migrate(client, logger: logger, connected: connected)
            }
        } catch {
            running.cancel()
            throw error
        }
    }

    deinit { running.cancel() }

    /// Closes the pool's connections.
    public func close() { running.cancel() }

    // MARK: Writing

    public func apply(_ changes: [StateChange], at time: Date) async throws -> [Event] {
        guard !changes.isEmpty else { return [] }
        return try await write { connection, logger in
            for change in changes where try await !Self.write(change, connection, logger) {
                throw StoreConflict(objectId: change.object.id)
            }
            // Last, so the counter's row lock (which serialises committers) is held as briefly as possible.
            let latest = try await connection.query(
                "UPDATE event_counter SET latest_seq = latest_seq + \(changes.count) WHERE id = 1 RETURNING latest_seq",
                logger: logger
            ).single(Int64.self)
            let first = latest - Int64(changes.count) + 1
            let events = changes.enumerated().map { offset, change in
                let object = change.object
                return Event(
                    seq: first + Int64(offset), time: time, type: change.eventType.name, objectId: object.id,
                    objectKind: object.kind, ownerUID: object.ownerUID, object: change.eventObject)
            }
            // All the events in one statement: a sweep's batch is hundreds of changes.
            let stamp = time.timeIntervalSinceReferenceDate
            try await connection.query(
                """
                INSERT INTO event (seq, time, type, object_id, object_kind, owner_uid, object)
                SELECT seq, \(stamp), type, object_id, object_kind, owner_uid, object FROM unnest(
                \(events.map(\.seq))::bigint[], \(events.map(\.type))::text[], \(events.map(\.objectId))::text[],
                \(events.map(\.objectKind))::text[], \(events.map { Int64($0.ownerUID) })::bigint[],
                \(try events.map { try Self.text($0.object) })::text[]
                ) AS e(seq, type, object_id, object_kind, owner_uid, object)
                """, logger: logger)
            for (change, event) in zip(changes, events) {
                if change.removesObject {
                    try await connection.query(
                        "DELETE FROM object_key WHERE object_id = \(event.objectId)", logger: logger)
                } else if let keys = change.keys {
                    try await Self.file(
                        event.objectId, owner: event.ownerUID, under: keys, ordinal: event.seq, connection, logger)
                }
            }
            // A hint for the other daemons: sent only if this commits; they read the rows themselves.
            try await connection.query(
                "SELECT pg_notify(\(PostgresEventFollower.channel), \(String(latest)))", logger: logger)
            return events
        }
    }

    /// Writes the object row if the precondition holds; false when it does not.
    private static func write(_ change: StateChange, _ connection: PostgresConnection, _ logger: Logger) async throws
        -> Bool
    {
        let object = change.object
        if change.removesObject {
            switch change.precondition {
            case .absent:
                return try await connection.query("SELECT 1 FROM object WHERE id = \(object.id)", logger: logger)
                    .count() == 0
            case .version(let version):
                return try await connection.query(
                    "DELETE FROM object WHERE id = \(object.id) AND version = \(version) RETURNING 1", logger: logger
                ).count() == 1
            case .none:
                try await connection.query("DELETE FROM object WHERE id = \(object.id)", logger: logger)
                return true
            }
        }
        let state = try text(object.state)
        let updated = object.updatedAt.timeIntervalSinceReferenceDate
        let created = object.createdAt.timeIntervalSinceReferenceDate
        let owner = Int64(object.ownerUID)
        switch change.precondition {
        case .absent:
            return try await connection.query(
                """
                INSERT INTO object (id, kind, owner_uid, state, created_at, updated_at, version, status, live, finished)
                VALUES (\(object.id), \(object.kind), \(owner), \(state), \(created), \(updated), 1, \(object.status),
                \(object.live), \(object.finished)) ON CONFLICT (id) DO NOTHING RETURNING 1
                """, logger: logger
            ).count() == 1
        case .version(let version):
            return try await connection.query(
                """
                UPDATE object SET state = \(state), updated_at = \(updated), version = version + 1,
                status = \(object.status), live = \(object.live), finished = \(object.finished)
                WHERE id = \(object.id) AND version = \(version) AND NOT set_aside RETURNING 1
                """, logger: logger
            ).count() == 1
        case .none:
            // Kind, owner and creation time are fixed when the object is created.
            try await connection.query(
                """
                INSERT INTO object (id, kind, owner_uid, state, created_at, updated_at, version, status, live, finished)
                VALUES (\(object.id), \(object.kind), \(owner), \(state), \(created), \(updated), 1, \(object.status),
                \(object.live), \(object.finished)) ON CONFLICT (id) DO UPDATE SET state = excluded.state,
                updated_at = excluded.updated_at, version = object.version + 1, status = excluded.status,
                live = excluded.live, finished = excluded.finished
                """, logger: logger)
            return true
        }
    }

    /// Files the object under exactly `keys`: kept keys keep their ordinal, new ones get `ordinal`.
    private static func file(
        _ id: String, owner: UInt32, under keys: [String], ordinal: Int64, _ connection: PostgresConnection,
        _ logger: Logger
    ) async throws {
        try await connection.query(
            "DELETE FROM object_key WHERE object_id = \(id) AND NOT (key = ANY(\(keys)))", logger: logger)
        try await connection.query(
            """
            INSERT INTO object_key (key, object_id, owner_uid, ordinal)
            SELECT k, \(id), \(Int64(owner)), \(ordinal) FROM unnest(\(keys)::text[]) AS k
            ON CONFLICT (key, object_id) DO NOTHING
            """, logger: logger)
    }

    public func setAside(id: String, reason: String) async throws {
        try await query("UPDATE object SET set_aside = TRUE, live = FALSE WHERE id = \(id)")
    }

    public func setAsideCount() async throws -> Int {
        try await query("SELECT count(*) FROM object WHERE set_aside").single(Int.self)
    }

    public func statusCounts(kind: ObjectKind) async throws -> [String: Int] {
        let sql: PostgresQuery = """
            SELECT status, count(*) FROM object WHERE kind = \(kind.rawValue) AND NOT set_aside
            AND status IS NOT NULL GROUP BY status
            """
        return try await query(sql).reduce(into: [:]) { counts, row in
            let (status, count) = try row.decode((String, Int).self)
            counts[status] = count
        }
    }

    // MARK: Reading objects

    static let objectColumns = "id, kind, owner_uid, state, created_at, updated_at, version, status, live, finished"

    public func object(id: String, owner: UInt32?) async throws -> StoredObject? {
        var sql = SQL("SELECT \(Self.objectColumns) FROM object WHERE NOT set_aside AND id = ")
        sql.bind(id)
        if let owner { sql.append(" AND owner_uid = ", Int64(owner)) }
        return try await query(sql.query).objects().first
    }

    public func objects(_ query: ObjectQuery) async throws -> [StoredObject] {
        var sql = SQL("SELECT \(Self.objectColumns) FROM object WHERE NOT set_aside AND kind = ")
        sql.bind(query.kind)
        if let owner = query.owner { sql.append(" AND owner_uid = ", Int64(owner)) }
        if let status = query.status { sql.append(" AND status = ", status) }
        if let live = query.live { sql.append(" AND live = ", live) }
        if let cutoff = query.finishedBefore {
            sql.append(" AND finished AND updated_at < ", cutoff.timeIntervalSinceReferenceDate)
        }
        if let cursor = query.startingAfter {
            sql.append(" AND (created_at, id) > (SELECT created_at, id FROM object WHERE id = ", cursor)
            sql.text += ")"
        }
        sql.text += " ORDER BY created_at, id"
        if let limit = query.limit { sql.append(" LIMIT ", Int64(limit)) }
        guard let maxBytes = query.maxBytes else { return try await self.query(sql.query).objects() }
        let page = sql.query
        return try await read { connection, logger in
            var bytes = PageBytes(budget: maxBytes)
            return try await connection.query(page, logger: logger).objects(filling: &bytes)
        }
    }

    public func lookup(key: String, owner: UInt32?, after: KeyHit?, limit: Int) async throws -> [KeyHit] {
        var sql = SQL("SELECT object_id, ordinal FROM object_key WHERE key = ")
        sql.bind(key)
        if let owner { sql.append(" AND owner_uid = ", Int64(owner)) }
        if let after {
            sql.append(" AND (ordinal, object_id) > (", after.ordinal)
            sql.append(", ", after.objectId)
            sql.text += ")"
        }
        sql.append(" ORDER BY ordinal, object_id LIMIT ", Int64(limit))
        return try await query(sql.query).rows().map {
            let (id, ordinal) = try $0.decode((String, Int64).self)
            return KeyHit(objectId: id, ordinal: ordinal)
        }
    }

    public func keyCount(key: String, cap: Int) async throws -> Int {
        try await query(
            "SELECT count(*) FROM (SELECT 1 FROM object_key WHERE key = \(key) LIMIT \(Int64(cap))) AS hits"
        ).single(Int.self)
    }

    // MARK: The event log

    static let eventColumns = "seq, time, type, object_id, object_kind, owner_uid, object"

    public func events(after: Int64, limit: Int) async throws -> [Event] {
        try await query(
            PostgresQuery(
                unsafeSQL: "SELECT \(Self.eventColumns) FROM event WHERE seq > $1 ORDER BY seq LIMIT $2",
                binds: Self.binds(after, Int64(limit)))
        ).events()
    }

    public func events(after: Int64, matching filter: EventFilter, limit: Int, maxBytes: Int) async throws
        -> EventPage
    {
        let sql = Self.feed(after: after, filter: filter, limit: limit)
        // One snapshot for the page and the bounds, as SQLite's read transaction gives.
        return try await read { connection, logger in
            var bytes = PageBytes(budget: maxBytes)
            let events = try await connection.query(sql.query, logger: logger).events(filling: &bytes)
            let bounds = try await Self.bounds(connection, logger)
            return EventPage(events: events, after: after, limit: limit, bytes: bytes, bounds: bounds)
        }
    }

    /// A filtered read of the log in `seq` order: it walks `event_owner_feed` for a viewer, so its
    /// cost follows the viewer's own events. A `kind.*` type is the byte range [`kind.`, `kind/`).
    static func feed(after: Int64, filter: EventFilter, limit: Int) -> SQL {
        var sql = SQL("SELECT \(eventColumns) FROM event WHERE seq > ")
        sql.bind(after)
        if let viewer = filter.viewerUID { sql.append(" AND owner_uid = ", Int64(viewer)) }
        if let ids = filter.objectIds { sql.append(" AND object_id = ANY(", ids.sorted(), ")") }
        if let types = filter.types {
            var alternatives: [String] = []
            var exact: [String] = []
            for pattern in types {
                guard let prefix = EventFilter.typePrefix(pattern) else {
                    exact.append(pattern)
                    continue
                }
                let low = sql.parameter(String(prefix))
                let high = sql.parameter(String(prefix.dropLast()) + "/")
                alternatives.append("(type >= \(low) AND type < \(high))")
            }
            if !exact.isEmpty { alternatives.append("type = ANY(\(sql.parameter(exact)))") }
            sql.text += " AND " + (alternatives.isEmpty ? "FALSE" : "(" + alternatives.joined(separator: " OR ") + ")")
        }
        sql.append(" ORDER BY seq LIMIT ", Int64(limit))
        return sql
    }

    public func eventBounds() async throws -> EventBounds {
        try await read { connection, logger in try await Self.bounds(connection, logger) }
    }

    static func bounds(_ connection: PostgresConnection, _ logger: Logger) async throws -> EventBounds {
        let (latest, pruned) = try await connection.query(
            """
            SELECT (SELECT latest_seq FROM event_counter WHERE id = 1),
            (SELECT value FROM meta WHERE key = 'pruned_through')
            """, logger: logger
        ).single((Int64, Int64).self)
        return EventBounds(latestSeq: latest, prunedThrough: pruned)
    }

    public func prune(_ retention: EventRetention, now: Date) async throws -> Int {
        try await write { connection, logger in
            // Daemons pruning at once take turns here, without holding up commits (the counter row).
            let prunedBefore = try await connection.query(
                "SELECT value FROM meta WHERE key = 'pruned_through' FOR UPDATE", logger: logger
            ).single(Int64.self)
            let latest = try await connection.query(
                "SELECT latest_seq FROM event_counter WHERE id = 1", logger: logger
            ).single(Int64.self)
            let cutoff = now.timeIntervalSinceReferenceDate - retention.maxAge.seconds
            // Everything before the first event still within the age limit (times may not follow seq).
            let firstYoung = try await connection.query(
                "SELECT min(seq) FROM event WHERE time >= \(cutoff)", logger: logger
            ).single(Int64?.self)
            let byAge = firstYoung.map { $0 - 1 } ?? latest
            let byCount = latest - Int64(retention.maxCount)
            let through = max(byAge, byCount, prunedBefore)
            guard through > prunedBefore else { return 0 }
            let dropped = try await connection.query(
                "DELETE FROM event WHERE seq <= \(through) RETURNING 1", logger: logger
            ).count()
            try await connection.query(
                "UPDATE meta SET value = \(through) WHERE key = 'pruned_through'", logger: logger)
            return dropped
        }
    }

    // MARK: Connections and errors

    /// Runs `body` in a transaction on a pooled connection. A lost serialisation race (deadlock,
    /// serialization failure) is a `StoreConflict`, which the record core retries from the latest
    /// state; a database that cannot be reached is `StoreUnavailable`.
    func write<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection, Logger) async throws -> T) async throws
        -> T
    {
        try await Self.unavailableOnFailure(instance) { [client, logger] connected in
            try await client.withConnection { connection in
                connected()
                return try await Self.transaction(connection, logger) { try await body($0, logger) }
            }
        }
    }

    /// A read-only transaction with one snapshot for all of `body`'s queries.
    func read<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection, Logger) async throws -> T) async throws
        -> T
    {
        try await write { connection, logger in
            try await connection.query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY", logger: logger)
            return try await body(connection, logger)
        }
    }

    @discardableResult
    func query(_ query: PostgresQuery) async throws -> [PostgresRow] {
        try await Self.unavailableOnFailure(instance) { [client, logger] connected in
            try await client.withConnection { connection in
                connected()
                return try await connection.query(query, logger: logger).collect()
            }
        }
    }

    static func transaction<T: Sendable>(
        _ connection: PostgresConnection, _ logger: Logger, _ body: @Sendable (PostgresConnection) async throws -> T
    ) async throws -> T {
        try await connection.query("BEGIN", logger: logger)
        do {
            let value = try await body(connection)
            try await connection.query("COMMIT", logger: logger)
            return value
        } catch {
            // The original error is the one that matters (a StoreConflict, say); a failed
            // rollback means the connection is gone, and the server rolls back on its own.
            _ = try? await connection.query("ROLLBACK", logger: logger)
            throw error
        }
    }

    /// How long an operation may wait to get a connection before it fails as StoreUnavailable
    /// (the pool would otherwise retry an unreachable server for a minute while the caller
    /// waits). Once connected, a transaction takes as long as it takes.
    static let connectionTimeout: Duration = .seconds(10)

    static func unavailableOnFailure<T: Sendable>(
        _ instance: String?, timeout: Duration = connectionTimeout,
        _ body: @escaping @Sendable (_ connected: @escaping @Sendable () -> Void) async throws -> T
    ) async throws -> T {
        let connected = ConnectedFlag()
        do {
            return try await withThrowingTaskGroup(of: T?.self) { group in
                group.addTask { try await body { connected.value.store(true, ordering: .relaxed) } }
                group.addTask {
                    try await Task.sleep(for: timeout)
                    // Connected in time: the operation's own outcome decides.
                    while connected.value.load(ordering: .relaxed) { try await Task.sleep(for: .seconds(3600)) }
                    return nil
                }
                defer { group.cancelAll() }
                guard let value = try await group.next() ?? nil else {
                    throw StoreUnavailable(
                        reason: "no connection to the database within \(timeout)", instance: instance)
                }
                return value
            }
        } catch let error as PSQLError {
            let state = error.serverInfo?[.sqlState]
            if state == "40001" || state == "40P01" { throw StoreConflict(objectId: "") }
            throw StoreUnavailable(reason: Self.describe(error), instance: instance)
        } catch let error as StoreConflict {
            throw error
        } catch let error as StoreUnavailable {
            throw error
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            // The pool's own errors (no connection could be made) and anything else of the driver.
            throw StoreUnavailable(reason: "\(error)", instance: instance)
        }
    }

    /// What went wrong, without the query's parameters (they may hold secrets).
    static func describe(_ error: PSQLError) -> String {
        if let message = error.serverInfo?[.message] { return message }
        return "\(error.code)"
    }

    static func text(_ value: JSONValue) throws -> String {
        String(decoding: try JSONCoding.encode(value), as: UTF8.self)
    }

    static func json(_ text: String) throws -> JSONValue {
        try JSONCoding.decode(JSONValue.self, from: Data(text.utf8))
    }

    static func binds(_ values: any PostgresDynamicTypeEncodable...) -> PostgresBindings {
        var binds = PostgresBindings()
        for value in values { binds.append(value) }
        return binds
    }
}
