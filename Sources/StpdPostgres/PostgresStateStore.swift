import Foundation
import JSONRPC
import Logging
import PostgresNIO
import ServiceLifecycle
import StpdCore
import StpdStore
import Synchronization

/// The `StateStore` of a fleet: several daemons on one PostgreSQL database, with the semantics
/// of `SQLiteStateStore`.
///
/// - A change's object row, its lookup keys and its event are one transaction, one round trip:
///   `CALL stpd_apply(...)` (`PostgresApplyProcedure`), which commits before it answers. Versions
///   are checked in the UPDATE's WHERE clause: under READ COMMITTED a concurrent writer of the same
///   row makes it wait, then re-check the version against the committed row, so the loser
///   matches nothing and throws `StoreConflict` (the whole transaction rolls back).
/// - `seq` comes from the single row of `event_counter`, incremented in the committing
///   transaction after its object writes. Its row lock is held until commit (inside the
///   procedure: no round trip while it is held), so commits that
///   append events are serialised from that point on: seqs are handed out in commit order and a
///   rolled-back transaction gives its seqs back (gap-free). docs/fleet.md has why and what it costs.
/// - Every commit notifies `stpd_events` (delivered only on commit) so the other daemons read
///   the new rows (`PostgresEventFollower`).
/// - Times are DOUBLE PRECISION seconds since 2001, bit-exact as in SQLite.
/// - Object states and event objects are sealed with the fleet's state key (`StateSealer`), whose
///   id is stored beside each (`key_id`); a row this daemon cannot open is `StateUnreadable`, and
///   left as it is. `reseal` moves every row to the current key (a rotation).
/// - Every operation is bounded and reported to `health` (see `withConnection`).
///
/// The store is a `Service`: its connection pool runs in the daemon's ServiceGroup, started
/// first and shut down last, after the calls have drained. Nothing connects before `run()`.
public final class PostgresStateStore: StateStore, Service {
    public let client: PostgresClient
    public let location: PostgresLocation
    /// Named in StoreUnavailable errors, so a client of a fleet can tell which daemon answered.
    public let instance: String?
    public let health: DatabaseHealth
    /// Commits made and the counter lock's hold time, as the server measured it.
    public let commits = CommitStats()
    let sealer: StateSealer
    let logger: Logger
    let backends = Backends()
    /// This store in its commits' notifications, so that its follower skips what it published itself.
    let origin = UUID().uuidString
    private let opened = Atomic(false)

    public init(
        location: PostgresLocation, instance: String? = nil, sealer: StateSealer = .plain,
        logger: Logger = Logger(label: "stpd.postgres")
    ) throws {
        self.location = location
        self.instance = instance
        self.sealer = sealer
        self.logger = logger
        health = DatabaseHealth(database: location.description, logger: logger)
        // The pool's own chatter (connection attempts while the database is down) is noise:
        // failures reach `health`, which logs them with their cause.
        var background = logger
        background.logLevel = .error
        client = PostgresClient(configuration: try location.configuration, backgroundLogger: background)
    }

    /// Runs the connection pool until the service group shuts it down (cancelled: it closes).
    public func run() async {
        await client.run()
    }

    var isOpen: Bool { opened.load(ordering: .acquiring) }

    /// The id of the state key rows are sealed with now.
    public var stateKeyID: String? { sealer.keyID }

    /// Brings the schema up to date and returns the log's latest seq. Other operations fail as
    /// StoreUnavailable until `open()`: the daemon opens the store once its log knows where it ends.
    /// `bound` is how long one try may take: the daemon retries after `migrationBound`; a test on
    /// a loaded machine, which makes many databases at once, waits longer instead of failing.
    public func migrate(within bound: Duration = migrationBound) async throws -> Int64 {
        try await withConnection("migrations", bound: bound, gated: false) { [logger] connection in
            try await PostgresMigrations.migrate(connection, logger: logger)
            return try await connection.run("SELECT latest_seq FROM event_counter WHERE id = 1", logger: logger)
                .single(Int64.self)
        }
    }

    public func open() { opened.store(true, ordering: .releasing) }

    // MARK: Writing

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
        return try await query(sql.query).objects(self).first
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
        guard let maxBytes = query.maxBytes else { return try await self.query(sql.query).objects(self) }
        let page = sql.query
        return try await read { connection, logger in
            var bytes = PageBytes(budget: maxBytes)
            return try await connection.run(page, logger: logger).objects(filling: &bytes, self)
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
        ).events(self)
    }

    public func events(after: Int64, matching filter: EventFilter, limit: Int, maxBytes: Int) async throws
        -> EventPage
    {
        let sql = Self.feed(after: after, filter: filter, limit: limit)
        // One snapshot for the page and the bounds, as SQLite's read transaction gives.
        return try await read { connection, logger in
            var bytes = PageBytes(budget: maxBytes)
            let events = try await connection.run(sql.query, logger: logger).events(filling: &bytes, self)
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
        let (latest, pruned) = try await connection.run(
            """
            SELECT (SELECT latest_seq FROM event_counter WHERE id = 1),
            (SELECT value FROM meta WHERE key = 'pruned_through')
            """, logger: logger
        ).single((Int64, Int64).self)
        return EventBounds(latestSeq: latest, prunedThrough: pruned)
    }

    public func prune(_ retention: EventRetention, now: Date) async throws -> Int {
        try await write(bound: Self.maintenanceBound) { connection, logger in
            // Daemons pruning at once take turns here, without holding up commits (the counter row).
            let prunedBefore = try await connection.run(
                "SELECT value FROM meta WHERE key = 'pruned_through' FOR UPDATE", logger: logger
            ).single(Int64.self)
            let latest = try await connection.run(
                "SELECT latest_seq FROM event_counter WHERE id = 1", logger: logger
            ).single(Int64.self)
            let cutoff = now.timeIntervalSinceReferenceDate - retention.maxAge.seconds
            // Everything before the first event still within the age limit (times may not follow seq).
            let firstYoung = try await connection.run(
                "SELECT min(seq) FROM event WHERE time >= \(cutoff)", logger: logger
            ).single(Int64?.self)
            let byAge = firstYoung.map { $0 - 1 } ?? latest
            let byCount = latest - Int64(retention.maxCount)
            let through = max(byAge, byCount, prunedBefore)
            guard through > prunedBefore else { return 0 }
            let dropped = try await connection.run(
                "DELETE FROM event WHERE seq <= \(through) RETURNING 1", logger: logger
            ).count()
            try await connection.run(
                "UPDATE meta SET value = \(through) WHERE key = 'pruned_through'", logger: logger)
            return dropped
        }
    }

    // MARK: Sealing

    /// A stored text opened with the state keys: its JSON, or `StateUnreadable`.
    func opened(_ stored: String, for id: String) throws -> JSONValue {
        do {
            return try Self.json(try sealer.open(stored, for: id))
        } catch let error as StateSealerError {
            throw StateUnreadable(objectId: id, reason: error.description, instance: instance)
        }
    }

    // The wire's own scanner and writer, as the SQLite store: Foundation's JSONDecoder building a
    // JSONValue of each row read was ~11% of a fleet instance's CPU per session (bench/profile.py
    // create-postgres); the same text either way.
    static func text(_ value: JSONValue) throws -> String {
        String(decoding: JSONText.bytes(value), as: UTF8.self)
    }

    static func json(_ text: String) throws -> JSONValue {
        var text = text
        return try text.withUTF8 { try JSONText.parse(UnsafeRawBufferPointer($0)) }
    }

    static func binds(_ values: any PostgresDynamicTypeEncodable...) -> PostgresBindings {
        var binds = PostgresBindings()
        for value in values { binds.append(value) }
        return binds
    }
}
