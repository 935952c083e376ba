import Foundation
import JSONRPC
import StpdCore
import StripeAPI
import Testing

/// `EphemeralKeyManager` (spec §5.3). Time is a `NowBox`; fetches in flight are held on a `Gate`
/// inside the provider, so every interleaving is set up explicitly, without sleeping.
@Suite("EphemeralKeyManager", .timeLimit(.minutes(1)))
struct EphemeralKeyManagerTests {
    func manager(
        _ provider: ScriptedKeyProvider, clock: NowBox, margin: Duration = EphemeralKeyManager.defaultRefreshMargin
    ) -> EphemeralKeyManager {
        EphemeralKeyManager(provider: provider, refreshMargin: margin, now: clock.clock)
    }

    /// Starts `count` callers of `key()` and returns once all of them wait on the fetch in flight.
    func waitingCallers(_ count: Int, on manager: EphemeralKeyManager) async -> [Task<EphemeralKey, any Error>] {
        let tasks = (0..<count).map { _ in Task { try await manager.key() } }
        await until { manager.waitingCount == count }
        return tasks
    }

    func result(_ task: Task<EphemeralKey, any Error>) async -> Result<EphemeralKey, any Error> {
        await outcome { try await task.value }
    }

    @Test func reusesTheKeyWhileUnexpired() async throws {
        let clock = NowBox()
        let provider = ScriptedKeyProvider([.key(ephemeralKeyJSON(1))])
        let keys = manager(provider, clock: clock)
        #expect(keys.currentKey == nil)
        #expect(keys.customerID == nil)

        let first = try await keys.key()
        #expect(first.id == "ephkey_1")
        #expect(provider.apiVersions == ["2020-08-27"])
        #expect(keys.customerID == "cus_123")

        clock.advance(seconds: 1000)
        #expect(try await keys.key() == first)
        #expect(provider.calls == 1)
        #expect(keys.providerCalls == 1)
    }

    @Test func refetchesWhenExpiresMinusNowReachesTheMargin() async throws {
        let clock = NowBox()
        let provider = ScriptedKeyProvider([
            .key(ephemeralKeyJSON(1, expiresIn: 3600)), .key(ephemeralKeyJSON(2, expiresIn: 7200)),
        ])
        let keys = manager(provider, clock: clock)
        _ = try await keys.key()

        clock.set(t0.addingTimeInterval(3600 - 61))  // expires - now == margin + 1 s
        #expect(try await keys.key().id == "ephkey_1")
        #expect(provider.calls == 1)

        clock.set(t0.addingTimeInterval(3600 - 60))  // expires - now == margin: no longer unexpired
        #expect(try await keys.key().id == "ephkey_2")
        #expect(provider.calls == 2)
        #expect(keys.currentKey?.id == "ephkey_2")
    }

    @Test func refetchesAfterExpiry() async throws {
        let clock = NowBox()
        let provider = ScriptedKeyProvider([
            .key(ephemeralKeyJSON(1, expiresIn: 600)), .key(ephemeralKeyJSON(2, expiresIn: 7200)),
        ])
        let keys = manager(provider, clock: clock)
        _ = try await keys.key()
        clock.set(t0.addingTimeInterval(5000))
        #expect(try await keys.key().id == "ephkey_2")
        #expect(provider.calls == 2)
    }

    @Test func marginIsClampedTo3600Seconds() async throws {
        let clock = NowBox()
        let provider = ScriptedKeyProvider([
            .key(ephemeralKeyJSON(1, expiresIn: 3601)), .key(ephemeralKeyJSON(2, expiresIn: 3600)),
            .key(ephemeralKeyJSON(3, expiresIn: 7200)),
        ])
        let keys = manager(provider, clock: clock, margin: .seconds(7200))
        #expect(keys.refreshMargin == .seconds(3600))

        // 3601 s left > 3600 s margin: reused.
        _ = try await keys.key()
        #expect(try await keys.key().id == "ephkey_1")
        #expect(provider.calls == 1)

        // Had the margin stayed 7200 s, key 2 would be refetched at once and key 3 come next.
        clock.set(t0.addingTimeInterval(1))  // key 1 now has exactly 3600 s left: refetch
        #expect(try await keys.key().id == "ephkey_2")
        clock.set(t0.addingTimeInterval(-1))  // key 2 has 3601 s left
        #expect(try await keys.key().id == "ephkey_2")
        #expect(provider.calls == 2)

        keys.refreshMargin = .seconds(100_000)
        #expect(keys.refreshMargin == .seconds(3600))
        keys.refreshMargin = .seconds(-5)
        #expect(keys.refreshMargin == .zero)
        keys.refreshMargin = .seconds(90)
        #expect(keys.refreshMargin == .seconds(90))
        #expect(EphemeralKeyManager(provider: provider).refreshMargin == .seconds(60))
    }

    @Test func concurrentCallersShareOneProviderCall() async throws {
        let clock = NowBox()
        let gate = Gate()
        // Short-lived key: any caller arriving after the fetch would fetch again (and find no
        // second step), so all ten getting key 1 from one call proves they were coalesced.
        let provider = ScriptedKeyProvider([.key(ephemeralKeyJSON(1, expiresIn: 30), gate: gate)])
        let keys = manager(provider, clock: clock)

        let callers = await waitingCallers(10, on: keys)
        await gate.arrivals(1)
        #expect(provider.calls == 1)
        #expect(keys.isFetching)
        gate.open()

        var received: [EphemeralKey] = []
        for caller in callers { received.append(try await caller.value) }
        #expect(received.count == 10)
        #expect(Set(received.map(\.id)) == ["ephkey_1"])
        #expect(provider.calls == 1)
        #expect(!keys.isFetching)
        #expect(keys.waitingCount == 0)
    }

    @Test func providerErrorReachesEveryWaiterAndTheNextCallRetries() async throws {
        let clock = NowBox()
        let gate = Gate()
        let provider = ScriptedKeyProvider([.error(BackendDown(), gate: gate), .key(ephemeralKeyJSON(2))])
        let keys = manager(provider, clock: clock)

        let callers = await waitingCallers(3, on: keys)
        gate.open()
        for caller in callers {
            await #expect(throws: BackendDown.self) { try await caller.value }
        }
        #expect(keys.currentKey == nil, "nothing stored")
        #expect(!keys.isFetching, "the pending fetch is cleared")

        #expect(try await keys.key().id == "ephkey_2")
        #expect(provider.calls == 2)
    }

    @Test func undecodableJSONIsTheEphemeralKeyDecodingError() async throws {
        let clock = NowBox()
        let gate = Gate()
        let provider = ScriptedKeyProvider([
            .key(["id": "ephkey_1", "unexpected": true], gate: gate), .key(ephemeralKeyJSON(2)),
        ])
        let keys = manager(provider, clock: clock)

        let callers = await waitingCallers(2, on: keys)
        gate.open()
        for caller in callers {
            let error = try #require(await result(caller).failure as? StripeError)
            #expect(error.kind == .ephemeralKeyDecoding)
        }
        #expect(keys.currentKey == nil)
        #expect(try await keys.key().id == "ephkey_2", "the next call fetches again")
        #expect(provider.calls == 2)
    }

    @Test(arguments: [
        ephemeralKeyJSON(customer: nil),
        ephemeralKeyJSON(associated: [["type": "issuing.card", "id": "ic_1"]]),
    ])
    func keyWithoutAnAssociatedCustomerIsADecodingError(json: JSONValue) async throws {
        let provider = ScriptedKeyProvider([.key(json)])
        let keys = manager(provider, clock: NowBox())
        let error = try #require(await outcome { try await keys.key() }.failure as? StripeError)
        #expect(error.kind == .ephemeralKeyDecoding)
        #expect(keys.currentKey == nil)
        #expect(keys.customerID == nil)
    }

    @Test func eagerRefreshAtMostOncePer3600Seconds() async throws {
        let clock = NowBox()
        // Every key is inside the margin from t0 + 540 s on, so only the throttle can say no.
        let provider = ScriptedKeyProvider((1...3).map { .key(ephemeralKeyJSON($0, expiresIn: 600)) })
        let keys = manager(provider, clock: clock)

        #expect(keys.refreshEagerly())
        #expect(keys.providerCalls == 1, "counted when the fetch starts")
        #expect(try await keys.key().id == "ephkey_1", "joins or reuses the eager fetch")
        #expect(provider.calls == 1)
        #expect(!keys.refreshEagerly(), "the key is unexpired")

        clock.set(t0.addingTimeInterval(600))
        #expect(!keys.refreshEagerly(), "expired, but refreshed eagerly 600 s ago")
        clock.set(t0.addingTimeInterval(3600))
        #expect(!keys.refreshEagerly(), "exactly 3600 s ago is not more than 3600 s")
        #expect(keys.providerCalls == 1)

        clock.set(t0.addingTimeInterval(3601))
        #expect(keys.refreshEagerly(), "the SDK's quirk would refuse this forever")
        #expect(try await keys.key().id == "ephkey_2")
        #expect(provider.calls == 2)

        clock.set(t0.addingTimeInterval(3602))
        #expect(!keys.refreshEagerly())
        clock.set(t0.addingTimeInterval(7202))
        #expect(keys.refreshEagerly())
        #expect(try await keys.key().id == "ephkey_3")
        #expect(provider.calls == 3)
    }

    @Test func eagerRefreshJoinsAFetchInFlight() async throws {
        let gate = Gate()
        let provider = ScriptedKeyProvider([.key(ephemeralKeyJSON(1), gate: gate)])
        let keys = manager(provider, clock: NowBox())
        let callers = await waitingCallers(1, on: keys)
        #expect(keys.refreshEagerly())
        gate.open()
        #expect(try await callers[0].value.id == "ephkey_1")
        #expect(provider.calls == 1)
    }

    @Test func cancellingOneWaiterLeavesTheOthersServed() async throws {
        let gate = Gate()
        let provider = ScriptedKeyProvider([.key(ephemeralKeyJSON(1), gate: gate)])
        let keys = manager(provider, clock: NowBox())

        let callers = await waitingCallers(3, on: keys)
        await gate.arrivals(1)
        callers[1].cancel()
        // Returns while the fetch is still held: the cancelled caller stopped waiting at once.
        await #expect(throws: CancellationError.self) { try await callers[1].value }
        #expect(keys.waitingCount == 2)
        #expect(keys.isFetching)

        gate.open()
        #expect(try await callers[0].value.id == "ephkey_1")
        #expect(try await callers[2].value.id == "ephkey_1")
        #expect(!provider.sawCancellation, "the shared fetch was not cancelled")
        #expect(provider.calls == 1)
    }

    @Test func aFetchAllWaitersAbandonedStillStoresItsKey() async throws {
        let gate = Gate()
        let provider = ScriptedKeyProvider([.key(ephemeralKeyJSON(1), gate: gate)])
        let keys = manager(provider, clock: NowBox())

        let callers = await waitingCallers(2, on: keys)
        for caller in callers { caller.cancel() }
        for caller in callers { await #expect(throws: CancellationError.self) { try await caller.value } }
        gate.open()
        await until { !keys.isFetching }
        #expect(keys.currentKey?.id == "ephkey_1")
        #expect(try await keys.key().id == "ephkey_1")
        #expect(provider.calls == 1)
    }

    @Test func anAlreadyCancelledCallerStartsNoFetch() async throws {
        let provider = ScriptedKeyProvider([])
        let keys = manager(provider, clock: NowBox())
        let caller = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await keys.key()
        }
        await #expect(throws: CancellationError.self) { try await caller.value }
        #expect(provider.calls == 0)
        #expect(!keys.isFetching)
    }
}

func outcome<T>(_ body: () async throws -> T) async -> Result<T, any Error> {
    do { return .success(try await body()) } catch { return .failure(error) }
}

extension Result {
    var failure: Failure? { if case .failure(let error) = self { error } else { nil } }
}
