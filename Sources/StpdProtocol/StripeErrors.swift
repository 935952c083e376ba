import JSONRPC
import StripeAPI

/// The 3xxx block: Stripe API errors. A handler throws a `StripeError` as it is (the extension
/// below maps it); StripeNotConfigured comes from `StpdErrors.notConfigured(keyKind:required:)`.
extension StpdErrors {
    /// What `data` holds for every error made from a `StripeError` (`StripeError.rpcData`).
    static let stripeData = """
        `data` is always `{type, code, decline_code, param, message, request_id, http_status}`, \
        null where unknown: Stripe's error `type` and `code`, `decline_code` (only when the card \
        was declined), the offending `param` as the API names it (`card[number]`), the developer \
        `message` (secrets and card numbers masked), Stripe's `request_id` and the HTTP status.
        """

    public static let stripeCardError = ErrorDeclaration(
        name: "StripeCardError", code: 3001, message: "Stripe declined the card",
        description:
            "Stripe's card_error: the card was declined or a card field is wrong; show the customer `data.message` or a text chosen by `data.code`/`data.decline_code`. \(stripeData)"
    )
    public static let stripeInvalidRequest = ErrorDeclaration(
        name: "StripeInvalidRequest", code: 3002, message: "Stripe refused the request",
        description:
            "Stripe's invalid_request_error: a parameter is missing or wrong (`data.param` names it), or an object does not exist. Retrying unchanged will fail again. \(stripeData)"
    )
    public static let stripeAPIError = ErrorDeclaration(
        name: "StripeAPIError", code: 3003, message: "Stripe failed to process the request",
        description:
            "Stripe's api_error or another server-side failure (5xx after stpd's retries), or a response stpd could not interpret (then `data.type` is null and `data.http_status` says what came back). \(stripeData)"
    )
    public static let stripeAuthentication = ErrorDeclaration(
        name: "StripeAuthentication", code: 3004, message: "Stripe rejected the API key",
        description:
            "HTTP 401 or Stripe's authentication_error: the daemon's key (or the customer's ephemeral key) is wrong, revoked or expired. An operator must fix STPD_STRIPE_KEY (or the backend's ephemeral keys). \(stripeData)"
    )
    public static let stripeRateLimited = ErrorDeclaration(
        name: "StripeRateLimited", code: 3005, message: "Stripe rate limit reached",
        description:
            "HTTP 429 or Stripe's rate_limit_error, still so after stpd's retries with backoff; retry later. \(stripeData)"
    )
    public static let stripeConnection = ErrorDeclaration(
        name: "StripeConnection", code: 3006, message: "Could not reach Stripe",
        description:
            "No response from Stripe (refused, reset, TLS or DNS failure, timeout after STPD_STRIPE_TIMEOUT) on every attempt stpd made. A POST may still have reached Stripe; retrying the same operation is safe where the method says so. \(stripeData) Here only `message` is set."
    )
    public static let stripeIdempotency = ErrorDeclaration(
        name: "StripeIdempotency", code: 3007, message: "Stripe refused a reused idempotency key",
        description:
            "Stripe's idempotency_error: an Idempotency-Key was reused with different parameters. \(stripeData)")
    public static let ephemeralKeyInvalid = ErrorDeclaration(
        name: "EphemeralKeyInvalid", code: 3008, message: "The ephemeral key could not be used",
        description:
            "The ephemeral key the app's backend returned could not be decoded or used (the SDK's error 1000): not the JSON of a Stripe ephemeral key, no ek_ secret, or no customer. Fix the backend's ephemeral key endpoint. \(stripeData)"
    )
    public static let stripeNotConfigured = ErrorDeclaration(
        name: "StripeNotConfigured", code: 3009, message: "No Stripe key fit for this call is configured",
        description:
            "The daemon has no Stripe key (STPD_STRIPE_KEY, --stripe-key-file or the systemd credential stripe-key), or its key's kind cannot make this call (a publishable key for a secret-key route). `data` is `{setting, key_kind, required}`: the setting to change, the configured key's kind (`publishable`, `secret`, `restricted`, or null for none), and the kinds that would do."
    )

    /// Every 3xxx error, in code order.
    public static let stripe: [ErrorDeclaration] = [
        stripeCardError, stripeInvalidRequest, stripeAPIError, stripeAuthentication, stripeRateLimited,
        stripeConnection, stripeIdempotency, ephemeralKeyInvalid, stripeNotConfigured,
    ]

    /// The declaration a `StripeError` of `kind` is sent as.
    public static func declaration(for kind: StripeError.Kind) -> ErrorDeclaration {
        switch kind {
        case .card: stripeCardError
        case .invalidRequest: stripeInvalidRequest
        // An undecodable response is the SDK's "failed to parse" API error (its code 60).
        case .api, .decoding: stripeAPIError
        case .authentication: stripeAuthentication
        case .rateLimit: stripeRateLimited
        case .connection: stripeConnection
        case .idempotency: stripeIdempotency
        case .ephemeralKeyDecoding: ephemeralKeyInvalid
        }
    }

    /// StripeNotConfigured for a call that needs one of `required`, given the daemon's key kind
    /// (nil: no key at all).
    public static func notConfigured(keyKind: StripeKey.Kind?, required: [StripeKey.Kind]) -> RPCError {
        let detail: String
        if let keyKind {
            detail =
                "this call needs a \(required.map(\.name).joined(separator: " or ")) key; the daemon has a \(keyKind.name) key"
        } else {
            detail =
                "the daemon has no Stripe key (set STPD_STRIPE_KEY, --stripe-key-file or the systemd credential stripe-key)"
        }
        return stripeNotConfigured.callAsFunction(
            detail,
            data: [
                "setting": "STPD_STRIPE_KEY",
                "key_kind": keyKind.map { .string($0.name) } ?? .null,
                "required": .array(required.map { .string($0.name) }),
            ])
    }
}

extension StripeKey.Kind {
    /// `publishable`, `secret`, `restricted`, `ephemeral`: the word clients see in error data.
    fileprivate var name: String {
        switch self {
        case .publishable: "publishable"
        case .secret: "secret"
        case .restricted: "restricted"
        case .ephemeral: "ephemeral"
        }
    }
}
