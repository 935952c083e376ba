import JSONRPC
import StpdProtocol
import StripeAPI
import Testing

@testable import StpdCore

/// The last selected payment method, as 23.x keeps it: for `STPCustomerContext` alone (a `stripe`
/// session here), and untouched by a detach.
@Suite struct LastSelectedTests {
    struct Backend: CustomerBackend, CustomerBackendFactory {
        func retrieveCustomer() async throws -> Customer { try Customer(json: ["id": "cus_1"], codingPath: []) }
        func listPaymentMethods() async throws -> [PaymentMethod] { [] }
        func attachPaymentMethod(id: String) async throws {}
        func detachPaymentMethod(id: String) async throws {}
        func updateShipping(_ shipping: StripeAddress) async throws {}
        func clearCache() {}
        func makeBackend(session: String, owner: UInt32, adapter: SessionAdapter) throws -> any CustomerBackend {
            self
        }
    }

    @Test(arguments: [
        (SessionAdapter(kind: .stripe, keyProvider: .init(kind: .app)), true),
        (SessionAdapter(kind: .backend, url: "http://127.0.0.1:1/api"), false), (SessionAdapter(kind: .app), false),
    ])
    func onlyAStripeSessionRemembersAContextsChoice(adapter: SessionAdapter, remembers: Bool) async throws {
        let log = try await EventLog(store: InMemoryStateStore(), views: DomainViews())
        let sessions = CustomerSessions(log: log, factory: Backend(), background: BackgroundWork())
        let caller = Caller(uid: 1000)
        let session = try await sessions.open(for: caller, adapter: adapter, prefetch: false).id
        let context: any PaymentContextCustomer = sessions
        try await context.select(session: session, paymentMethod: "pm_1", as: caller)
        let remembered = try await context.lastSelected(session: session, customer: "cus_1", as: caller)
        #expect(remembered == (remembers ? "pm_1" : nil))
        // Detaching it leaves the choice (a context loading later finds it among no options).
        _ = try await sessions.detach(id: session, paymentMethod: "pm_1", for: caller)
        #expect(try await context.lastSelected(session: session, customer: "cus_1", as: caller) == remembered)
    }
}
