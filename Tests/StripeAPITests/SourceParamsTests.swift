import Foundation
import JSONRPC
import StripeAPI
import Testing

// Each constructor row of spec §6.4, field by field: what the SDK's STPSourceParams sends is what
// Stripe's source flows were built against, so every key (and every key left out) is pinned.

private func form(_ params: SourceParams, merchantName: String? = nil) -> JSONValue {
    .object(params.formParams(merchantName: merchantName))
}

private let back = "app://done"

@Suite struct SourceConstructorRowTests {
    @Test func bancontact() {
        #expect(
            form(.bancontact(amount: 1099, name: "Jo Doe", returnURL: back, statementDescriptor: "ORDER 1"))
                == [
                    "type": "bancontact", "amount": 1099, "currency": "eur", "owner": ["name": "Jo Doe"],
                    "redirect": ["return_url": "app://done"], "bancontact": ["statement_descriptor": "ORDER 1"],
                ])
        let plain = SourceParams.bancontact(amount: 1, name: "Jo", returnURL: back)
        #expect(plain.additionalAPIParameters.isEmpty)
    }

    @Test func giropay() {
        #expect(
            form(.giropay(amount: 500, name: "Jo", returnURL: back, statementDescriptor: ""))
                == [
                    "type": "giropay", "amount": 500, "currency": "eur", "owner": ["name": "Jo"],
                    // Non-nil is enough here, unlike iDEAL's non-empty rule.
                    "redirect": ["return_url": "app://done"], "giropay": ["statement_descriptor": ""],
                ])
        #expect(SourceParams.giropay(amount: 1, name: "Jo", returnURL: back).additionalAPIParameters.isEmpty)
    }

    @Test func cardCopiesFourCardKeysAndMapsTheAddress() {
        let card = CardInput(
            number: "4242424242424242", expMonth: 12, expYear: 2030, cvc: "123", name: "Jo", addressLine1: "1 Main",
            addressLine2: "Apt 2", city: "Berlin", state: "BE", zip: "10115", country: "DE")
        #expect(
            form(.card(card))
                == [
                    "type": "card",
                    "card": ["number": "4242424242424242", "cvc": "123", "exp_month": 12, "exp_year": 2030],
                    "owner": [
                        "name": "Jo",
                        "address": [
                            "line1": "1 Main", "line2": "Apt 2", "city": "Berlin", "state": "BE",
                            "postal_code": "10115",
                            "country": "DE",
                        ],
                    ],
                ])
    }

    @Test func cardWithoutAddressKeepsAnEmptyAddressThatEncodesToNothing() {
        let params = SourceParams.card(CardInput(number: "4000000000003220", expMonth: 1, expYear: 2031))
        #expect(
            form(params) == [
                "type": "card", "card": ["number": "4000000000003220", "exp_month": 1, "exp_year": 2031],
                "owner": ["address": [:]],
            ])
        #expect(
            FormEncoder.encode(params.formParams(merchantName: nil))
                == "card[exp_month]=1&card[exp_year]=2031&card[number]=4000000000003220&type=card")
    }

    @Test func cardDescriptionHidesTheNumber() {
        let card = CardInput(number: "4242424242424242", expMonth: 12, expYear: 2030, cvc: "123")
        #expect(!"\(card)".contains("424242424242") && !"\(card)".contains("123,"))
        #expect("\(card)".contains("4242"))
    }

    @Test func idealSendsNameDescriptorAndBankOnlyWhenNonEmpty() {
        #expect(
            form(.ideal(amount: 250, name: "Jo", returnURL: back, statementDescriptor: "SD", bank: "ing"))
                == [
                    "type": "ideal", "amount": 250, "currency": "eur", "owner": ["name": "Jo"],
                    "redirect": ["return_url": "app://done"], "ideal": ["statement_descriptor": "SD", "bank": "ing"],
                ])
        #expect(
            form(.ideal(amount: 250, name: "", returnURL: back, statementDescriptor: "", bank: "rabobank"))
                == [
                    "type": "ideal", "amount": 250, "currency": "eur", "redirect": ["return_url": "app://done"],
                    "ideal": ["bank": "rabobank"],
                ])
        #expect(
            form(.ideal(amount: 250, name: nil, returnURL: back, statementDescriptor: nil, bank: ""))
                == ["type": "ideal", "amount": 250, "currency": "eur", "redirect": ["return_url": "app://done"]])
    }

    @Test func sepaDebit() {
        #expect(
            form(
                .sepaDebit(
                    name: "Jo", iban: "DE89370400440532013000", addressLine1: "1 Main", city: nil, postalCode: "10115",
                    country: "DE"))
                == [
                    "type": "sepa_debit", "currency": "eur",
                    "owner": ["name": "Jo", "address": ["line1": "1 Main", "postal_code": "10115", "country": "DE"]],
                    "sepa_debit": ["iban": "DE89370400440532013000"],
                ])
        #expect(
            form(.sepaDebit(name: "Jo", iban: "X"))
                == ["type": "sepa_debit", "currency": "eur", "owner": ["name": "Jo"], "sepa_debit": ["iban": "X"]])
    }

    @Test func sofort() {
        #expect(
            form(.sofort(amount: 1099, returnURL: back, country: "DE", statementDescriptor: "SD"))
                == [
                    "type": "sofort", "amount": 1099, "currency": "eur", "redirect": ["return_url": "app://done"],
                    "sofort": ["country": "DE", "statement_descriptor": "SD"],
                ])
        #expect(form(.sofort(amount: 1, returnURL: back, country: "AT"))["sofort"] == ["country": "AT"])
    }

    @Test func klarnaWithCompleteBillingInThePurchaseCountry() {
        let items = [
            KlarnaLineItem(type: .sku, description: "Mug", quantity: 2, amount: 2000),
            KlarnaLineItem(type: .tax, description: "VAT", quantity: 1, amount: 380),
            KlarnaLineItem(type: .shipping, description: "Post", quantity: 1, amount: 499),
        ]
        let address = KlarnaAddress(
            line1: "1 Main", line2: nil, city: "Berlin", state: "BE", postalCode: "10115", country: "DE",
            email: "jo@example.com", phone: "+49 30 1")
        let params = SourceParams.klarna(
            returnURL: back, currency: "eur", purchaseCountry: "DE", items: items,
            customPaymentMethods: [.installments, .payin4], billingAddress: address, firstName: "Jo", lastName: "Doe",
            dateOfBirth: DateOfBirth(day: 5, month: 3, year: 1990))
        #expect(
            form(params)
                == [
                    "type": "klarna", "amount": 2879, "currency": "eur", "redirect": ["return_url": "app://done"],
                    "flow": "redirect",
                    "owner": [
                        "email": "jo@example.com", "phone": "+49 30 1",
                        "address": [
                            "line1": "1 Main", "city": "Berlin", "state": "BE", "postal_code": "10115", "country": "DE",
                        ],
                    ],
                    "klarna": [
                        "product": "payment", "purchase_country": "DE", "first_name": "Jo", "last_name": "Doe",
                        "owner_dob_day": "05", "owner_dob_month": "03", "owner_dob_year": "1990",
                        "custom_payment_methods": "payin4,installments",
                    ],
                    "source_order": [
                        "items": [
                            ["type": "sku", "description": "Mug", "quantity": 2, "amount": 2000, "currency": "eur"],
                            ["type": "tax", "description": "VAT", "quantity": 1, "amount": 380, "currency": "eur"],
                            [
                                "type": "shipping", "description": "Post", "quantity": 1, "amount": 499,
                                "currency": "eur",
                            ],
                        ]
                    ],
                ])
    }

    @Test(arguments: [
        KlarnaAddress(line1: "1 Main", city: "Berlin", postalCode: "10115", country: "AT", email: "jo@example.com"),
        KlarnaAddress(line1: nil, city: "Berlin", postalCode: "10115", country: "DE", email: "jo@example.com"),
        KlarnaAddress(line1: "1 Main", city: "Berlin", postalCode: "10115", country: "DE", email: nil),
    ])
    func klarnaLeavesIncompleteOrForeignBillingOut(address: KlarnaAddress) {
        let params = SourceParams.klarna(
            returnURL: back, currency: "eur", purchaseCountry: "DE",
            items: [KlarnaLineItem(type: .sku, description: "Mug", quantity: 1, amount: 1000)],
            billingAddress: address, firstName: "Jo", lastName: "Doe")
        let out = form(params)
        #expect(out["owner"] == nil)
        #expect(out["klarna"] == ["product": "payment", "purchase_country": "DE"])
        #expect(out["amount"] == 1000)
    }

    @Test func klarnaNeedsBothNames() {
        let address = KlarnaAddress(
            line1: "1 Main", city: "Berlin", postalCode: "10115", country: "DE", email: "jo@example.com")
        let params = SourceParams.klarna(
            returnURL: back, currency: "eur", purchaseCountry: "DE", items: [], billingAddress: address, firstName: "Jo"
        )
        #expect(form(params)["owner"] == nil)
        #expect(form(params)["amount"] == 0)
        #expect(form(params)["klarna"]?["custom_payment_methods"] == nil)
    }

    @Test func threeDSecure() {
        #expect(
            form(.threeDSecure(amount: 1099, currency: "usd", returnURL: back, card: "src_card1"))
                == [
                    "type": "three_d_secure", "amount": 1099, "currency": "usd",
                    "redirect": ["return_url": "app://done"],
                    "three_d_secure": ["card": "src_card1"],
                ])
    }

    @Test func alipaySendsAppKeysOnlyWhenBothAreKnown() {
        let base: JSONValue = [
            "type": "alipay", "amount": 1000, "currency": "usd", "redirect": ["return_url": "app://done"],
        ]
        #expect(form(.alipay(amount: 1000, currency: "usd", returnURL: back)) == base)
        #expect(form(.alipay(amount: 1000, currency: "usd", returnURL: back, appBundleID: "com.shop")) == base)
        #expect(
            form(.alipay(amount: 1000, currency: "usd", returnURL: back, appBundleID: "com.shop", appVersion: "2.1"))[
                "alipay"]
                == ["app_bundle_id": "com.shop", "app_version_key": "2.1"])
    }

    @Test func alipayReusable() {
        #expect(
            form(.alipayReusable(currency: "usd", returnURL: back))
                == ["type": "alipay", "currency": "usd", "usage": "reusable", "redirect": ["return_url": "app://done"]])
    }

    @Test func p24() {
        #expect(
            form(.p24(amount: 1200, currency: "pln", email: "jo@example.com", name: "Jo", returnURL: back))
                == [
                    "type": "p24", "amount": 1200, "currency": "pln",
                    "owner": ["email": "jo@example.com", "name": "Jo"],
                    "redirect": ["return_url": "app://done"],
                ])
        #expect(form(.p24(amount: 1, currency: "eur", email: "a@b.c", returnURL: back))["owner"] == ["email": "a@b.c"])
    }

    @Test func visaCheckoutAndMasterpassAreCards() {
        #expect(form(.visaCheckout(callID: "c1")) == ["type": "card", "card": ["visa_checkout": ["callid": "c1"]]])
        #expect(
            form(.masterpass(cartID: "cart", transactionID: "tx"))
                == ["type": "card", "card": ["masterpass": ["cart_id": "cart", "transaction_id": "tx"]]])
    }

    @Test func epsPutsTheStatementDescriptorAtTheTop() {
        #expect(
            form(.eps(amount: 300, name: "Jo", returnURL: back, statementDescriptor: "SD"))
                == [
                    "type": "eps", "amount": 300, "currency": "eur", "owner": ["name": "Jo"],
                    "redirect": ["return_url": "app://done"], "statement_descriptor": "SD",
                ])
        #expect(
            form(.eps(amount: 300, name: "Jo", returnURL: back, statementDescriptor: ""))["statement_descriptor"] == nil
        )
    }

    @Test func multibanco() {
        #expect(
            form(.multibanco(amount: 1000, returnURL: back, email: "jo@example.com"))
                == [
                    "type": "multibanco", "amount": 1000, "currency": "eur", "owner": ["email": "jo@example.com"],
                    "redirect": ["return_url": "app://done"],
                ])
    }

    @Test func wechatPayHasNoRedirect() {
        #expect(
            form(.wechatPay(amount: 100, currency: "cny", appID: "wx123", statementDescriptor: "SD"))
                == [
                    "type": "wechat", "amount": 100, "currency": "cny",
                    "wechat": ["appid": "wx123", "statement_descriptor": "SD"],
                ])
        #expect(
            form(.wechatPay(amount: 100, currency: "cny", appID: "wx123", statementDescriptor: ""))["wechat"] == [
                "appid": "wx123"
            ])
    }
}

@Suite struct SourceParamsEncodingTests {
    private func returnURL(_ url: String, merchantName: String?) -> JSONValue? {
        form(.sofort(amount: 1, returnURL: url, country: "DE"), merchantName: merchantName)["redirect"]?["return_url"]
    }

    @Test func merchantNameIsAppendedEscaped() {
        #expect(
            returnURL("app://done", merchantName: "Jo's Shop & Co")
                == "app://done?redirect_merchant_name=Jo's%20Shop%20%26%20Co")
        #expect(
            returnURL("https://shop.example/r?order=1#top", merchantName: "Shop")
                == "https://shop.example/r?order=1&redirect_merchant_name=Shop#top")
    }

    @Test func existingMerchantNameIsKept() {
        #expect(
            returnURL("app://done?redirect_merchant_name=Other", merchantName: "Shop")
                == "app://done?redirect_merchant_name=Other")
    }

    @Test(
        arguments: [("app://done", nil), ("app://done", ""), ("http://[::1", "Shop"), ("", "Shop")]
            as [(String, String?)])
    func returnURLIsLeftAlone(url: String, merchantName: String?) {
        #expect(returnURL(url, merchantName: merchantName) == .string(url))
    }

    @Test func encodedBodyCarriesTheNamedReturnURL() {
        let body = FormEncoder.encode(
            SourceParams.sofort(amount: 1099, returnURL: "app://done", country: "DE").formParams(merchantName: "Shop"))
        #expect(
            body == "amount=1099&currency=eur&redirect[return_url]=app%3A//done?redirect_merchant_name%3DShop"
                + "&sofort[country]=DE&type=sofort")
    }

    @Test func additionalParametersReplaceSameNamedFields() {
        let params = SourceParams(
            type: "sofort", amount: 100, currency: "eur", redirect: ["return_url": "app://done"],
            additionalAPIParameters: [
                "currency": "usd", "redirect": ["return_url": "app://other"], "extra": ["a": "b"],
            ])
        #expect(
            form(params, merchantName: "Shop")
                == [
                    "type": "sofort", "amount": 100, "currency": "usd", "redirect": ["return_url": "app://other"],
                    "extra": ["a": "b"],
                ])
    }

    @Test func unknownFlowAndUsageAreOmittedOthersUseAPINames() {
        #expect(form(SourceParams(type: "x", flow: .unknown, usage: .unknown)) == ["type": "x"])
        #expect(
            form(
                SourceParams(
                    type: "x", flow: .codeVerification, metadata: ["k": "v"], token: "tok_1", usage: .singleUse))
                == [
                    "type": "x", "flow": "code_verification", "usage": "single_use", "metadata": ["k": "v"],
                    "token": "tok_1",
                ])
        #expect(form(SourceParams()) == ["type": ""])
    }
}
