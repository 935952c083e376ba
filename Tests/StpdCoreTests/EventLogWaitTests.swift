import JSONRPC
import StpdCore
import Synchronization
import Testing

/// `EventLog.wait`, the long-poll read. Timeouts run on a `ManualClock`. The waits themselves
/// run on a `SerialThreadExecutor`, which makes the order inside `wait`'s task group fixed
/// (the "event published" child registers before the timeout child starts sleeping), so
/// "the clock has a sleeper" reliably means "wait is fully set up and waiting".
@Suite("EventLog.wait")
struct EventLogWaitTests {
    let typeA = EventFilter(types: ["a"])

    func start(
        _ log: EventLog, since: Int64, filter: EventFilter, limit: Int = 100, timeout: Duration = .seconds(30),
        clock: ManualClock, on executor: SerialThreadExecutor
    ) -> Task<EventLog.WaitResult, any Error> {
        Task(executorPreference: executor) {
            try await log.wait(since: since, filter: filter, limit: limit, timeout: timeout, clock: clock)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func returnsExistingMatchesAtOnceWithNextAtTheLastSeqScanned(kind: StoreKind) async throws {
        try await kind.withStore { store in
            let log = try await EventLog(store: store, views: DomainViews())
            try await log.apply([change("1", "a"), change("2", "b"), change("3", "a"), change("4", "b")])

            // The clock never moves: this can only return because matches were already there.
            let result = try await log.wait(
                since: 0, filter: typeA, limit: 100, timeout: .seconds(30), clock: ManualClock())
            #expect(result.events.seqs == [1, 3])
            #expect(result.next == 4, "non-matching events scanned count as looked at")
            #expect(log.bus.listenerCount == 0)

            let later = try await log.wait(
                since: 1, filter: typeA, limit: 100, timeout: .seconds(30), clock: ManualClock())
            #expect(later.events.seqs == [3])
            #expect(later.next == 4)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func respectsLimit(kind: StoreKind) async throws {
        try await kind.withStore { store in
            let log = try await EventLog(store: store, views: DomainViews())
            try await log.apply([change("1", "a"), change("2", "b"), change("3", "a"), change("4", "a")])

            let first = try await log.wait(
                since: 0, filter: typeA, limit: 2, timeout: .seconds(30), clock: ManualClock())
            #expect(first.events.seqs == [1, 3])
            #expect(first.next == 3, "stops at the last event returned, so the next call gets the rest")

            let rest = try await log.wait(
                since: first.next, filter: typeA, limit: 2, timeout: .seconds(30), clock: ManualClock())
            #expect(rest.events.seqs == [4])
            #expect(rest.next == 4)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func waitsForAMatchingEventAndReturnsIt(kind: StoreKind) async throws {
        try await kind.withStore { store in
            let log = try await EventLog(store: store, views: DomainViews())
            let clock = ManualClock()
            let executor = SerialThreadExecutor()
            defer { executor.shutdown() }

            let waiting = start(log, since: 0, filter: typeA, clock: clock, on: executor)
            await clock.sleepersArrived(1)
            try await log.apply([change("1", "b")])  // not a match: keeps waiting
            try await log.apply([change("2", "a")])
            let result = try await waiting.value

            #expect(result.events.seqs == [2])
            #expect(result.next == 2)
            #expect(clock.sleeperCount == 0, "the timeout is cancelled")
            #expect(log.bus.listenerCount == 0, "the waiter is removed")
        }
    }

    @Test(arguments: StoreKind.allCases)
    func timesOutWithNoEventsAndNextUnchanged(kind: StoreKind) async throws {
        try await kind.withStore { store in
            let log = try await EventLog(store: store, views: DomainViews())
            let clock = ManualClock()
            let executor = SerialThreadExecutor()
            defer { executor.shutdown() }

            let waiting = start(log, since: 0, filter: typeA, timeout: .seconds(30), clock: clock, on: executor)
            await clock.sleepersArrived(1)
            clock.advance(by: .seconds(29))
            #expect(clock.sleeperCount == 1, "not yet due")
            clock.advance(by: .seconds(1))
            let result = try await waiting.value

            #expect(result.events.isEmpty)
            #expect(result.next == 0)
            #expect(log.bus.listenerCount == 0)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func timeoutAfterOnlyNonMatchingEventsStillAdvancesNext(kind: StoreKind) async throws {
        try await kind.withStore { store in
            let log = try await EventLog(store: store, views: DomainViews())
            try await log.apply([change("1", "b"), change("2", "b")])
            let clock = ManualClock()
            let executor = SerialThreadExecutor()
            defer { executor.shutdown() }

            let waiting = start(log, since: 0, filter: typeA, clock: clock, on: executor)
            await clock.sleepersArrived(1)
            try await log.apply([change("3", "b")])
            clock.advance(by: .seconds(30))
            let result = try await waiting.value

            #expect(result.events.isEmpty)
            // 1 and 2 were scanned before waiting, 3 by the look after the timeout.
            #expect(result.next == 3)
        }
    }

    @Test func zeroTimeoutDoesNotWait() async throws {
        let log = try await EventLog(store: InMemoryStateStore(), views: DomainViews())
        let result = try await log.wait(since: 0, filter: typeA, limit: 10, timeout: .zero, clock: ManualClock())
        #expect(result.events.isEmpty)
        #expect(result.next == 0)
    }

    @Test(arguments: StoreKind.allCases)
    func checksTheCursor(kind: StoreKind) async throws {
        try await kind.withStore { store in
            let log = try await EventLog(
                store: store, views: DomainViews(), retention: EventRetention(maxCount: 1))
            try await log.apply(changes(3))
            try await log.prune()  // prunedThrough 2

            await #expect(throws: EventLogError.cursorExpired(oldestKept: 3)) {
                try await log.wait(
                    since: 1, filter: EventFilter(), limit: 10, timeout: .seconds(1), clock: ManualClock())
            }
            await #expect(throws: EventLogError.cursorAhead(latestSeq: 3)) {
                try await log.wait(
                    since: 4, filter: EventFilter(), limit: 10, timeout: .seconds(1), clock: ManualClock())
            }
            #expect(log.bus.listenerCount == 0)
        }
    }

    /// A wait whose task is cancelled (the client hung up) must end, not sit in the bus until
    /// some matching event happens to come. Everything runs on one serial executor with a
    /// non-actor store, so once that executor is idle, `wait` has either returned or is stuck.
    @Test func cancelledWaitReturnsWithoutAnEvent() async throws {
        let log = try await EventLog(store: LockedStore(), views: DomainViews())
        let clock = ManualClock()
        let executor = SerialThreadExecutor()
        defer { executor.shutdown() }
        let returned = Mutex(false)

        let waiting = Task(executorPreference: executor) {
            withUnsafeCurrentTask { $0?.cancel() }
            defer { returned.withLock { $0 = true } }
            return try await log.wait(since: 0, filter: typeA, limit: 10, timeout: .seconds(30), clock: clock)
        }
        await executor.idle()
        let returnedByItself = returned.withLock { $0 }
        #expect(
            returnedByItself, "wait is stuck: its waiter's continuation was stored after the cancellation handler ran")
        #expect(log.bus.listenerCount == 0, "the cancelled wait's listener stays in the bus")

        if !returnedByItself {
            // Free it so the test ends: a matching event resumes the stuck waiter.
            try await log.apply([change("1", "a")])
        }
        _ = try? await waiting.value
    }
}
