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
        let stateKey = try StateKey.load(
            stateDirectory: configuration.stateDirectory, credentialsDirectory: configuration.credentialsDirectory,
            databaseExists: FileManager.default.fileExists(atPath: configuration.databasePath))
        for warning in stateKey.warnings { logger.warning("\(warning)") }
        logger.info(
            "secrets at rest are sealed",
            metadata: ["state_key": "\(stateKey.source)", "state_key_id": "\(stateKey.sealer.keyID ?? "")"])
        let store = try SQLiteStateStore(path: configuration.databasePath, sealer: stateKey.sealer)
        // Rows another key sealed cannot be read: set aside (objects) or dropped (events), never fatal.
        let foreign = try await store.setAsideRowsSealedElsewhere()
        for error in foreign.objects {
            logger.error(
                "set aside an object sealed with another state key",
                metadata: ["object": "\(error.id)", "error": "\(error)"])
        }
        if foreign.eventsDroppedThrough > 0 {
            logger.error(
                "dropped the events through seq \(foreign.eventsDroppedThrough): sealed with another state key",
                metadata: ["state_key_id": "\(stateKey.sealer.keyID ?? "")"])
        }
        return .sqlite(store)
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
