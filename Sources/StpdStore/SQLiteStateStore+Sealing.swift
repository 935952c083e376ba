import Foundation
import GRDB
import StpdCore

extension SQLiteStateStore {
    /// What `setAsideRowsSealedElsewhere` found.
    public struct SealedElsewhere: Sendable {
        /// The objects set aside, each with why it cannot be opened.
        public var objects: [StateSealerError] = []
        /// The events through this seq are sealed with another key: kept, but out of reach as
        /// pruned ones are (0: none are).
        public var eventsSetAsideThrough: Int64 = 0
    }

    /// Run once before serving. Rows sealed under another key than this store's (a replaced key
    /// file, a changed credential) cannot be read. Nothing is deleted for that: each such object
    /// is set aside like a row that no longer decodes (kept, counted, never served), and the
    /// events such rows hold are put out of reach as pruned ones are (a cursor before them gets
    /// CursorExpired), until `recover(sealedWith:)` re-seals them with the right key. Events are
    /// sealed with the key current when they were appended, so those form a prefix of the log.
    /// Rows are told apart by the key id in their prefix: nothing is decrypted here.
    ///
    /// The scan reads every row, so it runs only when the key differs from the one the last scan
    /// ran under (`meta.sealed_with`): every row written since was sealed by this store's own key,
    /// and a start with 100,000 stored objects must not pay a full read of them.
    public func setAsideRowsSealedElsewhere() async throws -> SealedElsewhere {
        // Never all digits: the column has integer affinity.
        let marker = "key:" + (sealer.keyID ?? "plain")
        let scannedUnder = try await pool.read { db in
            try String.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'sealed_with'")
        }
        guard scannedUnder != marker else { return SealedElsewhere() }
        let objects = Self.sealedElsewhere("state", keyID: sealer.keyID)
        let events = Self.sealedElsewhere("object", keyID: sealer.keyID)
        var found = SealedElsewhere()
        let rows = try await pool.read { db in
            try Row.fetchAll(db, sql: "SELECT id, state FROM object WHERE set_aside = 0 AND \(objects)")
                .map { (id: $0["id"] as String, state: $0["state"] as String) }
        }
        for (id, state) in rows {
            do {
                _ = try sealer.open(state, for: id)
            } catch {
                found.objects.append(error)
                try await setAside(id: id, reason: error.description)
            }
        }
        found.eventsSetAsideThrough = try await pool.write { db in
            let through = try Int64.fetchOne(db, sql: "SELECT max(seq) FROM event WHERE \(events)") ?? 0
            if through > 0 {
                try db.execute(
                    sql: """
                        INSERT INTO meta (key, value) VALUES ('pruned_through', ?)
                        ON CONFLICT(key) DO UPDATE SET value = max(value, excluded.value)
                        """,
                    arguments: [through])
            }
            try db.execute(
                sql: """
                    INSERT INTO meta (key, value) VALUES ('sealed_with', ?)
                    ON CONFLICT(key) DO UPDATE SET value = excluded.value
                    """,
                arguments: [marker])
            return through
        }
        return found
    }

    /// What `recover(sealedWith:)` re-sealed.
    public struct Recovered: Sendable, Hashable {
        public var objects = 0
        public var events = 0
    }

    /// Re-seals with this store's key every row sealed with `old` (a key that was lost, replaced
    /// or changed, found again): its objects come back into use as they were (setting aside kept
    /// their status, live flag and keys) and its events back into reach. One transaction: a row
    /// that does not open with `old` stops it, and nothing is changed. A key that sealed nothing
    /// here changes nothing at all; events still sealed with yet another key stay out of reach.
    public func recover(sealedWith old: StateSealer) async throws -> Recovered {
        guard let oldID = old.keyID, oldID != sealer.keyID else { return Recovered() }
        let prefix = "\(StateSealer.prefix)\(oldID):"
        let length = prefix.count
        return try await pool.write { [sealer] db in
            var recovered = Recovered()
            let objects = try Row.fetchAll(
                db, sql: "SELECT id, state FROM object WHERE substr(state, 1, ?) = ?", arguments: [length, prefix])
            for row in objects {
                let id: String = row["id"]
                let state = try sealer.seal(try old.open(row["state"], for: id), for: id)
                try db.execute(
                    sql: "UPDATE object SET state = ?, set_aside = 0 WHERE id = ?",
                    arguments: [state, id])
                recovered.objects += 1
            }
            let events = try Row.fetchAll(
                db, sql: "SELECT seq, object_id, object FROM event WHERE substr(object, 1, ?) = ?",
                arguments: [length, prefix])
            for row in events {
                let id: String = row["object_id"]
                let object = try sealer.seal(try old.open(row["object"], for: id), for: id)
                try db.execute(sql: "UPDATE event SET object = ? WHERE seq = ?", arguments: [object, row["seq"]])
                recovered.events += 1
            }
            // An unrelated key once reset the bound to 0, putting the rows still sealed elsewhere
            // back in reach of `events.wait`, which then failed on every call.
            guard recovered.objects + recovered.events > 0 else { return recovered }
            // The log starts at the first event still in the table, or after the last one still
            // sealed with a key this store does not hold, whichever is later.
            if let first = try Int64.fetchOne(db, sql: "SELECT min(seq) FROM event") {
                let elsewhere = Self.sealedElsewhere("object", keyID: sealer.keyID)
                let stillSealed = try Int64.fetchOne(db, sql: "SELECT max(seq) FROM event WHERE \(elsewhere)") ?? 0
                try db.execute(
                    sql: "UPDATE meta SET value = max(min(value, ?), ?) WHERE key = 'pruned_through'",
                    arguments: [first - 1, stillSealed])
            }
            return recovered
        }
    }

    /// How many rows (objects and events) are sealed with each key, by key id, read without any
    /// key: what a start without the key must not lose. Empty for a database that does not exist
    /// or holds nothing sealed.
    public static func sealedRows(path: String) throws -> [String: Int] {
        guard FileManager.default.fileExists(atPath: path) else { return [:] }
        var configuration = Configuration()
        configuration.readonly = true
        let queue = try DatabaseQueue(path: path, configuration: configuration)
        return try queue.read { db in
            guard try db.tableExists("object"), try db.tableExists("event") else { return [:] }
            let length = StateSealer.prefix.count + 8
            var counts: [String: Int] = [:]
            for (table, column) in [("object", "state"), ("event", "object")] {
                let rows = try Row.fetchAll(
                    db,
                    sql: """
                        SELECT substr(\(column), 1, ?) AS sealedWith, count(*) AS n FROM \(table)
                        WHERE substr(\(column), 1, 7) = 'sealed:' GROUP BY sealedWith
                        """,
                    arguments: [length])
                for row in rows {
                    let sealedWith: String = row["sealedWith"]
                    let key =
                        sealedWith.hasPrefix(StateSealer.prefix)
                        ? String(sealedWith.dropFirst(StateSealer.prefix.count)) : sealedWith
                    counts[key, default: 0] += row["n"]
                }
            }
            return counts
        }
    }

    /// An SQL condition on a column holding sealed or plain text: sealed, but not by `keyID`.
    private static func sealedElsewhere(_ column: String, keyID: String?) -> String {
        // Key ids are hex digits, safe to inline.
        let current = keyID.map { "'\(StateSealer.prefix)\($0):'" } ?? "NULL"
        let length = StateSealer.prefix.count + 9
        return "substr(\(column), 1, 7) = 'sealed:' AND substr(\(column), 1, \(length)) IS NOT \(current)"
    }
}
