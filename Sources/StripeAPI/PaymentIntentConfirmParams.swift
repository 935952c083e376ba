import Foundation
import JSONRPC

/// A new PaymentMethod to confirm a PaymentIntent with (`payment_method_data`).
public enum PaymentMethodData: Sendable, Hashable {
    case card(CardInput)
    case ideal(bank: String?)
    case sofort(country: String)
    case bancontact
    case giropay
    case eps(bank: String?)
    case p24(bank: String?)
    /// Needs a mandate: the confirmation sends `mandate_data` (the customer accepted online).
    case sepaDebit(iban: String)

    public var type: String {
        switch self {
        case .card: "card"
        case .ideal: "ideal"
        case .sofort: "sofort"
        case .bancontact: "bancontact"
        case .giropay: "giropay"
        case .eps: "eps"
        case .p24: "p24"
        case .sepaDebit: "sepa_debit"
        }
    }

    /// Billing details Stripe refuses the confirmation without (`name`, `email`).
    public var requiredBillingDetails: [String] {
        switch self {
        case .bancontact, .giropay, .eps: ["name"]
        case .p24: ["email"]
        case .sepaDebit: ["name", "email"]
        case .card, .ideal, .sofort: []
        }
    }

    /// The type's own sub-object (`payment_method_data[<type>]`), if it has one.
    var details: [String: JSONValue]? {
        switch self {
        case .card(let card): card.cardFields
        case .ideal(let bank), .eps(let bank), .p24(let bank): bank.map { ["bank": .string($0)] }
        case .sofort(let country): ["country": .string(country)]
        case .sepaDebit(let iban): ["iban": .string(iban)]
        case .bancontact, .giropay: nil
        }
    }
}

/// `POST /v1/payment_intents/{id}/confirm`, as the SDK's `STPPaymentIntentParams` builds it.
/// `POST /v1/setup_intents/{id}/confirm` takes the same form (`STPSetupIntentConfirmParams`:
/// client secret, payment method, return URL).
public struct PaymentIntentConfirmParams: Sendable, Hashable {
    public enum SetupFutureUsage: String, Codable, Sendable {
        case onSession = "on_session"
        case offSession = "off_session"
    }

    /// `payment_method_data[billing_details]`: what bancontact, giropay, eps (name) and p24 (email) need.
    public struct BillingDetails: Codable, Sendable, Hashable {
        public var name: String?
        public var email: String?
        public init(name: String? = nil, email: String? = nil) {
            self.name = name
            self.email = email
        }
    }

    public var clientSecret: String
    /// An existing PaymentMethod; wins over `paymentMethodData`.
    public var paymentMethodID: String?
    public var paymentMethodData: PaymentMethodData?
    /// Sent with `paymentMethodData` only; for a card, given fields override the card's own name.
    public var billingDetails: BillingDetails?
    public var returnURL: String?
    public var savePaymentMethod: Bool?
    public var setupFutureUsage: SetupFutureUsage?

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
    public var intentID: String {
        clientSecret.range(of: "_secret_").map { String(clientSecret[..<$0.lowerBound]) } ?? clientSecret
    }

    /// As the SDK's `STPMandateDataParams` default: accepted online, the IP address and user agent
    /// inferred by Stripe from the request (which a publishable key may ask for).
    static let onlineMandate: JSONValue = [
        "customer_acceptance": ["type": "online", "online": ["infer_from_client": true]]
    ]

    /// The form sent with a key of `kind`. The client secret goes with a publishable key, as the
    /// SDK sends it; a secret or restricted key names the intent by the path alone, and Stripe
    /// answers a `client_secret` from it with "Received unknown parameter".
    public func formParams(for kind: StripeKey.Kind) -> [String: JSONValue] {
        var out: [String: JSONValue] = [:]
        if kind == .publishable { out["client_secret"] = .string(clientSecret) }
        if let paymentMethodID {
            out["payment_method"] = .string(paymentMethodID)
        } else if let data = paymentMethodData {
            out["payment_method_data"] = .object(data.createParams(billingDetails: billingDetails))
            if case .sepaDebit = data { out["mandate_data"] = Self.onlineMandate }
        }
        out["return_url"] = returnURL.map(JSONValue.string)
        out["save_payment_method"] = savePaymentMethod.map(JSONValue.bool)
        out["setup_future_usage"] = setupFutureUsage.map { .string($0.rawValue) }
        return out
    }
}

extension PaymentMethodData {
    /// The PaymentMethod's params, as `POST /v1/payment_methods` and `payment_method_data` take them;
    /// a card's own name and address go to `billing_details`, which `billingDetails` overrides.
    public func createParams(billingDetails: PaymentIntentConfirmParams.BillingDetails? = nil) -> [String: JSONValue] {
        var pm: [String: JSONValue] = ["type": .string(type)]
        pm[type] = details.map(JSONValue.object)
        var billing: [String: JSONValue] = [:]
        if case .card(let card) = self {
            billing["name"] = card.name.map(JSONValue.string)
            if !card.address.isEmpty { billing["address"] = .object(card.address) }
        }
        billing.merge(compact([("name", billingDetails?.name), ("email", billingDetails?.email)])) { _, given in given }
        if !billing.isEmpty { pm["billing_details"] = .object(billing) }
        return pm
    }
}
