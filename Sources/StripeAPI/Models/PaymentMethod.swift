import Foundation
import JSONRPC

/// A PaymentMethod: enough for a picker ("Visa 4242"), the Apple Pay wallet filter of the customer
/// context (spec §5.4) and passing the object through. Required: `id`. `type` is kept raw (Stripe
/// adds types often; stpd only interprets `card`).
public struct PaymentMethod: StripeModel, Hashable {
    public struct BillingDetails: StripeModel, Hashable {
        public var address: StripeAddress?
        public var email: String?
        public var name: String?
        public var phone: String?
        public var allResponseFields: JSONValue

        public init(json: JSONValue, codingPath: [any CodingKey]) throws {
            let f = try ModelFields(json, codingPath: codingPath)
            address = f.model("address")
            email = f.string("email")
            name = f.string("name")
            phone = f.string("phone")
            allResponseFields = json
        }

        public init(from decoder: any Decoder) throws { self = try .decode(from: decoder) }
    }

    public struct Card: StripeModel, Hashable {
        /// The API's `card.brand` values.
        public enum Brand: String, TolerantStringEnum {
            case amex
            case cartesBancaires = "cartes_bancaires"
            case diners, discover, jcb, mastercard, unionpay, visa
            case unknown

            /// The SDK's display names (`STPCardBrandUtilities.stringFrom`).
            public var displayName: String {
                switch self {
                case .amex: "American Express"
                case .cartesBancaires: "Cartes Bancaires"
                case .diners: "Diners Club"
                case .discover: "Discover"
                case .jcb: "JCB"
                case .mastercard: "Mastercard"
                case .unionpay: "UnionPay"
                case .visa: "Visa"
                case .unknown: "Unknown"
                }
            }
        }

        public struct Wallet: StripeModel, Hashable {
            public enum WalletType: String, TolerantStringEnum {
                case amexExpressCheckout = "amex_express_checkout"
                case applePay = "apple_pay"
                case googlePay = "google_pay"
                case link, masterpass
                case samsungPay = "samsung_pay"
                case visaCheckout = "visa_checkout"
                case unknown
            }

            /// `.unknown` when absent or unmapped.
            public var type: WalletType
            public var allResponseFields: JSONValue

            public init(json: JSONValue, codingPath: [any CodingKey]) throws {
                let f = try ModelFields(json, codingPath: codingPath)
                type = f.enumValue("type") ?? .unknown
                allResponseFields = json
            }

            public init(from decoder: any Decoder) throws { self = try .decode(from: decoder) }
        }

        /// `.unknown` when absent or unmapped.
        public var brand: Brand
        public var last4: String?
        public var expMonth: Int?
        public var expYear: Int?
        public var country: String?
        /// "credit", "debit", "prepaid" or "unknown", as sent.
        public var funding: String?
        public var wallet: Wallet?
        public var allResponseFields: JSONValue

        public init(json: JSONValue, codingPath: [any CodingKey]) throws {
            let f = try ModelFields(json, codingPath: codingPath)
            brand = f.enumValue("brand") ?? .unknown
            last4 = f.string("last4")
            expMonth = f.int("exp_month")
            expYear = f.int("exp_year")
            country = f.string("country")
            funding = f.string("funding")
            wallet = f.model("wallet")
            allResponseFields = json
        }

        public init(from decoder: any Decoder) throws { self = try .decode(from: decoder) }
    }

    public var id: String
    /// The API's `type` ("card", "sepa_debit", …); "" when absent.
    public var type: String
    public var created: Date?
    public var livemode: Bool?
    /// The customer's id (or an expanded customer's id).
    public var customerID: String?
    public var billingDetails: BillingDetails?
    public var card: Card?
    public var allResponseFields: JSONValue

    public init(json: JSONValue, codingPath: [any CodingKey]) throws {
        let f = try ModelFields(json, codingPath: codingPath)
        id = try f.requireString("id")
        type = f.string("type") ?? ""
        created = f.date("created")
        livemode = f.bool("livemode")
        customerID = f.idOrExpanded("customer")
        billingDetails = f.model("billing_details")
        card = f.model("card")
        allResponseFields = json
    }

    public init(from decoder: any Decoder) throws { self = try .decode(from: decoder) }

    /// A card whose wallet is Apple Pay (hidden from customer lists unless Apple Pay is included).
    public var isApplePay: Bool { type == "card" && card?.wallet?.type == .applePay }

    /// "Visa 4242" for a card (brand name alone without last4); the type otherwise.
    public var label: String {
        guard type == "card", let card else { return type }
        guard let last4 = card.last4 else { return card.brand.displayName }
        return "\(card.brand.displayName) \(last4)"
    }
}

/// A list of PaymentMethods (`GET /v1/payment_methods`). Required: `data`; entries that do not decode
/// as a PaymentMethod are skipped.
public struct PaymentMethodList: StripeModel, Hashable {
    public var data: [PaymentMethod]
    /// False when absent.
    public var hasMore: Bool
    public var allResponseFields: JSONValue

    public init(json: JSONValue, codingPath: [any CodingKey]) throws {
        let f = try ModelFields(json, codingPath: codingPath)
        let entries = try f.requireArray("data")
        data = entries.enumerated().compactMap { index, entry in
            try? PaymentMethod(json: entry, codingPath: f.path("data") + [ModelKey(intValue: index)!])
        }
        hasMore = f.bool("has_more") ?? false
        allResponseFields = json
    }

    public init(from decoder: any Decoder) throws { self = try .decode(from: decoder) }

    /// The list the SDK's customer context shows: Apple Pay cards removed unless included.
    public func filtered(includingApplePay: Bool) -> [PaymentMethod] {
        includingApplePay ? data : data.filter { !$0.isApplePay }
    }
}
