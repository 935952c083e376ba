import StpdCore
import Testing

/// The log says a prune is due each time it grew by `EventRetention.pruneEvery` events since the
/// last prune (the daemon prunes on it, so a restart never meets a large backlog).
@Suite("EventLog growth prune")
struct EventLogPruneTests {
    @Test func aPruneIsDueEachTimeTheLogGrewByPruneEvery() async throws {
        let retention = EventRetention(maxCount: 150)
        #expect(retention.pruneEvery == 100)
        let log = try await EventLog(store: InMemoryStateStore(), views: DomainViews(), retention: retention)
        var due = log.pruneDue.makeAsyncIterator()
        // Crossing the threshold inside one commit counts once.
        try await log.apply(changes(60))
        try await log.apply((0..<60).map { change("b-\($0)") })
        #expect(await due.next() != nil)
        #expect(try await log.prune() == 0)

        for n in 0..<100 { try await log.apply([change("after-\(n)")]) }
        #expect(await due.next() != nil)
        #expect(try await log.prune() == 220 - 150)
    }
}
