import Foundation
import JSONRPC

/// A new PaymentMethod to confirm an intent with (`payment_method_data`): every type of the SDK's
/// `STPPaymentMethodType` that needs no native app on the phone, with what Stripe requires for each
/// (checked against the `stripe` package 16.1.0's `payment_method_data` and `payment_method_options`
/// params), and `raw` for the rest.
public enum PaymentMethodData: Sendable, Hashable {
    /// The types whose `payment_method_data` is the type alone, besides billing details.
    public enum Plain: String, Sendable, CaseIterable {
        case affirm, alipay, alma, bancontact, billie, cashapp, crypto, grabpay, klarna, konbini, mobilepay
        case multibanco, oxxo, payco, paynow, paypal, pix, promptpay, sunbit, swish, twint, zip
        case afterpayClearpay = "afterpay_clearpay"
        case amazonPay = "amazon_pay"
        case krCard = "kr_card"
        case naverPay = "naver_pay"
        case payByBank = "pay_by_bank"
        case revolutPay = "revolut_pay"
        case wechatPay = "wechat_pay"
        /// Discontinued by Stripe on 30 June 2024; kept as the SDK has it.
        case giropay
    }

    case card(CardInput)
    case plain(Plain)
    /// iDEAL, EPS and P24: the bank is optional (Stripe's page asks otherwise).
    case ideal(bank: String?)
    case eps(bank: String?)
    case p24(bank: String?)
    case fpx(bank: String)
    /// Discontinued by Stripe on 31 March 2025; kept as the SDK has it.
    case sofort(country: String)
    case sepaDebit(iban: String)
    case bacsDebit(sortCode: String, accountNumber: String)
    case auBECSDebit(bsbNumber: String, accountNumber: String)
    /// Entered by hand, so Stripe verifies the account with microdeposits (`verify_with_microdeposits`).
    case usBankAccount(USBankAccountInput)
    case boleto(taxID: String)
    /// The six-digit code from the customer's banking app goes to `payment_method_options[blik][code]`.
    case blik(code: String)
    /// Any other type: `payment_method_data` as given (nested JSON), `type` apart.
    case raw(type: String, fields: [String: JSONValue])

    public var type: String {
        switch self {
        case .card: "card"
        case .plain(let plain): plain.rawValue
        case .ideal: "ideal"
        case .eps: "eps"
        case .p24: "p24"
        case .fpx: "fpx"
        case .sofort: "sofort"
        case .sepaDebit: "sepa_debit"
        case .bacsDebit: "bacs_debit"
        case .auBECSDebit: "au_becs_debit"
        case .usBankAccount: "us_bank_account"
        case .boleto: "boleto"
        case .blik: "blik"
        case .raw(let type, _): type
        }
    }

    /// The billing details Stripe refuses the confirmation without, as paths into `BillingDetails`
    /// (`name`, `email`, `address.country`...), from Stripe's guide for each type.
    public var requiredBillingDetails: [String] {
        let fullAddress = ["address.line1", "address.city", "address.state", "address.postalCode", "address.country"]
        switch self {
        case .plain(.bancontact), .plain(.giropay), .eps, .usBankAccount: return ["name"]
        case .p24, .plain(.multibanco), .plain(.promptpay): return ["email"]
        case .sepaDebit, .auBECSDebit, .plain(.oxxo), .plain(.konbini): return ["name", "email"]
        case .plain(.klarna): return ["email", "address.country"]
        case .bacsDebit, .plain(.afterpayClearpay):
            return ["name", "email", "address.line1", "address.postalCode", "address.country"]
        case .boleto: return ["name", "email"] + fullAddress
        default: return []
        }
    }

    /// Whether a SetupIntent can be confirmed with it: WeChat Pay needs
    /// `payment_method_options[wechat_pay]`, which SetupIntents do not take.
    public var confirmsSetupIntents: Bool { self != .plain(.wechatPay) }

    /// `payment_method_options[<type>]` at confirmation. WeChat Pay's client is `web` (a QR code):
    /// stpd is not an app on the customer's phone, so neither `ios` nor `android` applies.
    var options: [String: JSONValue]? {
        switch self {
        case .plain(.wechatPay): ["client": "web"]
        case .blik(let code): ["code": .string(code)]
        default: nil
        }
    }

    /// Whether the confirmation sends `mandate_data`, as the SDK decides by the type's name (so a
    /// `raw` type too): a SetupIntent by `STPSetupIntentConfirmParams.mandateDataIfRequired`, a
    /// PaymentIntent by `STPPaymentIntentParams.mandateData`, plus the types PaymentSheet gives one
    /// when the payment is set up `off_session` (`requiresMandateDataForPaymentIntent`).
    func needsMandate(setupIntent: Bool, setupFutureUsage: PaymentIntentConfirmParams.SetupFutureUsage?) -> Bool {
        if setupIntent { return Mandates.setupIntent.contains(type) }
        return Mandates.paymentIntent.contains(type)
            || (setupFutureUsage == .offSession && Mandates.paymentIntentOffSession.contains(type))
    }

    /// The type's own sub-object (`payment_method_data[<type>]`), if it has one.
    var details: [String: JSONValue]? {
        switch self {
        case .card(let card): card.cardFields
        case .ideal(let bank), .eps(let bank), .p24(let bank): bank.map { ["bank": .string($0)] }
        case .fpx(let bank): ["bank": .string(bank)]
        case .sofort(let country): ["country": .string(country)]
        case .sepaDebit(let iban): ["iban": .string(iban)]
        case .bacsDebit(let sortCode, let accountNumber):
            ["sort_code": .string(sortCode), "account_number": .string(accountNumber)]
        case .auBECSDebit(let bsbNumber, let accountNumber):
            ["bsb_number": .string(bsbNumber), "account_number": .string(accountNumber)]
        case .usBankAccount(let account): account.fields
        case .boleto(let taxID): ["tax_id": .string(taxID)]
        case .plain, .blik, .raw: nil
        }
    }
}

/// The payment-method types whose confirmation the SDK sends with an online mandate
/// (`STPMandateDataParams.makeWithInferredValues`), read from stripe-ios: the lists differ between
/// PaymentIntents and SetupIntents (Sofort only on a payment; Alipay, TWINT, Korean cards, Naver
/// Pay and the wallets only when set up).
public enum Mandates {
    /// `STPPaymentIntentParams.mandateData` (`STPPaymentIntentParams.swift`, 11041c2).
    public static let paymentIntent: Set<String> = [
        "au_becs_debit", "bacs_debit", "bancontact", "ideal", "sepa_debit", "eps", "sofort", "link", "us_bank_account",
    ]
    /// `STPPaymentMethodType.requiresMandateDataForPaymentIntent` (PaymentSheet): with
    /// `setup_future_usage=off_session`, the confirmation's or the type's own
    /// (`payment_method_options[<type>][setup_future_usage]`).
    public static let paymentIntentOffSession: Set<String> = [
        "paypal", "cashapp", "revolut_pay", "amazon_pay", "klarna", "satispay",
    ]
    /// `STPSetupIntentConfirmParams.mandateDataIfRequired` (`STPSetupIntentConfirmParams.swift`, 00c6f77),
    /// plus PaymentSheet's `STPPaymentMethodType.requiresMandateDataForSetupIntent` (PayPal, Revolut Pay,
    /// Satispay; `PaymentSheet+API.swift`, `makeSetupIntentParams`).
    public static let setupIntent: Set<String> = [
        "au_becs_debit", "alipay", "bacs_debit", "bancontact", "ideal", "sepa_debit", "eps", "link", "us_bank_account",
        "cashapp", "paypal", "revolut_pay", "klarna", "amazon_pay", "twint", "kr_card", "naver_pay", "satispay",
    ]
}

/// A US bank account entered by hand (`payment_method_data[us_bank_account]`).
public struct USBankAccountInput: Codable, Sendable, Hashable, CustomStringConvertible {
    public enum HolderType: String, Codable, Sendable, CaseIterable { case individual, company }
    public enum AccountType: String, Codable, Sendable, CaseIterable { case checking, savings }

    public var routingNumber: String
    public var accountNumber: String
    public var accountHolderType: HolderType
    /// Stripe's default is checking.
    public var accountType: AccountType?

    public init(
        routingNumber: String, accountNumber: String, accountHolderType: HolderType, accountType: AccountType? = nil
    ) {
        self.routingNumber = routingNumber
        self.accountNumber = accountNumber
        self.accountHolderType = accountHolderType
        self.accountType = accountType
    }

    /// Only the last four digits of the account, as for a card.
    public var description: String { "USBankAccountInput(\(routingNumber), ••••\(accountNumber.suffix(4)))" }

    var fields: [String: JSONValue] {
        var out: [String: JSONValue] = [
            "routing_number": .string(routingNumber), "account_number": .string(accountNumber),
            "account_holder_type": .string(accountHolderType.rawValue),
        ]
        out["account_type"] = accountType.map { .string($0.rawValue) }
        return out
    }
}

/// `POST /v1/payment_intents/{id}/confirm`, as the SDK's `STPPaymentIntentConfirmParams` builds it;
/// a SetupIntent's client secret makes it `POST /v1/setup_intents/{id}/confirm`
/// (`STPSetupIntentConfirmParams`: client secret, payment method, return URL, mandate), whose
/// mandate rule differs.
public struct PaymentIntentConfirmParams: Sendable, Hashable {
    public enum SetupFutureUsage: String, Codable, Sendable {
        case onSession = "on_session"
        case offSession = "off_session"
    }

    /// `payment_method_data[billing_details]`; `PaymentMethodData.requiredBillingDetails` says which
    /// fields each type needs.
    public struct BillingDetails: Codable, Sendable, Hashable {
        public struct Address: Codable, Sendable, Hashable {
            public var line1, line2, city, state, postalCode, country: String?
            public init(
                line1: String? = nil, line2: String? = nil, city: String? = nil, state: String? = nil,
                postalCode: String? = nil, country: String? = nil
            ) {
                self.line1 = line1
                self.line2 = line2
                self.city = city
                self.state = state
                self.postalCode = postalCode
                self.country = country
            }
        }

        public var name: String?
        public var email: String?
        public var phone: String?
        public var address: Address?
        /// The payer's tax id (Brazil's CPF or CNPJ, for Pix).
        public var taxId: String?

        public init(
            name: String? = nil, email: String? = nil, phone: String? = nil, address: Address? = nil,
            taxId: String? = nil
        ) {
            self.name = name
            self.email = email
            self.phone = phone
            self.address = address
            self.taxId = taxId
        }

        /// The field at a `requiredBillingDetails` path, nil when absent or empty.
        public func value(at path: String) -> String? {
            let value: String? =
                switch path {
                case "name": name
                case "email": email
                case "phone": phone
                case "taxId": taxId
                case "address.line1": address?.line1
                case "address.line2": address?.line2
                case "address.city": address?.city
                case "address.state": address?.state
                case "address.postalCode": address?.postalCode
                case "address.country": address?.country
                default: nil
                }
            return nonEmpty(value)
        }

        var fields: [String: JSONValue] {
            var out = compact([("name", name), ("email", email), ("phone", phone), ("tax_id", taxId)])
            if let address {
                let parts = compact([
                    ("line1", address.line1), ("line2", address.line2), ("city", address.city),
                    ("state", address.state), ("postal_code", address.postalCode), ("country", address.country),
                ])
                if !parts.isEmpty { out["address"] = .object(parts) }
            }
            return out
        }
    }

    public var clientSecret: String
    /// An existing PaymentMethod; wins over `paymentMethodData`.
    public var paymentMethodID: String?
    public var paymentMethodData: PaymentMethodData?
    /// Sent with `paymentMethodData` only; for a card, given fields override the card's own.
    public var billingDetails: BillingDetails?
    /// The new PaymentMethod's `metadata` (`STPPaymentMethodParams.metadata`), with `paymentMethodData` only.
    public var paymentMethodMetadata: [String: String]?
    public var returnURL: String?
    public var savePaymentMethod: Bool?
    public var setupFutureUsage: SetupFutureUsage?
    /// `payment_method_options`, by type, in Stripe's own shape (`["card": ["network": "visa"]]`):
    /// merged under what the payment method itself sets (BLIK's code, WeChat Pay's client).
    public var paymentMethodOptions: [String: JSONValue] = [:]
    /// `shipping` (a PaymentIntent's only), in Stripe's shape.
    public var shipping: JSONValue?

    public init(
        clientSecret: String, paymentMethodID: String, returnURL: String? = nil, savePaymentMethod: Bool? = nil,
        setupFutureUsage: SetupFutureUsage? = nil
    ) {
        self.clientSecret = clientSecret
        self.paymentMethodID = paymentMethodID
        self.returnURL = returnURL
        self.savePaymentMethod = savePaymentMethod
        self.setupFutureUsage = setupFutureUsage
    }

    public init(
        clientSecret: String, paymentMethodData: PaymentMethodData, billingDetails: BillingDetails? = nil,
        returnURL: String? = nil, savePaymentMethod: Bool? = nil, setupFutureUsage: SetupFutureUsage? = nil
    ) {
        self.clientSecret = clientSecret
        self.paymentMethodData = paymentMethodData
        self.billingDetails = billingDetails
        self.returnURL = returnURL
        self.savePaymentMethod = savePaymentMethod
        self.setupFutureUsage = setupFutureUsage
    }

    /// `pi_XXX` from `pi_XXX_secret_YYY` (the whole secret when it has no `_secret_`).
    public var paymentIntentID: String { intentID }

    /// `pi_XXX` or `seti_XXX` from the client secret (the whole secret when it has no `_secret_`).
    public var intentID: String { ClientSecret.intentID(of: clientSecret) }

    var isSetupIntent: Bool { clientSecret.hasPrefix("seti_") }

    /// As the SDK's `STPMandateDataParams.makeWithInferredValues`: accepted online, the IP address and
    /// user agent inferred by Stripe from the request (which a publishable key may ask for).
    static let onlineMandate: JSONValue = [
        "customer_acceptance": ["type": "online", "online": ["infer_from_client": true]]
    ]

    /// The form sent with a key of `kind`. The client secret goes with a publishable key, as the
    /// SDK sends it; a secret or restricted key names the intent by the path alone, and Stripe
    /// answers a `client_secret` from it with "Received unknown parameter".
    public func formParams(for kind: StripeKey.Kind) -> [String: JSONValue] {
        var out: [String: JSONValue] = [:]
        if kind == .publishable { out["client_secret"] = .string(clientSecret) }
        var options = paymentMethodOptions
        if let paymentMethodID {
            out["payment_method"] = .string(paymentMethodID)
        } else if let data = paymentMethodData {
            out["payment_method_data"] = .object(
                data.createParams(billingDetails: billingDetails, metadata: paymentMethodMetadata))
            if let own = data.options {
                options[data.type] = .object((options[data.type]?.objectValue ?? [:]).merging(own) { _, own in own })
            }
            // PaymentSheet reads off_session from the type's own setup_future_usage too.
            let typeUsage = options[data.type]?["setup_future_usage"]?.stringValue.flatMap(SetupFutureUsage.init)
            if data.needsMandate(setupIntent: isSetupIntent, setupFutureUsage: setupFutureUsage ?? typeUsage) {
                out["mandate_data"] = Self.onlineMandate
            }
        }
        out["payment_method_options"] = options.isEmpty ? nil : .object(options)
        out["shipping"] = isSetupIntent ? nil : shipping
        out["return_url"] = returnURL.map(JSONValue.string)
        out["save_payment_method"] = savePaymentMethod.map(JSONValue.bool)
        out["setup_future_usage"] = setupFutureUsage.map { .string($0.rawValue) }
        return out
    }
}

extension PaymentMethodData {
    /// The PaymentMethod's params, as `POST /v1/payment_methods` and `payment_method_data` take them;
    /// a card's own name and address go to `billing_details`, which `billingDetails` overrides field
    /// by field (an address as a whole). `metadata` replaces a raw type's own.
    public func createParams(
        billingDetails: PaymentIntentConfirmParams.BillingDetails? = nil, metadata: [String: String]? = nil
    ) -> [String: JSONValue] {
        var pm: [String: JSONValue] = ["type": .string(type)]
        if case .raw(_, let fields) = self { pm.merge(fields) { given, _ in given } }
        if let metadata, !metadata.isEmpty { pm["metadata"] = .object(metadata.mapValues(JSONValue.string)) }
        pm[type] = details.map(JSONValue.object) ?? pm[type]
        var billing = pm["billing_details"]?.objectValue ?? [:]
        if case .card(let card) = self {
            billing["name"] = card.name.map(JSONValue.string)
            if !card.address.isEmpty { billing["address"] = .object(card.address) }
        }
        billing.merge(billingDetails?.fields ?? [:]) { _, given in given }
        pm["billing_details"] = billing.isEmpty ? nil : .object(billing)
        return pm
    }
}
