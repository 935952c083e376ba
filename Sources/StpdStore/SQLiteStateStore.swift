import Foundation
import GRDB
import JSONRPC
import StpdCore
import Synchronization

/// The durable `StateStore`: one SQLite database in WAL mode under the state directory.
/// A change's object row, its lookup keys and its event are written in one transaction; a failed
/// precondition (`version` moved on) throws inside it, so nothing of the transaction is kept.
/// Concurrent `apply`s share a transaction and its `fsync` (GroupCommit), each in a savepoint.
/// `seq` is SQLite's AUTOINCREMENT key, which never reuses a value and rolls back with its
/// transaction, so it stays gap-free. Times are stored as Foundation's own representation
/// (seconds since 2001-01-01), so an event read back equals the one published live, bit for bit.
/// Object states and event objects pass through `sealer` on their way in and out (see StateSealer).
///
/// What a restart reads stays small whatever came before it: the WAL is checkpointed as it grows
/// and cut back after (`journal_size_limit`), and `prune` deletes in short transactions, so no
/// single transaction (which a checkpoint cannot split) can make it large. Point reads run on
/// the calling thread (`readNow`), without the hop to a reader queue and back that cost more
/// than the read, on a connection of their own (`pointReader`); the hot statements are prepared
/// once per connection (`cachedStatement`).
public final class SQLiteStateStore: StateStore {
    public let path: String
    /// Bytes the WAL file is cut back to after a checkpoint.
    static let walSizeLimit = 16 << 20
    /// Events deleted per transaction by `prune`.
    static let pruneBatch: Int64 = 1000
    let pool: DatabasePool
    /// The point reads' connection, read-only. Not one of the pool's readers: an async read holds
    /// its reader until its task runs again, so cooperative threads blocked waiting for a reader
    /// could leave none to run it (32 page reads at once hung the daemon that way). A read here
    /// waits only for another point read's few microseconds.
    private let pointReader: DatabaseQueue
    public let sealer: StateSealer
    private let commits: GroupCommit

    public init(path: String, sealer: StateSealer = .plain) throws {
        self.path = path
        self.sealer = sealer
        var configuration = Configuration()
        configuration.label = "stpd"
        configuration.busyMode = .timeout(5)
        // Overwritten rows are zeroed, so no older plain copy of a state outlives its sealing.
        // FULL: a commit is answered once the WAL is fsync'ed, so it survives a power cut, not only a
        // crash; group commit is what keeps that affordable. (Said explicitly: builds differ.)
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA secure_delete = ON")
            try db.execute(sql: "PRAGMA synchronous = FULL")
            // SQLite's default checkpoint threshold (1,000 pages), said explicitly; after a
            // checkpoint the WAL file is cut back to this size instead of keeping its largest.
            try db.execute(sql: "PRAGMA wal_autocheckpoint = 1000")
            try db.execute(sql: "PRAGMA journal_size_limit = \(Self.walSizeLimit)")
            // A savepoint's statement journal in memory, not a temporary file per group commit.
            try db.execute(sql: "PRAGMA temp_store = MEMORY")
        }
        pool = try DatabasePool(path: path, configuration: configuration)
        commits = GroupCommit(pool: pool)
        try Self.migrator.migrate(pool)
        // Keys and secrets may sit in object state: only the daemon's user may read the files.
        for file in [path, path + "-wal", path + "-shm"] where FileManager.default.fileExists(atPath: file) {
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file)
        }
        configuration.readonly = true
        pointReader = try DatabaseQueue(path: path, configuration: configuration)
    }

    public func apply(_ changes: [StateChange], at time: Date) async throws -> [Event] {
        try await commits.write { [sealer] db in
            try changes.map { change in
                let object = change.object
                guard try Self.write(change, sealer, db) else { throw StoreConflict(objectId: object.id) }
                let eventObject = try sealer.seal(Self.text(change.eventObject), for: object.id)
                try db.cachedStatement(
                    sql: """
                        INSERT INTO event (time, type, object_id, object_kind, owner_uid, object)
                        VALUES (?, ?, ?, ?, ?, ?)
                        """
                ).execute(arguments: [
                    time.timeIntervalSinceReferenceDate, change.eventType.name, object.id, object.kind,
                    object.ownerUID, eventObject,
                ])
                let seq = db.lastInsertedRowID
                if change.removesObject {
                    try db.cachedStatement(sql: "DELETE FROM object_key WHERE object_id = ?").execute(arguments: [
                        object.id
                    ])
                } else if let keys = change.keys {
                    try Self.file(object.id, owner: object.ownerUID, under: keys, ordinal: seq, db)
                }
                return Event(
                    seq: seq, time: time, type: change.eventType.name, objectId: object.id, objectKind: object.kind,
                    ownerUID: object.ownerUID, object: change.eventObject)
            }
        }
    }

    /// Writes the object row if the precondition holds; false when it does not.
    private static func write(_ change: StateChange, _ sealer: StateSealer, _ db: Database) throws -> Bool {
        let object = change.object
        if change.removesObject {
            switch change.precondition {
            case .absent: return try !exists(object.id, db)
            case .version(let version):
                try db.cachedStatement(sql: "DELETE FROM object WHERE id = ? AND version = ?").execute(arguments: [
                    object.id, version,
                ])
            case .none:
                try db.cachedStatement(sql: "DELETE FROM object WHERE id = ?").execute(arguments: [object.id])
                return true
            }
            return db.changesCount == 1
        }
        let state = try sealer.seal(text(object.state), for: object.id)
        let derived: [(any DatabaseValueConvertible)?] = [object.status, object.live, object.finished]
        switch change.precondition {
        case .absent:
            guard try !exists(object.id, db) else { return false }
            try insert(object, state: state, db)
            return true
        case .version(let version):
            try db.cachedStatement(
                sql: """
                    UPDATE object SET state = ?, updated_at = ?, version = version + 1, status = ?, live = ?,
                    finished = ? WHERE id = ? AND version = ? AND set_aside = 0
                    """
            ).execute(
                arguments: StatementArguments([state, object.updatedAt.timeIntervalSinceReferenceDate] + derived)
                    + [object.id, version])
            return db.changesCount == 1
        case .none:
            if try exists(object.id, db) {
                try db.cachedStatement(
                    sql: """
                        UPDATE object SET state = ?, updated_at = ?, version = version + 1, status = ?, live = ?,
                        finished = ? WHERE id = ?
                        """
                ).execute(
                    arguments: StatementArguments([state, object.updatedAt.timeIntervalSinceReferenceDate] + derived)
                        + [object.id])
            } else {
                try insert(object, state: state, db)
            }
            return true
        }
    }

    private static func exists(_ id: String, _ db: Database) throws -> Bool {
        try Bool.fetchOne(db.cachedStatement(sql: "SELECT 1 FROM object WHERE id = ?"), arguments: [id]) ?? false
    }

    private static func insert(_ object: StoredObject, state: String, _ db: Database) throws {
        try db.cachedStatement(
            sql: """
                INSERT INTO object (id, kind, owner_uid, state, created_at, updated_at, version, status, live, finished)
                VALUES (?, ?, ?, ?, ?, ?, 1, ?, ?, ?)
                """
        ).execute(arguments: [
            object.id, object.kind, object.ownerUID, state, object.createdAt.timeIntervalSinceReferenceDate,
            object.updatedAt.timeIntervalSinceReferenceDate, object.status, object.live, object.finished,
        ])
    }

    /// Files the object under exactly `keys`: kept keys keep their ordinal, new ones get `ordinal`.
    private static func file(_ id: String, owner: UInt32, under keys: [String], ordinal: Int64, _ db: Database) throws {
        let kept = keys.map { _ in "?" }.joined(separator: ",")
        try db.cachedStatement(
            sql: "DELETE FROM object_key WHERE object_id = ?" + (keys.isEmpty ? "" : " AND key NOT IN (\(kept))")
        ).execute(arguments: StatementArguments([id] + keys))
        let insert = try db.cachedStatement(
            sql: "INSERT OR IGNORE INTO object_key (key, object_id, owner_uid, ordinal) VALUES (?, ?, ?, ?)")
        for key in keys { try insert.execute(arguments: [key, id, owner, ordinal]) }
    }

    /// A read on the calling thread, outside any transaction: for single statements that take
    /// microseconds, where the hop to a reader's queue and back cost more than the read.
    private func readNow<T>(_ read: (Database) throws -> T) throws -> T {
        try pointReader.inDatabase(read)
    }

    public func object(id: String, owner: UInt32?) async throws -> StoredObject? {
        var sql = "SELECT \(Self.objectColumns) FROM object WHERE id = ? AND set_aside = 0"
        var arguments: StatementArguments = [id]
        if let owner { (sql, arguments) = (sql + " AND owner_uid = ?", arguments + [owner]) }
        return try readNow { [sealer] db in
            try Row.fetchOne(db.cachedStatement(sql: sql), arguments: arguments).map { try Self.object($0, sealer) }
        }
    }

    public func objects(_ query: ObjectQuery) async throws -> [StoredObject] {
        var sql = "SELECT \(Self.objectColumns) FROM object WHERE kind = ? AND set_aside = 0"
        var arguments: StatementArguments = [query.kind]
        if let owner = query.owner { (sql, arguments) = (sql + " AND owner_uid = ?", arguments + [owner]) }
        if let status = query.status { (sql, arguments) = (sql + " AND status = ?", arguments + [status]) }
        if let live = query.live { (sql, arguments) = (sql + " AND live = ?", arguments + [live]) }
        if let cutoff = query.finishedBefore {
            sql += " AND finished = 1 AND updated_at < ?"
            arguments += [cutoff.timeIntervalSinceReferenceDate]
        }
        if let cursor = query.startingAfter {
            sql += " AND (created_at, id) > (SELECT created_at, id FROM object WHERE id = ?)"
            arguments += [cursor]
        }
        sql += " ORDER BY created_at, id"
        if let limit = query.limit { (sql, arguments) = (sql + " LIMIT ?", arguments + [limit]) }
        let budget = query.maxBytes ?? .max
        return try await pool.read { [sql, arguments, sealer] db in
            var bytes = PageBytes(budget: budget)
            var objects: [StoredObject] = []
            let rows = try Row.fetchCursor(db, sql: sql, arguments: arguments)
            while !bytes.isFull, let row = try rows.next() {
                let object = try Self.object(row, sealer)
                bytes.add(object.state)
                objects.append(object)
            }
            return objects
        }
    }

    public func lookup(key: String, owner: UInt32?, after: KeyHit?, limit: Int) async throws -> [KeyHit] {
        var sql = "SELECT object_id, ordinal FROM object_key WHERE key = ?"
        var arguments: StatementArguments = [key]
        if let owner { (sql, arguments) = (sql + " AND owner_uid = ?", arguments + [owner]) }
        if let after {
            sql += " AND (ordinal, object_id) > (?, ?)"
            arguments += [after.ordinal, after.objectId]
        }
        sql += " ORDER BY ordinal, object_id LIMIT ?"
        arguments += [limit]
        return try readNow { db in
            try Row.fetchAll(db.cachedStatement(sql: sql), arguments: arguments).map {
                KeyHit(objectId: $0[0], ordinal: $0[1])
            }
        }
    }

    public func keyCount(key: String, cap: Int) async throws -> Int {
        try readNow { db in
            try Int.fetchOne(
                db.cachedStatement(sql: "SELECT count(*) FROM (SELECT 1 FROM object_key WHERE key = ? LIMIT ?)"),
                arguments: [key, cap]) ?? 0
        }
    }

    /// Every query leaves set-aside rows out; what is derived from the state (status, live, keys)
    /// is kept as it was, so a row brought back (`recover(sealedWith:)`) is again what it was.
    public func setAside(id: String, reason: String) async throws {
        try await pool.write { db in
            try db.execute(sql: "UPDATE object SET set_aside = 1 WHERE id = ?", arguments: [id])
        }
    }

    /// How many objects of `kind` are in each status (set-aside ones left out), for `daemon.metrics`.
    public func statusCounts(kind: ObjectKind) async throws -> [String: Int] {
        try await pool.read { db in
            let rows = try Row.fetchAll(
                db,
                sql: "SELECT status, count(*) AS n FROM object WHERE kind = ? AND set_aside = 0 GROUP BY status",
                arguments: [kind.rawValue])
            return rows.reduce(into: [:]) { counts, row in
                if let status: String = row["status"] { counts[status] = row["n"] }
            }
        }
    }

    public func setAsideCount() async throws -> Int {
        try await pool.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM object WHERE set_aside = 1") ?? 0 }
    }

    public func events(after: Int64, limit: Int) async throws -> [Event] {
        try await pool.read { db in
            try Row.fetchAll(
                db, sql: "SELECT * FROM event WHERE seq > ? ORDER BY seq LIMIT ?", arguments: [after, limit]
            )
            .map(self.decodeEvent)
        }
    }

    public func events(after: Int64, matching filter: EventFilter, limit: Int, maxBytes: Int) async throws
        -> EventPage
    {
        let query = EventFeedQuery(after: after, filter: filter, limit: limit)
        return try await pool.read { db in
            var bytes = PageBytes(budget: maxBytes)
            var events: [Event] = []
            let rows = try Row.fetchCursor(db, sql: query.sql, arguments: query.arguments)
            while !bytes.isFull, let row = try rows.next() {
                let event = try self.decodeEvent(row)
                bytes.add(event.object)
                events.append(event)
            }
            return EventPage(events: events, after: after, limit: limit, bytes: bytes, bounds: try Self.bounds(db))
        }
    }

    /// How many events this store has decoded from their rows since it was opened: the work a
    /// read does is visible here, so tests can tell a read that skipped others' events in SQL
    /// from one that decoded them to drop them.
    public var decodedEventCount: Int { decodedEvents.load(ordering: .relaxed) }
    private let decodedEvents = Atomic<Int>(0)

    private func decodeEvent(_ row: Row) throws -> Event {
        decodedEvents.add(1, ordering: .relaxed)
        return try Self.event(row, sealer)
    }

    public func eventBounds() async throws -> EventBounds {
        try readNow(Self.bounds)
    }

    /// The cut moves first, in a transaction of its own: from then on no reader goes below it.
    /// The rows go after it, `pruneBatch` per transaction, so no commit waits behind a large
    /// delete and no transaction grows the WAL. Rows are deleted only when the cut moved (events
    /// another state key sealed sit below a cut that did not, kept for `recover(sealedWith:)`);
    /// `pruning_through` says how far the deletes must go until they are done, so a crash between
    /// the cut and the last batch leaves them to the next prune.
    public func prune(_ retention: EventRetention, now: Date) async throws -> Int {
        let through = try await pool.write { db -> Int64? in
            let bounds = try Self.bounds(db)
            let unfinished = try Int64.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'pruning_through'")
            let cutoff = now.timeIntervalSinceReferenceDate - retention.maxAge.seconds
            // Everything before the first event still within the age limit (times may not follow seq).
            // Walked in seq order (`+time` keeps the time index out), it stops at the first young
            // event: near the start of the log, where the time index would visit every young one.
            let firstYoung = try Int64.fetchOne(
                db, sql: "SELECT seq FROM event WHERE +time >= ? ORDER BY seq LIMIT 1", arguments: [cutoff])
            let byAge = firstYoung.map { $0 - 1 } ?? bounds.latestSeq
            let byCount = bounds.latestSeq - Int64(retention.maxCount)
            // Both limits cut a prefix of the log; the later cut wins.
            let through = max(byAge, byCount, bounds.prunedThrough)
            guard through > bounds.prunedThrough else { return unfinished }
            for key in ["pruned_through", "pruning_through"] {
                try db.execute(
                    sql: """
                        INSERT INTO meta (key, value) VALUES (?, ?)
                        ON CONFLICT(key) DO UPDATE SET value = excluded.value
                        """,
                    arguments: [key, through])
            }
            return through
        }
        guard let through else { return 0 }
        var dropped = 0
        while true {
            // seq is gap-free, so a batch is a range of rowids.
            let deleted = try await pool.write { db in
                guard let first = try Int64.fetchOne(db, sql: "SELECT MIN(seq) FROM event"), first <= through else {
                    try db.execute(
                        sql: "DELETE FROM meta WHERE key = 'pruning_through' AND value = ?", arguments: [through])
                    return 0
                }
                try db.execute(
                    sql: "DELETE FROM event WHERE seq <= ?", arguments: [min(through, first + Self.pruneBatch - 1)])
                return db.changesCount
            }
            guard deleted > 0 else { return dropped }
            dropped += deleted
        }
    }

    /// Bytes the database takes on disk (main file, write-ahead log and shared memory).
    public var sizeOnDisk: Int64 {
        [path, path + "-wal", path + "-shm"].reduce(0) { total, file in
            total + ((try? FileManager.default.attributesOfItem(atPath: file)[.size] as? Int64) ?? 0)
        }
    }

    /// One statement, so one snapshot even outside a transaction.
    static func bounds(_ db: Database) throws -> EventBounds {
        let row = try Row.fetchOne(
            db.cachedStatement(
                sql: """
                    SELECT (SELECT seq FROM sqlite_sequence WHERE name = 'event'),
                    (SELECT value FROM meta WHERE key = 'pruned_through')
                    """))
        return EventBounds(latestSeq: row?[0] ?? 0, prunedThrough: row?[1] ?? 0)
    }

    // The wire's own scanner and writer: the same text as Foundation's coders, without their
    // cost (they were most of a commit's and a read's CPU).
    static func text(_ value: JSONValue) throws -> String {
        String(decoding: JSONText.bytes(value), as: UTF8.self)
    }

    static func json(_ text: String) throws -> JSONValue {
        var text = text
        return try text.withUTF8 { try JSONText.parse(UnsafeRawBufferPointer($0)) }
    }

    /// The columns `object(_:_:)` reads, by position.
    static let objectColumns = "id, kind, owner_uid, state, created_at, updated_at, version, status, live, finished"

    static func object(_ row: Row, _ sealer: StateSealer) throws -> StoredObject {
        let id: String = row[0]
        return StoredObject(
            id: id, kind: row[1], ownerUID: row[2], state: try json(sealer.open(row[3], for: id)),
            createdAt: Date(timeIntervalSinceReferenceDate: row[4]),
            updatedAt: Date(timeIntervalSinceReferenceDate: row[5]), version: row[6], status: row[7], live: row[8],
            finished: row[9])
    }

    static func event(_ row: Row, _ sealer: StateSealer) throws -> Event {
        Event(
            seq: row["seq"], time: Date(timeIntervalSinceReferenceDate: row["time"]), type: row["type"],
            objectId: row["object_id"], objectKind: row["object_kind"], ownerUID: row["owner_uid"],
            object: try json(sealer.open(row["object"], for: row["object_id"])))
    }
}

/// The SQL of a filtered read of the log. It walks `event_owner_feed` (one uid's events) or
/// `event_feed` (everyone's, for root) from the cursor in `seq` order and stops after `limit`
/// matches, so its cost follows the events the viewer owns, and types and object ids are
/// tested in the index. Lists travel as one JSON array parameter each (`json_each`), so any
/// number of ids fits. A `kind.*` type is the byte range [`kind.`, `kind/`).
struct EventFeedQuery {
    var sql: String
    var arguments: StatementArguments

    init(after: Int64, filter: EventFilter, limit: Int) {
        var conditions = ["seq > ?"]
        var arguments: StatementArguments = [after]
        let index: String
        if let viewer = filter.viewerUID {
            index = "event_owner_feed"
            conditions.append("owner_uid = ?")
            arguments += [viewer]
        } else {
            index = filter.objectIds == nil && filter.types == nil ? "" : "event_feed"
        }
        if let ids = filter.objectIds {
            conditions.append("object_id IN (SELECT value FROM json_each(?))")
            arguments += [Self.jsonArray(ids.sorted())]
        }
        if let types = filter.types {
            var exact: [String] = []
            var alternatives: [String] = []
            for pattern in types {
                guard let prefix = EventFilter.typePrefix(pattern) else {
                    exact.append(pattern)
                    continue
                }
                // Every string that starts with `kind.` sorts in [`kind.`, `kind/`): '/' follows '.'.
                alternatives.append("(type >= ? AND type < ?)")
                arguments += [String(prefix), String(prefix.dropLast()) + "/"]
            }
            if !exact.isEmpty {
                alternatives.append("type IN (SELECT value FROM json_each(?))")
                arguments += [Self.jsonArray(exact)]
            }
            conditions.append(alternatives.isEmpty ? "0" : "(" + alternatives.joined(separator: " OR ") + ")")
        }
        let indexed = index.isEmpty ? "" : " INDEXED BY \(index)"
        sql =
            "SELECT * FROM event\(indexed) WHERE \(conditions.joined(separator: " AND ")) ORDER BY seq LIMIT ?"
        arguments += [limit]
        self.arguments = arguments
    }

    static func jsonArray(_ strings: [String]) -> String {
        String(decoding: (try? JSONCoding.encode(strings)) ?? Data("[]".utf8), as: UTF8.self)
    }
}
