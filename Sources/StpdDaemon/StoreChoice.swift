import Foundation
import Logging
import ServiceLifecycle
import StpdCore
import StpdPostgres
import StpdProtocol
import StpdStore

/// The store the daemon runs on: SQLite in the state directory (the default), or a PostgreSQL
/// database shared by a fleet of instances (`STPD_DATABASE_URL`).
struct OpenedStore: Sendable {
    var store: any StateStore
    /// What `daemon.status` says of the store.
    var status: @Sendable () async throws -> DaemonStatus.StoreStatus
    /// Bytes the store takes on this host (0 for a database elsewhere).
    var sizeOnDisk: @Sendable () -> Int64
    var fleet: Fleet?

    static func open(_ configuration: DaemonConfiguration, logger: Logger) async throws -> OpenedStore {
        if let url = configuration.databaseURL { return try await openFleet(url, configuration, logger: logger) }
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

    private static func openFleet(_ url: String, _ configuration: DaemonConfiguration, logger: Logger) async throws
        -> OpenedStore
    {
        let location = try PostgresLocation(url: url, password: try configuration.databasePassword())
        let store = try await PostgresStateStore(
            location: location, instance: configuration.instance, logger: Logger(label: "stpd.postgres"))
        let leases = PostgresLeases(
            store: store, instance: configuration.instance, duration: configuration.leaseDuration, logger: logger)
        logger.notice(
            "joined the fleet", metadata: ["instance": "\(configuration.instance)", "database": "\(location)"])
        return OpenedStore(
            store: store,
            status: {
                let bounds = try await store.eventBounds()
                return .init(
                    path: location.description, sizeBytes: 0, latestSeq: bounds.latestSeq,
                    oldestSeq: bounds.oldestKept, setAside: try await store.setAsideCount())
            }, sizeOnDisk: { 0 },
            fleet: Fleet(instance: configuration.instance, store: store, leases: leases))
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
struct Fleet: Sendable {
    var instance: String
    var store: PostgresStateStore
    var leases: PostgresLeases

    var status: DaemonStatus.FleetStatus {
        DaemonStatus.FleetStatus(instance: instance, database: store.location.description, leases: leases.held)
    }

    /// The fleet's services: following the shared event log, renewing leases, and taking over
    /// the polls and pending-action deadlines of instances that died.
    func services(
        log: EventLog, sources: SourceService, intents: IntentPollers, contexts: PaymentContexts, logger: Logger
    ) -> [any Service] {
        [
            FleetTask { await PostgresEventFollower(store: store, log: log, logger: logger).run() },
            FleetTask { await leases.run() },
            FleetTask { [leases] in
                while !Task.isCancelled {
                    do { try await Task.sleep(for: leases.duration / 2) } catch { return }
                    do {
                        try await sources.adoptPolls()
                        try await intents.adopt()
                        try await contexts.adoptDeadlines()
                    } catch {
                        logger.warning("looking for work to take over failed", metadata: ["error": "\(error)"])
                    }
                }
            },
        ]
    }
}

/// A fleet task as a service: cancelled when shutdown begins.
struct FleetTask: Service {
    let body: @Sendable () async -> Void
    init(_ body: @escaping @Sendable () async -> Void) { self.body = body }
    func run() async throws { await cancelWhenGracefulShutdown { await body() } }
}

extension DaemonConfiguration {
    /// The database password: `$CREDENTIALS_DIRECTORY/stpd-database-password` (systemd's
    /// `LoadCredential=`), else `STPD_DATABASE_PASSWORD_FILE`, else none (peer or trust auth).
    func databasePassword() throws -> String? {
        var path = databasePasswordFile
        var isCredential = false
        if let credentialsDirectory, !credentialsDirectory.isEmpty {
            let credential = "\(credentialsDirectory)/stpd-database-password"
            if FileManager.default.fileExists(atPath: credential) { (path, isCredential) = (credential, true) }
        }
        guard let path else { return nil }
        let refusal = ConfigurationError.invalid(
            "STPD_DATABASE_PASSWORD_FILE", path, "a readable file holding the database password")
        let data: Data?
        if isCredential {
            // systemd's credential is made for the service alone.
            data = FileManager.default.contents(atPath: path)
        } else {
            let handle: FileHandle
            do throws(FileTrust.Failure) { handle = try FileTrust.open(path) } catch {
                if case .untrusted(let reason) = error {
                    throw ConfigurationError.untrusted("database password file", path, reason)
                }
                throw refusal
            }
            defer { try? handle.close() }
            data = try? handle.readToEnd()
        }
        guard let data else { throw refusal }
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .newlines)
    }
}
