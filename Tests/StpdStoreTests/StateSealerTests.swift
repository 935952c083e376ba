import Crypto
import Foundation
import JSONRPC
import StpdCore
import StpdProtocol
import StpdStore
@_spi(Testing) import StpdValues
import Testing

/// Secrets at rest: what the sealer writes tells nothing without the key, opens only under its
/// own key and object id, and a copied database leaks no token or client secret.
@Suite("StateSealer")
struct StateSealerTests {
    let t0 = Date(timeIntervalSince1970: 1_700_000_000)
    let token = "Bearer t0ken-\(UUID().uuidString)"
    let clientSecret = "src_client_secret_\(UUID().uuidString.replacingOccurrences(of: "-", with: ""))"

    func withDirectory(_ body: (String) async throws -> Void) async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("stpd-sealer-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        try await body(dir.path)
    }

    /// A session holding a bearer token and a Source holding its client secret, whose public state
    /// (what the event carries) has the secret inside a redirect URL, as Stripe builds them.
    func secretChanges() -> [StateChange] {
        let session = StoredObject(
            id: "cses_1", kind: "customer", ownerUID: 1000,
            state: ["adapter": ["kind": "backend", "authorization": .string(token)]], createdAt: t0, updatedAt: t0)
        let source = StoredObject(
            id: "src_1", kind: "source", ownerUID: 1000, state: ["clientSecret": .string(clientSecret)],
            createdAt: t0, updatedAt: t0)
        let url = "https://hooks.stripe.com/redirect/authenticate/src_1?client_secret=\(clientSecret)"
        return [
            StateChange(
                object: session, eventType: EventType(testing: "customer.opened"),
                publicState: ["authorization": "[REDACTED]"]),
            StateChange(
                object: source, eventType: EventType(testing: "source.created"),
                publicState: ["redirect": ["url": .string(url)]]),
        ]
    }

    @Test func sealedTextOpensOnlyWithItsKeyAndId() throws {
        let sealer = StateSealer(key: SymmetricKey(size: .bits256))
        let text = #"{"authorization":"\#(token)"}"#
        let sealed = try sealer.seal(text, for: "cses_1")
        #expect(sealed.hasPrefix("sealed:v1:\(sealer.keyID!):"))
        #expect(!sealed.contains("t0ken"))
        #expect(try sealer.open(sealed, for: "cses_1") == text)
        // Two seals of one text differ (a fresh nonce each).
        #expect(try sealer.seal(text, for: "cses_1") != sealed)

        #expect(throws: StateSealerError.damaged(id: "cses_2")) { try sealer.open(sealed, for: "cses_2") }
        let other = StateSealer(key: SymmetricKey(size: .bits256))
        #expect(throws: StateSealerError.otherKey(id: "cses_1", sealedWith: sealer.keyID!, current: other.keyID!)) {
            try other.open(sealed, for: "cses_1")
        }
        #expect(throws: StateSealerError.noKey(id: "cses_1", sealedWith: sealer.keyID!)) {
            try StateSealer.plain.open(sealed, for: "cses_1")
        }
        // One bit of the ciphertext changed.
        let head = "sealed:v1:\(sealer.keyID!):"
        var bytes = try #require(Data(base64Encoded: String(sealed.dropFirst(head.count))))
        bytes[20] ^= 1
        #expect(throws: StateSealerError.damaged(id: "cses_1")) {
            try sealer.open(head + bytes.base64EncodedString(), for: "cses_1")
        }
        #expect(throws: StateSealerError.unknownFormat(id: "x", prefix: "sealed")) {
            try sealer.open("sealed:v9:abc", for: "x")
        }
    }

    @Test func plainRowsStillRead() throws {
        let sealer = StateSealer(key: SymmetricKey(size: .bits256))
        #expect(try sealer.open(#"{"a":1}"#, for: "x") == #"{"a":1}"#)
        #expect(try StateSealer.plain.seal(#"{"a":1}"#, for: "x") == #"{"a":1}"#)
    }

    @Test func errorsNameTheObjectAndBothKeys() {
        let error = StateSealerError.otherKey(id: "cses_9", sealedWith: "0badc0de", current: "12345678")
        #expect(error.description.contains("cses_9"))
        #expect(error.description.contains("0badc0de") && error.description.contains("12345678"))
        #expect(error.description.contains("state-key"))
    }

    /// The issue's probe: a copy of stpd.sqlite and its WAL, taken while the store is open and
    /// again after it closed, holds neither the token nor the client secret.
    @Test func aCopiedDatabaseLeaksNoSecret() async throws {
        try await withDirectory { dir in
            let path = "\(dir)/stpd.sqlite"
            let key = SymmetricKey(size: .bits256)
            do {
                let store = try SQLiteStateStore(path: path, sealer: StateSealer(key: key))
                let events = try await store.apply(secretChanges(), at: t0)
                #expect(events.count == 2)
                try expectNoSecrets(in: [path, path + "-wal"])
                // Everything reads back through the sealer.
                let session = try #require(try await store.object(id: "cses_1"))
                #expect(session.state["adapter"]?["authorization"] == .string(token))
                let read = try await store.events(after: 0, limit: 10)
                #expect(read.map(\.object) == events.map(\.object))
            }
            try expectNoSecrets(in: [path, path + "-wal"])

            // Another key cannot read the sealed rows: the error names the object.
            let other = try SQLiteStateStore(path: path, sealer: StateSealer(key: SymmetricKey(size: .bits256)))
            await #expect(throws: StateSealerError.self) { try await other.object(id: "cses_1") }
            do {
                _ = try await other.objects(ObjectQuery(kind: "customer"))
                Issue.record("expected the sealed row to be refused")
            } catch let error as StateSealerError {
                #expect(error.id == "cses_1")
            }
        }
    }

    /// After the key changed, a start sets aside the objects the old key sealed and puts their
    /// events out of reach as retention would, deleting nothing; rows written under the new key and
    /// plain rows stay. With the old key found again, `recover` brings every one of them back.
    @Test func rowsSealedElsewhereAreSetAsideKeptAndRecovered() async throws {
        try await withDirectory { dir in
            let path = "\(dir)/stpd.sqlite"
            let oldSealer = StateSealer(key: SymmetricKey(size: .bits256))
            do {
                let plain = try SQLiteStateStore(path: path)
                _ = try await plain.apply([secretChanges()[0]], at: t0)  // seq 1, plain
                let old = try SQLiteStateStore(path: path, sealer: oldSealer)
                _ = try await old.apply(secretChanges(), at: t0)  // seq 2, 3: cses_1 and src_1 sealed
            }
            #expect(try SQLiteStateStore.sealedRows(path: path) == [oldSealer.keyID!: 4])
            let key = SymmetricKey(size: .bits256)
            let store = try SQLiteStateStore(path: path, sealer: StateSealer(key: key))
            let found = try await store.setAsideRowsSealedElsewhere()
            #expect(Set(found.objects.map(\.id)) == ["cses_1", "src_1"])
            #expect(found.objects.allSatisfy { if case .otherKey = $0 { true } else { false } })
            #expect(found.eventsSetAsideThrough == 3)
            #expect(try await store.object(id: "cses_1") == nil)
            #expect(try await store.setAsideCount() == 2)
            #expect(try await store.eventBounds() == EventBounds(latestSeq: 3, prunedThrough: 3))
            #expect(try await store.events(after: 3, matching: EventFilter(), limit: 10).events.isEmpty)
            // Kept: every row is still in the file.
            #expect(try SQLiteStateStore.sealedRows(path: path) == [oldSealer.keyID!: 4])

            // New rows under the new key are not touched by the next start's check.
            var fresh = secretChanges()[1]
            fresh.object.id = "src_2"
            _ = try await store.apply([fresh], at: t0)
            let again = try await store.setAsideRowsSealedElsewhere()
            #expect(again.objects.isEmpty && again.eventsSetAsideThrough == 0)
            #expect(try await store.events(after: 3, limit: 10).count == 1)

            // The old key found again: its objects are served and its events read once more.
            let recovered = try await store.recover(sealedWith: oldSealer)
            #expect(recovered.objects == 2 && recovered.events == 2)
            #expect(try await store.setAsideCount() == 0)
            #expect(try await store.object(id: "cses_1")?.state["adapter"]?["authorization"] == .string(token))
            #expect(try await store.eventBounds() == EventBounds(latestSeq: 4, prunedThrough: 0))
            #expect(try await store.events(after: 0, matching: EventFilter(), limit: 10).events.count == 4)
            #expect(try SQLiteStateStore.sealedRows(path: path).keys.sorted() == [StateSealer(key: key).keyID!])
        }
    }

    /// Issue 32.5: a recovery with an unrelated key re-sealed nothing but reset `pruned_through`
    /// to 0, so `events.wait {since: 0}` then read rows it could not open and failed on every call.
    /// Now a key that sealed nothing here changes nothing; one that sealed some rows brings back
    /// its own, and the events still sealed with a third key stay out of reach.
    @Test func aRecoveryThatReSealsNothingChangesNothing() async throws {
        try await withDirectory { dir in
            let path = "\(dir)/stpd.sqlite"
            let first = StateSealer(key: SymmetricKey(size: .bits256))
            let second = StateSealer(key: SymmetricKey(size: .bits256))
            do {
                _ = try await SQLiteStateStore(path: path, sealer: first).apply(secretChanges(), at: t0)  // seq 1, 2
                var later = secretChanges()
                later[0].object.id = "cses_2"
                later[1].object.id = "src_2"
                _ = try await SQLiteStateStore(path: path, sealer: second).apply(later, at: t0)  // seq 3, 4
            }
            let store = try SQLiteStateStore(path: path, sealer: StateSealer(key: SymmetricKey(size: .bits256)))
            #expect(try await store.setAsideRowsSealedElsewhere().eventsSetAsideThrough == 4)
            let before = try await store.eventBounds()
            #expect(before == EventBounds(latestSeq: 4, prunedThrough: 4))

            let unrelated = try await store.recover(sealedWith: StateSealer(key: SymmetricKey(size: .bits256)))
            #expect(unrelated.objects == 0 && unrelated.events == 0)
            #expect(try await store.eventBounds() == before)
            #expect(try await store.events(after: 4, matching: EventFilter(), limit: 10).events.isEmpty)

            // The first key's events come back; the second key's, after them, keep the log's start.
            let recovered = try await store.recover(sealedWith: first)
            #expect(recovered.objects == 2 && recovered.events == 2)
            #expect(try await store.eventBounds() == before, "seq 3 and 4 are still sealed with the second key")
            let last = try await store.recover(sealedWith: second)
            #expect(last.objects == 2 && last.events == 2)
            #expect(try await store.eventBounds() == EventBounds(latestSeq: 4, prunedThrough: 0))
            #expect(try await store.events(after: 0, matching: EventFilter(), limit: 10).events.count == 4)
        }
    }

    /// A database written before sealing existed keeps working once a key is configured; rows are
    /// sealed as they are next written.
    @Test func plainDatabaseUpgradesInPlace() async throws {
        try await withDirectory { dir in
            let path = "\(dir)/stpd.sqlite"
            do {
                let plain = try SQLiteStateStore(path: path)
                _ = try await plain.apply(secretChanges(), at: t0)
            }
            let sealed = try SQLiteStateStore(path: path, sealer: StateSealer(key: SymmetricKey(size: .bits256)))
            #expect(try await sealed.object(id: "cses_1")?.state["adapter"]?["authorization"] == .string(token))
            #expect(try await sealed.events(after: 0, limit: 10).count == 2)
            _ = try await sealed.apply(secretChanges(), at: t0)
            #expect(try await sealed.object(id: "src_1")?.state["clientSecret"] == .string(clientSecret))
        }
    }

    func expectNoSecrets(in files: [String], sourceLocation: SourceLocation = #_sourceLocation) throws {
        for file in files where FileManager.default.fileExists(atPath: file) {
            let bytes = try Data(contentsOf: URL(fileURLWithPath: file))
            for secret in [token, clientSecret, "t0ken"] {
                #expect(
                    bytes.range(of: Data(secret.utf8)) == nil, "\(secret) in \(file)", sourceLocation: sourceLocation)
            }
        }
    }
}
