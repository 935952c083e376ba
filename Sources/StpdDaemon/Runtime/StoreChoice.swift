import Foundation
import Logging
import StpdCore
import StpdPostgres
import StpdProtocol
import StpdStore
import Synchronization

/// The store the daemon runs on: SQLite in the state directory (the default), or a PostgreSQL
/// database shared by a fleet of instances (`STPD_DATABASE_URL`).
struct OpenedStore: Sendable {
    var store: any StateStore
    /// What `daemon.status` says of the store.
    var status: @Sendable () async throws -> DaemonStatus.StoreStatus
    /// Bytes the store takes on this host (0 for a database elsewhere).
    var sizeOnDisk: @Sendable () -> Int64
    var fleet: Fleet?

    /// `instance`: the daemon's name in a fleet. Nothing is read from a fleet's database here:
    /// it may be down (`FleetService` waits for it).
    static func open(_ configuration: DaemonConfiguration, instance: String, logger: Logger) async throws
        -> OpenedStore
    {
        if let url = configuration.databaseURL { return try openFleet(url, configuration, instance, logger) }
        let store = try openSQLite(configuration, logger: logger)
        // Rows another key sealed cannot be read: set aside (objects) or out of reach (events),
        // kept for `stpd --recover-with-key`, never fatal.
        let foreign = try await store.setAsideRowsSealedElsewhere()
        for error in foreign.objects {
            logger.error(
                "set aside an object sealed with another state key",
                metadata: ["object": "\(error.id)", "error": "\(error)"])
        }
        if foreign.eventsSetAsideThrough > 0 {
            let through = foreign.eventsSetAsideThrough
            logger.error(
                "the events through seq \(through) are sealed with another state key: kept, out of reach until stpd --recover-with-key re-seals them",
                metadata: ["state_key_id": "\(store.sealer.keyID ?? "")"])
        }
        return .sqlite(store)
    }

    /// The SQLite store under the state key. A database holding sealed rows is never opened under
    /// a key created now: with the key missing, those rows would be lost to this start and every
    /// later one, so stpd refuses to start and says how to bring the key back.
    static func openSQLite(_ configuration: DaemonConfiguration, logger: Logger) throws -> SQLiteStateStore {
        let (directory, credentials) = (configuration.stateDirectory, configuration.credentialsDirectory)
        let databaseExists = FileManager.default.fileExists(atPath: configuration.databasePath)
        if databaseExists, !StateKey.exists(stateDirectory: directory, credentialsDirectory: credentials) {
            let sealed = try SQLiteStateStore.sealedRows(path: configuration.databasePath)
            if !sealed.isEmpty {
                throw MissingStateKey(
                    keyPath: "\(directory)/\(StateKey.name)", databasePath: configuration.databasePath, sealed: sealed)
            }
        }
        let stateKey = try StateKey.load(
            stateDirectory: directory, credentialsDirectory: credentials, databaseExists: databaseExists)
        for warning in stateKey.warnings { logger.warning("\(warning)") }
        logger.info(
            "secrets at rest are sealed",
            metadata: ["state_key": "\(stateKey.source)", "state_key_id": "\(stateKey.sealer.keyID ?? "")"])
        return try SQLiteStateStore(path: configuration.databasePath, sealer: stateKey.sealer)
    }

    /// The embedded default.
    static func sqlite(_ store: SQLiteStateStore) -> OpenedStore {
        OpenedStore(
            store: store,
            status: {
                let bounds = try await store.eventBounds()
                return .init(
                    path: store.path, sizeBytes: store.sizeOnDisk, latestSeq: bounds.latestSeq,
                    oldestSeq: bounds.oldestKept, setAside: try await store.setAsideCount())
            }, sizeOnDisk: { store.sizeOnDisk }, fleet: nil)
    }

    private static func openFleet(
        _ url: String, _ configuration: DaemonConfiguration, _ instance: String, _ logger: Logger
    ) throws -> OpenedStore {
        let location = try PostgresLocation(url: url, password: try configuration.databasePassword())
        let stateKey = try StateKey.loadShared(
            stateDirectory: configuration.stateDirectory, credentialsDirectory: configuration.credentialsDirectory)
        logger.info(
            "secrets at rest are sealed",
            metadata: [
                "state_key": "\(stateKey.source)", "state_key_id": "\(stateKey.sealer.keyID ?? "")",
                "previous_state_keys": "\(stateKey.sealer.previousKeyIDs)",
            ])
        let store = try PostgresStateStore(
            location: location, instance: instance, sealer: stateKey.sealer, logger: Logger(label: "stpd.postgres"))
        let leases = PostgresLeases(
            store: store, instance: instance, duration: configuration.leaseDuration, logger: logger)
        let fleet = Fleet(instance: instance, store: store, leases: leases)
        return OpenedStore(
            store: store, status: { try await fleet.storeStatus() }, sizeOnDisk: { 0 }, fleet: fleet)
    }
}

/// The state key is gone while the database holds rows sealed with it.
struct MissingStateKey: Error, CustomStringConvertible {
    var keyPath: String
    var databasePath: String
    /// Rows by the id of the key that sealed them.
    var sealed: [String: Int]

    var description: String {
        let rows = sealed.sorted { $0.key < $1.key }.map { "\($0.value) sealed with key \($0.key)" }
        return """
            state key \(keyPath) is missing, but \(databasePath) holds rows sealed with a state key \
            (\(rows.joined(separator: ", "))). stpd will not start on a new key: those rows could not be read again. \
            Put the key back (from a backup of the state directory, or as the state-key credential) and start \
            stpd again. If the key is lost for good, the secrets it sealed are gone: move the database away \
            (keep it, in case the key turns up: `stpd --recover-with-key FILE` re-seals its rows) and start again. \
            See docs/SECURITY.md, "A lost state key".
            """
    }
}

/// This daemon's part in a fleet: its name, the shared database and its leases.
final class Fleet: Sendable {
    let instance: String
    let store: PostgresStateStore
    let leases: PostgresLeases
    /// What the database last said of itself, shown while it does not answer.
    private let lastStore = Mutex<DaemonStatus.StoreStatus?>(nil)

    init(instance: String, store: PostgresStateStore, leases: PostgresLeases) {
        self.instance = instance
        self.store = store
        self.leases = leases
    }

    /// The store's figures; while the database is down, the last ones read (zeros if it never
    /// answered), so that `daemon.status` always answers (its `fleet` says the database is down).
    func storeStatus() async throws -> DaemonStatus.StoreStatus {
        do {
            let bounds = try await store.eventBounds()
            let status = DaemonStatus.StoreStatus(
                path: store.location.description, sizeBytes: 0, latestSeq: bounds.latestSeq,
                oldestSeq: bounds.oldestKept, setAside: try await store.setAsideCount())
            lastStore.withLock { $0 = status }
            return status
        } catch is StoreUnavailable {
            return lastStore.withLock { $0 }
                ?? DaemonStatus.StoreStatus(
                    path: store.location.description, sizeBytes: 0, latestSeq: 0, oldestSeq: 1, setAside: 0)
        }
    }

    /// The commits this daemon made and the seconds they held the event counter's lock.
    var commits: (count: Int, heldSeconds: Double) {
        let commits = store.commits.snapshot
        return (commits.commits, commits.holdSeconds)
    }

    func status(log: EventLog) async -> DaemonStatus.FleetStatus {
        let health = store.health.snapshot
        let latest = health.up == true ? try? await store.eventBounds().latestSeq : nil
        return DaemonStatus.FleetStatus(
            instance: instance, database: store.location.description, leases: leases.held,
            databaseUp: health.up == true, databaseSince: health.since?.formatted(.iso8601),
            reconnects: health.reconnects, lastDatabaseError: health.lastError,
            instances: health.up == true ? (try? await leases.census()) ?? [:] : [:],
            followerLag: latest.map { max(0, $0 - log.bus.lastPublished) })
    }
}

extension DaemonConfiguration {
    /// The database password: `$CREDENTIALS_DIRECTORY/stpd-database-password` (systemd's
    /// `LoadCredential=`), else `STPD_DATABASE_PASSWORD_FILE`, else none (peer or trust auth).
    func databasePassword() throws -> String? {
        var path = databasePasswordFile
        if let credentialsDirectory, !credentialsDirectory.isEmpty {
            let credential = "\(credentialsDirectory)/stpd-database-password"
            if FileManager.default.fileExists(atPath: credential) { path = credential }
        }
        guard let path else { return nil }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ConfigurationError.invalid(
                "STPD_DATABASE_PASSWORD_FILE", path, "a readable file holding the database password")
        }
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .newlines)
    }
}
