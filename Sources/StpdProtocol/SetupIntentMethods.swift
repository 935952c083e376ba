import JSONRPC

let setupIntentSecret = JSONSchema.string(
    "The SetupIntent's client secret (never shown back)", pattern: "^seti_[A-Za-z0-9]+_secret_[A-Za-z0-9]+$")

private let setupIntentObject = JSONSchema([
    "type": "object", "description": "The Stripe SetupIntent (client_secret removed)",
])

/// `setupIntent.*`: SetupIntents by client secret, as the SDK's STPPaymentHandler confirms them to
/// save a payment method (the non-deprecated way to set up a bank redirect or a mandate).
public enum SetupIntentRetrieve: RPCMethod {
    public struct Params: Codable, Sendable {
        public var clientSecret: String
        public init(clientSecret: String) { self.clientSecret = clientSecret }
    }
    public struct Result: Codable, Sendable {
        public var setupIntent: JSONValue
        public init(setupIntent: JSONValue) { self.setupIntent = setupIntent }
    }
    public static let name = "setupIntent.retrieve"
    public static let summary = "Fetches a SetupIntent with its client secret."
    public static let paramsSchema = JSONSchema.object(
        ["clientSecret": setupIntentSecret], required: ["clientSecret"])
    public static let resultSchema = JSONSchema.object(["setupIntent": setupIntentObject], required: ["setupIntent"])
    public static let errors = stripeCallErrors
}

public enum SetupIntentConfirm: RPCMethod {
    /// As paymentIntent.confirm's.
    public typealias Params = PaymentIntentConfirm.Params
    public struct Result: Codable, Sendable {
        public var setupIntent: JSONValue
        /// Opened when the SetupIntent requires_action with redirect_to_url (3-D Secure, bank redirects).
        public var redirect: RedirectSessionView?
        public init(setupIntent: JSONValue, redirect: RedirectSessionView?) {
            self.setupIntent = setupIntent
            self.redirect = redirect
        }
    }
    public static let name = "setupIntent.confirm"
    public static let summary =
        "Confirms a SetupIntent with a saved payment method or a new one of any type; opens a redirect session when Stripe asks for one."
    public static let description: String? = """
        Takes paymentIntent.confirm's params with a SetupIntent's client secret. A requires_action \
        SetupIntent with a redirect_to_url next action gets a redirect session (kind setupIntent); when \
        it completes, stpd retrieves the SetupIntent and reports its status as the session's outcome \
        (succeeded, processing, requires_payment_method...).
        """
    public static let paramsSchema = PaymentIntentConfirm.confirmParamsSchema(secret: setupIntentSecret)
    public static let resultSchema = JSONSchema.object(
        ["setupIntent": setupIntentObject, "redirect": .nullable(.ref("RedirectSession"))], required: ["setupIntent"])
    public static let errors =
        [StpdErrors.disabled, StpdErrors.redirectOpenFailed, StpdErrors.cardInvalid] + stripeCallErrors
}
