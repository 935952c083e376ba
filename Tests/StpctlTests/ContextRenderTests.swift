import ArgumentParser
import Foundation
import JSONRPC
import StpctlKit
import Testing

@Suite struct ContextRenderTests {
    let utc = TimeZone(identifier: "UTC")!
    let now = Date(timeIntervalSince1970: 1_735_787_045)  // 2025-01-02T03:04:05Z

    func card(_ id: String, _ brand: String, _ last4: String) -> JSONValue {
        [
            "id": .string(id), "type": "card",
            "card": ["brand": .string(brand), "last4": .string(last4), "exp_month": 12, "exp_year": 2030],
        ]
    }

    func option(_ id: String, _ label: String, _ brand: String, _ last4: String) -> JSONValue {
        ["id": .string(id), "label": .string(label), "type": "card", "paymentMethod": card(id, brand, last4)]
    }

    func context(_ extra: [String: JSONValue] = [:]) -> JSONValue {
        var members: [String: JSONValue] = [
            "id": "pctx_1", "object": "payment_context", "customerSession": "cses_1", "status": "open",
            "amount": 1099, "currency": "USD", "country": "US", "configuration": ["companyName": "Rocket Rides"],
            "validatesShipping": false, "loading": false, "loadError": .null,
            "paymentOptions": [
                option("pm_1", "Mastercard 4444", "mastercard", "4444"), option("pm_2", "Visa 4242", "visa", "4242"),
            ],
            "selectedPaymentMethod": "pm_2", "shippingAddress": .null, "shippingAddressNeedsVerification": false,
            "shippingMethods": .null, "selectedShippingMethod": .null,
            "paymentSummaryItems": [["label": "Rocket Rides", "amount": 1099, "decimal": "10.99"]],
            "paymentAmount": 1099, "isReadyForPayment": true, "requestState": "none", "needs": .null,
            "pendingAction": .null, "redirect": .null, "lastResult": .null, "shippingError": .null,
            "shippingSaveError": .null, "createdAt": "2025-01-02T03:04:05Z", "updatedAt": "2025-01-02T03:04:06Z",
        ]
        members.merge(extra) { _, new in new }
        return .object(members)
    }

    @Test func aLoadedContextWithItsSelectionMarked() {
        #expect(
            ContextRender.context(context(), now: now, timeZone: utc) == """
                context:       pctx_1
                status:        open
                session:       cses_1
                amount:        10.99 USD
                total:         10.99 USD
                summary:       Rocket Rides  10.99 USD
                loading:       no
                options:         pm_1  Mastercard 4444
                               * pm_2  Visa 4242
                ready to pay:  yes
                request state: none
                needs:         nothing
                last result:   none
                created:       2025-01-02 03:04:05
                updated:       2025-01-02 03:04:06
                """)
    }

    @Test func aPendingPaymentResultAndItsDeadline() {
        let pending = context([
            "requestState": "requestingPayment",
            "pendingAction": [
                "id": "pact_9", "kind": "didCreatePaymentResult", "deadline": "2025-01-02T03:14:05Z",
                "payload": ["paymentMethod": card("pm_2", "visa", "4242")],
            ],
        ])
        let text = ContextRender.context(pending, now: now, timeZone: utc)
        #expect(text.contains("request state:  requestingPayment"))
        #expect(text.contains("pending action: pact_9 didCreatePaymentResult: pm_2 Visa 4242 12/30"))
        #expect(text.contains("answer by:      2025-01-02 03:14:05, 10m 0s left"))
        #expect(ContextRender.state(pending) == "pending pact_9")
    }

    @Test func shippingMethodsChangeTheTotal() {
        let shipped = context([
            "currency": "EUR", "validatesShipping": true,
            "shippingAddress": [
                "name": "Jenny Rosen", "phone": "+1 555 555 0100",
                "address": [
                    "line1": "1 Main St", "city": "Springfield", "state": "CA", "postalCode": "94105", "country": "US",
                ],
            ],
            "shippingAddressNeedsVerification": true,
            "shippingMethods": [
                ["identifier": "ups", "label": "UPS Ground", "amount": 599, "detail": "3-5 days"],
                ["identifier": "fedex", "label": "FedEx", "amount": 1299],
            ],
            "selectedShippingMethod": "fedex",
            "paymentSummaryItems": [
                ["label": "FedEx", "amount": 1299, "decimal": "12.99"],
                ["label": "", "amount": 2398, "decimal": "23.98"],
            ],
            "paymentAmount": 2398,
        ])
        let text = ContextRender.context(shipped, now: now, timeZone: utc)
        #expect(
            text.contains(
                """
                amount:           10.99 EUR
                total:            23.98 EUR
                summary:          FedEx    12.99 EUR
                                  (total)  23.98 EUR
                """))
        #expect(
            text.contains(
                """
                shipping:         Jenny Rosen, 1 Main St, Springfield CA 94105, US, +1 555 555 0100 (needs verification)
                shipping methods:   ups    UPS Ground  5.99 EUR   3-5 days
                                  * fedex  FedEx       12.99 EUR
                """))
        // No shipping rows for a context that does not deal with shipping.
        #expect(!ContextRender.context(context(), timeZone: utc).contains("shipping"))
        let refused = ContextRender.context(
            context(["validatesShipping": true, "shippingError": ["code": 5003, "message": "We do not ship there"]]))
        #expect(refused.contains("shipping:         none"))
        #expect(refused.contains("shipping refused: error 5003: We do not ship there"))
    }

    @Test func loadingNeedsAndResults() {
        let loading = context([
            "loading": true, "paymentOptions": [], "selectedPaymentMethod": .null, "isReadyForPayment": false,
        ])
        let text = ContextRender.context(loading, timeZone: utc)
        #expect(text.contains("loading:       yes"))
        #expect(text.contains("options:       none yet (loading)"))
        #expect(ContextRender.state(loading) == "loading")

        let failed = context(["loadError": ["code": 3006, "message": "Could not reach Stripe"], "paymentOptions": []])
        #expect(
            ContextRender.context(failed, timeZone: utc).contains("load error:    error 3006: Could not reach Stripe"))
        #expect(ContextRender.state(failed) == "load failed")

        let needs = context([
            "requestState": "requestingPayment", "needs": "paymentOption", "selectedPaymentMethod": .null,
        ])
        #expect(ContextRender.context(needs, timeZone: utc).contains("needs:         paymentOption"))
        #expect(ContextRender.state(needs) == "needs paymentOption")
        #expect(ContextRender.state(context()) == "ready")

        #expect(ContextRender.lastResult(.null) == nil)
        #expect(ContextRender.lastResult(["status": "success", "error": .null]) == "success")
        #expect(ContextRender.lastResult(["status": "userCancellation"]) == "userCancellation")
        #expect(
            ContextRender.lastResult(["status": "error", "error": ["code": 5003, "message": "Your card was declined"]])
                == "error 5003: Your card was declined")
        #expect(
            ContextRender.context(context(["lastResult": ["status": "success", "error": .null]]), timeZone: utc)
                .contains("last result:   success"))
    }

    @Test func aShippingAddressToValidate() {
        let pending: JSONValue = [
            "id": "pact_3", "kind": "didUpdateShippingAddress", "deadline": "2025-01-02T03:05:00Z",
            "payload": ["address": ["name": "Jenny Rosen", "address": ["line1": "1 Main St", "country": "US"]]],
        ]
        #expect(ContextRender.pendingAction(pending) == "pact_3 didUpdateShippingAddress: Jenny Rosen, 1 Main St, US")
        #expect(ContextRender.addressLine(["address": [:]]) == "(empty)")
    }

    @Test func contextsTable() {
        let paid = context(["id": "pctx_2", "lastResult": ["status": "success", "error": .null], "status": "closed"])
        let waiting = context([
            "id": "pctx_3", "currency": "JPY", "paymentAmount": 500, "selectedPaymentMethod": .null,
            "isReadyForPayment": false,
        ])
        #expect(
            ContextRender.contexts([context(), paid, waiting], timeZone: utc) == """
                ID      STATUS  SESSION  TOTAL      SELECTED  STATE      LAST RESULT  UPDATED
                pctx_1  open    cses_1   10.99 USD  pm_2      ready      -            2025-01-02 03:04:06
                pctx_2  closed  cses_1   10.99 USD  pm_2      ready      success      2025-01-02 03:04:06
                pctx_3  open    cses_1   500 JPY    -         not ready  -            2025-01-02 03:04:06
                """)
        #expect(ContextRender.contexts([]) == "no payment contexts")
    }

    @Test func shippingMethodArguments() {
        #expect(
            ShippingMethodArgument(argument: "ups:UPS Ground:599")
                == ShippingMethodArgument(identifier: "ups", label: "UPS Ground", amount: 599))
        #expect(
            ShippingMethodArgument(argument: "x:Next day: by 10:00:0")
                == ShippingMethodArgument(identifier: "x", label: "Next day: by 10:00", amount: 0))
        for bad in ["ups", "ups:599", ":UPS:599", "ups::599", "ups:UPS:", "ups:UPS:-1", "ups:UPS:5.99"] {
            #expect(ShippingMethodArgument(argument: bad) == nil, "\(bad)")
        }
    }
}
