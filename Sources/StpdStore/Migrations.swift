import GRDB

extension SQLiteStateStore {
    /// Migrations run in this order, each once; never edit one that has shipped.
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
        // The record core: versions for optimistic concurrency, what is derived from the state
        // to query it without decoding it, and lookup keys. (No release wrote rows under v1.)
        migrator.registerMigration("v2: record core") { db in
            try db.alter(table: "object") { t in
                t.add(column: "version", .integer).notNull().defaults(to: 0)
                t.add(column: "status", .text)
                t.add(column: "live", .boolean).notNull().defaults(to: true)
                t.add(column: "finished", .boolean).notNull().defaults(to: false)
                t.add(column: "set_aside", .boolean).notNull().defaults(to: false)
            }
            try db.execute(
                sql: """
                    DROP INDEX IF EXISTS object_on_kind;
                    CREATE INDEX object_by_kind ON object (kind, created_at, id);
                    CREATE INDEX object_by_owner ON object (kind, owner_uid, created_at, id);
                    CREATE INDEX object_by_status ON object (kind, status, created_at, id);
                    CREATE INDEX object_live ON object (kind, created_at, id) WHERE live = 1;
                    CREATE INDEX object_finished ON object (kind, updated_at) WHERE finished = 1;
                    CREATE TABLE object_key (
                        key TEXT NOT NULL, object_id TEXT NOT NULL, owner_uid INTEGER NOT NULL, ordinal INTEGER NOT NULL,
                        PRIMARY KEY (key, object_id)
                    ) WITHOUT ROWID;
                    CREATE INDEX object_key_by_ordinal ON object_key (key, ordinal, object_id);
                    CREATE INDEX object_key_by_owner ON object_key (key, owner_uid, ordinal, object_id);
                    CREATE INDEX object_key_by_object ON object_key (object_id);
                    """)
        }
        migrator.registerMigration("v3: event feed indexes") { db in
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
        migrator.registerMigration("v4: no event time index") { db in
            // Pruning by age walks the log in seq order from its start; nothing else reads by time,
            // and every event paid for the index twice (appended, then pruned).
            try db.execute(sql: "DROP INDEX event_on_time")
        }
        return migrator
    }
}
