import JSONRPC
import StripeAPI

/// A confirmation's `paymentMethodOptions`, as the SDK's `STPConfirmPaymentMethodOptions` sends
/// them (`payment_method_options[<type>]`): the card's and a US bank account's common options
/// typed, any other type's in Stripe's own shape under `raw`.
public struct ConfirmPaymentMethodOptions: Codable, Sendable, Hashable {
    public struct Card: Codable, Sendable, Hashable {
        /// The card network to route through (a co-badged card's `cartes_bancaires`, say).
        public var network: String?
        public var requestThreeDSecure: String?
        public var setupFutureUsage: String?
        public init(network: String? = nil, requestThreeDSecure: String? = nil, setupFutureUsage: String? = nil) {
            self.network = network
            self.requestThreeDSecure = requestThreeDSecure
            self.setupFutureUsage = setupFutureUsage
        }
    }
    public struct USBankAccount: Codable, Sendable, Hashable {
        public var verificationMethod: String?
        public var setupFutureUsage: String?
        public init(verificationMethod: String? = nil, setupFutureUsage: String? = nil) {
            self.verificationMethod = verificationMethod
            self.setupFutureUsage = setupFutureUsage
        }
    }

    public var card: Card?
    public var usBankAccount: USBankAccount?
    /// Any type's options as Stripe names them, by type (`{"acss_debit": {"mandate_options": {...}}}`);
    /// a typed member wins over the same field here.
    public var raw: [String: JSONValue]?

    public init(card: Card? = nil, usBankAccount: USBankAccount? = nil, raw: [String: JSONValue]? = nil) {
        self.card = card
        self.usBankAccount = usBankAccount
        self.raw = raw
    }

    /// `payment_method_options` in Stripe's shape.
    public var stripeFields: [String: JSONValue] {
        var out = raw ?? [:]
        func put(_ type: String, _ fields: [(String, String?)]) {
            var hash = out[type]?.objectValue ?? [:]
            for (key, value) in fields { if let value { hash[key] = .string(value) } }
            if !hash.isEmpty { out[type] = .object(hash) }
        }
        if let card {
            put(
                "card",
                [
                    ("network", card.network), ("request_three_d_secure", card.requestThreeDSecure),
                    ("setup_future_usage", card.setupFutureUsage),
                ])
        }
        if let account = usBankAccount {
            put(
                "us_bank_account",
                [("verification_method", account.verificationMethod), ("setup_future_usage", account.setupFutureUsage)])
        }
        return out
    }

    static let usage = JSONSchema.enumeration(
        ["", "none", "off_session", "on_session"], "setup_future_usage for this type (\"\" or none: not saved)")

    public static let schema = JSONSchema.object(
        [
            "card": .object(
                [
                    "network": .string("The network to route the card through (e.g. cartes_bancaires, visa)"),
                    "requestThreeDSecure": .enumeration(
                        ["automatic", "any", "challenge"], "Ask for 3-D Secure (Stripe's request_three_d_secure)"),
                    "setupFutureUsage": usage,
                ], description: "payment_method_options[card]"),
            "usBankAccount": .object(
                [
                    "verificationMethod": .enumeration(
                        ["automatic", "instant", "microdeposits"], "How the account is verified"),
                    "setupFutureUsage": usage,
                ], description: "payment_method_options[us_bank_account]"),
            "raw": JSONSchema(
                [
                    "type": "object",
                    "description":
                        "Any type's options in Stripe's own shape, keyed by the type (acss_debit, klarna...): sent as given",
                    "additionalProperties": ["type": "object"],
                ]),
        ],
        description:
            "payment_method_options, as the SDK's STPConfirmPaymentMethodOptions: typed for card and usBankAccount, any type's under raw"
    )
}

/// A PaymentIntent confirmation's `shipping` (`STPPaymentIntentShippingDetailsParams`): Affirm and
/// Afterpay need it.
public struct ConfirmShipping: Codable, Sendable, Hashable {
    public struct Address: Codable, Sendable, Hashable {
        public var line1: String
        public var line2, city, state, postalCode, country: String?
        public init(
            line1: String, line2: String? = nil, city: String? = nil, state: String? = nil, postalCode: String? = nil,
            country: String? = nil
        ) {
            self.line1 = line1
            self.line2 = line2
            self.city = city
            self.state = state
            self.postalCode = postalCode
            self.country = country
        }
    }

    public var name: String
    public var address: Address
    public var phone: String?
    public var carrier: String?
    public var trackingNumber: String?

    public init(
        name: String, address: Address, phone: String? = nil, carrier: String? = nil, trackingNumber: String? = nil
    ) {
        self.name = name
        self.address = address
        self.phone = phone
        self.carrier = carrier
        self.trackingNumber = trackingNumber
    }

    /// `shipping` in Stripe's shape.
    public var stripeFields: JSONValue {
        func compact(_ pairs: [(String, String?)]) -> [String: JSONValue] {
            Dictionary(uniqueKeysWithValues: pairs.compactMap { key, value in value.map { (key, .string($0)) } })
        }
        var out = compact([
            ("name", name), ("phone", phone), ("carrier", carrier), ("tracking_number", trackingNumber),
        ])
        out["address"] = .object(
            compact([
                ("line1", address.line1), ("line2", address.line2), ("city", address.city), ("state", address.state),
                ("postal_code", address.postalCode), ("country", address.country),
            ]))
        return .object(out)
    }

    public static let schema = JSONSchema.object(
        [
            "name": .string("The recipient's name"), "phone": .string("The recipient's phone number"),
            "carrier": .string("The delivery service"), "trackingNumber": .string("The tracking number"),
            "address": .object(
                [
                    "line1": .string("Street"), "line2": .string("Street, more"), "city": .string("City"),
                    "state": .string("State, county or province"), "postalCode": .string("Postal code"),
                    "country": .string("Two-letter country code"),
                ], required: ["line1"], description: "Where it goes"),
        ], required: ["name", "address"],
        description: "Shipping details (a PaymentIntent's only: Affirm and Afterpay need them)")
}

extension IntentConfirm.Params {
    /// The confirmation these params ask for: the payment method, its options and (a PaymentIntent's
    /// only) the shipping. The daemon sends this; Tests/Fixtures/sdk-confirm-forms.json holds it to
    /// every key the SDK sends for the same confirmation.
    public func confirmParams(setupIntent: Bool) throws(RPCError) -> PaymentIntentConfirmParams {
        var confirm = try paymentMethod.confirmParams(
            clientSecret: clientSecret, returnURL: returnURL, at: "paymentMethod", setupIntent: setupIntent)
        confirm.paymentMethodOptions = paymentMethodOptions?.stripeFields ?? [:]
        if let shipping {
            guard !setupIntent else {
                throw RPCError.invalidParams("a SetupIntent takes no shipping", parameter: "shipping")
            }
            confirm.shipping = shipping.stripeFields
        }
        return confirm
    }
}
