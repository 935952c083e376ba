import Foundation
import PostgresNIO

@testable import StpdPostgres

extension PostgresStateStore {
    /// Runs `body` on a store in a new database of the server `location` names (its own database
    /// is only used to create and drop the new one), then drops it.
    static func withScratchDatabase(
        at location: PostgresLocation, _ body: (PostgresStateStore) async throws -> Void
    ) async throws {
        let name = "stpd_test_\(UUID().uuidString.prefix(12).lowercased().replacingOccurrences(of: "-", with: ""))"
        let admin = PostgresClient(configuration: try location.configuration)
        let running = Task { await admin.run() }
        defer { running.cancel() }
        try await admin.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(name)"))
        var scratch = location
        scratch.database = name
        let store = try await PostgresStateStore(location: scratch)
        do {
            try await body(store)
        } catch {
            store.close()
            _ = try? await admin.query(PostgresQuery(unsafeSQL: "DROP DATABASE \(name) WITH (FORCE)"))
            throw error
        }
        store.close()
        try await admin.query(PostgresQuery(unsafeSQL: "DROP DATABASE \(name) WITH (FORCE)"))
    }
}
