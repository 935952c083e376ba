import Logging
import PostgresNIO

/// The PostgreSQL schema, versioned like SQLiteStateStore's migrations: each runs once, in order,
/// recorded in `stpd_migration`; never edit one that has shipped. Daemons starting at once take a
/// transaction-scoped advisory lock first, so exactly one of them migrates.
///
/// Text that is compared or ordered (ids, types, keys) uses the "C" collation, so it compares
/// byte for byte as SQLite and the in-memory store do (an event type prefix is a byte range).
enum PostgresMigrations {
    struct Migration {
        var version: Int
        var name: String
        var sql: [String]
    }

    /// An arbitrary constant: the advisory lock key of the migrations.
    static let lockKey: Int64 = 0x7374_7064_6d69_67

    static let all: [Migration] = [
        Migration(
            version: 1, name: "objects, event log, keys, counter",
            sql: [
                """
                CREATE TABLE object (
                    id TEXT COLLATE "C" PRIMARY KEY, kind TEXT COLLATE "C" NOT NULL, owner_uid BIGINT NOT NULL,
                    state TEXT NOT NULL, created_at DOUBLE PRECISION NOT NULL, updated_at DOUBLE PRECISION NOT NULL,
                    version BIGINT NOT NULL, status TEXT COLLATE "C", live BOOLEAN NOT NULL,
                    finished BOOLEAN NOT NULL, set_aside BOOLEAN NOT NULL DEFAULT FALSE)
                """,
                "CREATE INDEX object_by_kind ON object (kind, created_at, id)",
                "CREATE INDEX object_by_owner ON object (kind, owner_uid, created_at, id)",
                "CREATE INDEX object_by_status ON object (kind, status, created_at, id)",
                "CREATE INDEX object_live ON object (kind, created_at, id) WHERE live",
                "CREATE INDEX object_finished ON object (kind, updated_at) WHERE finished",
                """
                CREATE TABLE object_key (
                    key TEXT COLLATE "C" NOT NULL, object_id TEXT COLLATE "C" NOT NULL, owner_uid BIGINT NOT NULL,
                    ordinal BIGINT NOT NULL, PRIMARY KEY (key, object_id))
                """,
                "CREATE INDEX object_key_by_ordinal ON object_key (key, ordinal, object_id)",
                "CREATE INDEX object_key_by_owner ON object_key (key, owner_uid, ordinal, object_id)",
                "CREATE INDEX object_key_by_object ON object_key (object_id)",
                """
                CREATE TABLE event (
                    seq BIGINT PRIMARY KEY, time DOUBLE PRECISION NOT NULL, type TEXT COLLATE "C" NOT NULL,
                    object_id TEXT COLLATE "C" NOT NULL, object_kind TEXT NOT NULL, owner_uid BIGINT NOT NULL,
                    object TEXT NOT NULL)
                """,
                "CREATE INDEX event_owner_feed ON event (owner_uid, seq)",
                "CREATE INDEX event_by_time ON event (time)",
                // The one row every committing transaction updates: see docs/fleet.md for why.
                """
                CREATE TABLE event_counter (
                    id INTEGER PRIMARY KEY CHECK (id = 1), latest_seq BIGINT NOT NULL)
                """,
                "INSERT INTO event_counter (id, latest_seq) VALUES (1, 0)",
                // Apart from the counter, so that pruning never holds up a commit.
                "CREATE TABLE meta (key TEXT PRIMARY KEY, value BIGINT NOT NULL)",
                "INSERT INTO meta (key, value) VALUES ('pruned_through', 0)",
            ]),
        Migration(
            version: 2, name: "leases",
            sql: [
                """
                CREATE TABLE lease (
                    name TEXT COLLATE "C" PRIMARY KEY, holder TEXT NOT NULL, expires_at TIMESTAMPTZ NOT NULL)
                """,
                "CREATE INDEX lease_by_holder ON lease (holder)",
            ]),
        Migration(
            version: 3, name: "sealing key ids, lease instances",
            sql: [
                // The state key that sealed each row (NULL: written in the clear, before sealing).
                "ALTER TABLE object ADD COLUMN key_id TEXT",
                "ALTER TABLE event ADD COLUMN key_id TEXT",
                // The holder's instance name, for the lease counts per instance in daemon.status.
                "ALTER TABLE lease ADD COLUMN instance TEXT NOT NULL DEFAULT ''",
            ]),
        Migration(
            version: 4, name: "one round trip per commit",
            sql: [
                // Each event's commit, a random number, so a commit whose answer was lost is found.
                "ALTER TABLE event ADD COLUMN commit_token BIGINT",
                PostgresApplyProcedure.create,
            ]),
    ]

    /// Brings the database to the latest version; returns the versions it applied.
    @discardableResult
    static func migrate(_ connection: PostgresConnection, logger: Logger) async throws -> [Int] {
        try await PostgresStateStore.transaction(connection, logger) { connection in
            try await connection.run("SELECT pg_advisory_xact_lock(\(lockKey))", logger: logger)
            try await connection.run(
                """
                CREATE TABLE IF NOT EXISTS stpd_migration (
                    version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())
                """, logger: logger)
            var done = Set<Int>()
            for try await version in try await connection.run(
                "SELECT version FROM stpd_migration", logger: logger
            ).decode(Int.self) {
                done.insert(version)
            }
            var applied: [Int] = []
            for migration in all where !done.contains(migration.version) {
                for statement in migration.sql {
                    try await connection.run(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
                try await connection.run(
                    "INSERT INTO stpd_migration (version, name) VALUES (\(migration.version), \(migration.name))",
                    logger: logger)
                applied.append(migration.version)
            }
            return applied
        }
    }
}
