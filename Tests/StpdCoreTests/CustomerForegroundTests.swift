import Foundation
import JSONRPC
import StpdProtocol
import StripeAPI
import Testing

@testable import StpdCore

/// app.foreground reaches customer sessions as the SDK's key manager hears the app become active.
struct CustomerForegroundTests {
    struct OneBackend: CustomerBackendFactory {
        let backend: any CustomerBackend
        func makeBackend(session: String, owner: UInt32, adapter: SessionAdapter) throws -> any CustomerBackend {
            backend
        }
    }

    struct NoStripe: StripeAPIClient {
        struct Unused: Error {}
        func send<T: Decodable>(_ request: StripeRequest, as type: T.Type) async throws -> T { throw Unused() }
    }

    @Test func foregroundRefreshesAnExpiredKeyOfTheCallersOpenSessionsOnly() async throws {
        let provider = ScriptedKeyProvider([.key(ephemeralKeyJSON(1, expiresIn: 600))])
        let keys = EphemeralKeyManager(provider: provider, now: NowBox().clock)
        let context = StripeCustomerContext(keys: keys, stripe: NoStripe())
        let log = try await EventLog(store: InMemoryStateStore(), views: DomainViews())
        let sessions = CustomerSessions(log: log, factory: OneBackend(backend: context), background: BackgroundWork())
        let adapter = SessionAdapter(kind: .stripe, keyProvider: .init(kind: .app))
        let session = try await sessions.open(for: Caller(uid: 1000), adapter: adapter, prefetch: false)

        await sessions.foreground(for: Caller(uid: 2000))
        #expect(keys.providerCalls == 0, "another user's app says nothing about this session")
        await sessions.foreground(for: Caller(uid: 1000))
        #expect(keys.providerCalls == 1, "no key yet: fetched at once")
        #expect(try await keys.key().id == "ephkey_1")
        await sessions.foreground(for: Caller(uid: 1000))
        #expect(keys.providerCalls == 1, "the key is unexpired")

        #expect(try await sessions.sweep(before: .distantFuture) == 0, "an open session stays")
        _ = try await sessions.close(id: session.id, for: Caller(uid: 1000))
        await sessions.foreground(for: .daemon)
        #expect(keys.providerCalls == 1)
        // Closed: removed once the retention age has passed.
        #expect(try await sessions.sweep(before: .distantPast) == 0)
        #expect(try await sessions.sweep(before: .distantFuture) == 1)
        #expect(
            await domainError { try await sessions.get(id: session.id, for: Caller(uid: 1000)) }?.name == "notFound")
    }
}
