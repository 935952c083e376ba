import Foundation
import JSONRPC

/// A SetupIntent: saves a payment method for later without a charge (the SDK's STPSetupIntent).
/// Required: `id`, `client_secret`, `status`; its next action and last error have a PaymentIntent's shape.
public struct SetupIntent: StripeModel, Hashable {
    public enum Status: String, TolerantStringEnum {
        case requiresPaymentMethod = "requires_payment_method"
        case requiresConfirmation = "requires_confirmation"
        case requiresAction = "requires_action"
        case processing, canceled, succeeded, unknown
    }

    public var id: String
    public var clientSecret: String
    public var status: Status
    /// `on_session` or `off_session`.
    public var usage: String?
    public var customerID: String?
    /// `payment_method` as an id, or an expanded object's id.
    public var paymentMethodID: String?
    /// Set when `payment_method` was expanded and decodes.
    public var paymentMethod: PaymentMethod?
    public var paymentMethodTypes: [String]
    public var lastSetupError: PaymentIntent.LastPaymentError?
    public var nextAction: NextAction?
    public var allResponseFields: JSONValue

    public init(json: JSONValue, codingPath: [any CodingKey]) throws {
        let f = try ModelFields(json, codingPath: codingPath)
        id = try f.requireString("id")
        clientSecret = try f.requireString("client_secret")
        status = Status(apiValue: try f.requireString("status"))
        usage = f.string("usage")
        customerID = f.idOrExpanded("customer")
        paymentMethodID = f.idOrExpanded("payment_method")
        paymentMethod = f.model("payment_method")
        paymentMethodTypes = f.array("payment_method_types")?.compactMap(\.stringValue) ?? []
        lastSetupError = f.model("last_setup_error")
        nextAction = f.model("next_action")
        allResponseFields = json
    }

    public init(from decoder: any Decoder) throws { self = try .decode(from: decoder) }
}
