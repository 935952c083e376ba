import Foundation
import JSONRPC
import StpdProtocol
import StripeAPI
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

    // MARK: Redirect sessions

    static func redirect() -> RedirectRecord {
        var record = RedirectRecord(
            id: "rdr_1", owner: 1000, status: .completed, kind: .paymentIntent, clientSecret: "pi_1_secret_x",
            followUpTimeout: 10, createdAt: t0, updatedAt: t0 + 3)
        record.paymentIntentId = "pi_1"
        record.redirectURL = "https://hooks.stripe.com/redirect/x"
        record.returnURL = "myshop://done"
        record.mode = .inApp
        record.opener = .app
        record.openURL = record.redirectURL
        let cancelled = Failure.domain(
            .redirectCancelled(detail: nil, data: ["sdkDomain": "com.stripe.lib", "sdkCode": 80]))
        record.completion = .init(trigger: "closed", url: nil, error: cancelled, at: "2026-01-01T00:00:00Z")
        record.outcome = .init(
            result: "succeeded", intentResult: .succeeded, error: nil, object: ["id": "pi_1"],
            at: "2026-01-01T00:00:01Z")
        return record
    }

    @Test func aRedirectSessionShowsItsCompletionsErrorAsTheContractsError() throws {
        let json = try views.redirect(Self.redirect()).json
        #expect(json["id"] == "rdr_1")
        #expect(json["status"] == "completed")
        #expect(json["kind"] == "paymentIntent")
        #expect(json["paymentIntentId"] == "pi_1")
        #expect(json["mode"] == "inApp")
        #expect(json["openURL"] == "https://hooks.stripe.com/redirect/x")
        #expect(json["followUpTimeout"] == 10)
        #expect(json["completion"]?["trigger"] == "closed")
        #expect(json["completion"]?["error"] == WireFailures().render(Self.redirect().completion!.error!))
        #expect(json["completion"]?["error"]?["code"]?.intValue != nil)
        #expect(json["outcome"]?["intentResult"] == "succeeded")
        #expect(json["outcome"]?["object"]?["id"] == "pi_1")
        #expect(json["updatedAt"] == .string((Self.t0 + 3).formatted(.iso8601)))
        #expect(!"\(json)".contains("secret"), "the client secret stays in the record")
    }

    @Test func aRedirectSessionsReplyIsItsEventsView() throws {
        let record = Self.redirect()
        try expectReplyIsTheEvent(record, try views.redirect(record)) { RedirectSessionView($0) }
    }

    // MARK: Intents

    static let intentFields: JSONValue = [
        "id": "pi_1", "object": "payment_intent", "status": "requires_action", "amount": 1000, "currency": "eur",
        "next_action": [
            "type": "redirect_to_url",
            "redirect_to_url": ["url": "https://hooks.stripe.com/redirect/x", "return_url": "myshop://done"],
        ],
    ]

    static func intent() -> IntentRecord<PaymentIntent> {
        let poll = IntentRecord<PaymentIntent>.Poll(
            id: "ipoll_1", status: .finished, purpose: .awaitCustomer, entry: .confirm,
            nextActionType: "redirect_to_url", startedAt: t0, deadline: t0 + 3600, result: .failed,
            error: .domain(.paymentFailed(detail: "declined", data: [:])))
        return IntentRecord(
            id: "pi_1", owner: 1000, clientSecret: "pi_1_secret_x", intent: intentFields, poll: poll, createdAt: t0,
            updatedAt: t0 + 4)
    }

    @Test func anIntentShowsItsPollAndTheIntentWithoutItsSecret() throws {
        let json = try views.intent(Self.intent()).json
        #expect(json["id"] == "pi_1")
        #expect(json["object"] == "payment_intent_record")
        #expect(json["status"] == "requires_action")
        // The next action as last read, though the record keeps the intent without its secret.
        #expect(json["nextAction"]?["type"] == "redirect_to_url")
        #expect(json["nextAction"]?["kind"] == "redirect")
        #expect(json["poll"]?["id"] == "ipoll_1")
        #expect(json["poll"]?["status"] == "finished")
        #expect(json["poll"]?["result"] == "failed")
        #expect(json["poll"]?["deadline"] == .string((Self.t0 + 3600).formatted(.iso8601)))
        #expect(json["poll"]?["error"] == WireFailures().render(Self.intent().poll!.error!))
        #expect(json["intent"] == Self.intentFields)
        #expect(!"\(json)".contains("secret"), "the client secret stays in the record")
    }

    @Test func anIntentsReplyIsItsEventsView() throws {
        let record = Self.intent()
        try expectReplyIsTheEvent(record, try views.intent(record)) { IntentView($0) }
    }

    /// A confirmation's answer: the next action names the session opened for it, and the poll is
    /// the one the intent's event showed.
    @Test func aConfirmationsAnswerShowsTheSessionAndThePollItStarted() throws {
        var fields = try #require(Self.intentFields.objectValue)
        fields["client_secret"] = "pi_1_secret_x"
        let intent = try PaymentIntent(json: .object(fields))
        let session = Self.redirect()
        let polled = Self.intent()
        let handled = PaymentHandler.Handled(
            intent: intent, result: .pending, redirect: Shown(session, view: try views.redirect(session).view),
            poll: Shown(polled, view: try views.intent(polled).view))
        let answer = IntentAnswer<PaymentIntentNaming>(handled)
        #expect(answer.result == .pending)
        #expect(answer.nextAction == NextActionView(intent.nextAction!, session: "rdr_1"))
        #expect(answer.redirect == RedirectSessionView(session))
        #expect(answer.poll == IntentView(polled).poll)
        #expect(answer.intent["client_secret"] == nil)
    }

    // MARK: Sources

    static func source() throws -> SourceRecord {
        let source = try Source(
            json: [
                "id": "src_1", "object": "source", "type": "sofort", "status": "pending", "flow": "redirect",
                "livemode": false, "client_secret": "src_1_secret", "amount": 1099, "currency": "eur",
                "usage": "single_use", "sofort": [:],
                "redirect": [
                    "status": "pending", "url": "https://hooks.stripe.com/redirect/src_1",
                    "return_url": "myshop://done",
                ],
            ], codingPath: [])
        return SourceRecord(source: source, owner: 1000, clientSecret: "src_1_secret", at: t0)
    }

    @Test func aSourcesReplyIsItsEventsView() throws {
        let record = try Self.source()
        let state = try views.source(record)
        #expect(state.json["status"] == "pending")
        #expect(state.json["redirect"]?["returnURL"] == "myshop://done")
        try expectReplyIsTheEvent(record, state) { SourceView($0) }
    }
}
