import Foundation
import JSONRPC
import StripeAPI
import Testing

// The form a confirmation sends for each payment-method type: pinned pair by pair (percent-decoded
// for reading; the encoder itself is pinned byte for byte in FormEncoderTests and `cardData`).

typealias Billing = PaymentIntentConfirmParams.BillingDetails

private let jo = Billing(name: "Jo Doe", email: "jo@example.test")
private let address = Billing.Address(
    line1: "1 Main St", city: "Sao Paulo", state: "SP", postalCode: "01000-000", country: "BR")
private let joAtHome = Billing(name: "Jo Doe", email: "jo@example.test", address: address)

private func form(_ params: PaymentIntentConfirmParams) -> [String] {
    FormEncoder.pairs(params.formParams(for: .publishable)).map { "\($0.key)=\($0.value)".removingPercentEncoding! }
}

private let onlineMandate = [
    "mandate_data[customer_acceptance][online][infer_from_client]=true",
    "mandate_data[customer_acceptance][type]=online",
]
private let joFields = [
    "payment_method_data[billing_details][email]=jo@example.test",
    "payment_method_data[billing_details][name]=Jo Doe",
]

@Suite struct ConfirmParamsTests {
    let secret = "pi_123_secret_abc"

    @Test func paymentIntentIDIsTheSecretsPrefix() {
        #expect(PaymentIntentConfirmParams(clientSecret: secret, paymentMethodID: "pm_1").paymentIntentID == "pi_123")
        #expect(PaymentIntentConfirmParams(clientSecret: "pi_9", paymentMethodID: "pm_1").paymentIntentID == "pi_9")
    }

    @Test func existingPaymentMethod() {
        let params = PaymentIntentConfirmParams(
            clientSecret: secret, paymentMethodID: "pm_1", returnURL: "app://done", savePaymentMethod: true,
            setupFutureUsage: .offSession)
        #expect(
            JSONValue.object(params.formParams(for: .publishable))
                == [
                    "client_secret": "pi_123_secret_abc", "payment_method": "pm_1", "return_url": "app://done",
                    "save_payment_method": true, "setup_future_usage": "off_session",
                ])
    }

    /// Given metadata replaces a raw type's own; a raw type's fields keep its type.
    @Test func metadata() {
        let raw = PaymentMethodData.raw(type: "satispay", fields: ["metadata": ["a": "1"], "type": "card"])
        #expect(raw.createParams()["type"] == "satispay")
        #expect(raw.createParams(metadata: ["b": "2"])["metadata"] == ["b": "2"])
        #expect(raw.createParams()["metadata"] == ["a": "1"])
        #expect(PaymentMethodData.plain(.paypal).createParams(metadata: [:])["metadata"] == nil)
    }

    @Test func cardData() {
        let card = CardInput(
            number: "4242424242424242", expMonth: 12, expYear: 2030, cvc: "123", name: "Jo", zip: "10115")
        let body = FormEncoder.encode(
            PaymentIntentConfirmParams(clientSecret: secret, paymentMethodData: .card(card)).formParams(
                for: .publishable))
        #expect(
            body == "client_secret=pi_123_secret_abc&payment_method_data[billing_details][address][postal_code]=10115"
                + "&payment_method_data[billing_details][name]=Jo&payment_method_data[card][cvc]=123"
                + "&payment_method_data[card][exp_month]=12&payment_method_data[card][exp_year]=2030"
                + "&payment_method_data[card][number]=4242424242424242&payment_method_data[type]=card")
        // Given billing details win over the card's own name, and a given address replaces its address.
        let billed = PaymentIntentConfirmParams(
            clientSecret: secret, paymentMethodData: .card(card),
            billingDetails: Billing(name: "Jo Doe", address: address))
        #expect(billed.formParams(for: .publishable)["payment_method_data"]?["billing_details"]?["name"] == "Jo Doe")
        #expect(
            billed.formParams(for: .publishable)["payment_method_data"]?["billing_details"]?["address"]?["postal_code"]
                == "01000-000")
    }

    /// Every type's form on a PaymentIntent, after the client secret and before the return URL.
    @Test(
        arguments: [
            (
                PaymentMethodData.usBankAccount(
                    .init(routingNumber: "110000000", accountNumber: "000123456789", accountHolderType: .individual)),
                Billing(name: "Jo Doe"),
                onlineMandate + [
                    "payment_method_data[billing_details][name]=Jo Doe",
                    "payment_method_data[type]=us_bank_account",
                    "payment_method_data[us_bank_account][account_holder_type]=individual",
                    "payment_method_data[us_bank_account][account_number]=000123456789",
                    "payment_method_data[us_bank_account][routing_number]=110000000",
                ]
            ),
            (
                .usBankAccount(
                    .init(
                        routingNumber: "110000000", accountNumber: "000123456789", accountHolderType: .company,
                        accountType: .savings)),
                Billing(name: "Jo Ltd"),
                onlineMandate + [
                    "payment_method_data[billing_details][name]=Jo Ltd",
                    "payment_method_data[type]=us_bank_account",
                    "payment_method_data[us_bank_account][account_holder_type]=company",
                    "payment_method_data[us_bank_account][account_number]=000123456789",
                    "payment_method_data[us_bank_account][account_type]=savings",
                    "payment_method_data[us_bank_account][routing_number]=110000000",
                ]
            ),
            (
                .sepaDebit(iban: "DE89370400440532013000"), jo,
                onlineMandate + joFields + [
                    "payment_method_data[sepa_debit][iban]=DE89370400440532013000",
                    "payment_method_data[type]=sepa_debit",
                ]
            ),
            (
                .bacsDebit(sortCode: "108800", accountNumber: "00012345"),
                Billing(
                    name: "Jo Doe", email: "jo@example.test",
                    address: .init(line1: "1 High St", postalCode: "EC1A 1BB", country: "GB")),
                onlineMandate + [
                    "payment_method_data[bacs_debit][account_number]=00012345",
                    "payment_method_data[bacs_debit][sort_code]=108800",
                    "payment_method_data[billing_details][address][country]=GB",
                    "payment_method_data[billing_details][address][line1]=1 High St",
                    "payment_method_data[billing_details][address][postal_code]=EC1A 1BB",
                ] + joFields + ["payment_method_data[type]=bacs_debit"]
            ),
            (
                .auBECSDebit(bsbNumber: "000000", accountNumber: "000123456"), jo,
                onlineMandate + [
                    "payment_method_data[au_becs_debit][account_number]=000123456",
                    "payment_method_data[au_becs_debit][bsb_number]=000000",
                ] + joFields + ["payment_method_data[type]=au_becs_debit"]
            ),
            (
                .ideal(bank: "ing"), nil,
                onlineMandate + ["payment_method_data[ideal][bank]=ing", "payment_method_data[type]=ideal"]
            ),
            (.ideal(bank: nil), nil, onlineMandate + ["payment_method_data[type]=ideal"]),
            (
                .plain(.bancontact), Billing(name: "Jo"),
                onlineMandate + [
                    "payment_method_data[billing_details][name]=Jo", "payment_method_data[type]=bancontact",
                ]
            ),
            (
                .eps(bank: "bank_austria"), Billing(name: "Jo"),
                onlineMandate + [
                    "payment_method_data[billing_details][name]=Jo", "payment_method_data[eps][bank]=bank_austria",
                    "payment_method_data[type]=eps",
                ]
            ),
            (
                .p24(bank: nil), Billing(email: "jo@example.test"),
                ["payment_method_data[billing_details][email]=jo@example.test", "payment_method_data[type]=p24"]
            ),
            (
                .fpx(bank: "maybank2u"), nil,
                ["payment_method_data[fpx][bank]=maybank2u", "payment_method_data[type]=fpx"]
            ),
            (
                .sofort(country: "DE"), nil,
                onlineMandate + ["payment_method_data[sofort][country]=DE", "payment_method_data[type]=sofort"]
            ),
            (
                .plain(.giropay), Billing(name: "Jo"),
                ["payment_method_data[billing_details][name]=Jo", "payment_method_data[type]=giropay"]
            ),
            (
                .blik(code: "123456"), nil,
                ["payment_method_data[type]=blik", "payment_method_options[blik][code]=123456"]
            ),
            (
                .boleto(taxID: "000.000.000-00"), joAtHome,
                [
                    "payment_method_data[billing_details][address][city]=Sao Paulo",
                    "payment_method_data[billing_details][address][country]=BR",
                    "payment_method_data[billing_details][address][line1]=1 Main St",
                    "payment_method_data[billing_details][address][postal_code]=01000-000",
                    "payment_method_data[billing_details][address][state]=SP",
                ] + joFields + [
                    "payment_method_data[boleto][tax_id]=000.000.000-00", "payment_method_data[type]=boleto",
                ]
            ),
            (.plain(.oxxo), jo, joFields + ["payment_method_data[type]=oxxo"]),
            (.plain(.konbini), jo, joFields + ["payment_method_data[type]=konbini"]),
            (
                .plain(.multibanco), Billing(email: "jo@example.test"),
                ["payment_method_data[billing_details][email]=jo@example.test", "payment_method_data[type]=multibanco"]
            ),
            (
                .plain(.pix), Billing(taxId: "000.000.000-00"),
                ["payment_method_data[billing_details][tax_id]=000.000.000-00", "payment_method_data[type]=pix"]
            ),
            (
                .plain(.promptpay), Billing(email: "jo@example.test"),
                ["payment_method_data[billing_details][email]=jo@example.test", "payment_method_data[type]=promptpay"]
            ),
            (.plain(.paynow), nil, ["payment_method_data[type]=paynow"]),
            (
                .plain(.wechatPay), nil,
                ["payment_method_data[type]=wechat_pay", "payment_method_options[wechat_pay][client]=web"]
            ),
            (
                .plain(.klarna), Billing(email: "jo@example.test", address: .init(country: "DE")),
                [
                    "payment_method_data[billing_details][address][country]=DE",
                    "payment_method_data[billing_details][email]=jo@example.test", "payment_method_data[type]=klarna",
                ]
            ),
            (
                .plain(.afterpayClearpay),
                Billing(
                    name: "Jo Doe", email: "jo@example.test",
                    address: .init(line1: "1 George St", postalCode: "2000", country: "AU")),
                [
                    "payment_method_data[billing_details][address][country]=AU",
                    "payment_method_data[billing_details][address][line1]=1 George St",
                    "payment_method_data[billing_details][address][postal_code]=2000",
                ] + joFields + ["payment_method_data[type]=afterpay_clearpay"]
            ),
            (.plain(.paypal), nil, ["payment_method_data[type]=paypal"]),
            (.plain(.cashapp), nil, ["payment_method_data[type]=cashapp"]),
            (.plain(.alipay), nil, ["payment_method_data[type]=alipay"]),
            (.plain(.swish), nil, ["payment_method_data[type]=swish"]),
            (.plain(.affirm), nil, ["payment_method_data[type]=affirm"]),
            (.plain(.zip), nil, ["payment_method_data[type]=zip"]),
            (.plain(.revolutPay), nil, ["payment_method_data[type]=revolut_pay"]),
            (.plain(.amazonPay), nil, ["payment_method_data[type]=amazon_pay"]),
            (.plain(.twint), nil, ["payment_method_data[type]=twint"]),
            (.plain(.mobilepay), nil, ["payment_method_data[type]=mobilepay"]),
            (.plain(.grabpay), nil, ["payment_method_data[type]=grabpay"]),
            (.plain(.alma), nil, ["payment_method_data[type]=alma"]),
            (.plain(.billie), nil, ["payment_method_data[type]=billie"]),
            (.plain(.sunbit), nil, ["payment_method_data[type]=sunbit"]),
            (.plain(.crypto), nil, ["payment_method_data[type]=crypto"]),
            (.plain(.payByBank), nil, ["payment_method_data[type]=pay_by_bank"]),
            (.plain(.krCard), nil, ["payment_method_data[type]=kr_card"]),
            (.plain(.naverPay), nil, ["payment_method_data[type]=naver_pay"]),
            (.plain(.payco), nil, ["payment_method_data[type]=payco"]),
            (
                .raw(type: "satispay", fields: ["satispay": [:], "metadata": ["order": "7"]]), Billing(name: "Jo"),
                [
                    "payment_method_data[billing_details][name]=Jo", "payment_method_data[metadata][order]=7",
                    "payment_method_data[type]=satispay",
                ]
            ),
        ] as [(PaymentMethodData, Billing?, [String])])
    func paymentIntentForm(data: PaymentMethodData, billing: Billing?, expected: [String]) {
        let params = PaymentIntentConfirmParams(
            clientSecret: secret, paymentMethodData: data, billingDetails: billing, returnURL: "app://done")
        let pairs = form(params)
        #expect(pairs.first == "client_secret=pi_123_secret_abc")
        #expect(pairs.last == "return_url=app://done")
        #expect(Array(pairs.dropFirst().dropLast()) == expected, "\(data.type)")
        for field in data.requiredBillingDetails {
            #expect(billing?.value(at: field) != nil, "\(data.type) needs \(field)")
        }
    }

    /// PayPal, Cash App, Revolut Pay, Amazon Pay and Klarna send the mandate when they are set up:
    /// by a SetupIntent, or by a payment set up off_session; Alipay, TWINT, Korean cards and Naver Pay
    /// on a SetupIntent only.
    @Test(arguments: [
        PaymentMethodData.Plain.paypal, .cashapp, .revolutPay, .amazonPay, .klarna, .alipay, .twint, .krCard,
        .naverPay, .swish,
    ])
    func mandateWhenSetUp(plain: PaymentMethodData.Plain) {
        func mandate(_ secret: String, _ usage: PaymentIntentConfirmParams.SetupFutureUsage?) -> Bool {
            PaymentIntentConfirmParams(clientSecret: secret, paymentMethodData: .plain(plain), setupFutureUsage: usage)
                .formParams(for: .publishable)["mandate_data"] != nil
        }
        let setUp = plain != .swish
        #expect(mandate("seti_1_secret_x", nil) == setUp, "\(plain)")
        #expect(mandate(secret, nil) == false, "\(plain)")
        let onlySetupIntents: Set<PaymentMethodData.Plain> = [.alipay, .twint, .krCard, .naverPay]
        #expect(mandate(secret, .offSession) == (setUp && !onlySetupIntents.contains(plain)), "\(plain)")
        #expect(mandate(secret, .onSession) == false, "\(plain)")
    }

    @Test func setupIntentsCannotTakeWeChatPay() {
        #expect(PaymentMethodData.plain(.wechatPay).confirmsSetupIntents == false)
        #expect(PaymentMethodData.plain(.paypal).confirmsSetupIntents)
    }

    @Test func requiredBillingDetails() {
        #expect(PaymentMethodData.plain(.bancontact).requiredBillingDetails == ["name"])
        #expect(PaymentMethodData.eps(bank: nil).requiredBillingDetails == ["name"])
        #expect(PaymentMethodData.p24(bank: nil).requiredBillingDetails == ["email"])
        #expect(PaymentMethodData.sofort(country: "DE").requiredBillingDetails.isEmpty)
        #expect(PaymentMethodData.plain(.klarna).requiredBillingDetails == ["email", "address.country"])
        #expect(
            PaymentMethodData.boleto(taxID: "1").requiredBillingDetails == [
                "name", "email", "address.line1", "address.city", "address.state", "address.postalCode",
                "address.country",
            ])
        #expect(Billing(name: "").value(at: "name") == nil)
        #expect(Billing(address: .init(country: "BR")).value(at: "address.country") == "BR")
    }

    @Test func bankAccountNumbersStayOutOfDescriptions() {
        let account = USBankAccountInput(
            routingNumber: "110000000", accountNumber: "000123456789", accountHolderType: .individual)
        #expect(!"\(account)".contains("000123456789") && "\(account)".contains("6789"))
    }
}

@Suite struct VerifyMicrodepositsParamsTests {
    @Test func amountsForAPaymentIntent() {
        let params = VerifyMicrodepositsParams(clientSecret: "pi_123_secret_abc", proof: .amounts(32, 45))
        #expect(params.request(for: .publishable).method == .post)
        #expect(params.request(for: .publishable).path == "/v1/payment_intents/pi_123/verify_microdeposits")
        #expect(
            FormEncoder.encode(params.formParams(for: .publishable))
                == "amounts[0]=32&amounts[1]=45&client_secret=pi_123_secret_abc")
        // A secret key names the intent by its path alone, as for a confirmation.
        #expect(FormEncoder.encode(params.formParams(for: .secret)) == "amounts[0]=32&amounts[1]=45")
    }

    @Test func descriptorCodeForASetupIntent() {
        let params = VerifyMicrodepositsParams(clientSecret: "seti_9_secret_x", proof: .descriptorCode("SM11AA"))
        let request = params.request(for: .publishable)
        #expect(request.path == "/v1/setup_intents/seti_9/verify_microdeposits")
        #expect(FormEncoder.encode(request.params) == "client_secret=seti_9_secret_x&descriptor_code=SM11AA")
    }
}

/// Every type's mandate, PaymentIntent and SetupIntent apart, written out from the SDK's lists
/// (STPPaymentIntentParams.mandateData, STPSetupIntentConfirmParams.mandateDataIfRequired,
/// requiresMandateDataForPaymentIntent): a type the SDK sends one for fails here without it, a
/// `raw` type included.
struct MandatePerTypeTests {
    static let types = [
        // type, PaymentIntent, PaymentIntent set up off_session, SetupIntent
        ("au_becs_debit", true, true, true), ("bacs_debit", true, true, true), ("bancontact", true, true, true),
        ("ideal", true, true, true), ("sepa_debit", true, true, true), ("eps", true, true, true),
        ("sofort", true, true, false), ("link", true, true, true), ("us_bank_account", true, true, true),
        ("paypal", false, true, true), ("cashapp", false, true, true), ("revolut_pay", false, true, true),
        ("amazon_pay", false, true, true), ("klarna", false, true, true), ("satispay", false, true, true),
        ("alipay", false, false, true), ("twint", false, false, true), ("kr_card", false, false, true),
        ("naver_pay", false, false, true), ("card", false, false, false), ("acss_debit", false, false, false),
        ("swish", false, false, false), ("affirm", false, false, false),
    ]

    @Test(arguments: types)
    func theSDKsMandate(type: String, payment: Bool, offSession: Bool, setup: Bool) {
        func mandate(_ secret: String, _ usage: PaymentIntentConfirmParams.SetupFutureUsage?) -> Bool {
            PaymentIntentConfirmParams(
                clientSecret: secret, paymentMethodData: .raw(type: type, fields: [:]), setupFutureUsage: usage
            ).formParams(for: .publishable)["mandate_data"]
                == ["customer_acceptance": ["type": "online", "online": ["infer_from_client": true]]]
        }
        #expect(mandate("pi_1_secret_x", nil) == payment, "\(type)")
        #expect(mandate("pi_1_secret_x", .offSession) == offSession, "\(type)")
        #expect(mandate("seti_1_secret_x", nil) == setup, "\(type)")
        // The type's own setup_future_usage sets it up off_session too, as PaymentSheet reads it.
        var own = PaymentIntentConfirmParams(
            clientSecret: "pi_1_secret_x", paymentMethodData: .raw(type: type, fields: [:]))
        own.paymentMethodOptions = [type: ["setup_future_usage": "off_session"]]
        #expect((own.formParams(for: .publishable)["mandate_data"] != nil) == offSession, "\(type)")
        own.paymentMethodOptions = [type: ["setup_future_usage": "on_session"]]
        #expect((own.formParams(for: .publishable)["mandate_data"] != nil) == payment, "\(type)")
    }
}

/// payment_method_options merged under the payment method's own, shipping on a PaymentIntent only.
@Test func optionsAndShippingGoInTheForm() {
    var params = PaymentIntentConfirmParams(clientSecret: "pi_1_secret_x", paymentMethodData: .blik(code: "123456"))
    params.paymentMethodOptions = [
        "blik": ["code": "000000", "setup_future_usage": "none"], "card": ["network": "visa"],
    ]
    params.shipping = ["name": "Jo", "address": ["line1": "1 Main St"]]
    let form = params.formParams(for: .publishable)
    #expect(
        form["payment_method_options"] == [
            "blik": ["code": "123456", "setup_future_usage": "none"], "card": ["network": "visa"],
        ])
    #expect(form["shipping"] == ["name": "Jo", "address": ["line1": "1 Main St"]])
    var setup = PaymentIntentConfirmParams(clientSecret: "seti_1_secret_x", paymentMethodID: "pm_1")
    setup.shipping = ["name": "Jo"]
    setup.paymentMethodOptions = ["card": ["network": "visa"]]
    #expect(setup.formParams(for: .publishable)["shipping"] == nil)
    #expect(setup.formParams(for: .publishable)["payment_method_options"] == ["card": ["network": "visa"]])
}
