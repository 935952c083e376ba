import Foundation
import JSONRPC
import StpdCore
import StpdStore
import Testing

/// What reading the log costs, counted as events decoded by the SQLite store (issue 11): a
/// reader pays for the events it may see and wants, never for other users' events, which used
/// to be decoded (all of them, pages of 500) only to be dropped by the owner filter.
@Suite("Event read cost")
struct EventReadCostTests {
    static let othersEvents = 10_000

    /// A log of `othersEvents` events of root's (1 KB each), then `own` of uid 1000's.
    func withBigLog(own: Int = 0, _ body: (SQLiteStateStore, EventLog) async throws -> Void) async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("stpd-cost-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let store = try SQLiteStateStore(path: dir.appendingPathComponent("state.sqlite").path)
        let log = try await EventLog(store: store, views: DomainViews())
        let blob: JSONValue = ["blob": .string(String(repeating: "x", count: 1000))]
        for batch in 0..<(Self.othersEvents / 1000) {
            try await log.apply(
                (0..<1000).map { change("root-\(batch)-\($0)", "debug.test", kind: "debug", owner: 0, state: blob) })
        }
        try await log.apply((0..<own).map { change("mine-\($0)", "debug.test", kind: "debug", owner: 1000) })
        try await body(store, log)
    }

    @Test func waitByAUIDThatOwnsNothingDecodesNothing() async throws {
        try await withBigLog { store, log in
            let before = store.decodedEventCount
            let result = try await log.wait(
                since: 0, filter: EventFilter(viewerUID: 1001), limit: 100, timeout: .zero, clock: ManualClock())
            #expect(result.events.isEmpty)
            #expect(result.next == Int64(Self.othersEvents), "everything up to the latest seq was looked at")
            #expect(store.decodedEventCount - before == 0, "events of others were decoded to be dropped")

            // With types and objects too, and resuming from the middle.
            let filtered = try await log.wait(
                since: 5000, filter: EventFilter(objectIds: ["root-1-1"], types: ["debug.*"], viewerUID: 1001),
                limit: 100, timeout: .zero, clock: ManualClock())
            #expect(filtered.events.isEmpty)
            #expect(store.decodedEventCount - before == 0)
        }
    }

    @Test func waitDecodesOnlyTheEventsItReturns() async throws {
        try await withBigLog(own: 30) { store, log in
            let before = store.decodedEventCount
            let mine = try await log.wait(
                since: 0, filter: EventFilter(viewerUID: 1000), limit: 100, timeout: .zero, clock: ManualClock())
            #expect(mine.events.count == 30)
            #expect(store.decodedEventCount - before == 30)

            // Root's filtered read: one object among 20,000 events.
            let one = try await log.wait(
                since: 0, filter: EventFilter(objectIds: ["root-7-7"]), limit: 100, timeout: .zero, clock: ManualClock()
            )
            #expect(one.events.map(\.objectId) == ["root-7-7"])
            #expect(store.decodedEventCount - before == 31)
        }
    }

    @Test func replayDecodesOnlyTheSubscribersEvents() async throws {
        try await withBigLog(own: 12) { store, log in
            let before = store.decodedEventCount
            let sink = RecordingSink()
            await log.start(
                try await log.subscribe(id: "s", since: 0, filter: EventFilter(viewerUID: 1000), sink: sink))
            #expect(sink.deliveredSeqs.count == 12)
            #expect(store.decodedEventCount - before == 12)
        }
    }
}
