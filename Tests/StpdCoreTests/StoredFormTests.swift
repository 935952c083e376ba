import Foundation
import JSONRPC
import StpdProtocol
import StpdStore
import StripeAPI
import Testing

@testable import StpdCore

/// What each kind of record stores, pinned: the database a release before wrote
/// (`Tests/Fixtures/state-0.1.0`, made by `scripts/make-state-fixture`) decodes into today's
/// records, and each encodes again to the bytes it stored (`Tests/Fixtures/stored-forms/KIND.json`,
/// the same with the row's `schemaVersion`). No stored value is of a wire contract type
/// (StpdProtocol), so renaming a contract field changes no stored byte.
@Suite("Stored forms")
struct StoredFormTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures")

    /// The kinds whose records hold domain types only (and the states of StpdValues, which the
    /// domain and the contract share): every kind.
    static let domainOwned: Set<ObjectKind> = [
        .customerSession, .customerPreference, .appRequest, .source, .redirect, .paymentIntent, .setupIntent,
        .paymentContext,
    ]

    /// Every row of the fixture database, by kind, read from a copy (opening migrates it).
    static func rows() async throws -> [ObjectKind: [StoredObject]] {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("stored-forms-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        for name in ["stpd.sqlite", "state-key"] {
            let target = directory.appendingPathComponent(name)
            try FileManager.default.copyItem(at: fixtures.appendingPathComponent("state-0.1.0/\(name)"), to: target)
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: target.path)
        }
        let key = try StateKey.load(stateDirectory: directory.path, credentialsDirectory: nil, databaseExists: true)
        let store = try SQLiteStateStore(path: directory.appendingPathComponent("stpd.sqlite").path, sealer: key.sealer)
        var rows: [ObjectKind: [StoredObject]] = [:]
        for kind in ObjectKind.allCases where kind != .debug {
            rows[kind] = try await store.objects(ObjectQuery(kind: kind.rawValue))
        }
        return rows
    }

    /// The record type of each kind, with what the test does with one.
    static func check(_ kind: ObjectKind, _ row: StoredObject) throws -> (reencoded: JSONValue, contractTypes: [String])
    {
        switch kind {
        case .customerSession: try check(CustomerSessionRecord.self, row)
        case .customerPreference: try check(CustomerPreference.self, row)
        case .appRequest: try check(AppRequestRecord.self, row)
        case .source: try check(SourceRecord.self, row)
        case .redirect: try check(RedirectRecord.self, row)
        case .paymentIntent: try check(IntentRecord<PaymentIntent>.self, row)
        case .setupIntent: try check(IntentRecord<SetupIntent>.self, row)
        case .paymentContext: try check(PaymentContextRecord.self, row)
        case .debug: (row.state, [])
        }
    }

    static func check<R: DurableRecord>(_ type: R.Type, _ row: StoredObject) throws -> (JSONValue, [String]) {
        let record = try StoredForm.record(R.self, from: row.state)
        return (try StoredForm.state(of: record), contractTypes(in: record))
    }

    /// The types of every stored value (recursively, nil optionals included by their type) that
    /// the wire contract declares.
    static func contractTypes(in value: Any, path: String = "") -> [String] {
        let name = String(reflecting: type(of: value))
        if name.contains("StpdProtocol.") { return ["\(path.isEmpty ? "." : path): \(name)"] }
        if value is JSONValue { return [] }  // Stripe's own JSON, or the app's: no type of ours.
        return Mirror(reflecting: value).children.enumerated().flatMap { index, child in
            contractTypes(in: child.value, path: "\(path).\(child.label ?? String(index))")
        }
    }

    @Test("every kind of the release before decodes, and encodes again to the bytes it stored")
    func everyKindKeepsItsBytes() async throws {
        let rows = try await Self.rows()
        for kind in ObjectKind.allCases where kind != .debug {
            let stored = try #require(rows[kind], "no \(kind) in the fixture")
            #expect(!stored.isEmpty, "the fixture holds no \(kind)")
            var forms: [JSONValue] = []
            for row in stored {
                let (reencoded, _) = try Self.check(kind, row)
                var old = row.state.objectValue ?? [:]
                #expect(old[StoredForm.versionKey] == nil, "\(row.id): 0.1.0 wrote no schemaVersion")
                old[StoredForm.versionKey] = reencoded[StoredForm.versionKey]
                #expect(reencoded == .object(old), "\(kind) \(row.id) encodes to other bytes than it stored")
                forms.append(reencoded)
            }
            let golden = Self.fixtures.appendingPathComponent("stored-forms/\(kind.rawValue).json")
            let text =
                String(decoding: try JSONCoding.encode(JSONValue.array(forms), pretty: true), as: UTF8.self) + "\n"
            if ProcessInfo.processInfo.environment["STPD_UPDATE_STORED_FORMS"] == "1" {
                try text.write(to: golden, atomically: true, encoding: .utf8)
            }
            let committed = try String(contentsOf: golden, encoding: .utf8)
            let file = golden.lastPathComponent
            #expect(
                committed == text,
                "\(kind)'s stored form changed: bump its schemaVersion, teach upgrade the step, rewrite \(file)")
        }
    }

    @Test("no stored value is of a wire contract type: renaming a contract field changes no stored byte")
    func noContractTypeIsStored() async throws {
        let rows = try await Self.rows()
        for kind in Self.domainOwned {
            for row in rows[kind] ?? [] {
                let found = try Self.check(kind, row).contractTypes
                #expect(found.isEmpty, "\(kind) \(row.id) stores contract types: \(found)")
            }
        }
    }

    @Test("the check finds a contract type, even in a nil optional or an array")
    func theCheckSeesContractTypes() {
        struct Probe {
            var fine = "x"
            var adapter: CustomerAdapter? = nil
            var items: [PaymentSummaryItemInput] = []
        }
        #expect(
            Self.contractTypes(in: Probe()) == [
                ".adapter: Swift.Optional<StpdProtocol.CustomerAdapter>",
                ".items: Swift.Array<StpdProtocol.PaymentSummaryItemInput>",
            ])
    }

    @Test("a row of a newer form is left alone, an older one upgraded")
    func versions() throws {
        let record = CustomerPreference(
            id: "cpref_0_cus_1", owner: 0, customerId: "cus_1", paymentMethod: "pm_1",
            createdAt: Date(timeIntervalSince1970: 0), updatedAt: Date(timeIntervalSince1970: 0))
        let state = try StoredForm.state(of: record)
        #expect(state[StoredForm.versionKey] == .int(Int64(CustomerPreference.schemaVersion)))
        var old = state.objectValue!
        old[StoredForm.versionKey] = nil
        #expect(try StoredForm.record(CustomerPreference.self, from: .object(old)).paymentMethod == "pm_1")
        old[StoredForm.versionKey] = .int(Int64(CustomerPreference.schemaVersion + 1))
        #expect(throws: StoredForm.Newer.self) { try StoredForm.record(CustomerPreference.self, from: .object(old)) }
    }
}
