import Foundation
import JSONRPC
import StripeAPI
import Testing

// Fixtures are written here in the shapes of real API objects (and the SDK's test fixtures), nulls
// and unknown fields included.

private func json(_ text: String) -> JSONValue {
    try! JSONCoding.decode(JSONValue.self, from: Data(text.utf8))
}

/// Through `ResponseParser`, as the client decodes: nulls stripped, errors described.
private func parse<T: Decodable>(_ text: String, as type: T.Type, status: Int = 200) -> Result<T, StripeError> {
    ResponseParser.parse(HTTPResponseData(status: status, body: Data(text.utf8)), as: type)
}

private func decodingFailure<T>(_ result: Result<T, StripeError>) -> String? {
    guard case .failure(let error) = result, error.kind == .decoding else { return nil }
    return error.message
}

/// `object` with `key` set to `value` (or removed for nil), as JSON text.
private func replacing(_ text: String, _ key: String, with value: JSONValue?) -> String {
    var object = json(text).objectValue!
    object[key] = value
    return String(decoding: try! JSONCoding.encode(JSONValue.object(object)), as: UTF8.self)
}

// MARK: - Source

private let threeDSSource = #"""
    {
      "id": "src_456", "object": "source", "amount": 1099,
      "client_secret": "src_client_secret_456", "created": 1483663790, "currency": "eur",
      "flow": "redirect", "livemode": false, "metadata": {},
      "owner": {
        "address": {"city": "Pittsburgh", "country": "US", "line1": "123 Fake St", "line2": "Apt 1",
                    "postal_code": "19219", "state": "PA"},
        "email": "jenny.rosen@example.com", "name": "Jenny Rosen", "phone": "555-867-5309",
        "verified_address": null, "verified_email": null, "verified_name": "Jenny Rosen", "verified_phone": null
      },
      "receiver": {"address": "test_1MBhWS3uv4ynCfQXF3xQjJkzFPukr4K56N", "amount_charged": 300,
                   "amount_received": 200, "amount_returned": 100, "refund_attributes_method": "email"},
      "redirect": {
        "return_url": "exampleappschema://stripe_callback", "status": "pending",
        "url": "https://hooks.stripe.com/redirect/authenticate/src_456?client_secret=src_client_secret_456"
      },
      "statement_descriptor": null,
      "status": "pending", "type": "three_d_secure", "usage": "single_use",
      "three_d_secure": {"card": "src_123", "customer": null, "authenticated": false}
    }
    """#

private let sepaSource = #"""
    {
      "id": "src_18HgGjHNCLa1Vra6Y9TIP6tU", "object": "source", "amount": null,
      "client_secret": "src_client_secret_XcBm", "created": 1464803577, "currency": "eur",
      "flow": "none", "livemode": false,
      "owner": {"address": null, "email": null, "name": "Jenny Rosen", "phone": null},
      "status": "chargeable", "type": "sepa_debit", "usage": "reusable",
      "sepa_debit": {"bank_code": "37040044", "country": "DE", "last4": "3001", "mandate_reference": "NXDS"},
      "verification": {"attempts_remaining": 5, "status": "pending"}
    }
    """#

private let weChatSource = #"""
    {
      "id": "src_1FCC54BNJ02ErVOjfA2jH45g", "livemode": true, "amount": 1010, "metadata": {},
      "owner": {"address": null, "phone": null, "email": null, "name": null},
      "statement_descriptor": null, "usage": "single_use", "type": "wechat",
      "wechat": {
        "android_appId": "wxa0df51ec63e578ce",
        "ios_native_url": "weixin://app/wxa0df51ec63e578ce/pay/?appId=wxa0df51ec63e578ce&nonceStr=NLc6&package=Sign%3DWXPay",
        "qr_code_url": null
      },
      "object": "source", "created": 1566940798, "client_secret": "src_client_secret_FhbH",
      "flow": "none", "currency": "usd", "status": "pending"
    }
    """#

@Test func sourceDecodesEveryField() throws {
    let source = try parse(threeDSSource, as: Source.self).get()
    #expect(source.id == "src_456")
    #expect(source.amount == 1099)
    #expect(source.clientSecret == "src_client_secret_456")
    #expect(source.created == Date(timeIntervalSince1970: 1_483_663_790))
    #expect(source.currency == "eur")
    #expect(source.flow == .redirect)
    #expect(source.livemode == false)
    #expect(source.status == .pending)
    #expect(source.type == .threeDSecure)
    #expect(source.rawType == "three_d_secure")
    #expect(source.usage == .singleUse)
    #expect(!source.isReusable)
    #expect(source.owner?.name == "Jenny Rosen")
    #expect(source.owner?.address?.postalCode == "19219")
    #expect(source.owner?.verifiedAddress == nil)
    #expect(source.owner?.verifiedName == "Jenny Rosen")
    #expect(source.receiver?.address == "test_1MBhWS3uv4ynCfQXF3xQjJkzFPukr4K56N")
    #expect(source.receiver?.amountCharged == 300)
    #expect(source.receiver?.amountReturned == 100)
    #expect(source.redirect?.status == .pending)
    #expect(source.redirect?.returnURL.absoluteString == "exampleappschema://stripe_callback")
    #expect(source.redirect?.url.host == "hooks.stripe.com")
    #expect(source.verification == nil)
    // details: the sub-object named by the type, nulls stripped.
    #expect(source.details == ["card": "src_123", "authenticated": false])
    // allResponseFields: the whole object (after null stripping), unknown fields included.
    #expect(source.allResponseFields["metadata"] == .object([:]))
    #expect(source.allResponseFields["statement_descriptor"] == nil)
    #expect(source.allResponseFields["object"] == "source")
}

@Test func sourceOptionalSubObjects() throws {
    let sepa = try parse(sepaSource, as: Source.self).get()
    #expect(sepa.amount == nil)
    #expect(sepa.type == .sepaDebit)
    #expect(sepa.flow == Source.Flow.none)
    #expect(sepa.status == .chargeable)
    #expect(sepa.usage == .reusable)
    #expect(sepa.isReusable)
    #expect(sepa.verification?.status == .pending)
    #expect(sepa.verification?.attemptsRemaining == 5)
    #expect(sepa.redirect == nil)
    #expect(sepa.receiver == nil)
    #expect(sepa.owner?.address == nil)
    #expect(sepa.details?["last4"] == "3001")
}

@Test(arguments: ["id", "status", "type", "livemode"])
func sourceRequiredFields(field: String) {
    let message = decodingFailure(parse(replacing(threeDSSource, field, with: nil), as: Source.self))
    #expect(message?.contains("missing required field \(field)") == true, "\(message ?? "decoded")")
    // null counts as missing (nulls are stripped first).
    let null = decodingFailure(parse(replacing(threeDSSource, field, with: .null), as: Source.self))
    #expect(null?.contains("missing required field \(field)") == true)
}

@Test func sourceRequiredStringsMustBeStrings() {
    let message = decodingFailure(parse(replacing(threeDSSource, "id", with: 42), as: Source.self))
    #expect(message?.contains("id: Expected a string") == true, "\(message ?? "decoded")")
    // A decoding failure on a 4xx with no error object is still an HTTP error, not a decoding one.
    guard case .failure(let error) = parse(replacing(threeDSSource, "id", with: nil), as: Source.self, status: 404)
    else {
        Issue.record("decoded")
        return
    }
    #expect(error.kind == .invalidRequest)
}

@Test func sourceLivemode() throws {
    func livemode(_ value: JSONValue) throws -> Bool {
        try parse(replacing(threeDSSource, "livemode", with: value), as: Source.self).get().livemode
    }
    #expect(try livemode(true) == true)
    #expect(try livemode(false) == false)
    #expect(try livemode("true") == true)
    #expect(try livemode("TRUE") == true)
    #expect(try livemode("yes") == true)
    #expect(try livemode("1") == true)
    #expect(try livemode("false") == false)
    #expect(try livemode("0") == false)
    #expect(try livemode("") == false)
    #expect(try livemode(1) == true)
    #expect(try livemode(0) == false)
    // Present but neither bool, number nor string: the SDK's default, true.
    #expect(try livemode(["x": 1]) == true)
}

@Test func sourceCreated() throws {
    func created(_ value: JSONValue?) throws -> Date? {
        try parse(replacing(threeDSSource, "created", with: value), as: Source.self).get().created
    }
    #expect(try created(1_483_663_790) == Date(timeIntervalSince1970: 1_483_663_790))
    #expect(try created("1483663790") == Date(timeIntervalSince1970: 1_483_663_790))
    #expect(try created(1_483_663_790.5) == Date(timeIntervalSince1970: 1_483_663_790.5))
    #expect(try created(nil) == nil)
    #expect(try created("soon") == nil)
    #expect(try created(true) == nil)
}

@Test func sourceTolerantEnums() throws {
    var source = try parse(replacing(threeDSSource, "status", with: "expired"), as: Source.self).get()
    #expect(source.status == .unknown)
    source = try parse(replacing(threeDSSource, "status", with: "CANCELED"), as: Source.self).get()
    #expect(source.status == .canceled)
    source = try parse(replacing(threeDSSource, "type", with: "ach_credit_transfer"), as: Source.self).get()
    #expect(source.type == .unknown)
    #expect(source.rawType == "ach_credit_transfer")
    #expect(source.details == nil)
    source = try parse(replacing(threeDSSource, "flow", with: nil), as: Source.self).get()
    #expect(source.flow == .unknown)
    source = try parse(replacing(threeDSSource, "flow", with: "code_verification"), as: Source.self).get()
    #expect(source.flow == .codeVerification)
    source = try parse(replacing(threeDSSource, "usage", with: "sometimes"), as: Source.self).get()
    #expect(source.usage == .unknown)
    #expect(source.isReusable)

    let types: [String: Source.SourceType] = [
        "bancontact": .bancontact, "card": .card, "giropay": .giropay, "ideal": .iDEAL, "sepa_debit": .sepaDebit,
        "sofort": .sofort, "three_d_secure": .threeDSecure, "alipay": .alipay, "p24": .p24, "eps": .eps,
        "multibanco": .multibanco, "wechat": .weChatPay, "klarna": .klarna, "wechat_pay": .unknown,
    ]
    for (raw, expected) in types {
        #expect(Source.SourceType(apiValue: raw) == expected, "\(raw)")
    }
    #expect(Source.Redirect.Status(apiValue: "not_required") == .notRequired)
    #expect(Source.Redirect.Status(apiValue: "notRequired") == .unknown)
    #expect(Source.Verification.Status(apiValue: "succeeded") == .succeeded)
    #expect(Source.Status(apiValue: "cancelled") == .unknown)
}

@Test func sourceRedirectIsNilUnlessComplete() throws {
    let base = json(threeDSSource)["redirect"]!.objectValue!
    func redirect(_ change: (inout [String: JSONValue]) -> Void) throws -> Source.Redirect? {
        var r = base
        change(&r)
        return try parse(replacing(threeDSSource, "redirect", with: .object(r)), as: Source.self).get().redirect
    }
    #expect(try redirect { _ in } != nil)
    #expect(try redirect { $0["return_url"] = nil } == nil)
    #expect(try redirect { $0["url"] = nil } == nil)
    #expect(try redirect { $0["status"] = nil } == nil)
    #expect(try redirect { $0["url"] = "" } == nil)
    #expect(try redirect { $0["return_url"] = "" } == nil)
    #expect(try redirect { $0["url"] = .null } == nil)
    #expect(try redirect { $0["url"] = 12 } == nil)
    #expect(try redirect { $0["url"] = "http://exa mple.com/ bad" } == nil)
    // An unknown status keeps the redirect.
    #expect(try redirect { $0["status"] = "later" }?.status == .unknown)
    // Not an object at all: no redirect, Source still decodes.
    #expect(try parse(replacing(threeDSSource, "redirect", with: "x"), as: Source.self).get().redirect == nil)
}

@Test func sourceReceiverAndVerificationRequirements() throws {
    var source = try parse(replacing(threeDSSource, "receiver", with: ["amount_charged": 1]), as: Source.self).get()
    #expect(source.receiver == nil)
    source = try parse(replacing(sepaSource, "verification", with: ["attempts_remaining": 5]), as: Source.self).get()
    #expect(source.verification == nil)
    source = try parse(replacing(sepaSource, "verification", with: ["status": "failed"]), as: Source.self).get()
    #expect(source.verification?.status == .failed)
    #expect(source.verification?.attemptsRemaining == nil)
    // Optional fields of the wrong type read as absent.
    source = try parse(replacing(threeDSSource, "amount", with: "1099"), as: Source.self).get()
    #expect(source.amount == nil)
    source = try parse(replacing(threeDSSource, "currency", with: 5), as: Source.self).get()
    #expect(source.currency == nil)
}

@Test func sourceRedirectTargets() throws {
    let threeDS = try parse(threeDSSource, as: Source.self).get()
    let targets = try #require(threeDS.redirectTargets)
    #expect(targets.nativeURL == nil)
    #expect(targets.redirectURL == threeDS.redirect?.url)
    #expect(targets.returnURL?.absoluteString == "exampleappschema://stripe_callback")

    let consumed = try parse(replacing(threeDSSource, "status", with: "consumed"), as: Source.self).get()
    #expect(consumed.redirectTargets == nil)
    let sepa = try parse(sepaSource, as: Source.self).get()
    #expect(sepa.redirectTargets == nil)

    let weChat = try parse(weChatSource, as: Source.self).get()
    #expect(weChat.type == .weChatPay)
    #expect(weChat.flow == Source.Flow.none)
    let w = try #require(weChat.redirectTargets)
    #expect(w.nativeURL?.scheme == "weixin")
    #expect(w.redirectURL == nil)
    #expect(w.returnURL?.absoluteString == "wxa0df51ec63e578ce://pay/")
}

@Test func sourceDecodesWithJSONDecoderToo() throws {
    // Without ResponseParser: nulls are stripped by the model itself.
    let source = try JSONDecoder().decode(Source.self, from: Data(sepaSource.utf8))
    #expect(source.id == "src_18HgGjHNCLa1Vra6Y9TIP6tU")
    #expect(source.allResponseFields["amount"] == nil)
    #expect(try Source(json: json(sepaSource)) == source)
}

@Test func sourceNestedInArrayReportsPath() {
    struct Wrapper: Decodable { let sources: [Source] }
    let text = #"{"sources": [\#(threeDSSource), {"id": "src_2", "status": "pending", "livemode": true}]}"#
    let message = decodingFailure(parse(text, as: Wrapper.self))
    #expect(message?.contains("missing required field sources.1.type") == true, "\(message ?? "decoded")")
}

// MARK: - Customer

private let customerJSON = #"""
    {
      "id": "cus_123", "object": "customer", "created": 1463413795,
      "default_source": "src_card",
      "livemode": false, "email": null, "discount": null, "metadata": {},
      "shipping": {
        "address": {"city": "Baltimore", "country": "AF", "line1": "67 Ave C", "line2": "3A",
                    "postal_code": "10002", "state": "MD"},
        "name": "Ben Guo", "phone": "(555) 555-5555", "carrier": null
      },
      "sources": {
        "object": "list", "has_more": false, "total_count": 5, "url": "/v1/customers/cus_123/sources",
        "data": [
          {"id": "card_1", "object": "card", "brand": "Visa", "last4": "4242", "exp_month": 12,
           "exp_year": 2030, "tokenization_method": null},
          {"id": "card_ap", "object": "card", "brand": "Visa", "last4": "1111", "exp_month": 1,
           "exp_year": 2031, "tokenization_method": "apple_pay"},
          {"id": "src_card", "object": "source", "type": "card", "status": "chargeable", "livemode": false,
           "flow": "none", "usage": "reusable",
           "card": {"brand": "Visa", "last4": "4242", "exp_month": 12, "exp_year": 2030, "tokenization_method": null}},
          {"id": "card_bad", "object": "card", "brand": "Visa"},
          {"id": "ba_1", "object": "bank_account", "last4": "6789"}
        ]
      }
    }
    """#

@Test func customerDecodes() throws {
    let customer = try parse(customerJSON, as: Customer.self).get()
    #expect(customer.id == "cus_123")
    let address = try #require(customer.shippingAddress)
    #expect(address.name == "Ben Guo")
    #expect(address.phone == "(555) 555-5555")
    #expect(address.line1 == "67 Ave C")
    #expect(address.line2 == "3A")
    #expect(address.city == "Baltimore")
    #expect(address.state == "MD")
    #expect(address.postalCode == "10002")
    #expect(address.country == "AF")
    // The bank account and the card without last4 are skipped, as in the SDK.
    #expect(customer.allSources.map(\.id) == ["card_1", "card_ap", "src_card"])
    #expect(customer.allSources.map(\.kind) == [.card, .card, .source])
    #expect(customer.allSources[2].source?.type == .card)
    #expect(customer.sources().map(\.id) == ["card_1", "src_card"])
    #expect(customer.sources(includingApplePay: true).count == 3)
    #expect(customer.defaultSourceID == "src_card")
    #expect(customer.defaultSource()?.id == "src_card")
    #expect(customer.allResponseFields["sources"]?["total_count"] == 5)
}

@Test func customerDefaultSourceHiddenWhenApplePay() throws {
    let customer = try parse(replacing(customerJSON, "default_source", with: "card_ap"), as: Customer.self).get()
    #expect(customer.defaultSource() == nil)
    #expect(customer.defaultSource(includingApplePay: true)?.id == "card_ap")
    let expanded = try parse(
        replacing(customerJSON, "default_source", with: ["id": "card_1", "object": "card"]), as: Customer.self
    ).get()
    #expect(expanded.defaultSource()?.id == "card_1")
}

@Test func customerMinimalAndShippingRules() throws {
    // The API's current shape: empty shipping, no sources list.
    let minimal = try parse(
        #"{"id": "cus_Q", "object": "customer", "shipping": {}, "default_source": null, "address": {"city": null}}"#,
        as: Customer.self
    ).get()
    #expect(minimal.shippingAddress == nil)
    #expect(minimal.allSources.isEmpty)
    #expect(minimal.defaultSourceID == nil)
    #expect(minimal.defaultSource() == nil)
    // A name without an address is no shipping address (the SDK needs `shipping.address`).
    let nameOnly = try parse(#"{"id": "cus_Q", "shipping": {"name": "Ben", "address": null}}"#, as: Customer.self).get()
    #expect(nameOnly.shippingAddress == nil)
    #expect(
        decodingFailure(parse(#"{"object": "customer"}"#, as: Customer.self))?.contains("missing required field id")
            == true)
    #expect(decodingFailure(parse(#"["cus_1"]"#, as: Customer.self)) != nil)
}

// MARK: - PaymentMethod

private let cardPaymentMethod = #"""
    {
      "id": "pm_123456789", "object": "payment_method", "allow_redisplay": "unspecified",
      "billing_details": {
        "address": {"city": "München", "country": "DE", "postal_code": "80337", "line1": "Marienplatz",
                    "line2": "8", "state": "Bayern"},
        "email": "jenny@example.com", "phone": "+15555555555", "name": "jenny", "tax_id": null
      },
      "card": {
        "brand": "visa", "checks": {"cvc_check": "pass", "address_line1_check": null}, "country": "US",
        "display_brand": "visa", "exp_month": 8, "exp_year": 2030, "fingerprint": "6gVyxfIhqc8Z0g0X",
        "funding": "credit", "last4": "4242", "networks": {"available": ["visa"], "preferred": null},
        "three_d_secure_usage": {"supported": true},
        "wallet": {"type": "visa_checkout", "visa_checkout": {"name": "Jenny"}}
      },
      "created": 123456789, "customer": "cus_1", "livemode": false, "metadata": {"order_id": "1"}, "type": "card"
    }
    """#

@Test func paymentMethodDecodes() throws {
    let pm = try parse(cardPaymentMethod, as: PaymentMethod.self).get()
    #expect(pm.id == "pm_123456789")
    #expect(pm.type == "card")
    #expect(pm.created == Date(timeIntervalSince1970: 123_456_789))
    #expect(pm.livemode == false)
    #expect(pm.customerID == "cus_1")
    #expect(pm.billingDetails?.name == "jenny")
    #expect(pm.billingDetails?.address?.city == "München")
    #expect(pm.billingDetails?.address?.postalCode == "80337")
    #expect(pm.card?.brand == .visa)
    #expect(pm.card?.last4 == "4242")
    #expect(pm.card?.expMonth == 8)
    #expect(pm.card?.expYear == 2030)
    #expect(pm.card?.country == "US")
    #expect(pm.card?.funding == "credit")
    #expect(pm.card?.wallet?.type == .visaCheckout)
    #expect(!pm.isApplePay)
    #expect(pm.label == "Visa 4242")
}

@Test func paymentMethodTolerance() throws {
    let minimal = try parse(
        #"{"id": "pm_1", "type": "sepa_debit", "card": null, "customer": null}"#, as: PaymentMethod.self
    ).get()
    #expect(minimal.card == nil)
    #expect(minimal.customerID == nil)
    #expect(minimal.label == "sepa_debit")
    let odd = try parse(
        #"{"id": "pm_2", "type": "card", "customer": {"id": "cus_9", "object": "customer"}, "card": {"brand": "telepathy", "wallet": {"type": "neural_pay"}}}"#,
        as: PaymentMethod.self
    ).get()
    #expect(odd.customerID == "cus_9")
    #expect(odd.card?.brand == .unknown)
    #expect(odd.card?.wallet?.type == .unknown)
    #expect(odd.label == "Unknown")
    #expect(PaymentMethod.Card.Brand(apiValue: "amex").displayName == "American Express")
    #expect(
        decodingFailure(parse(#"{"type": "card"}"#, as: PaymentMethod.self))?.contains("missing required field id")
            == true)
}

@Test func paymentMethodListFiltersApplePay() throws {
    let applePay = replacing(
        cardPaymentMethod, "card",
        with: ["brand": "mastercard", "last4": "4444", "wallet": ["type": "apple_pay", "apple_pay": [:]]])
    let applePayWithID = replacing(applePay, "id", with: "pm_ap")
    let text =
        #"{"object": "list", "url": "/v1/payment_methods", "has_more": true, "data": [\#(cardPaymentMethod), \#(applePayWithID), {"object": "payment_method"}]}"#
    let list = try parse(text, as: PaymentMethodList.self).get()
    #expect(list.hasMore)
    #expect(list.data.map(\.id) == ["pm_123456789", "pm_ap"])
    #expect(list.data[1].isApplePay)
    #expect(list.data[1].label == "Mastercard 4444")
    #expect(list.filtered(includingApplePay: false).map(\.id) == ["pm_123456789"])
    #expect(list.filtered(includingApplePay: true).count == 2)
    let noFlag = try parse(#"{"data": []}"#, as: PaymentMethodList.self).get()
    #expect(!noFlag.hasMore)
    #expect(
        decodingFailure(parse(#"{"object": "list"}"#, as: PaymentMethodList.self))?.contains(
            "missing required field data") == true)
}

// MARK: - PaymentIntent

private let paymentIntentJSON = #"""
    {
      "id": "pi_1Cl15wIl4IdHmuTbCWrpJXN6", "object": "payment_intent", "amount": 2345,
      "canceled_at": 1530911045, "capture_method": "manual",
      "client_secret": "pi_1Cl15wIl4IdHmuTbCWrpJXN6_secret_EkKt", "confirmation_method": "automatic",
      "created": 1530911040, "currency": "usd", "description": "My Sample PaymentIntent",
      "last_payment_error": {
        "code": "payment_intent_authentication_failure",
        "doc_url": "https://stripe.com/docs/error-codes/payment-intent-authentication-failure",
        "message": "The provided PaymentMethod has failed authentication.",
        "payment_method": {
          "id": "pm_1F5KZ4KlwPmebFhph828lKsZ", "object": "payment_method", "billing_details": {"address": {}},
          "card": {"brand": "visa", "country": "US", "exp_month": 2, "exp_year": 2042, "funding": "credit", "last4": "3063"},
          "created": 1565305114, "livemode": false, "metadata": {}, "type": "card"
        },
        "type": "invalid_request_error"
      },
      "livemode": false,
      "next_action": {
        "type": "redirect_to_url",
        "redirect_to_url": {
          "return_url": "payments-example://stripe-redirect",
          "url": "https://hooks.stripe.com/redirect/authenticate/src_1Cl1AeIl4IdHmuTb1L7x083A?client_secret=src_client_secret_DBNw"
        }
      },
      "payment_method": "pm_1F5KZ4KlwPmebFhph828lKsZ",
      "payment_method_types": ["card"],
      "receipt_email": "danj@example.com", "shipping": null, "source": "src_1Cl1AdIl4IdHmuTbseiDWq6m",
      "status": "requires_action"
    }
    """#

@Test func paymentIntentDecodes() throws {
    let pi = try parse(paymentIntentJSON, as: PaymentIntent.self).get()
    #expect(pi.id == "pi_1Cl15wIl4IdHmuTbCWrpJXN6")
    #expect(pi.clientSecret == "pi_1Cl15wIl4IdHmuTbCWrpJXN6_secret_EkKt")
    #expect(pi.status == .requiresAction)
    #expect(pi.amount == 2345)
    #expect(pi.currency == "usd")
    #expect(pi.created == Date(timeIntervalSince1970: 1_530_911_040))
    #expect(pi.livemode == false)
    #expect(pi.paymentMethodID == "pm_1F5KZ4KlwPmebFhph828lKsZ")
    #expect(pi.paymentMethod == nil)
    #expect(pi.paymentMethodTypes == ["card"])
    #expect(pi.lastPaymentError?.code == "payment_intent_authentication_failure")
    #expect(pi.lastPaymentError?.type == "invalid_request_error")
    #expect(pi.lastPaymentError?.paymentMethod?.label == "Visa 3063")
    #expect(pi.nextAction?.type == .redirectToURL)
    #expect(pi.nextAction?.redirect?.returnURL?.absoluteString == "payments-example://stripe-redirect")
    let redirect = try #require(pi.nextAction?.redirect)
    #expect(redirect.url.host == "hooks.stripe.com")
    #expect(redirect.returnURL?.scheme == "payments-example")
}

@Test func paymentIntentExpandedPaymentMethodAndStatuses() throws {
    let expanded = try parse(
        replacing(paymentIntentJSON, "payment_method", with: json(cardPaymentMethod)), as: PaymentIntent.self
    ).get()
    #expect(expanded.paymentMethodID == "pm_123456789")
    #expect(expanded.paymentMethod?.label == "Visa 4242")

    let statuses: [String: PaymentIntent.Status] = [
        "requires_payment_method": .requiresPaymentMethod, "requires_confirmation": .requiresConfirmation,
        "requires_action": .requiresAction, "processing": .processing, "requires_capture": .requiresCapture,
        "canceled": .canceled, "succeeded": .succeeded, "requires_source": .requiresPaymentMethod,
        "requires_source_action": .requiresAction, "on_hold": .unknown,
    ]
    for (raw, expected) in statuses {
        let pi = try parse(replacing(paymentIntentJSON, "status", with: .string(raw)), as: PaymentIntent.self).get()
        #expect(pi.status == expected, "\(raw)")
    }
}

@Test(arguments: ["id", "client_secret", "status", "amount", "currency"])
func paymentIntentRequiredFields(field: String) {
    let message = decodingFailure(parse(replacing(paymentIntentJSON, field, with: nil), as: PaymentIntent.self))
    #expect(message?.contains("missing required field \(field)") == true, "\(message ?? "decoded")")
}

@Test func paymentIntentRedirectRules() throws {
    func redirect(_ action: JSONValue?) throws -> (url: URL, returnURL: URL?)? {
        try parse(replacing(paymentIntentJSON, "next_action", with: action), as: PaymentIntent.self).get()
            .nextAction?.redirect
    }
    let good: JSONValue = [
        "type": "redirect_to_url", "redirect_to_url": ["url": "https://x.test/a", "return_url": "app://done"],
    ]
    #expect(try redirect(good)?.returnURL?.absoluteString == "app://done")
    #expect(try redirect(nil) == nil)
    #expect(try redirect(["type": "use_stripe_sdk", "use_stripe_sdk": ["type": "three_d_secure_redirect"]]) == nil)
    #expect(
        try redirect(["type": "redirect_to_url", "redirect_to_url": ["url": "https://x.test/a"]])?.returnURL == nil)
    #expect(
        try redirect(["type": "redirect_to_url", "redirect_to_url": ["url": "", "return_url": "app://done"]]) == nil)
    // next_action without a type is dropped, the intent still decodes.
    let pi = try parse(
        replacing(paymentIntentJSON, "next_action", with: ["redirect_to_url": [:]]), as: PaymentIntent.self
    ).get()
    #expect(pi.nextAction == nil)
    // The API's current fixture shape: an unknown action type.
    let unknown = try parse(replacing(paymentIntentJSON, "next_action", with: ["type": "type"]), as: PaymentIntent.self)
        .get()
    #expect(unknown.nextAction?.type == .unknown)
    #expect(unknown.nextAction?.rawType == "type")
}

@Test func errorObjectWinsOverModel() {
    guard
        case .failure(let error) = parse(
            #"{"error": {"type": "card_error", "code": "card_declined", "message": "no"}}"#, as: PaymentIntent.self,
            status: 402)
    else {
        Issue.record("decoded")
        return
    }
    #expect(error.kind == .card)
}
