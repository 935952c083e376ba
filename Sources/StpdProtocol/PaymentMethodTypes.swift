import JSONRPC
import StripeAPI

extension PaymentMethodInput {
    /// An argument the schema marks required but a Swift caller left out.
    struct MissingArgument: Error {
        let key: String
    }

    /// Every type `paymentIntent.confirm` and `setupIntent.confirm` take, as members of
    /// `paymentMethod`: the SDK's `STPPaymentMethodType`s that need no native app on the phone.
    static let types: [Member] = [
        Member(
            "card", SourceConstructor.cardSchema,
            example: ["number": "4242424242424242", "expMonth": 12, "expYear": 2030]
        ) { .card(try JSONCoding.typed(CardInput.self, from: $0)) },
        Member(
            "usBankAccount",
            "A US bank account (ACH Direct Debit) entered by hand, USD: Stripe verifies it with microdeposits "
                + "(next action verify_with_microdeposits); sends the mandate",
            [
                "routingNumber": .string("The bank's ABA routing number", pattern: "^[0-9]{9}$"),
                "accountNumber": .string("The account number", pattern: "^[0-9]{4,17}$"),
                "accountHolderType": .enumeration(
                    USBankAccountInput.HolderType.allCases.map(\.rawValue), "Whose account it is"),
                "accountType": .enumeration(
                    USBankAccountInput.AccountType.allCases.map(\.rawValue), "checking (Stripe's default) or savings"),
            ], required: ["routingNumber", "accountNumber", "accountHolderType"],
            example: ["routingNumber": "110000000", "accountNumber": "000123456789", "accountHolderType": "individual"]
        ) { .usBankAccount(try JSONCoding.typed(USBankAccountInput.self, from: $0)) },
        Member(
            "sepaDebit", "SEPA Direct Debit, EUR; sends the mandate",
            ["iban": .string("The customer's IBAN")], required: ["iban"], example: ["iban": "DE89370400440532013000"]
        ) { .sepaDebit(iban: try string($0, "iban")) },
        Member(
            "bacsDebit", "Bacs Direct Debit, GBP; sends the mandate",
            [
                "sortCode": .string("The branch's sort code, six digits", pattern: "^[0-9]{6}$"),
                "accountNumber": .string("The account number, eight digits", pattern: "^[0-9]{8}$"),
            ], required: ["sortCode", "accountNumber"], example: ["sortCode": "108800", "accountNumber": "00012345"]
        ) { .bacsDebit(sortCode: try string($0, "sortCode"), accountNumber: try string($0, "accountNumber")) },
        Member(
            "auBecsDebit", "BECS Direct Debit, AUD; sends the mandate",
            [
                "bsbNumber": .string("The Bank-State-Branch number, six digits", pattern: "^[0-9]{6}$"),
                "accountNumber": .string("The account number", pattern: "^[0-9]{5,9}$"),
            ], required: ["bsbNumber", "accountNumber"], example: ["bsbNumber": "000000", "accountNumber": "000123456"]
        ) { .auBECSDebit(bsbNumber: try string($0, "bsbNumber"), accountNumber: try string($0, "accountNumber")) },
        bank("ideal", "iDEAL, EUR: a redirect to the customer's bank") { .ideal(bank: $0) },
        plain(.bancontact, "Bancontact, EUR: a redirect to the customer's bank"),
        bank("eps", "EPS, EUR: a redirect to the customer's bank") { .eps(bank: $0) },
        bank("p24", "Przelewy24, EUR or PLN: a redirect to the customer's bank") { .p24(bank: $0) },
        Member(
            "fpx", "FPX, MYR: a redirect to the customer's bank",
            ["bank": .string("The customer's bank, e.g. maybank2u", pattern: "^[a-z0-9_]+$")], required: ["bank"],
            example: ["bank": "maybank2u"]
        ) { .fpx(bank: try string($0, "bank")) },
        Member(
            "blik", "BLIK, PLN: the customer approves in their banking app within 60 s (next action blik_authorize)",
            ["code": .string("The six-digit code from the customer's banking app", pattern: "^[0-9]{6}$")],
            required: ["code"], example: ["code": "123456"]
        ) { .blik(code: try string($0, "code")) },
        Member(
            "boleto",
            "Boleto, BRL: a voucher the customer pays at a bank or online (next action boleto_display_details)",
            [
                "taxId": .string(
                    "The customer's CPF (000.000.000-00) or CNPJ (00.000.000/0000-00), punctuated or not",
                    pattern:
                        #"^([0-9]{11}|[0-9]{14}|[0-9]{3}\.[0-9]{3}\.[0-9]{3}-[0-9]{2}|[0-9]{2}\.[0-9]{3}\.[0-9]{3}/[0-9]{4}-[0-9]{2})$"#
                )
            ], required: ["taxId"], example: ["taxId": "000.000.000-00"]
        ) { .boleto(taxID: try string($0, "taxId")) },
        plain(.oxxo, "OXXO, MXN: a voucher paid in cash at a store (next action oxxo_display_details)"),
        plain(.konbini, "Konbini, JPY: a voucher paid at a convenience store (next action konbini_display_details)"),
        plain(
            .multibanco,
            "Multibanco, EUR: a reference paid at an ATM or online (next action multibanco_display_details)"),
        plain(.pix, "Pix, BRL: a QR code the customer scans in their banking app (next action pix_display_qr_code)"),
        plain(.promptpay, "PromptPay, THB: a QR code (next action promptpay_display_qr_code)"),
        plain(.paynow, "PayNow, SGD: a QR code (next action paynow_display_qr_code)"),
        plain(
            .wechatPay,
            "WeChat Pay: a QR code the customer scans in WeChat (client web; next action wechat_pay_display_qr_code)"),
        plain(.alipay, "Alipay: a redirect to Alipay's page (next action alipay_handle_redirect)"),
        plain(
            .cashapp,
            "Cash App Pay, USD: a redirect to Cash App, or its QR code (next action cashapp_handle_redirect_or_display_qr_code)"
        ),
        plain(
            .swish,
            "Swish, SEK: a redirect to Swish, or its QR code (next action swish_handle_redirect_or_display_qr_code)"),
        plain(.paypal, "PayPal: a redirect to PayPal"),
        plain(.klarna, "Klarna (buy now, pay later): a redirect to Klarna"),
        plain(.affirm, "Affirm (buy now, pay later), USD or CAD: a redirect to Affirm"),
        plain(.afterpayClearpay, "Afterpay / Clearpay (buy now, pay later): a redirect"),
        plain(.zip, "Zip (buy now, pay later), AUD or USD: a redirect"),
        plain(.revolutPay, "Revolut Pay: a redirect to Revolut"),
        plain(.amazonPay, "Amazon Pay: a redirect to Amazon"),
        plain(.twint, "TWINT, CHF: a redirect"),
        plain(.mobilepay, "MobilePay, DKK, EUR, NOK or SEK: a redirect"),
        plain(.grabpay, "GrabPay, MYR or SGD: a redirect"),
        plain(.alma, "Alma (buy now, pay later), EUR: a redirect"),
        plain(.billie, "Billie (buy now, pay later for businesses), EUR: a redirect"),
        plain(.sunbit, "Sunbit (buy now, pay later), USD: a redirect"),
        plain(.crypto, "Crypto (stablecoins), USD: a redirect to Stripe's crypto page"),
        plain(.payByBank, "Pay by Bank (open banking), GBP: a redirect to the customer's bank"),
        plain(.krCard, "Korean cards, KRW: a redirect"),
        plain(.naverPay, "Naver Pay, KRW: a redirect"),
        plain(.payco, "PAYCO, KRW: a redirect"),
        Member(
            "sofort",
            "SOFORT, EUR: a redirect to the customer's bank. Discontinued by Stripe on 31 March 2025 (kept as the SDK has it)",
            ["country": SourceConstructor.country("The country of the customer's bank")], required: ["country"],
            example: ["country": "DE"]
        ) { .sofort(country: try string($0, "country")) },
        plain(
            .giropay,
            "giropay, EUR: a redirect to the customer's bank. Discontinued by Stripe on 30 June 2024 (kept as the SDK has it)"
        ),
        Member(
            "raw",
            JSONSchema.object(
                ["type": .string("Stripe's payment method type, e.g. satispay", pattern: "^[a-z0-9_]+$")],
                required: ["type"], additionalProperties: true,
                description:
                    "Any other type: Stripe's own payment_method_data fields as nested JSON (billing details apart), e.g. {type: satispay}"
            ), example: ["type": "satispay"]
        ) { arguments in
            var fields = arguments.objectValue ?? [:]
            let type = fields.removeValue(forKey: "type")?.stringValue ?? ""
            guard !type.isEmpty else { throw MissingArgument(key: "type") }
            return .raw(type: type, fields: fields)
        },
    ]

    private static func string(_ arguments: JSONValue, _ key: String) throws -> String {
        guard let value = arguments[key]?.stringValue else { throw MissingArgument(key: key) }
        return value
    }

    private static func plain(_ type: PaymentMethodData.Plain, _ description: String) -> Member {
        Member(Member.camelCase(type.rawValue), description) { _ in .plain(type) }
    }

    /// iDEAL, EPS and P24: the bank is optional (Stripe's page asks otherwise).
    private static func bank(
        _ name: String, _ description: String, _ make: @escaping @Sendable (String?) -> PaymentMethodData
    ) -> Member {
        Member(name, description, ["bank": .string("The customer's bank, e.g. ing (optional)")]) {
            make($0["bank"]?.stringValue)
        }
    }
}

extension PaymentMethodInput.Member {
    init(
        _ name: String, _ schema: JSONSchema, example: JSONValue,
        make: @escaping @Sendable (JSONValue) throws -> PaymentMethodData
    ) {
        self.init(name: name, schema: schema, example: example, make: make)
    }

    /// An object member; its description ends with the billing details Stripe requires for the type,
    /// read from `PaymentMethodData.requiredBillingDetails` for `example`.
    init(
        _ name: String, _ description: String, _ properties: [String: JSONSchema] = [:], required: [String] = [],
        example: JSONValue = [:], make: @escaping @Sendable (JSONValue) throws -> PaymentMethodData
    ) {
        let needs = (try? make(example))?.requiredBillingDetails ?? []
        let suffix = needs.isEmpty ? "" : "; needs billingDetails." + needs.joined(separator: ", billingDetails.")
        self.init(
            name: name, schema: .object(properties, required: required, description: description + suffix),
            example: example, make: make)
    }

    /// `afterpay_clearpay` → `afterpayClearpay`, the member name of a Stripe type.
    static func camelCase(_ type: String) -> String {
        let words = type.split(separator: "_")
        return words.prefix(1).joined() + words.dropFirst().map(\.capitalized).joined()
    }
}
