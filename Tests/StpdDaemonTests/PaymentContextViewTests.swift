import Foundation
import JSONRPC
import StpdProtocol
import Testing

@testable import StpdCore
@testable import StpdDaemon

/// A payment context as clients see it (`paymentContext.*` replies and events), built from the
/// domain's record at the edge: every member of the contract's view, pinned.
@Suite struct PaymentContextViewTests {
    static let failures = WireViews.failures
    static let t0 = Date(timeIntervalSince1970: 1_700_000_000)
    static let address = ShippingAddressParams(
        name: "Ada Lovelace", phone: "415-555-0100", email: "ada@example.com",
        address: .init(line1: "1 Market St", city: "San Francisco", state: "CA", postalCode: "94107", country: "US"))
    static let timedOut = Failure.domain(
        .pendingActionTimedOut(action: "pact_0", kind: "didUpdateShippingAddress", detail: "no answer"))
    static let declined = Failure.domain(.paymentFailed(detail: "declined", data: ["code": "card_declined"]))
    static let unsaved = Failure.described(["code": 1006, "message": "The merchant's backend answered with an error"])

    /// A context with every member set: the app's own summary items, a shipping method selected, a
    /// payment waiting for the app, and each kind of failure it keeps.
    static func busy() -> PaymentContextRecord {
        var record = PaymentContextRecord(
            id: "pctx_1", owner: 1000, session: "cses_1", amount: 1000, currency: "USD", country: "US",
            configuration: .init(requiredShippingAddressFields: ["postalAddress"], companyName: "Shop"),
            validatesShipping: true, defaultPaymentMethod: nil, pendingActionTimeout: 600, createdAt: t0,
            updatedAt: t0.addingTimeInterval(5))
        record.loading = false
        record.options = [
            .init(id: "pm_visa", label: "Visa 4242", type: "card", paymentMethod: ["id": "pm_visa", "type": "card"])
        ]
        record.selected = "pm_visa"
        record.shippingAddress = address
        record.shippingMethods = [
            .init(identifier: "std", label: "Standard", amount: 500),
            .init(identifier: "exp", label: "Express", detail: "Tomorrow", amount: 1500),
        ]
        record.selectedShippingMethod = "exp"
        record.customSummaryItems = [
            .init(label: "Book", amount: 1800), .init(label: "Tax", amount: 200), .init(label: "Total", amount: 2000),
        ]
        record.requestState = .requestingPayment
        record.pending = .init(
            id: "pact_1", kind: .didCreatePaymentResult, deadline: t0.addingTimeInterval(600),
            payload: ["paymentMethod": ["id": "pm_visa"]])
        record.lastResult = .init(status: .error, error: declined)
        record.shippingError = timedOut
        record.lastShippingSaveError = unsaved
        return record
    }

    /// What an event carries (the log asks `WireViews`), which is what a reply shows.
    static func shown(_ record: PaymentContextRecord) throws -> JSONValue {
        let carried = try WireViews().paymentContext(record)
        #expect(try JSONCoding.value(of: PaymentContextView(record)) == carried, "a reply and its event agree")
        return carried
    }

    @Test func everyMemberOfABusyContext() throws {
        let expected: JSONValue = [
            "id": "pctx_1", "object": "payment_context", "customerSession": "cses_1", "status": "open",
            "amount": 1000, "currency": "USD", "country": "US",
            "configuration": ["requiredShippingAddressFields": ["postalAddress"], "companyName": "Shop"],
            "validatesShipping": true, "loading": false,
            "paymentOptions": [
                [
                    "id": "pm_visa", "label": "Visa 4242", "type": "card",
                    "paymentMethod": ["id": "pm_visa", "type": "card"],
                ]
            ],
            "selectedPaymentMethod": "pm_visa",
            "shippingAddress": try JSONCoding.value(of: Self.address),
            "shippingAddressNeedsVerification": false,
            "shippingMethods": [
                ["identifier": "std", "label": "Standard", "amount": 500],
                ["identifier": "exp", "label": "Express", "detail": "Tomorrow", "amount": 1500],
            ],
            "selectedShippingMethod": "exp",
            // The app's items, the selected method before the total, the total grown by it.
            "paymentSummaryItems": [
                ["label": "Book", "amount": 1800, "decimal": "18.00"],
                ["label": "Tax", "amount": 200, "decimal": "2.00"],
                ["label": "Express", "amount": 1500, "decimal": "15.00"],
                ["label": "Total", "amount": 3500, "decimal": "35.00"],
            ],
            "paymentAmount": 3500, "isReadyForPayment": true, "requestState": "requestingPayment",
            "pendingAction": [
                "id": "pact_1", "kind": "didCreatePaymentResult", "deadline": "2023-11-14T22:23:20Z",
                "payload": ["paymentMethod": ["id": "pm_visa"]],
            ],
            "lastResult": ["status": "error", "error": Self.failures.render(Self.declined)],
            "shippingError": Self.failures.render(Self.timedOut),
            "shippingSaveError": Self.failures.render(Self.unsaved),
            "createdAt": "2023-11-14T22:13:20Z", "updatedAt": "2023-11-14T22:13:25Z",
        ]
        #expect(try Self.shown(Self.busy()) == expected)
        #expect(Self.failures.render(Self.declined)["code"]?.intValue != nil, "failures read as wire errors")
    }

    /// A new context: loading, stpd's own summary item (the total labelled with the company name),
    /// no optional member at all; a result without an error shows it as null.
    @Test func aNewContextShowsNoOptionalMember() throws {
        var record = PaymentContextRecord(
            id: "pctx_2", owner: 1000, session: "cses_1", amount: 500, currency: "JPY", country: "JP",
            configuration: .init(companyName: "Shop"), validatesShipping: false, defaultPaymentMethod: "pm_x",
            pendingActionTimeout: 600, createdAt: Self.t0, updatedAt: Self.t0)
        let expected: JSONValue = [
            "id": "pctx_2", "object": "payment_context", "customerSession": "cses_1", "status": "open",
            "amount": 500, "currency": "JPY", "country": "JP", "configuration": ["companyName": "Shop"],
            "validatesShipping": false, "loading": true, "paymentOptions": [],
            "shippingAddressNeedsVerification": false,
            "paymentSummaryItems": [["label": "Shop", "amount": 500, "decimal": "500"]],
            "paymentAmount": 500, "isReadyForPayment": false, "requestState": "none",
            "createdAt": "2023-11-14T22:13:20Z", "updatedAt": "2023-11-14T22:13:20Z",
        ]
        #expect(try Self.shown(record) == expected)

        record.loading = false
        record.customSummaryItems = []
        record.lastResult = .init(status: .success, error: nil)
        let finished = try Self.shown(record)
        #expect(finished["lastResult"] == ["status": "success", "error": nil])
        #expect(finished["paymentSummaryItems"] == [], "the app set no items: none")
        #expect(finished["isReadyForPayment"] == false, "nothing selected")
    }
}
