import JSONRPC
import StripeAPI

/// Which Source to create: exactly one member, named after the SDK's `STPSourceParams`
/// constructor it calls (spec §6.4), or `raw` for Stripe's own form fields.
public struct SourceConstructor: Codable, Sendable, Hashable {
    public struct Sofort: Codable, Sendable, Hashable {
        public var amount: Int
        public var returnURL: String
        /// The customer's bank's country.
        public var country: String
        public var statementDescriptor: String?
        public init(amount: Int, returnURL: String, country: String, statementDescriptor: String? = nil) {
            self.amount = amount
            self.returnURL = returnURL
            self.country = country
            self.statementDescriptor = statementDescriptor
        }
    }

    public struct Ideal: Codable, Sendable, Hashable {
        public var amount: Int
        public var name: String?
        public var returnURL: String
        public var statementDescriptor: String?
        public var bank: String?
        public init(
            amount: Int, name: String? = nil, returnURL: String, statementDescriptor: String? = nil, bank: String? = nil
        ) {
            self.amount = amount
            self.name = name
            self.returnURL = returnURL
            self.statementDescriptor = statementDescriptor
            self.bank = bank
        }
    }

    /// Bancontact, giropay and EPS take the same arguments.
    public struct NamedRedirect: Codable, Sendable, Hashable {
        public var amount: Int
        /// The account holder.
        public var name: String
        public var returnURL: String
        public var statementDescriptor: String?
        public init(amount: Int, name: String, returnURL: String, statementDescriptor: String? = nil) {
            self.amount = amount
            self.name = name
            self.returnURL = returnURL
            self.statementDescriptor = statementDescriptor
        }
    }

    public struct P24: Codable, Sendable, Hashable {
        public var amount: Int
        public var currency: String
        public var email: String
        public var name: String?
        public var returnURL: String
        public init(amount: Int, currency: String, email: String, name: String? = nil, returnURL: String) {
            self.amount = amount
            self.currency = currency
            self.email = email
            self.name = name
            self.returnURL = returnURL
        }
    }

    public struct Multibanco: Codable, Sendable, Hashable {
        public var amount: Int
        public var returnURL: String
        public var email: String
        public init(amount: Int, returnURL: String, email: String) {
            self.amount = amount
            self.returnURL = returnURL
            self.email = email
        }
    }

    public struct SepaDebit: Codable, Sendable, Hashable {
        public var name: String
        public var iban: String
        public var addressLine1: String?
        public var city: String?
        public var postalCode: String?
        public var country: String?
        public init(
            name: String, iban: String, addressLine1: String? = nil, city: String? = nil, postalCode: String? = nil,
            country: String? = nil
        ) {
            self.name = name
            self.iban = iban
            self.addressLine1 = addressLine1
            self.city = city
            self.postalCode = postalCode
            self.country = country
        }
    }

    public struct ThreeDSecure: Codable, Sendable, Hashable {
        public var amount: Int
        public var currency: String
        public var returnURL: String
        /// The card Source to authenticate (`src_…`).
        public var card: String
        public init(amount: Int, currency: String, returnURL: String, card: String) {
            self.amount = amount
            self.currency = currency
            self.returnURL = returnURL
            self.card = card
        }
    }

    public struct Alipay: Codable, Sendable, Hashable {
        public var amount: Int
        public var currency: String
        public var returnURL: String
        /// Both or neither: the app Alipay should return to (the SDK sends its own bundle's).
        public var appBundleId: String?
        public var appVersion: String?
        public init(
            amount: Int, currency: String, returnURL: String, appBundleId: String? = nil, appVersion: String? = nil
        ) {
            self.amount = amount
            self.currency = currency
            self.returnURL = returnURL
            self.appBundleId = appBundleId
            self.appVersion = appVersion
        }
    }

    public struct AlipayReusable: Codable, Sendable, Hashable {
        public var currency: String
        public var returnURL: String
        public init(currency: String, returnURL: String) {
            self.currency = currency
            self.returnURL = returnURL
        }
    }

    public struct WechatPay: Codable, Sendable, Hashable {
        public var amount: Int
        public var currency: String
        public var appId: String
        public var statementDescriptor: String?
        public init(amount: Int, currency: String, appId: String, statementDescriptor: String? = nil) {
            self.amount = amount
            self.currency = currency
            self.appId = appId
            self.statementDescriptor = statementDescriptor
        }
    }

    public struct Klarna: Codable, Sendable, Hashable {
        public var returnURL: String
        public var currency: String
        public var purchaseCountry: String
        public var items: [KlarnaLineItem]
        public var customPaymentMethods: [KlarnaPaymentMethod]?
        public var billingAddress: KlarnaAddress?
        public var firstName: String?
        public var lastName: String?
        public var dateOfBirth: DateOfBirth?
        public init(
            returnURL: String, currency: String, purchaseCountry: String, items: [KlarnaLineItem],
            customPaymentMethods: [KlarnaPaymentMethod]? = nil, billingAddress: KlarnaAddress? = nil,
            firstName: String? = nil, lastName: String? = nil, dateOfBirth: DateOfBirth? = nil
        ) {
            self.returnURL = returnURL
            self.currency = currency
            self.purchaseCountry = purchaseCountry
            self.items = items
            self.customPaymentMethods = customPaymentMethods
            self.billingAddress = billingAddress
            self.firstName = firstName
            self.lastName = lastName
            self.dateOfBirth = dateOfBirth
        }
    }

    public struct VisaCheckout: Codable, Sendable, Hashable {
        public var callId: String
        public init(callId: String) { self.callId = callId }
    }

    public struct Masterpass: Codable, Sendable, Hashable {
        public var cartId: String
        public var transactionId: String
        public init(cartId: String, transactionId: String) {
            self.cartId = cartId
            self.transactionId = transactionId
        }
    }

    public var card: CardInput?
    public var sofort: Sofort?
    public var ideal: Ideal?
    public var bancontact: NamedRedirect?
    public var giropay: NamedRedirect?
    public var eps: NamedRedirect?
    public var p24: P24?
    public var multibanco: Multibanco?
    public var sepaDebit: SepaDebit?
    public var threeDSecure: ThreeDSecure?
    public var alipay: Alipay?
    public var alipayReusable: AlipayReusable?
    public var wechatPay: WechatPay?
    public var klarna: Klarna?
    public var visaCheckout: VisaCheckout?
    public var masterpass: Masterpass?
    /// Stripe's own `POST /v1/sources` fields (nested objects, not bracketed keys); needs `type`.
    public var raw: [String: JSONValue]?

    public init(
        card: CardInput? = nil, sofort: Sofort? = nil, ideal: Ideal? = nil, bancontact: NamedRedirect? = nil,
        giropay: NamedRedirect? = nil, eps: NamedRedirect? = nil, p24: P24? = nil, multibanco: Multibanco? = nil,
        sepaDebit: SepaDebit? = nil, threeDSecure: ThreeDSecure? = nil, alipay: Alipay? = nil,
        alipayReusable: AlipayReusable? = nil, wechatPay: WechatPay? = nil, klarna: Klarna? = nil,
        visaCheckout: VisaCheckout? = nil, masterpass: Masterpass? = nil, raw: [String: JSONValue]? = nil
    ) {
        self.card = card
        self.sofort = sofort
        self.ideal = ideal
        self.bancontact = bancontact
        self.giropay = giropay
        self.eps = eps
        self.p24 = p24
        self.multibanco = multibanco
        self.sepaDebit = sepaDebit
        self.threeDSecure = threeDSecure
        self.alipay = alipay
        self.alipayReusable = alipayReusable
        self.wechatPay = wechatPay
        self.klarna = klarna
        self.visaCheckout = visaCheckout
        self.masterpass = masterpass
        self.raw = raw
    }

    /// The member names, in the order errors list them.
    public static let members = [
        "card", "sofort", "ideal", "bancontact", "giropay", "eps", "p24", "multibanco", "sepaDebit", "threeDSecure",
        "alipay", "alipayReusable", "wechatPay", "klarna", "visaCheckout", "masterpass", "raw",
    ]

    /// The SDK's params for the one member given. `path` is where this object sits in the method's
    /// params (e.g. `source`), so errors name the right parameter.
    public func sourceParams(at path: String? = nil) throws(RPCError) -> SourceParams {
        let given: [(String, SourceParams?)] = [
            ("card", card.map(SourceParams.card)),
            (
                "sofort",
                sofort.map {
                    .sofort(
                        amount: $0.amount, returnURL: $0.returnURL, country: $0.country,
                        statementDescriptor: $0.statementDescriptor)
                }
            ),
            (
                "ideal",
                ideal.map {
                    .ideal(
                        amount: $0.amount, name: $0.name, returnURL: $0.returnURL,
                        statementDescriptor: $0.statementDescriptor, bank: $0.bank)
                }
            ),
            (
                "bancontact",
                bancontact.map {
                    .bancontact(
                        amount: $0.amount, name: $0.name, returnURL: $0.returnURL,
                        statementDescriptor: $0.statementDescriptor)
                }
            ),
            (
                "giropay",
                giropay.map {
                    .giropay(
                        amount: $0.amount, name: $0.name, returnURL: $0.returnURL,
                        statementDescriptor: $0.statementDescriptor)
                }
            ),
            (
                "eps",
                eps.map {
                    .eps(
                        amount: $0.amount, name: $0.name, returnURL: $0.returnURL,
                        statementDescriptor: $0.statementDescriptor)
                }
            ),
            (
                "p24",
                p24.map {
                    .p24(
                        amount: $0.amount, currency: $0.currency, email: $0.email, name: $0.name,
                        returnURL: $0.returnURL)
                }
            ),
            ("multibanco", multibanco.map { .multibanco(amount: $0.amount, returnURL: $0.returnURL, email: $0.email) }),
            (
                "sepaDebit",
                sepaDebit.map {
                    .sepaDebit(
                        name: $0.name, iban: $0.iban, addressLine1: $0.addressLine1, city: $0.city,
                        postalCode: $0.postalCode, country: $0.country)
                }
            ),
            (
                "threeDSecure",
                threeDSecure.map {
                    .threeDSecure(amount: $0.amount, currency: $0.currency, returnURL: $0.returnURL, card: $0.card)
                }
            ),
            (
                "alipay",
                alipay.map {
                    .alipay(
                        amount: $0.amount, currency: $0.currency, returnURL: $0.returnURL, appBundleID: $0.appBundleId,
                        appVersion: $0.appVersion)
                }
            ),
            ("alipayReusable", alipayReusable.map { .alipayReusable(currency: $0.currency, returnURL: $0.returnURL) }),
            (
                "wechatPay",
                wechatPay.map {
                    .wechatPay(
                        amount: $0.amount, currency: $0.currency, appID: $0.appId,
                        statementDescriptor: $0.statementDescriptor)
                }
            ),
            (
                "klarna",
                klarna.map {
                    .klarna(
                        returnURL: $0.returnURL, currency: $0.currency, purchaseCountry: $0.purchaseCountry,
                        items: $0.items,
                        customPaymentMethods: $0.customPaymentMethods ?? [], billingAddress: $0.billingAddress,
                        firstName: $0.firstName, lastName: $0.lastName, dateOfBirth: $0.dateOfBirth)
                }
            ),
            ("visaCheckout", visaCheckout.map { .visaCheckout(callID: $0.callId) }),
            ("masterpass", masterpass.map { .masterpass(cartID: $0.cartId, transactionID: $0.transactionId) }),
            ("raw", try raw.map { fields throws(RPCError) in try Self.rawParams(fields, at: memberPath("raw", path)) }),
        ]
        let set = given.compactMap { name, params in params.map { (name, $0) } }
        guard set.count == 1 else {
            let detail = set.isEmpty ? "" : " (got \(set.map(\.0).joined(separator: ", ")))"
            throw RPCError.invalidParams(
                "give exactly one source type: \(Self.members.joined(separator: ", "))" + detail,
                parameter: set.count > 1 ? memberPath(set[1].0, path) : (path ?? "params"))
        }
        return set[0].1
    }

    /// `type` and `redirect` go to their own fields, so the redirect_merchant_name rule still
    /// applies; everything else passes through unchanged.
    private static func rawParams(_ fields: [String: JSONValue], at path: String) throws(RPCError) -> SourceParams {
        guard let type = fields["type"]?.stringValue, !type.isEmpty else {
            throw RPCError.invalidParams("raw source params need a non-empty string type", parameter: "\(path).type")
        }
        var rest = fields
        rest["type"] = nil
        let redirect = rest.removeValue(forKey: "redirect")
        var params = SourceParams(type: type, additionalAPIParameters: rest)
        if let redirect {
            if let object = redirect.objectValue {
                params.redirect = object
            } else {
                params.additionalAPIParameters["redirect"] = redirect
            }
        }
        return params
    }

    public static let schema: JSONSchema = {
        let namedRedirect = JSONSchema.object(
            [
                "amount": amount, "name": .string("The account holder's full name"), "returnURL": returnURL,
                "statementDescriptor": statementDescriptor,
            ], required: ["amount", "name", "returnURL"], description: "EUR; a redirect to the customer's bank")
        return JSONSchema.object(
            [
                "card": cardSchema,
                "sofort": .object(
                    [
                        "amount": amount, "returnURL": returnURL,
                        "country": country("The country of the customer's bank"),
                        "statementDescriptor": statementDescriptor,
                    ], required: ["amount", "returnURL", "country"], description: "SOFORT (EUR)"),
                "ideal": .object(
                    [
                        "amount": amount, "name": .string("The account holder (sent only when non-empty)"),
                        "returnURL": returnURL, "statementDescriptor": statementDescriptor,
                        "bank": .string("The customer's bank, e.g. ing (sent only when non-empty)"),
                    ], required: ["amount", "returnURL"], description: "iDEAL (EUR)"),
                "bancontact": namedRedirect,
                "giropay": namedRedirect,
                "eps": namedRedirect,
                "p24": .object(
                    [
                        "amount": amount, "currency": currency, "email": .string("The account holder's email"),
                        "name": .string("The account holder"), "returnURL": returnURL,
                    ], required: ["amount", "currency", "email", "returnURL"], description: "Przelewy24 (EUR or PLN)"),
                "multibanco": .object(
                    ["amount": amount, "returnURL": returnURL, "email": .string("The customer's email")],
                    required: ["amount", "returnURL", "email"], description: "Multibanco (EUR; the customer pays in)"),
                "sepaDebit": .object(
                    [
                        "name": .string("The account holder"), "iban": .string("The account's IBAN"),
                        "addressLine1": .string("Holder's street"), "city": .string("Holder's city"),
                        "postalCode": .string("Holder's postal code"), "country": country("Holder's country"),
                    ], required: ["name", "iban"], description: "SEPA Direct Debit (EUR, reusable)"),
                "threeDSecure": .object(
                    [
                        "amount": amount, "currency": currency, "returnURL": returnURL,
                        "card": .string("The card Source to authenticate", pattern: "^src_[A-Za-z0-9]+$"),
                    ], required: ["amount", "currency", "returnURL", "card"],
                    description: "3-D Secure for a card Source"),
                "alipay": .object(
                    [
                        "amount": amount, "currency": currency, "returnURL": returnURL,
                        "appBundleId": .string("The app Alipay returns to (with appVersion; the SDK sends its own)"),
                        "appVersion": .string("That app's version (with appBundleId)"),
                    ], required: ["amount", "currency", "returnURL"], description: "Alipay, single use"),
                "alipayReusable": .object(
                    ["currency": currency, "returnURL": returnURL], required: ["currency", "returnURL"],
                    description: "Alipay, reusable (no amount)"),
                "wechatPay": .object(
                    [
                        "amount": amount, "currency": currency,
                        "appId": .string("The WeChat app id (the app's return URL scheme)"),
                        "statementDescriptor": statementDescriptor,
                    ], required: ["amount", "currency", "appId"],
                    description: "WeChat Pay (returns through the WeChat app)"),
                "klarna": klarnaSchema,
                "visaCheckout": .object(
                    ["callId": .string("The Visa Checkout result's callId")], required: ["callId"],
                    description: "A card Source from Visa Checkout"),
                "masterpass": .object(
                    ["cartId": .string("Masterpass cart id"), "transactionId": .string("Masterpass transaction id")],
                    required: ["cartId", "transactionId"], description: "A card Source from Masterpass"),
                "raw": .object(
                    ["type": .string("Stripe's source type, e.g. sofort", pattern: "^[a-z0-9_]+$")], required: ["type"],
                    additionalProperties: true,
                    description: "Stripe's own POST /v1/sources fields as nested JSON, for what the typed members lack"),
            ],
            description: "Exactly one member: the SDK's STPSourceParams constructor to use, with its arguments")
    }()

    static let amount = JSONSchema.integer("Amount in the currency's minor unit (1099 = 10.99)", minimum: 1)
    static let currency = JSONSchema.string("Three-letter ISO currency code, e.g. eur", pattern: "^[A-Za-z]{3}$")
    static let returnURL = JSONSchema.string(
        "Where the customer comes back to: an absolute URL (your app's URL scheme), or \"loopback\" for stpd's own return on 127.0.0.1 (the daemon adds redirect_merchant_name)"
    )
    static let statementDescriptor = JSONSchema.string("Text on the customer's statement")
    static func country(_ description: String) -> JSONSchema {
        .string(description + " (two-letter ISO code)", pattern: "^[A-Za-z]{2}$")
    }

    static let cardSchema = JSONSchema.object(
        [
            "number": .string("The card number", pattern: "^[0-9 ]{12,23}$"),
            "expMonth": .integer("Expiry month", minimum: 1, maximum: 12),
            "expYear": .integer("Expiry year, four digits (or two)", minimum: 0),
            "cvc": .string("Card verification code", pattern: "^[0-9]{3,4}$"),
            "name": .string("Cardholder name"),
            "addressLine1": .string("Billing street"), "addressLine2": .string("Billing street, more"),
            "city": .string("Billing city"), "state": .string("Billing state or region"),
            "zip": .string("Billing postal code"), "country": country("Billing country"),
        ], required: ["number", "expMonth", "expYear"],
        description: "A card (its number and CVC are redacted from logs and output)")

    static let klarnaSchema = JSONSchema.object(
        [
            "returnURL": returnURL, "currency": currency,
            "purchaseCountry": country("Where the customer buys"),
            "items": .array(
                of: .object(
                    [
                        "type": .enumeration(["sku", "tax", "shipping"], "The line's kind"),
                        "description": .string("What Klarna shows for the line"),
                        "quantity": .integer("Units", minimum: 1),
                        "amount": .integer("The line's total (not the unit price), minor units", minimum: 0),
                    ], required: ["type", "description", "quantity", "amount"]),
                "The order lines; the Source's amount is the sum of their amounts"),
            "customPaymentMethods": .array(
                of: .enumeration(["payin4", "installments"], "An option to offer"), "Required for US customers"),
            "billingAddress": .object(
                [
                    "line1": .string("Street"), "line2": .string("More"), "city": .string("City"),
                    "state": .string("State"), "postalCode": .string("Postal code"),
                    "country": country("Country"), "email": .string("Email"), "phone": .string("Phone"),
                ],
                description:
                    "Sent (with the names) only when in purchaseCountry with line1, postalCode, city, email and both names"
            ),
            "firstName": .string("Customer's first name"), "lastName": .string("Customer's last name"),
            "dateOfBirth": .object(
                [
                    "day": .integer("Day", minimum: 1, maximum: 31),
                    "month": .integer("Month", minimum: 1, maximum: 12),
                    "year": .integer("Year", minimum: 1900),
                ], required: ["day", "month", "year"], description: "For Klarna's credit check"),
        ], required: ["returnURL", "currency", "purchaseCountry", "items"], description: "Klarna (flow redirect)")
}

/// `path.name`, or `name` at the top.
func memberPath(_ name: String, _ path: String?) -> String {
    path.map { "\($0).\(name)" } ?? name
}
