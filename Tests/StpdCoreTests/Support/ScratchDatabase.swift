import Foundation
import PostgresNIO
import StpdStore

@testable import StpdPostgres

extension PostgresStateStore {
    /// Runs `body` while the store's pool runs (its schema migrated and the store open), then
    /// closes the pool, as the daemon's service group would.
    @discardableResult
    func whileRunning<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await self.run() }
            defer { group.cancelAll() }
            // Every parameterised case makes and migrates a database at once: on a busy machine
            // that outlasts the daemon's 10 s per try, which is no finding of the test's.
            _ = try await migrate(within: .seconds(120))
            open()
            return try await body()
        }
    }

    /// Runs `body` on a store in a new database of the server `location` names (its own database
    /// is only used to create and drop the new one), then drops it.
    static func withScratchDatabase(
        at location: PostgresLocation, sealer: StateSealer = .plain, _ body: (PostgresStateStore) async throws -> Void
    ) async throws {
        let name = "stpd_test_\(UUID().uuidString.prefix(12).lowercased().replacingOccurrences(of: "-", with: ""))"
        let admin = PostgresClient(configuration: try location.configuration)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await admin.run() }
            defer { group.cancelAll() }
            try await admin.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(name)"))
            var scratch = location
            scratch.database = name
            let store = try PostgresStateStore(location: scratch, sealer: sealer)
            do {
                try await store.whileRunning { try await body(store) }
            } catch {
                _ = try? await admin.query(PostgresQuery(unsafeSQL: "DROP DATABASE \(name) WITH (FORCE)"))
                throw error
            }
            try await admin.query(PostgresQuery(unsafeSQL: "DROP DATABASE \(name) WITH (FORCE)"))
        }
    }
}
