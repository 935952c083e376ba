import Foundation
import JSONRPC
import StpdCore
import StpdProtocol
@_spi(Testing) import StpdValues
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

    // MARK: Filtered reads

    /// Ten events: owners 1000 and 1001 interleaved, two kinds, three objects.
    static let mixedLog: [StateChange] = [
        change("pc_1", "payment_context.created"),  // 1
        change("pc_2", "payment_context.created", owner: 1001),  // 2
        change("cs_1", "customer_session.created", kind: "customer_session"),  // 3
        change("pc_1", "payment_context.updated"),  // 4
        change("pc_2", "payment_context.updated", owner: 1001),  // 5
        change("cs_1", "customer_session.closed", kind: "customer_session"),  // 6
        change("pc_1", "payment_contextual.odd"),  // 7: a kind that merely starts the same
        change("pc_2", "payment_context.succeeded", owner: 1001),  // 8
        change("pc_1", "payment_context.succeeded"),  // 9
        change("cs_1", "customer_session.opened", kind: "customer_session", owner: 1001),  // 10
    ]

    /// The store filters exactly as `EventFilter.matches` does, whatever the combination.
    @Test(arguments: StoreKind.allCases)
    func matchingReadsReturnWhatTheFilterMatchesInSeqOrder(kind: StoreKind) async throws {
        try await kind.withStore { store in
            let all = try await store.apply(Self.mixedLog, at: t0)
            let filters: [EventFilter] = [
                EventFilter(),
                EventFilter(viewerUID: 1000),
                EventFilter(viewerUID: 1001),
                EventFilter(viewerUID: 4242),
                EventFilter(objectIds: ["pc_1", "cs_1"]),
                EventFilter(objectIds: ["pc_2"], viewerUID: 1000),
                EventFilter(types: ["payment_context.*"]),
                EventFilter(types: ["payment_context.updated", "customer_session.*"], viewerUID: 1000),
                EventFilter(types: ["payment_context.succeeded"]),
                EventFilter(types: ["payment_context"]),  // no wildcard: exact, and no type is just that
                EventFilter(types: ["payment_context.created.*", "customer_session.closed"]),
                EventFilter(objectIds: ["pc_1"], types: ["payment_context.*"], viewerUID: 1000),
                EventFilter(objectIds: [], types: nil),
                EventFilter(types: []),
            ]
            for filter in filters {
                let page = try await store.events(after: 0, matching: filter, limit: 100)
                #expect(page.events == all.filter(filter.matches), "\(filter)")
                #expect(page.through == 10, "not full: everything up to the latest seq was looked at (\(filter))")
                #expect(page.bounds == EventBounds(latestSeq: 10, prunedThrough: 0))
            }
            let mine = try await store.events(after: 0, matching: EventFilter(viewerUID: 1000), limit: 100)
            #expect(mine.events.seqs == [1, 3, 4, 6, 7, 9])
            let kindOnly = try await store.events(
                after: 0, matching: EventFilter(types: ["payment_context.*"]), limit: 100)
            #expect(kindOnly.events.seqs == [1, 2, 4, 5, 8, 9], "payment_contextual.odd is another kind")
        }
    }

    /// A full page ends at its last event, so the next read starts right after it; a page that
    /// is not full has looked at everything, so `through` is the latest seq.
    @Test(arguments: StoreKind.allCases)
    func matchingReadsPageByLimitAndThroughIsTheNextCursor(kind: StoreKind) async throws {
        try await kind.withStore { store in
            _ = try await store.apply(Self.mixedLog, at: t0)
            let mine = EventFilter(viewerUID: 1000)

            let first = try await store.events(after: 0, matching: mine, limit: 2)
            #expect(first.events.seqs == [1, 3])
            #expect(first.through == 3)
            let second = try await store.events(after: first.through, matching: mine, limit: 2)
            #expect(second.events.seqs == [4, 6])
            #expect(second.through == 6)
            let last = try await store.events(after: second.through, matching: mine, limit: 2)
            #expect(last.events.seqs == [7, 9])
            #expect(last.through == 9, "full: it stops at its last event even though it is the last match")
            let after = try await store.events(after: last.through, matching: mine, limit: 2)
            #expect(after.events.isEmpty)
            #expect(after.through == 10)

            let nothing = try await store.events(after: 4, matching: mine, limit: 0)
            #expect(nothing.events.isEmpty)
            #expect(nothing.through == 4, "a read of nothing looked at nothing")
            // At the end of the log, and past it (the caller checks cursors; the store just finds nothing).
            #expect(try await store.events(after: 10, matching: mine, limit: 5).through == 10)
            #expect(try await store.events(after: 12, matching: mine, limit: 5).through == 12)
        }
    }

    /// Issue 24.1: a page holds no more than its bytes either. It stops after the event that
    /// brings it to `maxBytes` (so it is never empty), says it ended early, and `through` is the
    /// cursor that continues; objects page the same way.
    @Test(arguments: StoreKind.allCases)
    func pagesEndAtTheirBytesAndSaySo(kind: StoreKind) async throws {
        try await kind.withStore { store in
            let big: JSONValue = ["blob": .string(String(repeating: "x", count: 1000))]
            let size = JSONText.size(big)
            _ = try await store.apply(
                (1...5).map { change("pc_\($0)", "payment_context.created", state: big) }, at: t0)
            let page = try await store.events(after: 0, matching: EventFilter(), limit: 100, maxBytes: size * 2 + 1)
            #expect(page.events.seqs == [1, 2, 3], "the event that crosses the bound is the last")
            #expect(page.endedEarly && page.through == 3)
            let rest = try await store.events(after: page.through, matching: EventFilter(), limit: 100, maxBytes: .max)
            #expect(rest.events.seqs == [4, 5] && !rest.endedEarly && rest.through == 5)
            let one = try await store.events(after: 0, matching: EventFilter(), limit: 100, maxBytes: 1)
            #expect(one.events.seqs == [1] && one.endedEarly, "never empty for want of room")
            let counted = try await store.events(after: 0, matching: EventFilter(), limit: 2, maxBytes: .max)
            #expect(counted.endedEarly && counted.through == 2)

            let objects = try await store.objects(ObjectQuery(kind: "payment_context", maxBytes: size * 2 + 1))
            #expect(objects.map(\.id) == ["pc_1", "pc_2", "pc_3"])
        }
    }

    /// Issue 24.5: a read for an owner decides on the owner column: another uid's object is not
    /// there for it, as one that does not exist.
    @Test(arguments: StoreKind.allCases)
    func anOwnersReadFindsOnlyItsOwnObjects(kind: StoreKind) async throws {
        try await kind.withStore { store in
            _ = try await store.apply([change("pc_1", "payment_context.created", owner: 1001)], at: t0)
            #expect(try await store.object(id: "pc_1", owner: 1001)?.id == "pc_1")
            #expect(try await store.object(id: "pc_1", owner: 1000) == nil)
            #expect(try await store.object(id: "pc_1", owner: nil)?.id == "pc_1")
        }
    }

    /// Pruned events are gone from filtered reads too, and the bounds say so.
    @Test(arguments: StoreKind.allCases)
    func matchingReadsSkipPrunedEventsAndReportTheBounds(kind: StoreKind) async throws {
        try await kind.withStore { store in
            _ = try await store.apply(Self.mixedLog, at: t0)
            #expect(try await store.prune(EventRetention(maxAge: .seconds(3600), maxCount: 4), now: t0) == 6)

            let page = try await store.events(after: 0, matching: EventFilter(viewerUID: 1001), limit: 100)
            #expect(page.events.seqs == [8, 10])
            #expect(page.through == 10)
            #expect(page.bounds == EventBounds(latestSeq: 10, prunedThrough: 6))
        }
    }

    /// Types and ids compare byte for byte, as SQL compares them: no Unicode equivalence, no
    /// case folding, and a prefix is a prefix of the UTF-8 bytes.
    @Test(arguments: StoreKind.allCases)
    func matchingComparesTypesAndIdsByteForByte(kind: StoreKind) async throws {
        try await kind.withStore { store in
            let composed = "caf\u{E9}.paid"  // é as one scalar
            let decomposed = "cafe\u{301}.paid"  // e + combining accent: equal as Swift Strings
            _ = try await store.apply(
                [
                    change("a", composed), change("b", decomposed), change("C", "Kind.x"), change("c", "kind.x"),
                    change(decomposed, "t"),
                ], at: t0)

            #expect(
                try await store.events(after: 0, matching: EventFilter(types: [composed]), limit: 10).events.seqs == [1]
            )
            #expect(
                try await store.events(after: 0, matching: EventFilter(types: ["cafe.*"]), limit: 10).events.isEmpty)
            #expect(
                try await store.events(after: 0, matching: EventFilter(types: ["kind.*"]), limit: 10).events.seqs == [4]
            )
            #expect(
                try await store.events(after: 0, matching: EventFilter(objectIds: ["c"]), limit: 10).events.seqs == [4])
            #expect(
                try await store.events(after: 0, matching: EventFilter(objectIds: [composed]), limit: 10).events.isEmpty
            )
        }
    }

    /// Any number of ids fits one read (they are not one SQL parameter each).
    @Test(arguments: StoreKind.allCases)
    func matchingTakesThousandsOfObjectIds(kind: StoreKind) async throws {
        try await kind.withStore { store in
            _ = try await store.apply(changes(5), at: t0)
            var ids = Set((0..<40_000).map { "nope-\($0)" })
            ids.insert("obj-3")
            let page = try await store.events(after: 0, matching: EventFilter(objectIds: ids), limit: 10)
            #expect(page.events.seqs == [4])
        }
    }
}
