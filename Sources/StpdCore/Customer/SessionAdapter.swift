/// How a customer session reaches its customer (the SDK's three `STPBackendAPIAdapter`s), as the
/// session stores it, credentials included. The domain's own: `customer.open`'s handler maps the
/// contract's `CustomerAdapter` to it, so that a change to the contract changes nothing stored.
/// Its members are those of release 0.1.0's stored form.
public struct SessionAdapter: Codable, Sendable, Hashable {
    public enum Kind: String, Codable, Sendable, Hashable {
        /// Stripe directly with the customer's ephemeral keys (`STPCustomerContext`).
        case stripe
        /// The merchant's own backend serving stpd's customer routes.
        case backend
        /// The calling app answers app requests.
        case app
    }

    /// Where a `stripe` session gets its ephemeral keys.
    public struct KeyProvider: Codable, Sendable, Hashable {
        public enum Kind: String, Codable, Sendable, Hashable {
            /// Ephemeral keys from the merchant's endpoint.
            case backend
            /// Ephemeral keys from the app (an app request).
            case app
            /// No ephemeral keys: the daemon's own secret or restricted key, for `customer`.
            case server
        }
        public var kind: Kind
        /// `backend`: the merchant's ephemeral-key endpoint.
        public var url: String?
        /// `backend`: the Authorization header value to send (stored, never shown).
        public var authorization: String?
        /// `server`: the Stripe customer id.
        public var customer: String?

        public init(kind: Kind, url: String? = nil, authorization: String? = nil, customer: String? = nil) {
            self.kind = kind
            self.url = url
            self.authorization = authorization
            self.customer = customer
        }
    }

    public var kind: Kind
    public var keyProvider: KeyProvider?
    /// `backend`: the base URL of the merchant's customer routes.
    public var url: String?
    /// `backend`: the Authorization header value to send (stored, never shown).
    public var authorization: String?
    public var includeApplePayPaymentMethods: Bool?
    /// Seconds to wait for the merchant's backend or the app (default 30).
    public var timeout: Double?

    public init(
        kind: Kind, keyProvider: KeyProvider? = nil, url: String? = nil, authorization: String? = nil,
        includeApplePayPaymentMethods: Bool? = nil, timeout: Double? = nil
    ) {
        self.kind = kind
        self.keyProvider = keyProvider
        self.url = url
        self.authorization = authorization
        self.includeApplePayPaymentMethods = includeApplePayPaymentMethods
        self.timeout = timeout
    }

    /// The adapter as clients see it: credentials replaced by a marker.
    public var redacted: SessionAdapter {
        var copy = self
        if copy.authorization != nil { copy.authorization = "[REDACTED]" }
        if copy.keyProvider?.authorization != nil { copy.keyProvider?.authorization = "[REDACTED]" }
        return copy
    }
}
