import Foundation
import JSONRPC

/// A PaymentIntent: status, amounts, the payment method and the next action, enough for the redirect
/// flow (spec §3.2). Required: `id`, `client_secret`, `status`, `amount`, `currency` (what a client
/// retrieving its own intent always gets back); everything else optional and tolerant.
public struct PaymentIntent: StripeModel, Hashable {
    public enum Status: String, TolerantStringEnum {
        case requiresPaymentMethod = "requires_payment_method"
        case requiresConfirmation = "requires_confirmation"
        case requiresAction = "requires_action"
        case processing
        case requiresCapture = "requires_capture"
        case canceled, succeeded, unknown

        /// As `init(apiValue:)`, plus the pre-2019 names the SDK still maps (`requires_source` →
        /// requiresPaymentMethod, `requires_source_action` → requiresAction).
        public init(apiValueAllowingLegacy value: String) {
            switch value.lowercased() {
            case "requires_source": self = .requiresPaymentMethod
            case "requires_source_action": self = .requiresAction
            default: self.init(apiValue: value)
            }
        }
    }

    /// The next action type both intents share, under the name the domain uses for it.
    public typealias NextAction = StripeAPI.NextAction

    /// `last_payment_error`: every field optional.
    public struct LastPaymentError: StripeModel, Hashable {
        public var code: String?
        public var declineCode: String?
        public var docURL: String?
        public var message: String?
        public var param: String?
        public var type: String?
        public var paymentMethod: PaymentMethod?
        public var allResponseFields: JSONValue

        public init(json: JSONValue, codingPath: [any CodingKey]) throws {
            let f = try ModelFields(json, codingPath: codingPath)
            code = f.string("code")
            declineCode = f.string("decline_code")
            docURL = f.string("doc_url")
            message = f.string("message")
            param = f.string("param")
            type = f.string("type")
            paymentMethod = f.model("payment_method")
            allResponseFields = json
        }

        public init(from decoder: any Decoder) throws { self = try .decode(from: decoder) }
    }

    public var id: String
    public var clientSecret: String
    public var status: Status
    public var amount: Int
    public var currency: String
    public var created: Date?
    public var livemode: Bool?
    /// `payment_method` as an id, or an expanded object's id.
    public var paymentMethodID: String?
    /// Set when `payment_method` was expanded and decodes.
    public var paymentMethod: PaymentMethod?
    public var paymentMethodTypes: [String]
    public var lastPaymentError: LastPaymentError?
    public var nextAction: NextAction?
    public var allResponseFields: JSONValue

    public init(json: JSONValue, codingPath: [any CodingKey]) throws {
        let f = try ModelFields(json, codingPath: codingPath)
        id = try f.requireString("id")
        clientSecret = try f.requireString("client_secret")
        status = Status(apiValueAllowingLegacy: try f.requireString("status"))
        amount = try f.requireInt("amount")
        currency = try f.requireString("currency")
        created = f.date("created")
        livemode = f.bool("livemode")
        paymentMethodID = f.idOrExpanded("payment_method")
        paymentMethod = f.model("payment_method")
        paymentMethodTypes = f.array("payment_method_types")?.compactMap(\.stringValue) ?? []
        lastPaymentError = f.model("last_payment_error")
        nextAction = f.model("next_action")
        allResponseFields = json
    }

    public init(from decoder: any Decoder) throws { self = try .decode(from: decoder) }
}
