import Foundation
import GRDB
import StpdCore

extension SQLiteStateStore {
    /// What `setAsideRowsSealedElsewhere` found.
    public struct SealedElsewhere: Sendable {
        /// The objects set aside, each with why it cannot be opened.
        public var objects: [StateSealerError] = []
        /// The events through this seq were dropped (0: none were).
        public var eventsDroppedThrough: Int64 = 0
    }

    /// Run once before serving. Rows sealed under another key than this store's (a replaced key
    /// file, a changed credential) cannot be read: each such object is set aside like a row that
    /// no longer decodes (kept, counted, never served), and the events such rows hold are dropped
    /// as retention drops them, so a cursor before them gets CursorExpired instead of an error.
    /// Events are sealed with the key current when they were appended, so those form a prefix of
    /// the log. Rows are told apart by the key id in their prefix: nothing is decrypted here.
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
        found.eventsDroppedThrough = try await pool.write { db in
            guard let through = try Int64.fetchOne(db, sql: "SELECT max(seq) FROM event WHERE \(events)") else {
                return 0
            }
            try db.execute(sql: "DELETE FROM event WHERE seq <= ?", arguments: [through])
            try db.execute(
                sql: """
                    INSERT INTO meta (key, value) VALUES ('pruned_through', ?)
                    ON CONFLICT(key) DO UPDATE SET value = max(value, excluded.value)
                    """,
                arguments: [through])
            return through
        }
        try await pool.write { db in
            try db.execute(
                sql: """
                    INSERT INTO meta (key, value) VALUES ('sealed_with', ?)
                    ON CONFLICT(key) DO UPDATE SET value = excluded.value
                    """,
                arguments: [marker])
        }
        return found
    }

    /// An SQL condition on a column holding sealed or plain text: sealed, but not by `keyID`.
    private static func sealedElsewhere(_ column: String, keyID: String?) -> String {
        // Key ids are hex digits, safe to inline.
        let current = keyID.map { "'\(StateSealer.prefix)\($0):'" } ?? "NULL"
        let length = StateSealer.prefix.count + 9
        return "substr(\(column), 1, 7) = 'sealed:' AND substr(\(column), 1, \(length)) IS NOT \(current)"
    }
}
