import Crypto
import Foundation
import JSONRPC
import StpdCore
import StpdProtocol
import StpdStore
@_spi(Testing) import StpdValues
import Synchronization
import Testing

@testable import StpdPostgres

/// What the PostgreSQL store adds to the `StateStore` contract: its URL, its failure when the
/// database is gone, and several daemons (stores) on one database. The database tests run only
/// beside a test cluster (`scripts/test-postgres`).
@Suite("PostgreSQL fleet")
struct PostgresFleetTests {
    @Test func urlsNameASocketOrATLSHostAndNeverHoldAPassword() throws {
        let socket = try PostgresLocation(url: "postgresql://stpd@/fleet?host=/run/postgresql", password: "s3cr3t")
        #expect(socket.endpoint == .socket(directory: "/run/postgresql"))
        #expect((socket.user, socket.database, socket.port) == ("stpd", "fleet", 5432))
        #expect(socket.description == "postgresql://stpd@/fleet?host=/run/postgresql&port=5432")
        let encoded = try PostgresLocation(url: "postgresql://stpd@%2Frun%2Fpg/fleet", password: nil)
        #expect(encoded.endpoint == .socket(directory: "/run/pg"))
        let tls = try PostgresLocation(url: "postgresql://stpd@db.example:6432/fleet?sslmode=verify-ca", password: nil)
        #expect(tls.endpoint == .tls(host: "db.example", rootCertificate: nil, verifyHost: false))
        #expect(!socket.description.contains("s3cr3t"))
        for refused in [
            "postgresql://stpd:secret@/fleet?host=/run/postgresql",  // a password in the URL
            "postgresql://stpd@db.example/fleet?sslmode=disable",  // TCP without TLS
            "postgresql://stpd@/fleet",  // nowhere
            "mysql://stpd@/fleet?host=/run",
            "postgresql://stpd@/fleet?host=/run&application_name=x",  // unknown parameter
        ] {
            #expect(throws: PostgresLocation.Invalid.self, "\(refused)") {
                try PostgresLocation(url: refused, password: nil)
            }
        }
    }

    /// A database that cannot be reached is StoreUnavailable, naming the instance;
    /// before its schema is migrated and the store opened, every operation fails so at once.
    @Test func anUnreachableDatabaseIsStoreUnavailable() async throws {
        let nowhere = try PostgresLocation(url: "postgresql://stpd@/none?host=/nonexistent-stpd-dir", password: nil)
        let store = try PostgresStateStore(location: nowhere, instance: "host-a")
        await #expect(throws: StoreUnavailable.self) { try await store.object(id: "x") }
        do {
            try await store.whileRunning {}
            Issue.record("connected to nothing")
        } catch let error as StoreUnavailable {
            #expect(error.instance == "host-a")
        }
        let health = store.health.snapshot
        #expect(health.up == false)
        #expect(health.lastError?.hasPrefix("migrations: ") == true, "\(health)")
    }

    /// Two daemons on one database: seqs interleave gap-free in commit order, each sees the
    /// other's objects and keys, and a change from a stale copy made on one is refused on the other.
    @Test(.enabled(if: StoreKind.testDatabase != nil))
    func twoStoresOnOneDatabaseShareObjectsSeqsAndVersions() async throws {
        try await PostgresStateStore.withScratchDatabase(at: StoreKind.testDatabase!) { a in
            let b = try PostgresStateStore(location: a.location)
            try await b.whileRunning { () async throws in
                let created = EventType(testing: "test.created")
                var thing = object("x", kind: "thing")
                _ = try await a.apply(
                    [StateChange(object: thing, eventType: created, precondition: .absent, keys: ["k"])], at: t0)
                #expect(try await b.object(id: "x")?.version == 1)
                #expect(try await b.lookup(key: "k", owner: nil, after: nil, limit: 5).map(\.objectId) == ["x"])
                thing.state = ["n": 1]
                _ = try await b.apply(
                    [StateChange(object: thing, eventType: created, precondition: .version(1))], at: t0)
                await #expect(throws: StoreConflict.self) {
                    try await a.apply(
                        [StateChange(object: thing, eventType: created, precondition: .version(1))], at: t0)
                }
                // Many commits at once from both: every seq once, in order, no gaps.
                let seqs = try await withThrowingTaskGroup(of: [Int64].self) { group in
                    for n in 0..<40 {
                        let store = n.isMultiple(of: 2) ? a : b
                        group.addTask { try await store.apply(changes(2), at: t0).map(\.seq) }
                    }
                    return try await group.reduce(into: []) { $0 += $1 }
                }
                #expect(seqs.sorted() == Array(3...82))
                #expect(try await a.events(after: 0, limit: 200).map(\.seq) == Array(1...82))
                #expect(try await b.eventBounds().latestSeq == 82)
            }
        }
    }

    /// An `apply` is one round trip whatever it holds (new objects, versioned updates, keys,
    /// removals), counted by the server (`pg_stat_statements`, which scripts/test-postgres
    /// preloads), and reports how long it held the counter's lock.
    @Test(.enabled(if: StoreKind.testDatabase != nil))
    func anApplyIsOneRoundTrip() async throws {
        try await PostgresStateStore.withScratchDatabase(at: StoreKind.testDatabase!) { store in
            try await store.client.query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
            let created = EventType(testing: "test.created")
            // The connection's first commit also asks for its backend's pid: once per connection.
            _ = try await store.apply(
                [StateChange(object: object("w"), eventType: created, precondition: .absent)], at: t0)
            try await store.client.query(
                "SELECT pg_stat_statements_reset(0, (SELECT oid FROM pg_database WHERE datname = current_database()), 0)"
            )
            var x = object("x")
            _ = try await store.apply(
                [StateChange(object: x, eventType: created, precondition: .absent, keys: ["k1", "k2"])], at: t0)
            x.state = ["n": 1]
            _ = try await store.apply(
                [
                    StateChange(object: x, eventType: created, precondition: .version(1), keys: ["k2"]),
                    StateChange(object: object("y"), eventType: created, precondition: .absent, keys: ["k3"]),
                    StateChange(
                        object: object("w"), eventType: created, removesObject: true, precondition: .version(1)),
                ], at: t0)
            let statements = try await store.client.query(
                """
                SELECT query, calls FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database
                WHERE datname = current_database()) AND query NOT LIKE '%pg_stat_statements%'
                """
            ).collect().map { try $0.decode((String, Int).self) }
            #expect(statements.map(\.1).reduce(0, +) == 2, "two applies sent \(statements)")
            #expect(statements.allSatisfy { $0.0.hasPrefix("CALL stpd_apply(") }, "\(statements)")
            #expect(try await store.lookup(key: "k2", owner: nil, after: nil, limit: 5).map(\.objectId) == ["x"])
            #expect(try await store.lookup(key: "k1", owner: nil, after: nil, limit: 5).isEmpty)
            #expect(try await store.object(id: "w") == nil)
            #expect(try await store.eventBounds().latestSeq == 5)
            #expect(store.commits.snapshot.commits == 3)
            #expect(store.commits.snapshot.holdSeconds > 0)
        }
    }

    /// A commit whose answer was lost is resolved from the events' commit token once the backend
    /// that ran it has ended: committed with its seqs, or rolled back.
    @Test(.enabled(if: StoreKind.testDatabase != nil))
    func aCommitWhoseAnswerWasLostIsResolved() async throws {
        try await PostgresStateStore.withScratchDatabase(at: StoreKind.testDatabase!) { store in
            let created = EventType(testing: "test.created")
            let change = StateChange(object: object("x"), eventType: created, precondition: .absent)
            // The CALL went out on a connection that then closed: committed, with its seq.
            let sent = try ApplyCall([change], at: t0, .plain)
            let committed = try await store.client.withConnection { connection in
                let backend = try await store.backends.identity(of: connection, store.logger)
                _ = try await connection.query(sent.query, logger: store.logger).collect()
                try await connection.close()
                return backend
            }
            #expect(await store.outcome(of: sent, on: committed, within: .seconds(30)) == .committed(latest: 1))
            // Never sent: rolled back.
            let lost = try ApplyCall([change], at: t0, .plain)
            #expect(await store.outcome(of: lost, on: committed, within: .seconds(30)) == .rolledBack)
            // Its backend still lives (here idle; in the daemon, one still running the CALL): it
            // is terminated first, so nothing it runs can commit after the answer.
            let idle = try await store.client.withConnection { connection in
                let backend = try await store.backends.identity(of: connection, store.logger)
                #expect(await store.outcome(of: lost, on: backend, within: .seconds(30)) == .rolledBack)
                return backend
            }
            let left = try await store.client.query("SELECT count(*) FROM pg_stat_activity WHERE pid = \(idle.pid)")
                .collect()
            #expect(try left[0].decode(Int.self) == 0)
        }
    }

    /// Long enough that a loaded machine renews a lease (or makes its next call) before it expires,
    /// where a test needs it held; the waits for an expiry are bounded loops, never timed assertions.
    private let leaseSpan: Duration = .seconds(5)

    /// A lease is held by one daemon until it is given back, revoked or expired; then another takes it.
    @Test(.enabled(if: StoreKind.testDatabase != nil))
    func aLeaseIsHeldByOneDaemonUntilReleasedRevokedOrExpired() async throws {
        try await PostgresStateStore.withScratchDatabase(at: StoreKind.testDatabase!) { store in
            let a = PostgresLeases(store: store, instance: "a", duration: leaseSpan)
            let b = PostgresLeases(store: store, instance: "b", duration: leaseSpan)
            #expect(await a.acquire("poll:1", lost: {}))
            #expect(await a.acquire("poll:1", lost: {}), "its holder may take it again")
            #expect(await !b.acquire("poll:1", lost: {}))
            #expect(await b.free(among: ["poll:1", "poll:2"]) == ["poll:2"])
            #expect(await a.free(among: ["poll:1", "poll:2"]).sorted() == ["poll:1", "poll:2"], "its own are free")
            #expect(a.held == ["poll:1"])
            #expect(try await a.census() == ["a": 1])
            await a.release("poll:1")
            #expect(await b.acquire("poll:1", lost: {}))
            #expect(await !a.acquire("poll:1", lost: {}))
            // b dies without renewing: once the lease expires, a takes it (bounded wait, no timing assertion).
            var taken = false
            for _ in 0..<300 where !taken {
                try await Task.sleep(for: .milliseconds(100))
                taken = await a.acquire("poll:1", lost: {})
            }
            #expect(taken)

            // Revoked by b (the work was stopped there): a loses it at its next renewal.
            let lost = Flag()
            #expect(await a.acquire("poll:3", lost: { lost.raise() }))
            await b.revoke("poll:3")
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { await a.run() }
                for _ in 0..<300 where a.held.contains("poll:3") { try await Task.sleep(for: .milliseconds(100)) }
                group.cancelAll()
            }
            #expect(!a.held.contains("poll:3"))
            #expect(lost.isRaised)
        }
    }

    /// A daemon's name is claimed at start: a second live daemon with it is refused.
    @Test(.enabled(if: StoreKind.testDatabase != nil))
    func aSecondLiveDaemonWithANameInUseIsRefused() async throws {
        try await PostgresStateStore.withScratchDatabase(at: StoreKind.testDatabase!) { store in
            let first = PostgresLeases(store: store, instance: "host-a", duration: leaseSpan)
            let second = PostgresLeases(store: store, instance: "host-a", duration: leaseSpan)
            try await first.claimInstance()
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await first.run() }  // renews the claim while the second waits
                await #expect(throws: InstanceNameInUse.self) { try await second.claimInstance() }
                group.cancelAll()
            }
            // Given back on shutdown: the name is free again.
            try await PostgresLeases(store: store, instance: "host-a", duration: leaseSpan).claimInstance()
        }
    }

    /// State is sealed at rest with the key id beside it; another key cannot read it (the row is
    /// left alone); a rotation re-seals it while both keys open it.
    @Test(.enabled(if: StoreKind.testDatabase != nil))
    func stateIsSealedAndARotationReseals() async throws {
        let (old, new) = (SymmetricKey(size: .bits256), SymmetricKey(size: .bits256))
        try await PostgresStateStore.withScratchDatabase(at: StoreKind.testDatabase!, sealer: StateSealer(key: old)) {
            a in
            let created = EventType(testing: "test.created")
            let secret = object("x", kind: "thing", state: ["secret": "pi_1_secret_2"])
            _ = try await a.apply([StateChange(object: secret, eventType: created, precondition: .absent)], at: t0)
            let raw = try await a.client.query("SELECT state, key_id FROM object WHERE id = 'x'").collect()
            let (state, keyID) = try raw[0].decode((String, String?).self)
            #expect(state.hasPrefix("sealed:v1:") && !state.contains("pi_1_secret_2"))
            #expect(keyID == a.stateKeyID)
            let eventText = try await a.client.query("SELECT object FROM event").collect()[0].decode(String.self)
            #expect(eventText.hasPrefix("sealed:v1:"))
            #expect(try await a.object(id: "x")?.state == ["secret": "pi_1_secret_2"])

            let stranger = try PostgresStateStore(location: a.location, sealer: StateSealer(key: new))
            try await stranger.whileRunning { () async throws in
                await #expect(throws: StateUnreadable.self) { try await stranger.object(id: "x") }
            }
            let rotating = try PostgresStateStore(location: a.location, sealer: StateSealer(key: new, previous: [old]))
            try await rotating.whileRunning { () async throws in
                #expect(try await rotating.object(id: "x")?.state == ["secret": "pi_1_secret_2"])
                let result = try await rotating.reseal()
                #expect(result == .init(objects: 1, events: 1, unreadable: [], remaining: 0))
                #expect(try await rotating.reseal() == .init())
            }
            await #expect(throws: StateUnreadable.self) { try await a.object(id: "x") }
            // A pool runs once: another store with the new key alone.
            let renewed = try PostgresStateStore(location: a.location, sealer: StateSealer(key: new))
            try await renewed.whileRunning { () async throws in
                #expect(try await renewed.object(id: "x")?.state == ["secret": "pi_1_secret_2"])
                #expect(try await renewed.events(after: 0, limit: 5).count == 1)
            }
        }
    }
}

/// Raised once, read any time.
final class Flag: Sendable {
    private let raised = Mutex(false)
    func raise() { raised.withLock { $0 = true } }
    var isRaised: Bool { raised.withLock { $0 } }
}
