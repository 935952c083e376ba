import JSONRPC
import StripeAPI

/// How to pay a PaymentIntent: an existing PaymentMethod (`id`) or exactly one new one.
public struct PaymentMethodInput: Codable, Sendable, Hashable {
    /// iDEAL, EPS and P24: the bank is optional (Stripe's page asks otherwise).
    public struct Bank: Codable, Sendable, Hashable {
        public var bank: String?
        public init(bank: String? = nil) { self.bank = bank }
    }

    public struct Sofort: Codable, Sendable, Hashable {
        public var country: String
        public init(country: String) { self.country = country }
    }

    public struct SepaDebit: Codable, Sendable, Hashable {
        public var iban: String
        public init(iban: String) { self.iban = iban }
    }

    /// Bancontact and giropay take no arguments (the name is in `billingDetails`).
    public struct NoArguments: Codable, Sendable, Hashable {
        public init() {}
    }

    public typealias BillingDetails = PaymentIntentConfirmParams.BillingDetails

    public var id: String?
    public var card: CardInput?
    public var ideal: Bank?
    public var sofort: Sofort?
    public var bancontact: NoArguments?
    public var giropay: NoArguments?
    public var eps: Bank?
    public var p24: Bank?
    public var sepaDebit: SepaDebit?
    public var billingDetails: BillingDetails?

    public init(
        id: String? = nil, card: CardInput? = nil, ideal: Bank? = nil, sofort: Sofort? = nil,
        bancontact: NoArguments? = nil, giropay: NoArguments? = nil, eps: Bank? = nil, p24: Bank? = nil,
        sepaDebit: SepaDebit? = nil, billingDetails: BillingDetails? = nil
    ) {
        self.id = id
        self.card = card
        self.ideal = ideal
        self.sofort = sofort
        self.bancontact = bancontact
        self.giropay = giropay
        self.eps = eps
        self.p24 = p24
        self.sepaDebit = sepaDebit
        self.billingDetails = billingDetails
    }

    public static let members = ["id", "card", "ideal", "sofort", "bancontact", "giropay", "eps", "p24", "sepaDebit"]

    /// The confirmation for `clientSecret` (a SetupIntent's with `setupIntent`). `path` is where
    /// this object sits in the method's params.
    public func confirmParams(
        clientSecret: String, returnURL: String?, at path: String? = nil, setupIntent: Bool = false
    ) throws(RPCError) -> PaymentIntentConfirmParams {
        let (prefix, kind) = setupIntent ? ("seti_", "SetupIntent") : ("pi_", "PaymentIntent")
        guard clientSecret.hasPrefix(prefix), clientSecret.contains("_secret_") else {
            throw RPCError.invalidParams(
                "not a \(kind) client secret (\(prefix)..._secret_...)", parameter: "clientSecret")
        }
        let data: [(String, PaymentMethodData?)] = [
            ("card", card.map(PaymentMethodData.card)),
            ("ideal", ideal.map { .ideal(bank: $0.bank) }),
            ("sofort", sofort.map { .sofort(country: $0.country) }),
            ("bancontact", bancontact.map { _ in .bancontact }),
            ("giropay", giropay.map { _ in .giropay }),
            ("eps", eps.map { .eps(bank: $0.bank) }),
            ("p24", p24.map { .p24(bank: $0.bank) }),
            ("sepaDebit", sepaDebit.map { .sepaDebit(iban: $0.iban) }),
        ]
        let given = (id == nil ? [] : ["id"]) + data.filter { $0.1 != nil }.map(\.0)
        guard given.count == 1 else {
            let detail = given.isEmpty ? "" : " (got \(given.joined(separator: ", ")))"
            throw RPCError.invalidParams(
                "give exactly one of: \(Self.members.joined(separator: ", "))" + detail,
                parameter: given.count > 1 ? memberPath(given[1], path) : (path ?? "params"))
        }
        guard let (name, chosen) = data.lazy.compactMap({ name, value in value.map { (name, $0) } }).first else {
            if billingDetails != nil {
                throw RPCError.invalidParams(
                    "billingDetails goes with a new payment method, not an existing id",
                    parameter: memberPath("billingDetails", path))
            }
            return PaymentIntentConfirmParams(
                clientSecret: clientSecret, paymentMethodID: id ?? "", returnURL: returnURL)
        }
        for field in chosen.requiredBillingDetails {
            let value = field == "name" ? billingDetails?.name : billingDetails?.email
            if value?.isEmpty ?? true {
                throw RPCError.invalidParams(
                    "\(name) needs billingDetails.\(field)", parameter: memberPath("billingDetails.\(field)", path))
            }
        }
        return PaymentIntentConfirmParams(
            clientSecret: clientSecret, paymentMethodData: chosen, billingDetails: billingDetails, returnURL: returnURL)
    }

    public static let schema: JSONSchema = {
        func bank(_ description: String) -> JSONSchema {
            .object(["bank": .string("The customer's bank, e.g. ing (optional)")], description: description)
        }
        return JSONSchema.object(
            [
                "id": .string(
                    "An existing PaymentMethod (pm_…; legacy card_… and src_… ids work too)", pattern: "^[A-Za-z0-9_]+$"
                ),
                "card": SourceConstructor.cardSchema,
                "ideal": bank("iDEAL"),
                "sofort": .object(
                    ["country": SourceConstructor.country("The country of the customer's bank")], required: ["country"]),
                "bancontact": .object([:], description: "Bancontact; needs billingDetails.name"),
                "giropay": .object([:], description: "giropay; needs billingDetails.name"),
                "eps": bank("EPS; needs billingDetails.name"),
                "p24": bank("Przelewy24; needs billingDetails.email"),
                "sepaDebit": .object(
                    ["iban": .string("The customer's IBAN")], required: ["iban"],
                    description:
                        "SEPA Direct Debit; needs billingDetails.name and email, and sends the customer's online acceptance of the mandate"
                ),
                "billingDetails": .object(
                    ["name": .string("The payer's full name"), "email": .string("The payer's email")],
                    description:
                        "With a new payment method: bancontact, giropay and eps need name; p24 needs email; sepaDebit both"
                ),
            ],
            description:
                "Exactly one of id or a new payment method (card, ideal, sofort, bancontact, giropay, eps, p24, sepaDebit)"
        )
    }()
}
