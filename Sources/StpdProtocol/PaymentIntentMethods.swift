import JSONRPC

let paymentIntentSecret = JSONSchema.string(
    "The PaymentIntent's client secret (never shown back)", pattern: "^pi_[A-Za-z0-9]+_secret_[A-Za-z0-9]+$")

/// `paymentIntent.*`: PaymentIntents by client secret, as the SDK's STPPaymentHandler uses them.
public enum PaymentIntentRetrieve: RPCMethod {
    public struct Params: Codable, Sendable {
        public var clientSecret: String
        public init(clientSecret: String) { self.clientSecret = clientSecret }
    }
    public struct Result: Codable, Sendable {
        public var paymentIntent: JSONValue
        public init(paymentIntent: JSONValue) { self.paymentIntent = paymentIntent }
    }
    public static let name = "paymentIntent.retrieve"
    public static let summary = "Fetches a PaymentIntent with its client secret."
    public static let paramsSchema = JSONSchema.object(
        ["clientSecret": paymentIntentSecret], required: ["clientSecret"])
    public static let resultSchema = JSONSchema.object(
        [
            "paymentIntent": JSONSchema([
                "type": "object", "description": "The Stripe PaymentIntent (client_secret removed)",
            ])
        ],
        required: ["paymentIntent"])
    public static let errors = stripeCallErrors
}

public enum PaymentIntentConfirm: RPCMethod {
    public struct Params: Codable, Sendable {
        public var clientSecret: String
        public var paymentMethod: PaymentMethodInput
        public var returnURL: String?
        /// Start the redirect session at once when one is needed (else it waits for redirect.start).
        public var start: RedirectStartOptions?
        public init(
            clientSecret: String, paymentMethod: PaymentMethodInput, returnURL: String? = nil,
            start: RedirectStartOptions? = nil
        ) {
            self.clientSecret = clientSecret
            self.paymentMethod = paymentMethod
            self.returnURL = returnURL
            self.start = start
        }
    }
    public struct Result: Codable, Sendable {
        public var paymentIntent: JSONValue
        /// Opened when the PaymentIntent requires_action with redirect_to_url (3-D Secure, bank redirects).
        public var redirect: RedirectSessionView?
        public init(paymentIntent: JSONValue, redirect: RedirectSessionView?) {
            self.paymentIntent = paymentIntent
            self.redirect = redirect
        }
    }
    public static let name = "paymentIntent.confirm"
    public static let summary =
        "Confirms a PaymentIntent with a saved payment method or a new one of any type; opens a redirect session when Stripe asks for one."
    public static let description: String? = """
        A requires_action PaymentIntent with a redirect_to_url next action gets a redirect session (as \
        redirect.create with the PaymentIntent); when it completes, stpd retrieves the PaymentIntent and \
        reports its status as the session's outcome (redirect.outcome).
        """
    public static let paramsSchema = confirmParamsSchema(secret: paymentIntentSecret)

    /// paymentIntent.confirm's params, which setupIntent.confirm shares with its own kind of secret.
    static func confirmParamsSchema(secret: JSONSchema) -> JSONSchema {
        JSONSchema.object(
            [
                "clientSecret": secret,
                "paymentMethod": PaymentMethodInput.schema,
                "returnURL": .string(
                    "Where the bank or 3-D Secure page sends the customer back (your app's URL scheme)", format: "uri"),
                "start": .object(
                    [
                        "mode": .enumeration(
                            RedirectMode.allCases.map(\.rawValue), "The SDK's start variant (default automatic)"),
                        "opener": .enumeration(
                            RedirectOpener.allCases.map(\.rawValue), "Who opens the URL (default app)"),
                    ], description: "Start the redirect session at once, if one is needed"),
            ], required: ["clientSecret", "paymentMethod"])
    }
    public static let resultSchema = JSONSchema.object(
        [
            "paymentIntent": JSONSchema([
                "type": "object", "description": "The Stripe PaymentIntent (client_secret removed)",
            ]),
            "redirect": .nullable(.ref("RedirectSession")),
        ], required: ["paymentIntent"])
    public static let errors =
        [StpdErrors.disabled, StpdErrors.redirectOpenFailed, StpdErrors.cardInvalid] + stripeCallErrors
}
