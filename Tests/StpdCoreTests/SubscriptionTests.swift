import JSONRPC
import StpdCore
import Testing

/// `EventLog.subscribe` + `start`: history after `since` replayed, then live events, with no
/// gap and no duplicate at the seam, filters applied throughout, and slow subscribers dropped
/// with the seq to resume from.
@Suite("Subscriptions")
struct SubscriptionTests {
    @Test(arguments: StoreKind.allCases)
    func sinceZeroReplaysEverythingThenDeliversLiveEvents(kind: StoreKind) async throws {
        try await kind.withStore { store in
            let log = try await EventLog(store: store, views: DomainViews())
            try await log.apply(changes(3))
            let sink = RecordingSink()

            let subscription = try await log.subscribe(id: "s", since: 0, filter: EventFilter(), sink: sink)
            #expect(subscription.joinedAfter == 3)
            // Nothing before `start`: the subscribe reply must go out first.
            #expect(sink.entries.isEmpty)
            await log.start(subscription)
            #expect(sink.entries == [.sent(1), .sent(2), .sent(3)])

            try await log.apply(changes(2))
            #expect(sink.entries == [.sent(1), .sent(2), .sent(3), .offered(4), .offered(5)])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func sinceReplaysOnlyWhatCameAfterIt(kind: StoreKind) async throws {
        try await kind.withStore { store in
            let log = try await EventLog(store: store, views: DomainViews())
            try await log.apply(changes(4))
            let sink = RecordingSink()

            await log.start(try await log.subscribe(id: "s", since: 2, filter: EventFilter(), sink: sink))
            #expect(sink.deliveredSeqs == [3, 4])

            // since == latest: nothing to replay, live from there.
            let caughtUp = RecordingSink()
            await log.start(try await log.subscribe(id: "s2", since: 4, filter: EventFilter(), sink: caughtUp))
            try await log.apply(changes(1))
            #expect(caughtUp.entries == [.offered(5)])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func liveOnlySubscriptionGetsOnlyLaterEvents(kind: StoreKind) async throws {
        try await kind.withStore { store in
            let log = try await EventLog(store: store, views: DomainViews())
            try await log.apply(changes(2))
            let sink = RecordingSink()

            let subscription = try await log.subscribe(id: "s", since: nil, filter: EventFilter(), sink: sink)
            #expect(subscription.joinedAfter == 2)
            await log.start(subscription)
            #expect(sink.entries.isEmpty)

            try await log.apply(changes(2))
            #expect(sink.entries == [.offered(3), .offered(4)])
        }
    }

    /// Events committed while the replay is blocked in the sink's `send` are held live and
    /// also found by the replay in the store: each must arrive exactly once, in order.
    @Test(arguments: StoreKind.allCases)
    func eventsCommittedDuringReplayArriveExactlyOnceInOrder(kind: StoreKind) async throws {
        try await kind.withStore { store in
            let log = try await EventLog(store: store, views: DomainViews())
            try await log.apply(changes(3))
            let gate = Gate()
            let sink = RecordingSink(holdSendOf: (seq: 1, gate: gate))
            let subscription = try await log.subscribe(id: "s", since: 0, filter: EventFilter(), sink: sink)

            let replay = Task { await log.start(subscription) }
            await gate.arrivals(1)  // the replay waits for room for 1
            try await log.apply(changes(2))
            try await log.apply(changes(1))
            gate.open()
            await replay.value

            try await log.apply(changes(1))
            #expect(sink.deliveredSeqs == [1, 2, 3, 4, 5, 6, 7])
            #expect(sink.drops.isEmpty)
        }
    }

    /// The other side of the seam: the replay has just read the end of the log when events
    /// are committed; they exist only as held live events and must be delivered from there.
    @Test(arguments: StoreKind.allCases)
    func eventsCommittedAfterReplayReadTheEndAreDeliveredFromTheHeldOnes(kind: StoreKind) async throws {
        try await kind.withStore { inner in
            let store = GatedStore(inner)
            let log = try await EventLog(store: store, views: DomainViews())
            try await log.apply(changes(2))
            let sink = RecordingSink()
            let subscription = try await log.subscribe(id: "s", since: 0, filter: EventFilter(), sink: sink)

            store.arm()
            let replay = Task { await log.start(subscription) }
            await store.gate.arrivals(1)  // replay read up to the end, seq 2
            try await log.apply(changes(2))
            store.gate.open()
            await replay.value

            try await log.apply(changes(1))
            #expect(sink.entries == [.sent(1), .sent(2), .offered(3), .offered(4), .offered(5)])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func filtersApplyToReplayAndLiveEvents(kind: StoreKind) async throws {
        try await kind.withStore { store in
            let log = try await EventLog(store: store, views: DomainViews())
            try await log.apply([change("pc_1"), change("pc_2"), change("pc_1", owner: 1001), change("pc_1")])  // 1-4
            let sink = RecordingSink()
            let filter = EventFilter(objectIds: ["pc_1"], types: ["payment_context.*"], viewerUID: 1000)

            await log.start(try await log.subscribe(id: "s", since: 0, filter: filter, sink: sink))
            #expect(sink.entries == [.sent(1), .sent(4)])

            try await log.apply([
                change("pc_2"),  // 5: other object
                change("pc_1", "poll.started"),  // 6: other type
                change("pc_1", owner: 1001),  // 7: other user's
                change("pc_1", "payment_context.succeeded"),  // 8
            ])
            #expect(sink.entries == [.sent(1), .sent(4), .offered(8)])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func refusedOfferDropsTheSubscriberWithTheLastDeliveredSeq(kind: StoreKind) async throws {
        try await kind.withStore { store in
            let log = try await EventLog(store: store, views: DomainViews())
            try await log.apply(changes(1))
            let sink = RecordingSink(acceptOffers: 2)
            await log.start(try await log.subscribe(id: "s", since: 0, filter: EventFilter(), sink: sink))

            try await log.apply(changes(4))  // 2 and 3 fit, 4 is refused
            #expect(sink.entries == [.sent(1), .offered(2), .offered(3), .dropped(resumeSince: 3)])
            #expect(log.bus.listenerCount == 0)

            try await log.apply(changes(2))
            #expect(sink.entries.last == .dropped(resumeSince: 3), "nothing after the drop")
        }
    }

    /// Pruning that overtakes a replay must not leave a silent hole: the page already read is
    /// sent, then the subscriber is dropped (reason `retention`) where the hole begins, and
    /// resuming from there is refused. (Replay reads 500 events a page.)
    @Test(arguments: StoreKind.allCases)
    func pruningDuringReplayDropsTheSubscriberInsteadOfSkipping(kind: StoreKind) async throws {
        try await kind.withStore { store in
            let log = try await EventLog(
                store: store, views: DomainViews(), retention: EventRetention(maxCount: 3))
            try await log.apply(changes(600))
            let gate = Gate()
            let sink = RecordingSink(holdSendOf: (seq: 2, gate: gate))
            let subscription = try await log.subscribe(id: "s", since: 0, filter: EventFilter(), sink: sink)

            let replay = Task { await log.start(subscription) }
            await gate.arrivals(1)  // the first page is read; the replay waits for room for 2
            try await log.prune()  // drops 1...597
            gate.open()
            await replay.value

            #expect(sink.deliveredSeqs == Array(1...500))
            #expect(sink.entries.last == .dropped(resumeSince: 500))
            #expect(sink.dropReasons == [.retention])
            await #expect(throws: EventLogError.cursorExpired(oldestKept: 598)) { try await log.checkCursor(500) }
        }
    }

    /// Live events held during replay are bounded; past `holdLimit` the subscriber is dropped,
    /// told to resume after the last event whose `send` completed (resuming from an earlier
    /// seq would hand the client events it already has).
    @Test(arguments: StoreKind.allCases)
    func holdLimitOverflowDuringReplayDropsTheSubscriber(kind: StoreKind) async throws {
        try await kind.withStore { store in
            let log = try await EventLog(store: store, views: DomainViews())
            try await log.apply(changes(3))
            let gate = Gate()
            let sink = RecordingSink(holdSendOf: (seq: 2, gate: gate))
            let subscription = try await log.subscribe(
                id: "s", since: 0, filter: EventFilter(), sink: sink, holdLimit: 2)

            let replay = Task { await log.start(subscription) }
            await gate.arrivals(1)  // 1 sent, the replay waits for room for 2
            try await log.apply(changes(2))  // 4, 5: held
            #expect(sink.drops.isEmpty)
            try await log.apply(changes(1))  // 6: one too many
            #expect(sink.entries == [.sent(1), .dropped(resumeSince: 1)])

            gate.open()
            await replay.value
            try await log.apply(changes(1))
            #expect(sink.drops.count == 1)
            #expect(
                sink.entries.last.map { if case .dropped = $0 { true } else { false } } == true,
                "nothing after the drop")
            #expect(log.bus.listenerCount == 0)
        }
    }

    /// While replaying, only live events the subscription will deliver are held: events of
    /// other types or users do not count against the hold limit (they used to, so a busy log
    /// dropped a filtered subscriber that was hardly behind).
    @Test(arguments: StoreKind.allCases)
    func onlyMatchingLiveEventsCountAgainstTheHoldLimit(kind: StoreKind) async throws {
        try await kind.withStore { store in
            let log = try await EventLog(store: store, views: DomainViews())
            try await log.apply([change("1", "a"), change("2", "a"), change("3", "a")])
            let gate = Gate()
            let sink = RecordingSink(holdSendOf: (seq: 1, gate: gate))
            let subscription = try await log.subscribe(
                id: "s", since: 0, filter: EventFilter(types: ["a"]), sink: sink, holdLimit: 2)

            let replay = Task { await log.start(subscription) }
            await gate.arrivals(1)  // the replay waits for room for 1
            try await log.apply((4...8).map { change("\($0)", "b") })  // 5 others: not held
            try await log.apply([change("9", "a"), change("10", "a")])  // 2 held: at the limit, not over
            gate.open()
            await replay.value

            #expect(sink.drops.isEmpty)
            #expect(sink.deliveredSeqs == [1, 2, 3, 9, 10])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func cursorBelowPrunedThroughIsExpiredAndAboveLatestIsAhead(kind: StoreKind) async throws {
        try await kind.withStore { store in
            let log = try await EventLog(
                store: store, views: DomainViews(), retention: EventRetention(maxCount: 2))
            try await log.apply(changes(5))
            #expect(try await log.prune() == 3)  // keeps 4, 5: prunedThrough 3

            await #expect(throws: EventLogError.cursorExpired(oldestKept: 4)) {
                try await log.subscribe(id: "s", since: 2, filter: EventFilter(), sink: RecordingSink())
            }
            await #expect(throws: EventLogError.cursorAhead(latestSeq: 5)) {
                try await log.subscribe(id: "s", since: 6, filter: EventFilter(), sink: RecordingSink())
            }
            #expect(log.bus.listenerCount == 0, "a refused subscribe leaves nothing registered")

            // since == prunedThrough: every event after it is still there.
            let sink = RecordingSink()
            await log.start(try await log.subscribe(id: "s", since: 3, filter: EventFilter(), sink: sink))
            #expect(sink.deliveredSeqs == [4, 5])
        }
    }

    @Test func unsubscribeStopsLiveDelivery() async throws {
        let log = try await EventLog(store: InMemoryStateStore(), views: DomainViews())
        let sink = RecordingSink()
        await log.start(try await log.subscribe(id: "s", since: nil, filter: EventFilter(), sink: sink))
        try await log.apply(changes(1))
        log.unsubscribe(id: "s")
        try await log.apply(changes(1))
        #expect(sink.entries == [.offered(1)])
        #expect(log.bus.listenerCount == 0)
    }
}
