import Foundation
import JSONRPC
import StpdProtocol
import Synchronization
import Testing

@testable import StpdCore

/// The record core over both stores: ownership, no lost updates, terminal states, sweeping,
/// restoring, set-aside rows, pages and lookup keys.
@Suite("RecordTable")
struct RecordTableTests {
    enum CounterEvent: String, EventName {
        case created, bumped, closed, removed
        static let prefix = "counter"
        static let object = JSONSchema.any
        var summary: String { rawValue }
    }

    struct Counter: ViewedInDomain {
        static let kind = ObjectKind.debug
        static let schemaVersion = 1
        static let removed: CounterEvent? = .removed
        var id: String
        var owner: UInt32
        var count = 0
        var closed = false
        var keys: [String] = []
        var createdAt: Date
        var updatedAt: Date
        func view(_: any FailureRenderer) -> Counter { self }
        var queryStatus: String? { closed ? "closed" : "open" }
        var isLive: Bool { !closed && count > 0 }
        var isFinished: Bool { closed }
        var isTerminal: Bool { closed }
        var lookupKeys: [String] { keys }
    }

    final class Setup: Sendable {
        let store: any StateStore
        let log: EventLog
        let table: RecordTable<Counter>
        let setAside = Recorded<String>()

        init(_ store: any StateStore) async throws {
            self.store = store
            log = try await EventLog(store: store, views: DomainViews())
            table = RecordTable(log: log, now: { t0 }, reportSetAside: { [setAside] _, id, _ in setAside.append(id) })
        }

        func counter(_ id: String, owner: UInt32 = 1000, keys: [String] = [], created: Date = t0) async throws {
            try await table.insert(
                Counter(id: id, owner: owner, keys: keys, createdAt: created, updatedAt: created), .created)
        }

        func events(_ id: String) async throws -> [Event] {
            try await store.events(after: 0, limit: 10_000).filter { $0.objectId == id }
        }
    }

    static let owner = Caller(uid: 1000)

    func bump(_ record: inout Counter) -> CounterEvent? {
        record.count += 1
        return .bumped
    }

    @Test(arguments: StoreKind.allCases)
    func anotherUIDsRecordIsExactlyLikeAMissingOne(kind: StoreKind) async throws {
        try await kind.withStore { store in
            let setup = try await Setup(store)
            try await setup.counter("c1")
            let stranger = Caller(uid: 2000)
            for id in ["c1", "nope"] {
                await #expect(throws: DomainError.notFound(.debug, id: id)) {
                    try await setup.table.get(id, for: stranger)
                }
                await #expect(throws: DomainError.notFound(.debug, id: id)) {
                    try await setup.table.update(id, for: stranger, bump)
                }
            }
            #expect(try await setup.table.get("c1", for: Caller(uid: 0)).id == "c1")
            #expect(try await setup.table.get("c1", for: .daemon).id == "c1")
            #expect(try await setup.table.page(for: stranger, limit: 10).records.isEmpty)
            #expect(try await setup.table.find("c1")?.count == 0)
        }
    }

    /// Many concurrent read-modify-writes of one record: every one lands, each event carries
    /// the state its change committed, in seq order.
    @Test(arguments: StoreKind.allCases)
    func concurrentUpdatesLoseNothing(kind: StoreKind) async throws {
        try await kind.withStore { store in
            let setup = try await Setup(store)
            try await setup.counter("c1")
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<50 { group.addTask { try await setup.table.update("c1", for: Self.owner, bump) } }
                try await group.waitForAll()
            }
            #expect(try await setup.table.find("c1")?.count == 50)
            let counts = try await setup.events("c1").map { $0.object["count"]?.intValue }
            #expect(counts == (0...50).map { Int64($0) })
        }
    }

    @Test(arguments: StoreKind.allCases)
    func aMutationWithoutAnEventWritesNothing(kind: StoreKind) async throws {
        try await kind.withStore { store in
            let setup = try await Setup(store)
            try await setup.counter("c1")
            let change = try await setup.table.update("c1", for: Self.owner) { record in
                record.count = 99
                return nil
            }
            #expect(change.event == nil)
            #expect(change.record.count == 0)
            #expect(try await setup.table.find("c1")?.count == 0)
            #expect(try await setup.events("c1").count == 1)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func aTerminalRecordNeverComesBackToLife(kind: StoreKind) async throws {
        try await kind.withStore { store in
            let setup = try await Setup(store)
            try await setup.counter("c1")
            try await setup.table.update("c1", for: Self.owner) { record in
                record.closed = true
                return .closed
            }
            let error = await domainError {
                try await setup.table.update("c1", for: Self.owner) { record in
                    record.closed = false
                    return .bumped
                }
            }
            if case .invalidState(_, _, let state, _) = error {
                #expect(state == "closed")
            } else {
                Issue.record("\(String(describing: error)) is not invalidState")
            }
            // Looking without changing is fine.
            #expect(try await setup.table.update("c1", for: Self.owner) { _ in nil }.record.closed)
            #expect(try await setup.events("c1").map(\.type) == ["counter.created", "counter.closed"])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func sweepingRemovesOldFinishedRecordsWithTheirLastState(kind: StoreKind) async throws {
        try await kind.withStore { store in
            let setup = try await Setup(store)
            try await setup.counter("done")
            try await setup.counter("open")
            try await setup.table.update("done", for: Self.owner) { record in
                record.closed = true
                return .closed
            }
            #expect(try await setup.table.sweep(before: t0) == 0)
            #expect(try await setup.table.sweep(before: t0 + 1) == 1)
            #expect(try await setup.table.find("done") == nil)
            #expect(try await setup.table.find("open") != nil)
            let last = try #require(try await setup.events("done").last)
            #expect(last.type == "counter.removed")
            #expect(last.object["closed"] == true)
        }
    }

    /// Restore loads live records only; a row that does not decode is set aside and reported
    /// once, and the others load.
    @Test(arguments: StoreKind.allCases)
    func restoreLoadsLiveRecordsAndSetsAsideWhatDoesNotDecode(kind: StoreKind) async throws {
        try await kind.withStore { store in
            let setup = try await Setup(store)
            try await setup.counter("idle")
            try await setup.counter("busy")
            try await setup.table.update("busy", for: Self.owner, bump)
            var broken = object("broken", kind: ObjectKind.debug.rawValue, state: ["count": "many"])
            broken.live = true
            _ = try await store.apply([StateChange(object: broken, eventType: CounterEvent.created.type)], at: t0)

            #expect(try await setup.table.restore().map(\.id) == ["busy"])
            #expect(setup.setAside.all == ["broken"])
            // restore does not await the set-aside write: wait for it (bounded), then check.
            var setAsideCount = 0
            for _ in 0..<400 where setAsideCount == 0 {
                setAsideCount = try await store.setAsideCount()
                if setAsideCount == 0 { try await Task.sleep(for: .milliseconds(25)) }
            }
            #expect(setAsideCount == 1)
            #expect(try await setup.table.find("broken") == nil)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func pagesFollowCreationOrder(kind: StoreKind) async throws {
        try await kind.withStore { store in
            let setup = try await Setup(store)
            for n in 0..<5 { try await setup.counter("c\(n)", created: t0 + Double(n)) }
            try await setup.counter("theirs", owner: 2000, created: t0 + 10)
            let first = try await setup.table.page(for: Self.owner, limit: 2)
            #expect(first.records.map(\.id) == ["c0", "c1"])
            #expect(first.hasMore)
            let last = try await setup.table.page(for: Self.owner, startingAfter: "c2", limit: 2)
            #expect(last.records.map(\.id) == ["c3", "c4"])
            #expect(!last.hasMore)
            #expect(
                try await setup.table.page(for: .daemon, startingAfter: "c4", limit: 5).records.map(\.id) == ["theirs"])
            // A cursor the caller may not see is an id that does not exist.
            await #expect(throws: DomainError.notFound(.debug, id: "theirs")) {
                try await setup.table.page(for: Self.owner, startingAfter: "theirs", limit: 1)
            }
        }
    }

    @Test(arguments: StoreKind.allCases)
    func firstFiledMergesKeysInFilingOrder(kind: StoreKind) async throws {
        try await kind.withStore { store in
            let setup = try await Setup(store)
            try await setup.counter("late", keys: ["b"])
            try await setup.counter("theirs", owner: 2000, keys: ["a"])
            try await setup.counter("early", keys: ["a"])
            // Refiled under a kept key: its place does not move.
            try await setup.table.update("late", for: Self.owner, bump)
            let first = try await setup.table.firstFiled(under: ["a", "b", "c"], for: Self.owner) { _ in true }
            #expect(first?.id == "late")
            let skipping = try await setup.table.firstFiled(under: ["a", "b"], for: Self.owner) { $0.count == 0 }
            #expect(skipping?.id == "early")
            #expect(try await setup.table.firstFiled(under: ["a"], for: .daemon) { _ in true }?.id == "theirs")
            #expect(try await setup.table.filed(under: "a", for: Self.owner).map(\.id) == ["early"])
            #expect(try await setup.table.firstFiled(under: ["z"], for: Self.owner) { _ in true } == nil)
        }
    }
}

extension RecordTableTests.Counter: Equatable {}

/// Values appended from any task.
final class Recorded<Value: Sendable>: Sendable {
    private let values = Mutex<[Value]>([])
    func append(_ value: Value) { values.withLock { $0.append(value) } }
    var all: [Value] { values.withLock { $0 } }
}
