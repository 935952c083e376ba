import Foundation
import JSONRPC
import StpdCore
import StpdProtocol
@_spi(Testing) import StpdValues
import Testing

/// The object half of the `StateStore` contract, run against every store: preconditions
/// (versions), queries on what the store derives, lookup keys and set-aside rows.
@Suite("StateStore contract: objects")
struct ObjectStoreContractTests {
    static let created = EventType(testing: "test.created")
    static let changed = EventType(testing: "test.changed")

    func put(
        _ id: String, _ precondition: StateChange.Precondition, state: JSONValue = [:], keys: [String]? = nil,
        owner: UInt32 = 1000, status: String? = nil, live: Bool = false, finished: Bool = false, created: Date = t0,
        removes: Bool = false
    ) -> StateChange {
        var stored = object(id, kind: "thing", owner: owner, state: state, created: created)
        (stored.status, stored.live, stored.finished) = (status, live, finished)
        return StateChange(
            object: stored, eventType: removes ? Self.changed : Self.created, removesObject: removes,
            precondition: precondition, keys: keys)
    }

    @Test(arguments: StoreKind.allCases)
    func versionsCountCommittedChanges(kind: StoreKind) async throws {
        try await kind.withStore { store in
            _ = try await store.apply([put("a", .absent)], at: t0)
            #expect(try await store.object(id: "a")?.version == 1)
            _ = try await store.apply([put("a", .version(1), state: ["n": 2])], at: t0)
            _ = try await store.apply([put("a", .none, state: ["n": 3])], at: t0)
            #expect(try await store.object(id: "a")?.version == 3)
            #expect(try await store.object(id: "a")?.state == ["n": 3])
        }
    }

    /// A change computed from a stale copy is refused, and so is everything in its transaction:
    /// no object write, no event, no seq used.
    @Test(arguments: StoreKind.allCases)
    func aFailedPreconditionWritesNothingOfItsTransaction(kind: StoreKind) async throws {
        try await kind.withStore { store in
            _ = try await store.apply([put("a", .absent, state: ["n": 1])], at: t0)
            let before = try await store.eventBounds()
            for stale in [put("a", .version(7), state: ["n": 9]), put("a", .absent), put("z", .version(1))] {
                await #expect(throws: StoreConflict.self) {
                    try await store.apply([put("b", .absent), stale], at: t0)
                }
            }
            await #expect(throws: StoreConflict(objectId: "a")) {
                try await store.apply([put("a", .version(2), removes: true)], at: t0)
            }
            #expect(try await store.object(id: "a")?.state == ["n": 1])
            #expect(try await store.object(id: "b") == nil)
            #expect(try await store.eventBounds() == before)
            // The right version goes through.
            let events = try await store.apply([put("a", .version(1), state: ["n": 2])], at: t0)
            #expect(events.map(\.seq) == [before.latestSeq + 1])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func queriesFilterOnWhatIsDerivedAndPageInCreationOrder(kind: StoreKind) async throws {
        try await kind.withStore { store in
            _ = try await store.apply(
                [
                    put("c", .absent, owner: 1, status: "open", live: true, created: t0 + 2),
                    put("a", .absent, owner: 1, status: "closed", finished: true, created: t0),
                    put("b", .absent, owner: 2, status: "open", created: t0 + 1),
                    put("d", .absent, owner: 1, status: "open", created: t0 + 2),
                ], at: t0)
            func ids(_ query: ObjectQuery) async throws -> [String] { try await store.objects(query).map(\.id) }
            #expect(try await ids(ObjectQuery(kind: "thing")) == ["a", "b", "c", "d"])
            #expect(try await ids(ObjectQuery(kind: "other")).isEmpty)
            #expect(try await ids(ObjectQuery(kind: "thing", owner: 1)) == ["a", "c", "d"])
            #expect(try await ids(ObjectQuery(kind: "thing", status: "open")) == ["b", "c", "d"])
            #expect(try await ids(ObjectQuery(kind: "thing", live: true)) == ["c"])
            #expect(try await ids(ObjectQuery(kind: "thing", finishedBefore: t0 + 1)) == ["a"])
            #expect(try await ids(ObjectQuery(kind: "thing", finishedBefore: t0)).isEmpty)
            #expect(try await ids(ObjectQuery(kind: "thing", limit: 2)) == ["a", "b"])
            #expect(try await ids(ObjectQuery(kind: "thing", startingAfter: "b", limit: 1)) == ["c"])
            #expect(try await ids(ObjectQuery(kind: "thing", owner: 1, startingAfter: "c")) == ["d"])
            let stored = try #require(try await store.object(id: "c"))
            #expect((stored.status, stored.live, stored.finished) == ("open", true, false))
        }
    }

    /// Keys are ordered by the seq of the change that filed them; a kept key keeps its place.
    @Test(arguments: StoreKind.allCases)
    func lookupKeysKeepTheirFilingOrder(kind: StoreKind) async throws {
        try await kind.withStore { store in
            _ = try await store.apply([put("x", .absent, keys: ["k"])], at: t0)  // seq 1
            _ = try await store.apply([put("y", .absent, keys: ["k", "j"], owner: 2)], at: t0)  // seq 2
            _ = try await store.apply([put("x", .version(1), keys: ["k", "j"])], at: t0)  // seq 3: keeps k, files j
            func hits(_ key: String, owner: UInt32? = nil, after: KeyHit? = nil, limit: Int = 10) async throws
                -> [KeyHit]
            {
                try await store.lookup(key: key, owner: owner, after: after, limit: limit)
            }
            #expect(try await hits("k") == [KeyHit(objectId: "x", ordinal: 1), KeyHit(objectId: "y", ordinal: 2)])
            #expect(try await hits("j") == [KeyHit(objectId: "y", ordinal: 2), KeyHit(objectId: "x", ordinal: 3)])
            #expect(try await hits("k", owner: 2).map(\.objectId) == ["y"])
            #expect(try await hits("k", after: KeyHit(objectId: "x", ordinal: 1)).map(\.objectId) == ["y"])
            #expect(try await hits("k", limit: 1).map(\.objectId) == ["x"])
            #expect(try await store.keyCount(key: "k", cap: 10) == 2)
            #expect(try await store.keyCount(key: "k", cap: 1) == 1)
            // Unfiled when the keys leave, untouched when a change leaves keys nil, gone with the object.
            _ = try await store.apply([put("x", .version(2), keys: ["j"])], at: t0)
            _ = try await store.apply([put("y", .version(1))], at: t0)
            #expect(try await hits("k").map(\.objectId) == ["y"])
            _ = try await store.apply([put("y", .version(2), removes: true)], at: t0)
            #expect(try await hits("k").isEmpty)
            #expect(try await hits("j").map(\.objectId) == ["x"])
            #expect(try await hits("nothing").isEmpty)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func aSetAsideObjectLeavesEveryQuery(kind: StoreKind) async throws {
        try await kind.withStore { store in
            _ = try await store.apply([put("a", .absent, live: true), put("b", .absent, live: true)], at: t0)
            try await store.setAside(id: "a", reason: "does not decode")
            #expect(try await store.object(id: "a") == nil)
            #expect(try await store.objects(ObjectQuery(kind: "thing")).map(\.id) == ["b"])
            #expect(try await store.objects(ObjectQuery(kind: "thing", live: true)).map(\.id) == ["b"])
            #expect(try await store.setAsideCount() == 1)
        }
    }
}
