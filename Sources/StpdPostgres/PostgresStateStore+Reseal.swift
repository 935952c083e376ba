import Logging
import PostgresNIO
import StpdCore

/// A state key rotation's last step (`stpd --rotate-state-key`; docs/fleet.md says the steps).
extension PostgresStateStore {
    public struct Resealed: Sendable, Equatable {
        /// Rows moved to the current key.
        public var objects = 0
        public var events = 0
        /// Rows this daemon's keys cannot open (left as they are): their ids, or the events' seqs.
        public var unreadable: [String] = []
        /// Rows still sealed otherwise when it ended (written meanwhile by an instance that still
        /// seals with an older key): run it again once every instance has the current key.
        public var remaining = 0

        public init(objects: Int = 0, events: Int = 0, unreadable: [String] = [], remaining: Int = 0) {
            self.objects = objects
            self.events = events
            self.unreadable = unreadable
            self.remaining = remaining
        }
    }

    /// Re-seals with the current key every object state and event object sealed with another key
    /// (or written in the clear, before sealing), in batches of `batch`, while the fleet runs: a
    /// row is rewritten only if it still holds the text that was read (a concurrent write, sealed
    /// by its writer, wins), and its version does not change (its content is the same), so no
    /// event is appended and no update of a running daemon conflicts with it.
    public func reseal(batch: Int = 200) async throws -> Resealed {
        var result = Resealed()
        var after = ""
        while true {
            let rows = try await query(
                """
                SELECT id, state FROM object WHERE key_id IS DISTINCT FROM \(sealer.keyID) AND id > \(after)
                ORDER BY id LIMIT \(Int64(batch))
                """, "re-sealing objects", bound: Self.maintenanceBound
            ).map { try $0.decode((String, String).self) }
            guard let last = rows.last else { break }
            after = last.0
            let (resealed, unreadable) = reseal(rows.map { (key: $0.0, id: $0.0, stored: $0.1) })
            result.unreadable += unreadable
            result.objects += try await rewrite("object", key: "id", resealed)
        }
        var afterSeq: Int64 = 0
        while true {
            let rows = try await query(
                """
                SELECT seq, object_id, object FROM event WHERE key_id IS DISTINCT FROM \(sealer.keyID)
                AND seq > \(afterSeq) ORDER BY seq LIMIT \(Int64(batch))
                """, "re-sealing events", bound: Self.maintenanceBound
            ).map { try $0.decode((Int64, String, String).self) }
            guard let last = rows.last else { break }
            afterSeq = last.0
            let (resealed, unreadable) = reseal(rows.map { (key: String($0.0), id: $0.1, stored: $0.2) })
            result.unreadable += unreadable.map { "event \($0)" }
            result.events += try await rewrite("event", key: "seq", resealed)
        }
        result.remaining =
            try await query(
                """
                SELECT (SELECT count(*) FROM object WHERE key_id IS DISTINCT FROM \(sealer.keyID))
                + (SELECT count(*) FROM event WHERE key_id IS DISTINCT FROM \(sealer.keyID))
                """, "re-sealing", bound: Self.maintenanceBound
            ).single(Int.self) - result.unreadable.count
        return result
    }

    typealias Resealing = (key: String, old: String, new: String)

    /// Each row's stored text (sealed for object `id`) opened and sealed with the current key;
    /// the keys of the rows that do not open.
    private func reseal(_ rows: [(key: String, id: String, stored: String)]) -> ([Resealing], [String]) {
        var resealed: [Resealing] = []
        var unreadable: [String] = []
        for row in rows {
            do {
                resealed.append(
                    (row.key, row.stored, try sealer.seal(sealer.open(row.stored, for: row.id), for: row.id)))
            } catch {
                unreadable.append(row.key)
            }
        }
        return (resealed, unreadable)
    }

    /// Rewrites the rows of `table` (keyed by `key`: `id`, or `seq` given as text) that still hold
    /// their old text; returns how many it rewrote.
    private func rewrite(_ table: String, key: String, _ rows: [Resealing]) async throws -> Int {
        guard !rows.isEmpty else { return 0 }
        let column = table == "object" ? "state" : "object"
        let keyType = key == "seq" ? "bigint" : "text"
        // Key ids are hex digits: safe to inline.
        let keyID = sealer.keyID.map { "'\($0)'" } ?? "NULL"
        var sql = SQL("UPDATE \(table) AS t SET \(column) = r.new, key_id = \(keyID)")
        sql.append(" FROM unnest(", rows.map(\.key), "::text[], ")
        sql.append("", rows.map(\.old), "::text[], ")
        sql.append("", rows.map(\.new), "::text[]) AS r(k, old, new) ")
        sql.text += "WHERE t.\(key) = r.k::\(keyType) AND t.\(column) = r.old RETURNING 1"
        return try await query(sql.query, "re-sealing \(table)s", bound: Self.maintenanceBound).count
    }
}
