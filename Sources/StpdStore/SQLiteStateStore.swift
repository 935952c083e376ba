import Foundation
import GRDB
import JSONRPC
import StpdCore
import Synchronization

/// The durable `StateStore`: one SQLite database in WAL mode under the state directory.
/// Objects and events are written in one transaction; `seq` is SQLite's AUTOINCREMENT key,
/// which never reuses a value and rolls back with its transaction, so it stays gap-free.
/// Times are stored as Foundation's own representation (seconds since 2001-01-01), so an event
/// read back equals the one published live, bit for bit.
public final class SQLiteStateStore: StateStore {
    public let path: String
    private let pool: DatabasePool

    public init(path: String) throws {
        self.path = path
        var configuration = Configuration()
        configuration.label = "stpd"
        configuration.busyMode = .timeout(5)
        pool = try DatabasePool(path: path, configuration: configuration)
        try Self.migrator.migrate(pool)
        // Keys and secrets may sit in object state: only the daemon's user may read the files.
        for file in [path, path + "-wal", path + "-shm"] where FileManager.default.fileExists(atPath: file) {
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file)
        }
    }

    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1: objects and event log") { db in
            try db.create(table: "object") { t in
                t.primaryKey("id", .text)
                t.column("kind", .text).notNull().indexed()
                t.column("owner_uid", .integer).notNull()
                t.column("state", .text).notNull()
                t.column("created_at", .double).notNull()
                t.column("updated_at", .double).notNull()
            }
            try db.create(table: "event") { t in
                t.autoIncrementedPrimaryKey("seq")
                t.column("time", .double).notNull().indexed()
                t.column("type", .text).notNull()
                t.column("object_id", .text).notNull().indexed()
                t.column("object_kind", .text).notNull()
                t.column("owner_uid", .integer).notNull()
                t.column("object", .text).notNull()
            }
            try db.create(table: "meta") { t in
                t.primaryKey("key", .text)
                t.column("value", .integer).notNull()
            }
        }
        migrator.registerMigration("v2: event feed indexes") { db in
            // Filtered reads (`events(after:matching:limit:)`) walk one of these in `seq` order and
            // test type and object in the index, touching the table only for rows they return.
            // `seq` is the rowid, so it is listed to order the entries, not to store it twice.
            try db.execute(
                sql: """
                    CREATE INDEX event_owner_feed ON event(owner_uid, seq, type, object_id);
                    CREATE INDEX event_feed ON event(seq, type, object_id);
                    DROP INDEX event_on_object_id;
                    """)
        }
        return migrator
    }

    public func apply(_ changes: [StateChange], at time: Date) async throws -> [Event] {
        try await pool.write { db in
            try changes.map { change in
                let object = change.object
                let state = try Self.text(object.state)
                if change.removesObject {
                    try db.execute(sql: "DELETE FROM object WHERE id = ?", arguments: [object.id])
                } else {
                    try db.execute(
                        sql: """
                            INSERT INTO object (id, kind, owner_uid, state, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)
                            ON CONFLICT(id) DO UPDATE SET state = excluded.state, updated_at = excluded.updated_at
                            """,
                        arguments: [
                            object.id, object.kind, object.ownerUID, state,
                            object.createdAt.timeIntervalSinceReferenceDate,
                            object.updatedAt.timeIntervalSinceReferenceDate,
                        ])
                }
                let eventObject = change.publicState == nil ? state : try Self.text(change.eventObject)
                try db.execute(
                    sql:
                        "INSERT INTO event (time, type, object_id, object_kind, owner_uid, object) VALUES (?, ?, ?, ?, ?, ?)",
                    arguments: [
                        time.timeIntervalSinceReferenceDate, change.eventType, object.id, object.kind, object.ownerUID,
                        eventObject,
                    ])
                return Event(
                    seq: db.lastInsertedRowID, time: time, type: change.eventType, objectId: object.id,
                    objectKind: object.kind, ownerUID: object.ownerUID, object: change.eventObject)
            }
        }
    }

    public func object(id: String) async throws -> StoredObject? {
        try await pool.read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM object WHERE id = ?", arguments: [id]).map(Self.object)
        }
    }

    public func objects(kind: String) async throws -> [StoredObject] {
        try await pool.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM object WHERE kind = ? ORDER BY created_at, id", arguments: [kind])
                .map(Self.object)
        }
    }

    public func events(after: Int64, limit: Int) async throws -> [Event] {
        try await pool.read { db in
            try Row.fetchAll(
                db, sql: "SELECT * FROM event WHERE seq > ? ORDER BY seq LIMIT ?", arguments: [after, limit]
            )
            .map(self.decodeEvent)
        }
    }

    public func events(after: Int64, matching filter: EventFilter, limit: Int) async throws -> EventPage {
        let query = EventFeedQuery(after: after, filter: filter, limit: limit)
        return try await pool.read { db in
            let events = try Row.fetchAll(db, sql: query.sql, arguments: query.arguments).map(self.decodeEvent)
            let bounds = try Self.bounds(db)
            let through = events.count == limit ? events.last?.seq ?? after : max(after, bounds.latestSeq)
            return EventPage(events: events, through: through, bounds: bounds)
        }
    }

    /// How many events this store has decoded from their rows since it was opened: the work a
    /// read does is visible here, so tests can tell a read that skipped others' events in SQL
    /// from one that decoded them to drop them.
    public var decodedEventCount: Int { decodedEvents.load(ordering: .relaxed) }
    private let decodedEvents = Atomic<Int>(0)

    private func decodeEvent(_ row: Row) throws -> Event {
        decodedEvents.add(1, ordering: .relaxed)
        return try Self.event(row)
    }

    public func eventBounds() async throws -> EventBounds {
        try await pool.read(Self.bounds)
    }

    public func prune(_ retention: EventRetention, now: Date) async throws -> Int {
        try await pool.write { db in
            let bounds = try Self.bounds(db)
            let cutoff = now.timeIntervalSinceReferenceDate - retention.maxAge.seconds
            // Everything before the first event still within the age limit (times may not follow seq).
            let firstYoung = try Int64.fetchOne(
                db, sql: "SELECT MIN(seq) FROM event WHERE time >= ?", arguments: [cutoff])
            let byAge = firstYoung.map { $0 - 1 } ?? bounds.latestSeq
            let byCount = bounds.latestSeq - Int64(retention.maxCount)
            // Both limits cut a prefix of the log; the later cut wins.
            let through = max(byAge, byCount, bounds.prunedThrough)
            guard through > bounds.prunedThrough else { return 0 }
            try db.execute(sql: "DELETE FROM event WHERE seq <= ?", arguments: [through])
            let dropped = db.changesCount
            try db.execute(
                sql:
                    "INSERT INTO meta (key, value) VALUES ('pruned_through', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                arguments: [through])
            return dropped
        }
    }

    /// Bytes the database takes on disk (main file, write-ahead log and shared memory).
    public var sizeOnDisk: Int64 {
        [path, path + "-wal", path + "-shm"].reduce(0) { total, file in
            total + ((try? FileManager.default.attributesOfItem(atPath: file)[.size] as? Int64) ?? 0)
        }
    }

    static func bounds(_ db: Database) throws -> EventBounds {
        let latest = try Int64.fetchOne(db, sql: "SELECT seq FROM sqlite_sequence WHERE name = 'event'") ?? 0
        let pruned = try Int64.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'pruned_through'") ?? 0
        return EventBounds(latestSeq: latest, prunedThrough: pruned)
    }

    static func text(_ value: JSONValue) throws -> String {
        String(decoding: try JSONCoding.encode(value), as: UTF8.self)
    }

    static func json(_ text: String) throws -> JSONValue {
        try JSONCoding.decode(JSONValue.self, from: Data(text.utf8))
    }

    static func object(_ row: Row) throws -> StoredObject {
        StoredObject(
            id: row["id"], kind: row["kind"], ownerUID: row["owner_uid"], state: try json(row["state"]),
            createdAt: Date(timeIntervalSinceReferenceDate: row["created_at"]),
            updatedAt: Date(timeIntervalSinceReferenceDate: row["updated_at"]))
    }

    static func event(_ row: Row) throws -> Event {
        Event(
            seq: row["seq"], time: Date(timeIntervalSinceReferenceDate: row["time"]), type: row["type"],
            objectId: row["object_id"],
            objectKind: row["object_kind"], ownerUID: row["owner_uid"], object: try json(row["object"]))
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
