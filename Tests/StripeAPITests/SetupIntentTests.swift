import Foundation
import JSONRPC
import StripeAPI
import Testing

// A SetupIntent in the API's shape (2024 API version), nulls and unknown fields included.
private let setupIntentJSON = """
    {
      "id": "seti_1Mm8s8LkdIwHu7ix0OXBfTRG", "object": "setup_intent", "application": null,
      "automatic_payment_methods": null, "cancellation_reason": null,
      "client_secret": "seti_1Mm8s8LkdIwHu7ix0OXBfTRG_secret_NXDICkPqPeiBTAFqWmkbff09lRmSVXe",
      "created": 1678942624, "customer": "cus_NnDHH8VvJ0kXlE", "description": null, "flow_directions": null,
      "last_setup_error": null, "latest_attempt": null, "livemode": false, "mandate": null, "metadata": {},
      "next_action": null, "on_behalf_of": null, "payment_method": "pm_1Mm8s8LkdIwHu7ixB2ZbKo4c",
      "payment_method_options": {"card": {"mandate_options": null, "network": null, "request_three_d_secure": "automatic"}},
      "payment_method_types": ["card"], "single_use_mandate": null, "status": "requires_confirmation",
      "usage": "off_session"
    }
    """

private func setupIntent(_ changes: [String: JSONValue?] = [:]) throws -> Result<SetupIntent, StripeError> {
    var object = try JSONCoding.decode(JSONValue.self, from: Data(setupIntentJSON.utf8)).objectValue!
    for (key, value) in changes { object[key] = value }
    let body = try JSONCoding.encode(JSONValue.object(object))
    return ResponseParser.parse(HTTPResponseData(status: 200, body: body), as: SetupIntent.self)
}

@Test func setupIntentDecodes() throws {
    let seti = try setupIntent().get()
    #expect(seti.id == "seti_1Mm8s8LkdIwHu7ix0OXBfTRG")
    #expect(seti.clientSecret.hasPrefix("seti_1Mm8s8LkdIwHu7ix0OXBfTRG_secret_"))
    #expect(seti.status == .requiresConfirmation)
    #expect(seti.usage == "off_session")
    #expect(seti.customerID == "cus_NnDHH8VvJ0kXlE")
    #expect(seti.paymentMethodID == "pm_1Mm8s8LkdIwHu7ixB2ZbKo4c")
    #expect(seti.paymentMethodTypes == ["card"])
    #expect(seti.lastSetupError == nil && seti.nextAction == nil)
}

@Test func setupIntentStatusesAndLastSetupError() throws {
    let statuses: [String: SetupIntent.Status] = [
        "requires_payment_method": .requiresPaymentMethod, "requires_action": .requiresAction,
        "processing": .processing, "canceled": .canceled, "succeeded": .succeeded, "something_new": .unknown,
    ]
    for (raw, status) in statuses {
        #expect(try setupIntent(["status": .string(raw)]).get().status == status)
    }
    let failed = try setupIntent([
        "status": "requires_payment_method",
        "last_setup_error": ["code": "setup_intent_authentication_failure", "type": "invalid_request_error"],
    ]).get()
    #expect(failed.lastSetupError?.code == "setup_intent_authentication_failure")
}

@Test(arguments: ["id", "client_secret", "status"])
func setupIntentRequiredFields(field: String) throws {
    guard case .failure(let error) = try setupIntent([field: JSONValue?.none]) else {
        Issue.record("decoded without \(field)")
        return
    }
    #expect(error.kind == .decoding && error.message.contains("missing required field \(field)"), "\(error.message)")
}

@Test func setupIntentRedirectURLsOnlyForARedirectToURLAction() throws {
    let redirect: JSONValue = [
        "type": "redirect_to_url",
        "redirect_to_url": ["url": "https://hooks.stripe.test/redirect/seti", "return_url": "myapp://done"],
    ]
    let urls = try setupIntent(["status": "requires_action", "next_action": redirect]).get().nextAction?.redirect
    #expect(urls?.url.absoluteString == "https://hooks.stripe.test/redirect/seti")
    #expect(urls?.returnURL?.absoluteString == "myapp://done")
    let sdk: JSONValue = ["type": "use_stripe_sdk", "use_stripe_sdk": ["type": "three_d_secure_redirect"]]
    let action = try setupIntent(["status": "requires_action", "next_action": sdk]).get()
    #expect(action.nextAction?.redirect == nil && action.nextAction?.type == .useStripeSDK)
}

@Test func setupIntentConfirmationTakesAPaymentIntentsForm() {
    let secret = "seti_123_secret_abc"
    let params = PaymentIntentConfirmParams(clientSecret: secret, paymentMethodID: "pm_1", returnURL: "app://done")
    #expect(params.intentID == "seti_123")
    #expect(
        params.formParams(for: .publishable) == [
            "client_secret": .string(secret), "payment_method": "pm_1", "return_url": "app://done",
        ])
}

@Test(arguments: [StripeKey.Kind.secret, .restricted])
func aServerKeyConfirmsByThePathWithoutTheClientSecret(kind: StripeKey.Kind) {
    // Stripe answers client_secret from a secret or restricted key with "Received unknown parameter".
    let params = PaymentIntentConfirmParams(clientSecret: "pi_1_secret_x", paymentMethodID: "pm_1")
    #expect(params.formParams(for: kind) == ["payment_method": "pm_1"])
}

@Test func sepaDebitConfirmationSendsTheCustomersOnlineAcceptance() {
    let params = PaymentIntentConfirmParams(
        clientSecret: "seti_123_secret_abc", paymentMethodData: .sepaDebit(iban: "DE89370400440532013000"),
        billingDetails: .init(name: "Jo Doe", email: "jo@example.test"))
    let form = params.formParams(for: .publishable)
    #expect(form["payment_method_data"]?["type"] == "sepa_debit")
    #expect(form["payment_method_data"]?["sepa_debit"] == ["iban": "DE89370400440532013000"])
    #expect(form["payment_method_data"]?["billing_details"] == ["name": "Jo Doe", "email": "jo@example.test"])
    #expect(
        form["mandate_data"] == ["customer_acceptance": ["type": "online", "online": ["infer_from_client": true]]])
    #expect(PaymentMethodData.sepaDebit(iban: "x").requiredBillingDetails == ["name", "email"])
}
