import Foundation
import JSONRPC
import StpdProtocol
import Synchronization
import Testing

@testable import StpdCore

/// Issue 24.1 in the domain: an object's stored state is bounded in bytes (nothing of a change
/// past it is written), and pages of events (a wait, a replay) and of objects (a list) end at
/// their bytes, saying so, with a cursor that continues.
@Suite("Byte limits")
struct ByteLimitsTests {
    static func limits(objectBytes: Int = 4096, pageBytes: Int = 2048) -> ByteLimits {
        var limits = ByteLimits()
        limits.objectBytes = objectBytes
        limits.pageBytes = pageBytes
        return limits
    }

    static let blob: JSONValue = ["blob": .string(String(repeating: "x", count: 1000))]

    @Test(arguments: StoreKind.allCases)
    func aStateOverTheBoundIsRefusedWholeAndNamesTheObject(kind: StoreKind) async throws {
        try await kind.withStore { store in
            let log = try await EventLog(store: store, views: DomainViews(), limits: Self.limits())
            let big: JSONValue = ["label": .string(String(repeating: "y", count: 5000))]
            do {
                try await log.apply([change("ok_1", "a.created"), change("pc_big", "a.created", state: big)])
                Issue.record("expected ObjectTooLarge")
            } catch let error as ObjectTooLarge {
                #expect(error.objectId == "pc_big" && error.limit == 4096 && error.bytes > 5000)
            }
            #expect(try await store.eventBounds().latestSeq == 0, "nothing of the transaction was written")
            #expect(try await store.object(id: "ok_1") == nil)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func aWaitEndsEarlyAtItsBytesAndNextContinues(kind: StoreKind) async throws {
        try await kind.withStore { store in
            let log = try await EventLog(store: store, views: DomainViews(), limits: Self.limits())
            try await log.apply((1...6).map { change("pc_\($0)", "a", state: Self.blob) })
            let held = Mutex<[Int]>([])
            let room = OutputRoom(
                hold: { bytes in
                    held.withLock { $0.append(bytes) }
                    return true
                }, giveBack: { _ in })
            let first = try await log.wait(since: 0, filter: EventFilter(), limit: 1000, timeout: .zero, room: room)
            #expect(first.events.seqs == [1, 2, 3] && first.endedEarly && first.next == 3)
            #expect(held.withLock { $0 } == [2048], "room for the page was held before it was read")
            let second = try await log.wait(since: first.next, filter: EventFilter(), limit: 1000, timeout: .zero)
            #expect(second.events.seqs == [4, 5, 6] && second.endedEarly)
            let end = try await log.wait(since: second.next, filter: EventFilter(), limit: 1000, timeout: .zero)
            #expect(end.events.isEmpty && !end.endedEarly && end.next == 6)
        }
    }

    @Test func aCallerGoneBeforeThePageIsReadGetsNoPage() async throws {
        let log = try await EventLog(store: InMemoryStateStore(), views: DomainViews(), limits: Self.limits())
        try await log.apply([change("pc_1", "a")])
        let gone = OutputRoom(hold: { _ in false }, giveBack: { _ in })
        await #expect(throws: CancellationError.self) {
            try await log.wait(since: 0, filter: EventFilter(), limit: 10, timeout: .zero, room: gone)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func aListPageEndsAtItsBytesWithHasMore(kind: StoreKind) async throws {
        try await kind.withStore { store in
            let log = try await EventLog(store: store, views: DomainViews(), limits: Self.limits(pageBytes: 100))
            let table = RecordTable<RecordTableTests.Counter>(log: log, now: { t0 })
            for n in 1...3 {
                let created = t0 + Double(n)
                try await table.insert(
                    .init(id: "dbg_\(n)", owner: 1000, createdAt: created, updatedAt: created), .created)
            }
            let caller = Caller(uid: 1000)
            let first = try await table.page(for: caller, limit: 10)
            #expect(first.records.map(\.id) == ["dbg_1"] && first.hasMore)
            let second = try await table.page(for: caller, startingAfter: "dbg_1", limit: 10)
            #expect(second.records.map(\.id) == ["dbg_2"] && second.hasMore)
        }
    }
}
