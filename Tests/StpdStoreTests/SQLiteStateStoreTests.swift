import Foundation
import GRDB
import JSONRPC
import StpdCore
import StpdProtocol
import StpdStore
@_spi(Testing) import StpdValues
import TestSupport
import Testing

@testable import StpdStore

/// What only the SQLite store has to get right: file permissions, durability across reopen,
/// exact JSON storage, and seq assignment under concurrent writers. The behaviour it shares
/// with the in-memory store is covered by StpdCoreTests' StateStore contract suite.
@Suite("SQLiteStateStore")
struct SQLiteStateStoreTests {
    let t0 = Date(timeIntervalSince1970: 1_700_000_000)

    /// A fresh directory for one test's database, removed afterwards.
    func withDatabasePath(_ body: (String) async throws -> Void) async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("stpd-store-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        return try await body(dir.appendingPathComponent("state.sqlite").path)
    }

    func change(_ id: String, _ type: String = "payment_context.updated", state: JSONValue = [:], created: Date? = nil)
        -> StateChange
    {
        let created = created ?? t0
        return StateChange(
            object: StoredObject(
                id: id, kind: "payment_context", ownerUID: 1000, state: state, createdAt: created, updatedAt: created),
            eventType: EventType(testing: type))
    }

    func mode(_ path: String) throws -> Int {
        try #require(FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int)
    }

    /// The database and its WAL/shared-memory companions that exist right now.
    func databaseFiles(_ path: String) -> [String] {
        [path, path + "-wal", path + "-shm"].filter { FileManager.default.fileExists(atPath: $0) }
    }

    // MARK: File permissions

    /// Object state may hold keys and client secrets: the files must be 0600 even when the
    /// umask would let group and others read what the process creates.
    @Test func databaseFilesAreOwnerOnlyUnderAPermissiveUmask() async throws {
        try await withDatabasePath { path in
            // The umask is process-wide and `UnixListener.bind` (in other test targets running
            // in this process) narrows it around bind(2); holding the bind lock keeps those
            // binds and this change apart. Opening creates the database and its WAL files.
            let store = try withBindLock {
                let previous = umask(0o022)
                defer { umask(previous) }
                return try SQLiteStateStore(path: path)
            }
            _ = try await store.apply([change("pc_1", state: ["client_secret": "pi_123_secret_456"])], at: t0)

            let files = databaseFiles(path)
            #expect(files.contains(path))
            for file in files {
                #expect(try mode(file) == 0o600, "\(file)")
            }
        }
    }

    /// Same guarantee when the file already exists with a wider mode (created by hand, or by
    /// an older version): opening the store narrows it.
    @Test func openingNarrowsAnExistingDatabaseFile() async throws {
        try await withDatabasePath { path in
            #expect(FileManager.default.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o644]))
            try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: path)

            let store = try SQLiteStateStore(path: path)
            _ = try await store.apply([change("pc_1")], at: t0)
            for file in databaseFiles(path) {
                #expect(try mode(file) == 0o600, "\(file)")
            }
        }
    }

    // MARK: Durability

    @Test func reopeningKeepsObjectsEventsAndBoundsAndSeqsContinue() async throws {
        try await withDatabasePath { path in
            let before: (objects: [StoredObject], events: [Event], bounds: EventBounds)
            do {
                let store = try SQLiteStateStore(path: path)
                _ = try await store.apply([change("pc_1", state: ["n": 1]), change("pc_2", created: t0 + 1)], at: t0)
                _ = try await store.apply([change("pc_1", state: ["n": 2])], at: t0 + 10)
                _ = try await store.apply([change("pc_3", created: t0 + 2)], at: t0 + 20)
                #expect(try await store.prune(EventRetention(maxCount: 2), now: t0 + 20) == 2)
                before = (
                    try await store.objects(ObjectQuery(kind: "payment_context")),
                    try await store.events(after: 0, limit: 100),
                    try await store.eventBounds()
                )
            }
            #expect(before.bounds == EventBounds(latestSeq: 4, prunedThrough: 2))

            let reopened = try SQLiteStateStore(path: path)
            #expect(try await reopened.objects(ObjectQuery(kind: "payment_context")) == before.objects)
            #expect(try await reopened.object(id: "pc_1")?.state == ["n": 2])
            #expect(try await reopened.events(after: 0, limit: 100) == before.events)
            #expect(try await reopened.eventBounds() == before.bounds)

            let next = try await reopened.apply([change("pc_4")], at: t0 + 30)
            #expect(next.map(\.seq) == [5])
        }
    }

    /// After everything is pruned the log is empty, yet a restarted daemon must not hand out
    /// seqs again: clients hold cursors into the old ones.
    @Test func seqsContinueAcrossReopenEvenWhenEverythingWasPruned() async throws {
        try await withDatabasePath { path in
            do {
                let store = try SQLiteStateStore(path: path)
                _ = try await store.apply([change("a"), change("b"), change("c")], at: t0)
                #expect(try await store.prune(EventRetention(maxCount: 0), now: t0) == 3)
            }
            let reopened = try SQLiteStateStore(path: path)
            #expect(try await reopened.eventBounds() == EventBounds(latestSeq: 3, prunedThrough: 3))
            #expect(try await reopened.apply([change("d")], at: t0).map(\.seq) == [4])
        }
    }

    /// Reopening runs the migrator again: it must recognise the applied migrations and leave
    /// the data alone (re-running "create table" would throw).
    @Test func migrationsAreIdempotentOnReopen() async throws {
        try await withDatabasePath { path in
            do {
                let store = try SQLiteStateStore(path: path)
                _ = try await store.apply([change("pc_1", state: ["kept": true])], at: t0)
            }
            for _ in 0..<3 {
                let store = try SQLiteStateStore(path: path)
                #expect(try await store.object(id: "pc_1")?.state == ["kept": true])
                #expect(try await store.events(after: 0, limit: 10).map(\.seq) == [1])
            }
            // Two stores open on the same file at once (the second migrates while the first is open).
            let first = try SQLiteStateStore(path: path)
            let second = try SQLiteStateStore(path: path)
            _ = try await first.apply([change("pc_2")], at: t0)
            #expect(try await second.eventBounds().latestSeq == 2)
        }
    }

    /// A database a v3 daemon left (rows and all) opens under v4: the event time index is gone,
    /// every row is kept, and seqs continue.
    @Test func aV3DatabaseMigratesToV4KeepingItsRows() async throws {
        try await withDatabasePath { path in
            do {
                let v3 = try DatabaseQueue(path: path)
                try SQLiteStateStore.migrator.migrate(v3, upTo: "v3: event feed indexes")
                try await v3.write { db in
                    try db.execute(
                        sql: """
                            INSERT INTO object (id, kind, owner_uid, state, created_at, updated_at, version, status,
                            live, finished) VALUES ('pc_1', 'payment_context', 1000, '{"kept":true}', 0, 0, 1, NULL, 1, 0);
                            INSERT INTO event (time, type, object_id, object_kind, owner_uid, object)
                            VALUES (0, 'payment_context.created', 'pc_1', 'payment_context', 1000, '{"kept":true}');
                            """)
                }
            }
            let store = try SQLiteStateStore(path: path)
            #expect(try await store.object(id: "pc_1")?.state == ["kept": true])
            #expect(try await store.events(after: 0, limit: 10).map(\.seq) == [1])
            #expect(try await store.apply([change("pc_2")], at: t0).map(\.seq) == [2])
            let indexes = try await DatabaseQueue(path: path).read { db in
                try String.fetchAll(
                    db, sql: "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'event'")
            }
            #expect(!indexes.contains("event_on_time"))
            #expect(indexes.contains("event_feed"))
        }
    }

    // MARK: Reads and prune

    /// Point reads run on the calling thread, outside a transaction, while the group commit
    /// writes: each sees every commit answered before it, and the log's end never goes back.
    @Test(.timeLimit(.minutes(1))) func readsBesideWritesSeeEveryAnsweredCommit() async throws {
        try await withDatabasePath { path in
            let store = try SQLiteStateStore(path: path)
            let writes = 300
            try await withThrowingTaskGroup(of: Void.self) { group in
                for reader in 0..<4 {
                    group.addTask {
                        var seen: Int64 = 0
                        while seen < Int64(writes) {
                            let latest = try await store.eventBounds().latestSeq
                            #expect(latest >= seen, "reader \(reader)")
                            seen = latest
                            _ = try await store.keyCount(key: "k", cap: 10)
                            // A read on the calling thread never suspends: let the writer have the thread.
                            await Task.yield()
                        }
                    }
                }
                group.addTask {
                    for n in 1...writes {
                        let events = try await store.apply([self.change("w\(n)")], at: self.t0)
                        #expect(try await store.object(id: "w\(n)") != nil)
                        #expect(try await store.eventBounds().latestSeq >= events[0].seq)
                    }
                }
                try await group.waitForAll()
            }
        }
    }

    /// Many page reads at once (each holding one of the pool's readers until its task runs
    /// again) beside point reads, which block their thread: every one is answered. Point reads
    /// waiting for a pool reader hung here, with no thread left to run the page reads' tasks.
    @Test(.timeLimit(.minutes(1))) func pointReadsBesideManyPageReadsAllFinish() async throws {
        try await withDatabasePath { path in
            let store = try SQLiteStateStore(path: path)
            _ = try await store.apply((0..<200).map { change("e\($0)") }, at: t0)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<32 {
                    group.addTask {
                        let events = try await store.events(after: 0, limit: 200)
                        #expect(events.count == 200)
                    }
                    group.addTask {
                        for _ in 0..<20 {
                            let bounds = try await store.eventBounds()
                            #expect(bounds.latestSeq == 200)
                        }
                    }
                }
                try await group.waitForAll()
            }
        }
    }

    /// The cut moves first; the rows go in batches of `pruneBatch`, all of them in the end.
    @Test func pruneDeletesPastTheCutInBatches() async throws {
        try await withDatabasePath { path in
            let store = try SQLiteStateStore(path: path)
            let total = 2 * Int(SQLiteStateStore.pruneBatch) + 500
            for first in stride(from: 0, to: total, by: 250) {
                _ = try await store.apply((first..<first + 250).map { change("p\($0)") }, at: t0)
            }
            let dropped = try await store.prune(EventRetention(maxCount: 100), now: t0)
            #expect(dropped == total - 100)
            #expect(
                try await store.eventBounds() == EventBounds(latestSeq: Int64(total), prunedThrough: Int64(total - 100))
            )
            #expect(try await store.events(after: 0, limit: 1000).map(\.seq) == Array(Int64(total - 99)...Int64(total)))
            #expect(try await store.prune(EventRetention(maxCount: 100), now: t0) == 0)
        }
    }

    /// Rows below a cut that did not move stay (events another state key sealed are kept there
    /// for `recover(sealedWith:)`); an interrupted prune's deletes are finished by the next one.
    @Test func pruneDeletesOnlyWhatItsCutMovedPastAndFinishesAnInterruptedOne() async throws {
        try await withDatabasePath { path in
            let store = try SQLiteStateStore(path: path)
            _ = try await store.apply((0..<10).map { change("s\($0)") }, at: t0)
            let meta = try DatabaseQueue(path: path)
            func rows() async throws -> Int {
                try await meta.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM event") ?? 0 }
            }
            try await meta.write { db in
                try db.execute(sql: "INSERT OR REPLACE INTO meta (key, value) VALUES ('pruned_through', 5)")
            }
            #expect(try await store.prune(EventRetention(maxCount: 100), now: t0) == 0)
            #expect(try await rows() == 10)

            try await meta.write { db in
                try db.execute(sql: "INSERT OR REPLACE INTO meta (key, value) VALUES ('pruning_through', 3)")
            }
            #expect(try await store.prune(EventRetention(maxCount: 100), now: t0) == 3)
            #expect(try await rows() == 7)
            #expect(try await store.prune(EventRetention(maxCount: 100), now: t0) == 0)
        }
    }

    // MARK: Content

    @Test func jsonStateRoundTripsExactly() async throws {
        let state: JSONValue = [
            "nested": ["deeper": ["deepest": [1, [2, [3, ["x": nil]]]]], "empty_object": [:], "empty_array": []],
            "unicode": "héllo wörld — 日本語 — 🧾💳 — e\u{301} — \u{200F}עברית — \"quoted\" \\ back/slash\n\t",
            "control": "nul\u{0}bell\u{7}",
            "ключ 🔑": "unicode key",
            "dotted.key": "dots are not paths",
            "max": .int(Int64.max),
            "min": .int(Int64.min),
            "big_amount": 9_007_199_254_740_993,  // 2^53 + 1: not representable as a Double
            "negative": -42,
            "zero": 0,
            "fraction": 0.1,
            "tiny": .double(.leastNonzeroMagnitude),
            "huge": .double(.greatestFiniteMagnitude),
            "flags": [true, false, nil],
        ]
        try await withDatabasePath { path in
            let store = try SQLiteStateStore(path: path)
            let stored = StoredObject(
                id: "pc_ü🧾", kind: "payment_context", ownerUID: UInt32.max - 1, state: state, createdAt: t0,
                updatedAt: t0, version: 1)
            _ = try await store.apply(
                [StateChange(object: stored, eventType: EventType(testing: "payment_context.created"))], at: t0)

            #expect(try await store.object(id: "pc_ü🧾") == stored)
            let event = try #require(try await store.events(after: 0, limit: 1).first)
            #expect(event.object == state)
            #expect(event.ownerUID == UInt32.max - 1)
            #expect(event.objectId == "pc_ü🧾")

            // And from a fresh connection, not a cache.
            let reopened = try SQLiteStateStore(path: path)
            #expect(try await reopened.object(id: "pc_ü🧾")?.state == state)
        }
    }

    @Test func concurrentAppliesGetUniqueGapFreeSeqs() async throws {
        try await withDatabasePath { path in
            let store = try SQLiteStateStore(path: path)
            let writers = 40
            let perBatch = 3
            let batches = try await withThrowingTaskGroup(of: [Int64].self) { group in
                for writer in 0..<writers {
                    group.addTask {
                        let changes = (0..<perBatch).map { self.change("w\(writer)-\($0)") }
                        return try await store.apply(changes, at: self.t0).map(\.seq)
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }

            let all = batches.flatMap { $0 }.sorted()
            #expect(all == Array(1...Int64(writers * perBatch)))
            // One transaction per apply: a batch's seqs are consecutive.
            for batch in batches {
                #expect(batch == Array(batch[0]..<batch[0] + Int64(perBatch)))
            }
            #expect(try await store.events(after: 0, limit: 1000).map(\.seq) == all)
            #expect(try await store.eventBounds().latestSeq == Int64(writers * perBatch))
        }
    }

    /// Concurrent applies share transactions (group commit), each in a savepoint of its own: one
    /// whose precondition fails is refused alone, leaves nothing behind, and costs no seq.
    @Test func aRefusedApplyInAGroupLeavesTheOthersCommitted() async throws {
        try await withDatabasePath { path in
            let store = try SQLiteStateStore(path: path)
            _ = try await store.apply([change("taken")], at: t0)
            let outcomes = try await withThrowingTaskGroup(of: (Int, [Int64]?).self) { group in
                for writer in 0..<60 {
                    group.addTask {
                        var changes = [self.change("g\(writer)-a"), self.change("g\(writer)-b")]
                        // Every third writer also claims an id that exists: its whole apply is refused.
                        if writer % 3 == 0 { changes[1].object.id = "taken" }
                        changes[1].precondition = .absent
                        do {
                            return (writer, try await store.apply(changes, at: self.t0).map(\.seq))
                        } catch is StoreConflict {
                            return (writer, nil)
                        }
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(outcomes.count == 60)
            for (writer, seqs) in outcomes {
                #expect((seqs == nil) == (writer % 3 == 0))
                #expect(try await store.object(id: "g\(writer)-a") == nil ? seqs == nil : seqs != nil)
            }
            let committed = outcomes.compactMap(\.1).flatMap { $0 }.sorted()
            #expect(committed == Array(2...Int64(1 + 40 * 2)))
            #expect(try await store.events(after: 0, limit: 1000).map(\.seq) == [1] + committed)
        }
    }

    @Test func sizeOnDiskIsPositive() async throws {
        try await withDatabasePath { path in
            let store = try SQLiteStateStore(path: path)
            _ = try await store.apply(
                [change("pc_1", state: ["blob": .string(String(repeating: "x", count: 10_000))])], at: t0)
            #expect(store.sizeOnDisk > 0)
        }
    }
}

/// The plans SQLite picks for filtered reads: a user's read searches that user's range of
/// `event_owner_feed` (it never visits another user's row), root's filtered read walks
/// `event_feed`, and no filtered read scans the table.
@Suite("SQLiteStateStore filtered read plans")
struct EventFeedPlanTests {
    func plan(_ filter: EventFilter) async throws -> String {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("stpd-plan-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("state.sqlite").path
        _ = try SQLiteStateStore(path: path)
        let query = EventFeedQuery(after: 0, filter: filter, limit: 100)
        return try await DatabaseQueue(path: path).read { db in
            try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + query.sql, arguments: query.arguments)
                .map { $0["detail"] as String }.joined(separator: "\n")
        }
    }

    @Test(arguments: [
        EventFilter(viewerUID: 1001),
        EventFilter(types: ["debug.*", "source.polled"], viewerUID: 1001),
        EventFilter(objectIds: ["a", "b"], viewerUID: 1001),
        EventFilter(objectIds: ["a"], types: ["x.y"], viewerUID: 1001),
    ])
    func aUsersReadSearchesOnlyItsOwnRange(filter: EventFilter) async throws {
        let plan = try await plan(filter)
        #expect(plan.contains("SEARCH event USING INDEX event_owner_feed (owner_uid=? AND seq>?)"), "\(plan)")
        #expect(!plan.contains("SCAN event"), "\(plan)")
        #expect(!plan.contains("TEMP B-TREE"), "sorting means reading every match, not stopping at the limit")
    }

    @Test(arguments: [EventFilter(types: ["debug.*"]), EventFilter(objectIds: ["a"])])
    func rootsFilteredReadWalksTheFeedIndex(filter: EventFilter) async throws {
        let plan = try await plan(filter)
        #expect(plan.contains("SEARCH event USING INDEX event_feed (seq>?)"), "\(plan)")
        #expect(!plan.contains("SCAN event"), "\(plan)")
        #expect(!plan.contains("TEMP B-TREE"), "\(plan)")
    }
}
