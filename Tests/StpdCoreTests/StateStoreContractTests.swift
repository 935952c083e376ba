import Foundation
import JSONRPC
import StpdCore
@_spi(Testing) import StpdProtocol
import Testing

/// The `StateStore` contract, run against every store (`StoreKind`): the domain and its tests
/// use `InMemoryStateStore`, the daemon `SQLiteStateStore`, so both must behave the same.
@Suite("StateStore contract")
struct StateStoreContractTests {
    @Test(arguments: StoreKind.allCases)
    func applyAppendsOneEventPerChangeWithGapFreeIncreasingSeqs(kind: StoreKind) async throws {
        try await kind.withStore { store in
            let first = try await store.apply(
                [
                    change("a", "payment_context.created", state: ["n": 1]),
                    change("b", "customer_session.created", kind: "customer_session", owner: 7),
                ],
                at: t0)
            let second = try await store.apply([change("a", "payment_context.updated", state: ["n": 2])], at: t0 + 5)

            #expect(first.seqs == [1, 2])
            #expect(second.seqs == [3])
            // Each event carries its change's type, object and time.
            #expect(first[1].type == "customer_session.created")
            #expect(first[1].objectId == "b")
            #expect(first[1].objectKind == "customer_session")
            #expect(first[1].ownerUID == 7)
            #expect(second[0].object == ["n": 2])
            #expect(second[0].time == t0 + 5)
            // What was returned is what the log holds.
            #expect(try await store.events(after: 0, limit: 100) == first + second)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func applyWithNoChangesAppendsNothing(kind: StoreKind) async throws {
        try await kind.withStore { store throws in
            #expect(try await store.apply([], at: t0).isEmpty)
            #expect(try await store.eventBounds() == EventBounds(latestSeq: 0, prunedThrough: 0))
        }
    }

    @Test(arguments: StoreKind.allCases)
    func applyStoresUpdatesAndDeletesObjects(kind: StoreKind) async throws {
        try await kind.withStore { store in
            var created = object("pc_1", state: ["status": "open"])
            _ = try await store.apply(
                [StateChange(object: created, eventType: EventType(testing: "payment_context.created"))], at: t0)
            created.version = 1
            #expect(try await store.object(id: "pc_1") == created)

            var updated = created
            updated.state = ["status": "paid", "amount": 1200]
            updated.updatedAt = t0 + 60
            _ = try await store.apply(
                [StateChange(object: updated, eventType: EventType(testing: "payment_context.updated"))], at: t0 + 60)
            updated.version = 2
            #expect(try await store.object(id: "pc_1") == updated)

            // Removing records the object's last state in the event, then forgets the object.
            var last = updated
            last.state = ["status": "expired"]
            let removal = try await store.apply(
                [
                    StateChange(
                        object: last, eventType: EventType(testing: "payment_context.expired"), removesObject: true)
                ], at: t0 + 120)
            #expect(try await store.object(id: "pc_1") == nil)
            #expect(try await store.objects(ObjectQuery(kind: "payment_context")).isEmpty)
            #expect(removal.map(\.type) == ["payment_context.expired"])
            #expect(removal.first?.object == ["status": "expired"])
            #expect(try await store.events(after: 0, limit: 10).seqs == [1, 2, 3])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func eventsAfterPagesThroughTheLogInOrder(kind: StoreKind) async throws {
        try await kind.withStore { store in
            _ = try await store.apply(changes(7), at: t0)

            #expect(try await store.events(after: 0, limit: 3).seqs == [1, 2, 3])
            #expect(try await store.events(after: 3, limit: 3).seqs == [4, 5, 6])
            #expect(try await store.events(after: 6, limit: 3).seqs == [7])
            #expect(try await store.events(after: 7, limit: 3).isEmpty)
            #expect(try await store.events(after: 2, limit: 100).seqs == [3, 4, 5, 6, 7])
            #expect(try await store.events(after: 0, limit: 0).isEmpty)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func boundsStartAtZeroAndFollowAppends(kind: StoreKind) async throws {
        try await kind.withStore { store in
            let empty = try await store.eventBounds()
            #expect(empty == EventBounds(latestSeq: 0, prunedThrough: 0))
            #expect(empty.oldestKept == 1)

            _ = try await store.apply(changes(4), at: t0)
            #expect(try await store.eventBounds() == EventBounds(latestSeq: 4, prunedThrough: 0))
        }
    }

    @Test(arguments: StoreKind.allCases)
    func pruneByCountKeepsTheNewestEvents(kind: StoreKind) async throws {
        try await kind.withStore { store in
            _ = try await store.apply(changes(5), at: t0)

            let dropped = try await store.prune(EventRetention(maxAge: .seconds(3600), maxCount: 2), now: t0)
            #expect(dropped == 3)
            #expect(try await store.events(after: 0, limit: 100).seqs == [4, 5])
            #expect(try await store.eventBounds() == EventBounds(latestSeq: 5, prunedThrough: 3))
            // Within the limits now: nothing more to drop.
            #expect(try await store.prune(EventRetention(maxAge: .seconds(3600), maxCount: 2), now: t0) == 0)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func pruningEverythingKeepsLatestSeqAndNeverReusesSeqs(kind: StoreKind) async throws {
        try await kind.withStore { store in
            _ = try await store.apply(changes(3), at: t0)

            #expect(try await store.prune(EventRetention(maxAge: .seconds(3600), maxCount: 0), now: t0) == 3)
            #expect(try await store.events(after: 0, limit: 100).isEmpty)
            // The log is empty, but its span is remembered: readers can tell "pruned" from "never was".
            #expect(try await store.eventBounds() == EventBounds(latestSeq: 3, prunedThrough: 3))

            let next = try await store.apply(changes(2), at: t0)
            #expect(next.seqs == [4, 5])
            #expect(try await store.eventBounds() == EventBounds(latestSeq: 5, prunedThrough: 3))
            #expect(try await store.events(after: 3, limit: 100).seqs == [4, 5])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func pruneByAgeDropsEventsOlderThanMaxAge(kind: StoreKind) async throws {
        try await kind.withStore { store in
            _ = try await store.apply(changes(1), at: t0)
            _ = try await store.apply(changes(1), at: t0 + 10)
            _ = try await store.apply(changes(1), at: t0 + 20)
            let retention = EventRetention(maxAge: .seconds(10), maxCount: 100)

            // Cutoff t0+15: the events at t0 and t0+10 are too old.
            #expect(try await store.prune(retention, now: t0 + 25) == 2)
            #expect(try await store.events(after: 0, limit: 100).seqs == [3])
            #expect(try await store.eventBounds() == EventBounds(latestSeq: 3, prunedThrough: 2))

            // An event exactly maxAge old is still within retention ("older than" is strict).
            #expect(try await store.prune(retention, now: t0 + 30) == 0)
            #expect(try await store.events(after: 0, limit: 100).seqs == [3])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func ageAndCountLimitsBothApplyAndTheLaterCutWins(kind: StoreKind) async throws {
        try await kind.withStore { store in
            for offset in 0..<6 { _ = try await store.apply(changes(1), at: t0 + Double(offset * 10)) }

            // Count alone would drop 2 (seq 1-2); age (cutoff t0+35) drops 4 (seq 1-4).
            #expect(try await store.prune(EventRetention(maxAge: .seconds(15), maxCount: 4), now: t0 + 50) == 4)
            #expect(try await store.eventBounds() == EventBounds(latestSeq: 6, prunedThrough: 4))
            // Now count is the tighter one: keep 1.
            #expect(try await store.prune(EventRetention(maxAge: .seconds(15), maxCount: 1), now: t0 + 50) == 1)
            #expect(try await store.events(after: 0, limit: 100).seqs == [6])
        }
    }

    /// Pruning only ever cuts a prefix (everything after `prunedThrough` is kept), so with event
    /// times out of seq order (the wall clock stepped back) it stops at the first event still
    /// within retention: it must never drop an event younger than `maxAge`.
    @Test(arguments: StoreKind.allCases)
    func pruneByAgeStopsAtTheFirstEventStillWithinRetention(kind: StoreKind) async throws {
        try await kind.withStore { store in
            _ = try await store.apply(changes(1), at: t0)  // seq 1: old
            _ = try await store.apply(changes(1), at: t0 + 20)  // seq 2: young
            _ = try await store.apply(changes(1), at: t0 + 5)  // seq 3: old, but after a young one

            let dropped = try await store.prune(EventRetention(maxAge: .seconds(10), maxCount: 100), now: t0 + 25)
            #expect(dropped == 1)
            #expect(try await store.events(after: 0, limit: 100).seqs == [2, 3])
            #expect(try await store.eventBounds() == EventBounds(latestSeq: 3, prunedThrough: 1))
        }
    }

    @Test(arguments: StoreKind.allCases)
    func objectsOfAKindInCreationOrder(kind: StoreKind) async throws {
        try await kind.withStore { store in
            _ = try await store.apply(
                [
                    StateChange(
                        object: object("pc_late", created: t0 + 100),
                        eventType: EventType(testing: "payment_context.created")),
                    StateChange(
                        object: object("cs_1", kind: "customer_session", created: t0 + 50),
                        eventType: EventType(testing: "customer_session.created")),
                    StateChange(
                        object: object("pc_early", created: t0),
                        eventType: EventType(testing: "payment_context.created")),
                    StateChange(
                        object: object("pc_gone", created: t0 + 10),
                        eventType: EventType(testing: "payment_context.created")),
                ], at: t0)
            _ = try await store.apply([change("pc_gone", "payment_context.expired", removes: true)], at: t0 + 200)

            #expect(try await store.objects(ObjectQuery(kind: "payment_context")).map(\.id) == ["pc_early", "pc_late"])
            #expect(try await store.objects(ObjectQuery(kind: "customer_session")).map(\.id) == ["cs_1"])
            #expect(try await store.objects(ObjectQuery(kind: "redirect_session")).isEmpty)
            #expect(try await store.object(id: "nope") == nil)
        }
    }

    /// Live subscribers get the `Event` that `apply` returned, replaying ones what the store
    /// reads back: the two must be equal, including `time` with its sub-second part.
    @Test(arguments: StoreKind.allCases)
    func eventTimesAndObjectDatesReadBackExactly(kind: StoreKind) async throws {
        try await kind.withStore { store in
            // A `Date()`-like value; this one (like about half of them) does not survive a trip
            // through `timeIntervalSince1970` and back bit-for-bit.
            let time = Date(timeIntervalSinceReferenceDate: 800_000_000.1)
            var stored = object("pc_1", created: time, updated: time)
            let applied = try await store.apply(
                [StateChange(object: stored, eventType: EventType(testing: "payment_context.created"))], at: time)

            #expect(try await store.events(after: 0, limit: 1) == applied)
            stored.version = 1
            #expect(try await store.object(id: "pc_1") == stored)
        }
    }
}
