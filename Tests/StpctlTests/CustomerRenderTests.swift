import Foundation
import JSONRPC
import StpctlKit
import Testing

@Suite struct CustomerRenderTests {
    let utc = TimeZone(identifier: "UTC")!

    let appSession: JSONValue = [
        "id": "cses_A1", "object": "customer_session", "status": "open", "adapter": ["kind": "app", "timeout": 5],
        "createdAt": "2025-01-02T03:04:05Z", "updatedAt": "2025-01-02T03:04:06Z",
    ]

    let stripeSession: JSONValue = [
        "id": "cses_LongerId22", "object": "customer_session", "status": "closed",
        "adapter": [
            "kind": "stripe", "includeApplePayPaymentMethods": true,
            "keyProvider": ["kind": "backend", "url": "https://shop/keys", "authorization": "[REDACTED]"],
        ],
        "customerId": "cus_9", "lastSelectedPaymentMethod": "pm_1", "customerFetchedAt": "2025-01-02T03:05:00Z",
        "lastError": ["operation": "attachPaymentMethod", "code": 3001, "message": "Your card was declined."],
        "createdAt": "2025-01-02T03:04:05Z", "updatedAt": "2025-01-02T10:00:00.5Z",
    ]

    @Test func sessionsAreAnAlignedTable() {
        #expect(
            CustomerRender.sessions([appSession, stripeSession], timeZone: utc) == """
                ID               STATUS  ADAPTER              CUSTOMER  LAST SELECTED  UPDATED
                cses_A1          open    app                  -         -              2025-01-02 03:04:06
                cses_LongerId22  closed  stripe/backend-keys  cus_9     pm_1           2025-01-02 10:00:00
                """)
        #expect(CustomerRender.sessions([], timeZone: utc) == "no customer sessions")
    }

    @Test func adapterKinds() {
        #expect(
            CustomerRender.adapterKind(["kind": "stripe", "keyProvider": ["kind": "server", "customer": "cus_1"]])
                == "stripe/server")
        #expect(CustomerRender.adapterKind(["kind": "stripe", "keyProvider": ["kind": "app"]]) == "stripe/app-keys")
        #expect(CustomerRender.adapterKind(["kind": "backend", "url": "https://b"]) == "backend")
        #expect(CustomerRender.adapterKind(nil) == "-")
    }

    @Test func oneSession() {
        #expect(
            CustomerRender.session(appSession, timeZone: utc) == """
                session:          cses_A1
                status:           open
                adapter:          app, timeout 5 s
                customer:         not known yet
                last selected:    none
                customer fetched: not cached
                methods fetched:  not cached
                created:          2025-01-02 03:04:05
                updated:          2025-01-02 03:04:06
                """)
        let text = CustomerRender.session(stripeSession, timeZone: utc)
        #expect(
            text.contains(
                "adapter:          stripe, ephemeral keys from https://shop/keys (authorization set), Apple Pay cards shown"
            ))
        #expect(text.contains("customer:         cus_9"))
        #expect(text.contains("customer fetched: 2025-01-02 03:05:00"))
        #expect(text.contains("last error:       attachPaymentMethod: Your card was declined. (3001)"))
        #expect(!text.contains("REDACTED"))
    }

    @Test func adapterDescriptions() {
        #expect(
            CustomerRender.adapterDescription(["kind": "backend", "url": "https://b/api"]) == "backend https://b/api")
        #expect(
            CustomerRender.adapterDescription([
                "kind": "stripe", "keyProvider": ["kind": "server", "customer": "cus_7"],
            ])
                == "stripe, stpd's own key for cus_7")
        #expect(
            CustomerRender.adapterDescription(["kind": "stripe", "keyProvider": ["kind": "app"], "timeout": 2.5])
                == "stripe, ephemeral keys from the app, timeout 2.5 s")
    }

    @Test func paymentMethodLines() {
        let visa: JSONValue = [
            "id": "pm_123", "object": "payment_method", "type": "card",
            "card": ["brand": "visa", "last4": "4242", "exp_month": 12, "exp_year": 2030],
        ]
        #expect(CustomerRender.paymentMethodLine(visa) == "pm_123 Visa 4242 12/30")
        let applePay: JSONValue = [
            "id": "pm_ap", "type": "card",
            "card": [
                "brand": "amex", "last4": "0005", "exp_month": 3, "exp_year": 2031, "wallet": ["type": "apple_pay"],
            ],
        ]
        #expect(CustomerRender.paymentMethodLine(applePay) == "pm_ap American Express 0005 03/31 (Apple Pay)")
        #expect(CustomerRender.paymentMethodLine(["id": "pm_s", "type": "sepa_debit"]) == "pm_s sepa_debit")
        #expect(
            CustomerRender.paymentMethods([visa, applePay])
                == "pm_123 Visa 4242 12/30\npm_ap American Express 0005 03/31 (Apple Pay)")
        #expect(CustomerRender.paymentMethods([]) == "no payment methods")
    }

    @Test func customer() {
        let customer: JSONValue = [
            "id": "cus_9", "object": "customer", "email": "jane@example.com", "name": "Jane Doe", "description": nil,
            "shipping": [
                "name": "Jane Doe",
                "address": [
                    "line1": "1 Main St", "line2": "", "city": "Springfield", "state": "IL", "postal_code": "62701",
                    "country": "US",
                ],
            ],
            "invoice_settings": ["default_payment_method": "pm_1"],
        ]
        #expect(
            CustomerRender.customer(customer) == """
                customer:       cus_9
                name:           Jane Doe
                email:          jane@example.com
                shipping:       Jane Doe, 1 Main St, Springfield IL 62701, US
                default method: pm_1
                """)
    }
}
