import Foundation
import JSONRPC
import StpdCore
import StpdPostgres
import StpdProtocol
import StpdStore
@_spi(Testing) import StpdValues
import Testing

/// The stores the shared `StateStore` suite runs against: the domain must not be able to tell
/// them apart, so every contract test runs on each.
enum StoreKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case memory
    case sqlite
    /// Only where a test cluster is up (`scripts/test-postgres` exports STPD_TEST_DATABASE_URL).
    case postgres

    static var allCases: [StoreKind] { testDatabase == nil ? [.memory, .sqlite] : [.memory, .sqlite, .postgres] }

    /// The test cluster: each test gets a database of its own on it.
    static let testDatabase: PostgresLocation? = ProcessInfo.processInfo.environment["STPD_TEST_DATABASE_URL"]
        .flatMap { try? PostgresLocation(url: $0, password: nil) }

    var testDescription: String { rawValue }

    /// Makes a fresh, empty store, runs `body` on it, then deletes its files.
    func withStore(_ body: (any StateStore) async throws -> Void) async throws {
        switch self {
        case .memory:
            return try await body(InMemoryStateStore())
        case .sqlite:
            let dir = FileManager.default.temporaryDirectory.appendingPathComponent("stpd-core-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: dir) }
            return try await body(SQLiteStateStore(path: dir.appendingPathComponent("state.sqlite").path))
        case .postgres:
            guard let location = Self.testDatabase else { return }
            try await PostgresStateStore.withScratchDatabase(at: location) { try await body($0) }
        }
    }
}

/// A fixed point in time with a whole number of seconds since 1970, so it survives the SQLite
/// store's `timeIntervalSince1970` encoding exactly and events compare equal after a read back.
let t0 = Date(timeIntervalSince1970: 1_700_000_000)

func object(
    _ id: String, kind: String = "payment_context", owner: UInt32 = 1000, state: JSONValue = [:], created: Date = t0,
    updated: Date? = nil
) -> StoredObject {
    StoredObject(id: id, kind: kind, ownerUID: owner, state: state, createdAt: created, updatedAt: updated ?? created)
}

func change(
    _ id: String, _ type: String = "payment_context.updated", kind: String = "payment_context", owner: UInt32 = 1000,
    state: JSONValue = [:], removes: Bool = false
) -> StateChange {
    StateChange(
        object: object(id, kind: kind, owner: owner, state: state), eventType: EventType(testing: type),
        removesObject: removes)
}

/// `count` changes to distinct objects, so each appends one event.
func changes(_ count: Int, type: String = "payment_context.updated") -> [StateChange] {
    (0..<count).map { change("obj-\($0)", type) }
}

extension Array where Element == Event {
    var seqs: [Int64] { map(\.seq) }
}
