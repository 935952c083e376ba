import Foundation
import JSONRPC
import StpdCore
import StpdDaemon
import StpdPostgres
@_spi(Testing) import StpdProtocol
import Testing

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

    /// A database that cannot be reached is StoreUnavailable, 1010 on the wire, naming the instance.
    @Test func anUnreachableDatabaseIsStoreUnavailable() async throws {
        let nowhere = try PostgresLocation(url: "postgresql://stpd@/none?host=/nonexistent-stpd-dir", password: nil)
        do {
            _ = try await PostgresStateStore(location: nowhere, instance: "host-a", connectTimeout: .seconds(1))
            Issue.record("connected to nothing")
        } catch let error as StoreUnavailable {
            #expect(error.instance == "host-a")
            #expect(error.rpcError.code == StpdErrors.storeUnavailable.code)
            #expect(error.rpcError.data == ["instance": "host-a"])
        }
    }

    /// Two daemons on one database: seqs interleave gap-free in commit order, each sees the
    /// other's objects and keys, and a change from a stale copy made on one is refused on the other.
    @Test(.enabled(if: StoreKind.testDatabase != nil))
    func twoStoresOnOneDatabaseShareObjectsSeqsAndVersions() async throws {
        try await PostgresStateStore.withScratchDatabase(at: StoreKind.testDatabase!) { a in
            let b = try await PostgresStateStore(location: a.location)
            defer { b.close() }
            let created = EventType(testing: "test.created")
            var thing = object("x", kind: "thing")
            _ = try await a.apply(
                [StateChange(object: thing, eventType: created, precondition: .absent, keys: ["k"])], at: t0)
            #expect(try await b.object(id: "x")?.version == 1)
            #expect(try await b.lookup(key: "k", owner: nil, after: nil, limit: 5).map(\.objectId) == ["x"])
            thing.state = ["n": 1]
            _ = try await b.apply([StateChange(object: thing, eventType: created, precondition: .version(1))], at: t0)
            await #expect(throws: StoreConflict.self) {
                try await a.apply([StateChange(object: thing, eventType: created, precondition: .version(1))], at: t0)
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

    /// A lease is held by one daemon until it is given back or expires; then another takes it.
    @Test(.enabled(if: StoreKind.testDatabase != nil))
    func aLeaseIsHeldByOneDaemonUntilReleasedOrExpired() async throws {
        try await PostgresStateStore.withScratchDatabase(at: StoreKind.testDatabase!) { store in
            let a = PostgresLeases(store: store, instance: "a", duration: .seconds(2))
            let b = PostgresLeases(store: store, instance: "b", duration: .seconds(2))
            #expect(await a.acquire("poll:1", lost: {}))
            #expect(await a.acquire("poll:1", lost: {}), "its holder may take it again")
            #expect(await !b.acquire("poll:1", lost: {}))
            #expect(a.held == ["poll:1"])
            await a.release("poll:1")
            #expect(await b.acquire("poll:1", lost: {}))
            #expect(await !a.acquire("poll:1", lost: {}))
            // b dies without renewing: once the lease expires, a takes it (bounded wait, no timing assertion).
            var taken = false
            for _ in 0..<100 where !taken {
                try await Task.sleep(for: .milliseconds(100))
                taken = await a.acquire("poll:1", lost: {})
            }
            #expect(taken)
        }
    }
}
