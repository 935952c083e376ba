import Logging
import StpdPostgres

extension Daemon {
    /// `stpd --rotate-state-key`: the last step of a fleet's state key rotation (docs/fleet.md).
    /// With the fleet's current key (and the previous one) as any instance has them, it re-seals
    /// every row sealed otherwise, while the instances serve, and says what it did.
    public static func rotateStateKey(_ configuration: DaemonConfiguration) async throws -> String {
        guard configuration.databaseURL != nil else { throw RotationRefused() }
        let logger = makeLogger(level: configuration.logLevel)
        guard let fleet = try await OpenedStore.open(configuration, instance: "rotate-state-key", logger: logger).fleet
        else { throw RotationRefused() }
        let store = fleet.store
        let result = try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await store.run() }
            defer { group.cancelAll() }
            _ = try await store.migrate()
            store.open()
            return try await store.reseal()
        }
        var report = "re-sealed \(result.objects) objects and \(result.events) events with state key "
        report += store.stateKeyID ?? "(none)"
        if !result.unreadable.isEmpty {
            report += "; \(result.unreadable.count) rows open with none of this host's keys: "
            report += result.unreadable.prefix(20).joined(separator: ", ")
        }
        if result.remaining > 0 {
            report += "; \(result.remaining) rows were written meanwhile with an older key: run it again"
        }
        return report
    }
}

struct RotationRefused: Error, CustomStringConvertible {
    var description: String {
        "--rotate-state-key re-seals a fleet's database (set STPD_DATABASE_URL); "
            + "a single daemon's SQLite keeps one key (docs/SECURITY.md)"
    }
}
