import JSONRPC
import StpdProtocol
import StripeAPI
import Testing

// The RPC side of source.create and paymentIntent.confirm: the schema the router checks first,
// then the exactly-one rule and the mapping onto the SDK's constructors.

private func validate(_ value: JSONValue, _ schema: JSONSchema) -> SchemaValidator.Failure? {
    do {
        try StpdAPI.validator.validate(value, against: schema)
        return nil
    } catch {
        return error
    }
}

private func decode<T: Decodable>(_ type: T.Type, _ value: JSONValue) throws -> T {
    try JSONCoding.typed(type, from: value)
}

@Suite struct SourceConstructorTests {
    let sofortExample: JSONValue = [
        "sofort": ["amount": 1099, "returnURL": "app://done", "country": "DE", "statementDescriptor": "ORDER 1"]
    ]

    @Test func schemaAcceptsASofortExampleThatDecodesToStripeIOS23sParams() throws {
        #expect(validate(sofortExample, SourceConstructor.schema) == nil)
        let params = try decode(SourceConstructor.self, sofortExample).sourceParams()
        #expect(params == .sofort(amount: 1099, returnURL: "app://done", country: "DE", statementDescriptor: "ORDER 1"))
    }

    @Test func schemaRefusesUnknownMembers() throws {
        let top = try #require(
            validate(
                ["sofort": ["amount": 1, "returnURL": "app://done", "country": "DE"], "paypal": [:]],
                SourceConstructor.schema))
        #expect(top.path == "paypal" && top.reason == "unknown member")
        let inner = try #require(
            validate(
                ["sofort": ["amount": 1, "returnURL": "app://done", "country": "DE", "bank": "x"]],
                SourceConstructor.schema))
        #expect(inner.path == "sofort.bank" && inner.reason == "unknown member")
    }

    @Test(
        arguments: [
            (["sofort": ["amount": 0, "returnURL": "app://done", "country": "DE"]], "sofort.amount"),
            (["sofort": ["amount": 1, "returnURL": "app://done"]], "sofort.country"),
            (["p24": ["amount": 1, "currency": "euro", "email": "a@b.c", "returnURL": "app://done"]], "p24.currency"),
            (["raw": ["amount": 1]], "raw.type"),
        ] as [(JSONValue, String)])
    func schemaRefusesBadArguments(value: JSONValue, path: String) throws {
        let failure = try #require(validate(value, SourceConstructor.schema))
        #expect(failure.path == path)
    }

    @Test func schemaAcceptsOneExampleOfEveryMember() {
        let examples: [JSONValue] = [
            ["card": ["number": "4242424242424242", "expMonth": 12, "expYear": 2030, "cvc": "123", "zip": "10115"]],
            ["ideal": ["amount": 1, "returnURL": "app://done", "bank": "ing"]],
            ["bancontact": ["amount": 1, "name": "Jo", "returnURL": "app://done"]],
            ["giropay": ["amount": 1, "name": "Jo", "returnURL": "app://done"]],
            ["eps": ["amount": 1, "name": "Jo", "returnURL": "app://done", "statementDescriptor": "SD"]],
            ["p24": ["amount": 1, "currency": "pln", "email": "a@b.c", "returnURL": "app://done"]],
            ["multibanco": ["amount": 1, "returnURL": "app://done", "email": "a@b.c"]],
            ["sepaDebit": ["name": "Jo", "iban": "DE89370400440532013000", "country": "DE"]],
            ["threeDSecure": ["amount": 1, "currency": "eur", "returnURL": "app://done", "card": "src_1"]],
            ["alipay": ["amount": 1, "currency": "usd", "returnURL": "app://done"]],
            ["alipayReusable": ["currency": "usd", "returnURL": "app://done"]],
            ["wechatPay": ["amount": 1, "currency": "cny", "appId": "wx1"]],
            [
                "klarna": [
                    "returnURL": "app://done", "currency": "eur", "purchaseCountry": "DE",
                    "items": [["type": "sku", "description": "Mug", "quantity": 1, "amount": 1000]],
                    "customPaymentMethods": ["payin4"], "dateOfBirth": ["day": 1, "month": 2, "year": 1990],
                ]
            ],
            ["visaCheckout": ["callId": "c1"]],
            ["masterpass": ["cartId": "c", "transactionId": "t"]],
            ["raw": ["type": "sofort", "amount": 1, "sofort": ["country": "DE"]]],
        ]
        for example in examples {
            #expect(validate(example, SourceConstructor.schema) == nil, "\(example)")
            #expect((try? decode(SourceConstructor.self, example).sourceParams()) != nil, "\(example)")
        }
    }

    @Test func exactlyOneMember() throws {
        let none = #expect(throws: RPCError.self) { try SourceConstructor().sourceParams(at: "params") }
        #expect(none?.code == RPCError.invalidParamsCode)
        #expect(none?.data == ["parameter": "params"])
        #expect(none?.message.contains("give exactly one source type: card, sofort") == true)

        let two = SourceConstructor(
            sofort: .init(amount: 1, returnURL: "app://done", country: "DE"),
            multibanco: .init(amount: 1, returnURL: "app://done", email: "a@b.c"))
        let error = #expect(throws: RPCError.self) { try two.sourceParams(at: "params") }
        #expect(error?.data == ["parameter": "params.multibanco"])
        #expect(error?.message.contains("(got sofort, multibanco)") == true)
        #expect((#expect(throws: RPCError.self) { try two.sourceParams() })?.data == ["parameter": "multibanco"])
    }

    @Test func eachMemberCallsItsConstructor() throws {
        let named = SourceConstructor.NamedRedirect(
            amount: 5, name: "Jo", returnURL: "app://done", statementDescriptor: "SD")
        #expect(
            try SourceConstructor(eps: named).sourceParams()
                == .eps(amount: 5, name: "Jo", returnURL: "app://done", statementDescriptor: "SD"))
        #expect(
            try SourceConstructor(giropay: named).sourceParams()
                == .giropay(amount: 5, name: "Jo", returnURL: "app://done", statementDescriptor: "SD"))
        #expect(
            try SourceConstructor(wechatPay: .init(amount: 1, currency: "cny", appId: "wx1")).sourceParams()
                == .wechatPay(amount: 1, currency: "cny", appID: "wx1"))
        #expect(
            try SourceConstructor(masterpass: .init(cartId: "c", transactionId: "t")).sourceParams()
                == .masterpass(cartID: "c", transactionID: "t"))
        let item = KlarnaLineItem(type: .sku, description: "Mug", quantity: 1, amount: 1000)
        #expect(
            try SourceConstructor(
                klarna: .init(returnURL: "app://done", currency: "eur", purchaseCountry: "DE", items: [item])
            ).sourceParams()
                == .klarna(returnURL: "app://done", currency: "eur", purchaseCountry: "DE", items: [item]))
    }

    @Test func rawKeepsRedirectSoTheMerchantNameStillApplies() throws {
        let raw: [String: JSONValue] = ["type": "bancontact", "amount": 1, "redirect": ["return_url": "app://done"]]
        let params = try SourceConstructor(raw: raw).sourceParams()
        #expect(params.type == "bancontact")
        #expect(
            JSONValue.object(params.formParams(merchantName: "Shop"))
                == [
                    "type": "bancontact", "amount": 1,
                    "redirect": ["return_url": "app://done?redirect_merchant_name=Shop"],
                ])
        let error = #expect(throws: RPCError.self) {
            try SourceConstructor(raw: ["type": ""]).sourceParams(at: "params")
        }
        #expect(error?.data == ["parameter": "params.raw.type"])
    }
}

@Suite struct SourceConstructorPaymentMethodTests {
    let secret = "pi_123_secret_abc"

    @Test func existingPaymentMethod() throws {
        let params = try PaymentMethodInput(id: "pm_1").confirmParams(clientSecret: secret, returnURL: "app://done")
        #expect(
            params == PaymentIntentConfirmParams(clientSecret: secret, paymentMethodID: "pm_1", returnURL: "app://done")
        )
        #expect(params.paymentIntentID == "pi_123")
    }

    @Test func newPaymentMethodWithItsBillingDetails() throws {
        let input = PaymentMethodInput("bancontact", billingDetails: .init(name: "Jo"))
        let params = try input.confirmParams(clientSecret: secret, returnURL: nil)
        #expect(params.paymentMethodData == .plain(.bancontact))
        #expect(
            params.formParams(for: .publishable)["payment_method_data"] == [
                "type": "bancontact", "billing_details": ["name": "Jo"],
            ])
        let ideal = try PaymentMethodInput("ideal", ["bank": "ing"]).confirmParams(
            clientSecret: secret, returnURL: "app://done")
        #expect(ideal.paymentMethodData == .ideal(bank: "ing"))
        let bank = try PaymentMethodInput(
            "usBankAccount",
            ["routingNumber": "110000000", "accountNumber": "000123456789", "accountHolderType": "company"],
            billingDetails: .init(name: "Jo Ltd")
        ).confirmParams(clientSecret: secret, returnURL: nil)
        #expect(
            bank.paymentMethodData
                == .usBankAccount(
                    .init(routingNumber: "110000000", accountNumber: "000123456789", accountHolderType: .company)))
    }

    /// Each member's example confirms, once given the billing details its description names.
    @Test func everyMemberMapsToItsType() throws {
        let everything = PaymentMethodInput.BillingDetails(
            name: "Jo Doe", email: "jo@example.test",
            address: .init(line1: "1 Main St", city: "Sao Paulo", state: "SP", postalCode: "01000-000", country: "BR"))
        var types: [String: String] = [:]
        for member in PaymentMethodInput.members where member != "id" {
            let example = try #require(PaymentMethodInput.examples[member])
            let params = try PaymentMethodInput(member, example, billingDetails: everything).confirmParams(
                clientSecret: secret, returnURL: nil)
            types[member] = params.paymentMethodData?.type
            let description = PaymentMethodInput.schema.json["properties"]?[member]?["description"]?.stringValue ?? ""
            for field in params.paymentMethodData?.requiredBillingDetails ?? [] {
                #expect(description.contains("billingDetails.\(field)"), "\(member): \(description)")
            }
            if params.paymentMethodData?.requiredBillingDetails.isEmpty == false {
                #expect(throws: RPCError.self, "\(member) without its billing details") {
                    try PaymentMethodInput(member, example).confirmParams(clientSecret: secret, returnURL: nil)
                }
            }
        }
        #expect(types["usBankAccount"] == "us_bank_account" && types["afterpayClearpay"] == "afterpay_clearpay")
        #expect(types["auBecsDebit"] == "au_becs_debit" && types["wechatPay"] == "wechat_pay")
        #expect(types["raw"] == "satispay" && types["card"] == "card" && types.count == 43)
        #expect(
            Set(types.values).isSuperset(of: [
                "us_bank_account", "bacs_debit", "au_becs_debit", "klarna", "affirm", "afterpay_clearpay", "paypal",
                "cashapp", "revolut_pay", "amazon_pay", "alipay", "wechat_pay", "oxxo", "boleto", "konbini",
                "multibanco", "pix", "promptpay", "paynow", "blik", "swish", "twint", "mobilepay", "grabpay", "fpx",
                "zip", "ideal", "bancontact", "eps", "p24", "sepa_debit", "sofort", "giropay", "alma", "billie",
                "sunbit", "crypto", "pay_by_bank", "kr_card", "naver_pay", "payco",
            ]))
    }

    /// `metadata` goes to the new PaymentMethod, as `STPPaymentMethodParams.metadata`, within
    /// Stripe's limits; an existing id takes none.
    @Test func metadataGoesWithANewPaymentMethod() throws {
        let params = try PaymentMethodInput("paypal", metadata: ["order": "7"]).confirmParams(
            clientSecret: secret, returnURL: "app://done")
        #expect(params.formParams(for: .publishable)["payment_method_data"]?["metadata"] == ["order": "7"])
        let decoded = try JSONCoding.typed(PaymentMethodInput.self, from: ["paypal": [:], "metadata": ["order": "7"]])
        #expect(decoded == PaymentMethodInput("paypal", metadata: ["order": "7"]))
        func refused(_ input: PaymentMethodInput) -> JSONValue? {
            let error = #expect(throws: RPCError.self) {
                try input.confirmParams(clientSecret: secret, returnURL: nil, at: "paymentMethod")
            }
            return error?.data?["parameter"]
        }
        #expect(refused(PaymentMethodInput(id: "pm_1", metadata: ["a": "b"])) == "paymentMethod.metadata")
        let many = Dictionary(uniqueKeysWithValues: (0...50).map { ("k\($0)", "v") })
        #expect(refused(PaymentMethodInput("paypal", metadata: many)) == "paymentMethod.metadata")
        #expect(refused(PaymentMethodInput("paypal", metadata: ["a[b]": "c"])) == "paymentMethod.metadata.a[b]")
        let long = String(repeating: "k", count: 41)
        #expect(
            refused(PaymentMethodInput("paypal", metadata: [long: "c"]))
                == .string("paymentMethod.metadata." + String(repeating: "k", count: 40)))
        #expect(
            refused(PaymentMethodInput("paypal", metadata: ["a": String(repeating: "v", count: 501)]))
                == "paymentMethod.metadata.a")
        #expect(
            try PaymentMethodInput("paypal", metadata: ["a": String(repeating: "v", count: 500)]).confirmParams(
                clientSecret: secret, returnURL: nil
            ).paymentMethodMetadata?["a"]?.count == 500)
    }

    @Test func exactlyOneAndRequiredBillingDetails() {
        let none = #expect(throws: RPCError.self) {
            try PaymentMethodInput().confirmParams(clientSecret: secret, returnURL: nil, at: "paymentMethod")
        }
        #expect(none?.data == ["parameter": "paymentMethod"])
        let two = #expect(throws: RPCError.self) {
            try PaymentMethodInput(id: "pm_1", new: ["sofort": ["country": "DE"]]).confirmParams(
                clientSecret: secret, returnURL: nil, at: "paymentMethod")
        }
        #expect(two?.data == ["parameter": "paymentMethod.sofort"])
        let p24 = #expect(throws: RPCError.self) {
            try PaymentMethodInput("p24", billingDetails: .init(name: "Jo")).confirmParams(
                clientSecret: secret, returnURL: nil, at: "paymentMethod")
        }
        #expect(p24?.data == ["parameter": "paymentMethod.billingDetails.email"])
        let giropay = #expect(throws: RPCError.self) {
            try PaymentMethodInput("giropay").confirmParams(clientSecret: secret, returnURL: nil)
        }
        #expect(giropay?.data == ["parameter": "billingDetails.name"])
        let klarna = #expect(throws: RPCError.self) {
            try PaymentMethodInput("klarna", billingDetails: .init(email: "jo@example.test")).confirmParams(
                clientSecret: secret, returnURL: nil, at: "paymentMethod")
        }
        #expect(klarna?.data == ["parameter": "paymentMethod.billingDetails.address.country"])
        let missing = #expect(throws: RPCError.self) {
            try PaymentMethodInput("blik").confirmParams(clientSecret: secret, returnURL: nil, at: "paymentMethod")
        }
        #expect(missing?.data == ["parameter": "paymentMethod.blik.code"])
        let unknown = #expect(throws: RPCError.self) {
            try PaymentMethodInput("venmo").confirmParams(clientSecret: secret, returnURL: nil, at: "paymentMethod")
        }
        #expect(unknown?.data == ["parameter": "paymentMethod.venmo"])
        let secretError = #expect(throws: RPCError.self) {
            try PaymentMethodInput(id: "pm_1").confirmParams(clientSecret: "seti_1_secret_x", returnURL: nil)
        }
        #expect(secretError?.data == ["parameter": "clientSecret"])
        let weChat = #expect(throws: RPCError.self) {
            try PaymentMethodInput("wechatPay").confirmParams(
                clientSecret: "seti_1_secret_x", returnURL: nil, at: "paymentMethod", setupIntent: true)
        }
        #expect(weChat?.data == ["parameter": "paymentMethod.wechatPay"])
    }

    @Test func schema() throws {
        #expect(
            validate(
                [
                    "card": ["number": "4242424242424242", "expMonth": 1, "expYear": 2030],
                    "billingDetails": ["name": "Jo"],
                ], PaymentMethodInput.schema) == nil)
        #expect(validate(["giropay": [:], "billingDetails": ["name": "Jo"]], PaymentMethodInput.schema) == nil)
        #expect(validate(["paypal": [:]], PaymentMethodInput.schema) == nil)
        let venmo = try #require(validate(["venmo": [:]], PaymentMethodInput.schema))
        #expect(venmo.path == "venmo")
        let routing = try #require(
            validate(
                [
                    "usBankAccount": [
                        "routingNumber": "1100", "accountNumber": "000123456789", "accountHolderType": "individual",
                    ]
                ],
                PaymentMethodInput.schema))
        #expect(routing.path == "usBankAccount.routingNumber")
        let blik = try #require(validate(["blik": ["code": "12345"]], PaymentMethodInput.schema))
        #expect(blik.path == "blik.code")
        let country = try #require(
            validate(["klarna": [:], "billingDetails": ["address": ["country": "Germany"]]], PaymentMethodInput.schema))
        #expect(country.path == "billingDetails.address.country")
        let decoded = try decode(
            PaymentMethodInput.self, ["sofort": ["country": "DE"], "billingDetails": ["name": "Jo"]])
        #expect(decoded == PaymentMethodInput("sofort", ["country": "DE"], billingDetails: .init(name: "Jo")))
        #expect(try JSONCoding.value(of: decoded) == ["sofort": ["country": "DE"], "billingDetails": ["name": "Jo"]])
        let sofort = PaymentMethodInput.schema.json["properties"]?["sofort"]?["description"]?.stringValue ?? ""
        let giropay = PaymentMethodInput.schema.json["properties"]?["giropay"]?["description"]?.stringValue ?? ""
        #expect(sofort.contains("Discontinued by Stripe on 31 March 2025"))
        #expect(giropay.contains("Discontinued by Stripe on 30 June 2024"))
    }
}
