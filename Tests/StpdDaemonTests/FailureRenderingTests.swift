import Foundation
import JSONRPC
import StpdDaemon
import StpdProtocol
import StripeAPI
import Testing

@testable import StpdCore

/// A failure an object keeps is typed and Codable, and clients see it as the contract's error
/// object. Rows written before failures were typed hold that error object itself: they still
/// load, and show the same error.
@Suite struct FailureRenderingTests {
    let wire = WireFailures()

    static let failures: [Failure] = [
        .domain(.pendingActionTimedOut(action: "pact_1", kind: "didCreatePaymentResult", detail: "no answer")),
        .domain(.paymentFailed(detail: nil, data: [:])),
        .appRequest(.timedOut(operation: "retrieveCustomer", after: .milliseconds(1500))),
        .stripe(
            StripeError(
                kind: .card, type: "card_error", code: "card_declined", cardErrorCode: .cardDeclined,
                declineCode: "insufficient_funds", message: "Your card has insufficient funds.", requestID: "req_1",
                httpStatus: 402)),
        .described(["code": 1006, "message": "The merchant's backend answered with an error", "data": nil]),
    ]

    @Test(arguments: failures)
    func aFailureReadsBackAsItWasWritten(_ failure: Failure) throws {
        #expect(try JSONCoding.typed(Failure.self, from: JSONCoding.value(of: failure)) == failure)
    }

    @Test(arguments: failures)
    func anErrorStoredAsClientsSawItIsShownTheSame(_ failure: Failure) throws {
        let seen = wire.render(failure)
        #expect(seen["code"]?.intValue != nil)
        #expect(wire.render(try JSONCoding.typed(Failure.self, from: seen)) == seen)
    }

    /// A payment context waiting on a redirect acts on the customer closing its page.
    @Test(arguments: ["Done tapped", nil] as [String?])
    func aCancellationStoredAsClientsSawItIsStillOne(_ message: String?) throws {
        var data: [String: JSONValue] = ["sdkDomain": "com.stripe.lib", "sdkCode": 80]
        data["message"] = message.map(JSONValue.string)
        let seen = wire.render(.domain(.redirectCancelled(detail: message, data: data)))
        let read = try JSONCoding.typed(Failure.self, from: seen)
        #expect(read.isRedirectCancelled)
        #expect(wire.render(read) == seen)
    }

    @Test func aPaymentContextRowWithUntypedErrorsLoads() throws {
        var record = PaymentContextRecord(
            id: "pctx_1", owner: 1000, session: "cses_1", amount: 100, currency: "USD", country: "US",
            configuration: .init(), validatesShipping: true, defaultPaymentMethod: nil,
            pendingActionTimeout: 600, createdAt: Date(timeIntervalSince1970: 0),
            updatedAt: Date(timeIntervalSince1970: 0))
        record.loadError = Self.failures[2]
        record.lastResult = .init(status: .error, error: Self.failures[3])
        record.shippingError = Self.failures[0]
        record.lastShippingSaveError = Self.failures[4]
        let view = try WireViews().paymentContext(record)
        let old = try Self.untyped(
            JSONCoding.value(of: record), as: view,
            [
                "loadError": "loadError", "lastResult": "lastResult", "shippingError": "shippingError",
                "lastShippingSaveError": "shippingSaveError",
            ])
        let loaded = try JSONCoding.typed(PaymentContextRecord.self, from: old)
        #expect(try WireViews().paymentContext(loaded) == view)
    }

    @Test func aRedirectRowWithUntypedErrorsLoads() throws {
        var record = RedirectRecord(
            id: "rdr_1", owner: 1000, status: .completed, kind: .paymentIntent, clientSecret: "pi_1_secret_x",
            followUpTimeout: 10, createdAt: Date(timeIntervalSince1970: 0), updatedAt: Date(timeIntervalSince1970: 0))
        let cancelled = Failure.domain(
            .redirectCancelled(detail: nil, data: ["sdkDomain": "com.stripe.lib", "sdkCode": 80]))
        record.completion = .init(trigger: "closed", url: nil, error: cancelled, at: "2026-01-01T00:00:00Z")
        record.outcome = .init(result: "error", error: cancelled, object: nil, at: "2026-01-01T00:00:00Z")
        let view = try WireViews().redirect(record).json
        let old = try Self.untyped(
            JSONCoding.value(of: record), as: view, ["completion": "completion", "outcome": "outcome"])
        let loaded = try JSONCoding.typed(RedirectRecord.self, from: old)
        #expect(try WireViews().redirect(loaded).json == view)
        #expect(loaded.outcome?.error?.isRedirectCancelled == true)
    }

    /// `state` as the daemon wrote it before failures were typed: each of its members named here
    /// as `view`'s member of the name it maps to.
    static func untyped(_ state: JSONValue, as view: JSONValue, _ members: [String: String]) throws -> JSONValue {
        var fields = try #require(state.objectValue)
        for (name, shown) in members { fields[name] = view[shown] }
        return .object(fields)
    }
}
