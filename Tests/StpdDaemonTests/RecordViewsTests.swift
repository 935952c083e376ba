import Foundation
import JSONRPC
import StpdProtocol
import Testing

@testable import StpdCore
@testable import StpdDaemon

/// The edge's `RecordViews` (`WireViews`): each kind's record as the contract's view. The domain's
/// tests see records as themselves (`DomainViews`); what clients see of them is checked here. An
/// event's view is built once, when its change commits, and the reply shows that same view.
@Suite struct RecordViewsTests {
    static let t0 = Date(timeIntervalSince1970: 1_800_000_000)
    let views = WireViews()

    /// The reply to a change is the view its event was encoded from (not built again), and a record
    /// read without a change shows the same.
    func expectReplyIsTheEvent<R, V: Encodable & Equatable>(
        _ record: R, _ state: PublicState, _ show: (Shown<R>) -> V, sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let reply = show(Shown(record, view: state.view))
        #expect(state.view is V, sourceLocation: sourceLocation)
        #expect(try JSONCoding.value(of: reply) == state.json, sourceLocation: sourceLocation)
        #expect(show(Shown(record)) == reply, "a read builds the same view", sourceLocation: sourceLocation)
    }

    // MARK: Customer sessions

    static func customerSession() -> CustomerSessionRecord {
        let adapter = SessionAdapter(
            kind: .stripe,
            keyProvider: .init(kind: .backend, url: "https://example.com/key", authorization: "Bearer key-secret"))
        var record = CustomerSessionRecord(id: "cses_1", owner: 1000, adapter: adapter, createdAt: t0)
        record.customerId = "cus_1"
        record.lastSelectedPaymentMethod = "pm_1"
        record.customerFetchedAt = t0 + 1
        record.lastError = ["operation": "load", "message": "down"]
        record.updatedAt = t0 + 2
        return record
    }

    @Test func aCustomerSessionShowsItsAdapterWithoutCredentials() throws {
        let state = try views.customerSession(Self.customerSession())
        let json = state.json
        #expect(json["id"] == "cses_1")
        #expect(json["status"] == "open")
        #expect(json["adapter"]?["kind"] == "stripe")
        #expect(json["adapter"]?["keyProvider"]?["authorization"] == "[REDACTED]")
        #expect(json["adapter"]?["keyProvider"]?["url"] == "https://example.com/key")
        #expect(json["customerId"] == "cus_1")
        #expect(json["lastSelectedPaymentMethod"] == "pm_1")
        #expect(json["customerFetchedAt"] == .string((Self.t0 + 1).formatted(.iso8601)))
        #expect(json["paymentMethodsFetchedAt"] == nil)
        #expect(json["lastError"]?["operation"] == "load")
        #expect(json["createdAt"] == .string(Self.t0.formatted(.iso8601)))
        #expect(json["updatedAt"] == .string((Self.t0 + 2).formatted(.iso8601)))
        #expect(!"\(json)".contains("key-secret"))
    }

    @Test func aCustomerSessionsReplyIsItsEventsView() throws {
        let record = Self.customerSession()
        try expectReplyIsTheEvent(record, try views.customerSession(record)) { CustomerSessionView($0) }
    }
}
