import JSONRPC

/// How a customer session reaches the customer: the SDK's three `STPBackendAPIAdapter`s.
public struct CustomerAdapter: Codable, Sendable, Hashable {
    public enum Kind: String, Codable, Sendable {
        /// Stripe directly with the customer's ephemeral keys (`STPCustomerContext`).
        case stripe
        /// The merchant's own backend serving stpd's customer routes.
        case backend
        /// The calling app answers `appRequest.*` events with `appRequest.answer`.
        case app
    }

    /// Where a `stripe` session gets its ephemeral keys.
    public struct KeyProvider: Codable, Sendable, Hashable {
        public enum Kind: String, Codable, Sendable {
            /// Ephemeral keys from the merchant's endpoint.
            case backend
            /// Ephemeral keys from the app (appRequest createEphemeralKey).
            case app
            /// No ephemeral keys: the daemon's own secret or restricted key, for `customer`
            /// (stpd running beside a server).
            case server
        }
        public var kind: Kind
        /// `backend`: the merchant's ephemeral-key endpoint (POST `api_version=...`).
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

    static let schema = JSONSchema.object(
        [
            "kind": .enumeration(
                ["stripe", "backend", "app"],
                "stripe: Stripe with ephemeral keys; backend: the merchant's routes; app: the app answers"),
            "keyProvider": .object(
                [
                    "kind": .enumeration(
                        ["backend", "app", "server"],
                        "backend/app: where ephemeral keys come from; server: the daemon's secret or restricted key, no ephemeral keys"
                    ),
                    "url": .string("backend: the merchant's ephemeral-key endpoint", format: "uri"),
                    "authorization": .string("backend: Authorization header value for it (never shown back)"),
                    "customer": .string("server: the Stripe customer id", pattern: "^cus_[A-Za-z0-9]+$"),
                ], required: ["kind"], description: "stripe sessions: how customer calls are authorized"),
            "url": .string("backend sessions: base URL of the merchant's customer routes", format: "uri"),
            "authorization": .string("backend sessions: Authorization header value (never shown back)"),
            "includeApplePayPaymentMethods": .boolean("Show Apple Pay cards (hidden by default, as in the SDK)"),
            "timeout": JSONSchema([
                "type": "number", "minimum": 1, "maximum": 300,
                "description": "Seconds to wait for the backend or the app (default 30)",
            ]),
        ], required: ["kind"])
}

/// A customer session as clients see it (`customer.get`, events `customer.*`).
public struct CustomerSessionView: Codable, Sendable, Hashable {
    public var id: String
    public var object = "customer_session"
    public var status: CustomerSessionStatus
    public var adapter: CustomerAdapter
    /// Known once the customer was retrieved (or the ephemeral key named it).
    public var customerId: String?
    public var lastSelectedPaymentMethod: String?
    /// When each cache was last filled (stripe sessions; RFC 3339).
    public var customerFetchedAt: String?
    public var paymentMethodsFetchedAt: String?
    /// The last operation that failed, if the latest did: `{operation, code, message}`.
    public var lastError: JSONValue?
    public var createdAt: String
    public var updatedAt: String

    public init(
        id: String, status: CustomerSessionStatus, adapter: CustomerAdapter, customerId: String? = nil,
        lastSelectedPaymentMethod: String? = nil, customerFetchedAt: String? = nil,
        paymentMethodsFetchedAt: String? = nil, lastError: JSONValue? = nil, createdAt: String, updatedAt: String
    ) {
        self.id = id
        self.status = status
        self.adapter = adapter
        self.customerId = customerId
        self.lastSelectedPaymentMethod = lastSelectedPaymentMethod
        self.customerFetchedAt = customerFetchedAt
        self.paymentMethodsFetchedAt = paymentMethodsFetchedAt
        self.lastError = lastError
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }

    static let schema = JSONSchema.object(
        [
            "id": .string("Session id (cses_...)"),
            "object": JSONSchema(["const": "customer_session"]),
            "status": .cases(of: CustomerSessionStatus.self, "Closed sessions answer InvalidState"),
            "adapter": CustomerAdapter.schema,
            "customerId": .nullable(.string("The Stripe customer, once known")),
            "lastSelectedPaymentMethod": .nullable(.string("Remembered per customer, as the SDK does")),
            "customerFetchedAt": .nullable(.string("When the cached customer was fetched", format: "date-time")),
            "paymentMethodsFetchedAt": .nullable(
                .string("When the cached payment methods were fetched", format: "date-time")),
            "lastError": .nullable(
                JSONSchema(["type": "object", "description": "{operation, code, message} of the last failed operation"])
            ),
            "createdAt": .string("RFC 3339", format: "date-time"),
            "updatedAt": .string("RFC 3339", format: "date-time"),
        ], required: ["id", "object", "status", "adapter", "createdAt", "updatedAt"])
}

public struct SessionParams: Codable, Sendable {
    public var session: String
    public init(session: String) { self.session = session }
}

public struct PaymentMethodParams: Codable, Sendable {
    public var session: String
    public var paymentMethod: String
    public init(session: String, paymentMethod: String) {
        self.session = session
        self.paymentMethod = paymentMethod
    }
}

extension ShippingAddressParams {
    static let schema = schema(required: ["address"])

    /// A customer's saved shipping address needs a recipient as well (Stripe requires `shipping[name]`).
    static let customerSchema = schema(required: ["address", "name"])

    private static func schema(required: [String]) -> JSONSchema {
        .object(
            [
                "name": .string("Recipient"), "phone": .string("Phone number"),
                "email": .string("Contact email (payment contexts)"),
                "address": .object([
                    "line1": .string("Street"), "line2": .string("More"), "city": .string("City"),
                    "state": .string("State"),
                    "postalCode": .string("Postal code"), "country": .string("ISO country code"),
                ]),
            ], required: required)
    }
}

let sessionID = JSONSchema.string("The customer session id", pattern: "^cses_[A-Za-z0-9]+$")
let paymentMethodID = JSONSchema.string("A PaymentMethod id", pattern: "^[A-Za-z0-9_]+$")
let customerErrors: [ErrorDeclaration] = [
    StpdErrors.notFound, StpdErrors.invalidState, StpdErrors.stripeCardError, StpdErrors.stripeInvalidRequest,
    StpdErrors.stripeAPIError,
    StpdErrors.stripeAuthentication, StpdErrors.stripeRateLimited, StpdErrors.stripeConnection,
    StpdErrors.ephemeralKeyInvalid,
    StpdErrors.stripeNotConfigured, StpdErrors.backendError, StpdErrors.appRequestFailed, StpdErrors.appRequestTimedOut,
    StpdErrors.appAnswerInvalid,
    // A server-key session whose owner STPD_SERVER_KEY_UIDS no longer lists (after a restart).
    StpdErrors.permissionDenied,
]

/// `customer.*`: customer sessions (the SDK's customer context and backend adapters).
public enum CustomerOpen: RPCMethod {
    public struct Params: Codable, Sendable {
        public var adapter: CustomerAdapter
        public var prefetch: Bool?
        public init(adapter: CustomerAdapter, prefetch: Bool? = nil) {
            self.adapter = adapter
            self.prefetch = prefetch
        }
    }
    public typealias Result = CustomerSessionView
    public static let name = "customer.open"
    public static let summary =
        "Opens a customer session with one of the three adapters; it is durable and owned by the caller's uid."
    public static let description: String? = """
        stripe sessions fetch the customer and its card payment methods at once (prefetch: false to skip), \
        as STPCustomerContext does; the results are cached for 60 s. backend sessions call the merchant's \
        routes (see docs/customer-sessions.md); app sessions emit appRequest.pending events the app answers with appRequest.answer.
        """
    public static let paramsSchema = JSONSchema.object(
        [
            "adapter": CustomerAdapter.schema,
            "prefetch": .boolean("Fetch customer and payment methods now (default true)"),
        ],
        required: ["adapter"])
    public static let resultSchema = JSONSchema.ref("CustomerSession")
    /// PermissionDenied: a server key provider for a uid and customer the configuration does not allow.
    public static let errors = [StpdErrors.stripeNotConfigured, StpdErrors.permissionDenied]
}

public typealias CustomerGet = ObjectGet<CustomerListing>
public typealias CustomerList = ObjectList<CustomerListing>

/// Customer sessions as `customer.get` and `customer.list` show them.
public enum CustomerListing: ListedKind {
    public typealias IDParams = SessionParams
    public typealias View = CustomerSessionView
    public typealias Status = CustomerSessionStatus
    public static let prefix = "customer"
    public static let idSchema = sessionID
    public static let component = "CustomerSession"
    public static let plural = "sessions"
    public static let getSummary = "A customer session's state."
    public static let listSummary = "A page of the caller's customer sessions (root: everyone's), oldest first."
    public static let statusDescription = "Only sessions with this status"
}

public enum CustomerRetrieve: RPCMethod {
    public typealias Params = SessionParams
    public struct Result: Codable, Sendable {
        public var customer: JSONValue
        public init(customer: JSONValue) { self.customer = customer }
    }
    public static let name = "customer.retrieve"
    public static let summary = "The Stripe customer (cached for 60 s in stripe sessions)."
    public static let paramsSchema = JSONSchema.object(["session": sessionID], required: ["session"])
    public static let resultSchema = JSONSchema.object(
        ["customer": JSONSchema(["type": "object", "description": "The Stripe customer object"])],
        required: ["customer"])
    public static let errors = customerErrors
}

public enum CustomerListPaymentMethods: RPCMethod {
    public typealias Params = SessionParams
    public struct Result: Codable, Sendable {
        public var paymentMethods: [JSONValue]
        public init(paymentMethods: [JSONValue]) { self.paymentMethods = paymentMethods }
    }
    public static let name = "customer.listPaymentMethods"
    public static let summary =
        "The customer's card payment methods (Apple Pay cards hidden unless the adapter asks for them)."
    public static let paramsSchema = JSONSchema.object(["session": sessionID], required: ["session"])
    public static let resultSchema = JSONSchema.object(
        ["paymentMethods": .array(of: JSONSchema(["type": "object"]), "Stripe PaymentMethod objects")],
        required: ["paymentMethods"])
    public static let errors = customerErrors
}

public enum CustomerAttachPaymentMethod: RPCMethod {
    public typealias Params = PaymentMethodParams
    public typealias Result = CustomerSessionView
    public static let name = "customer.attachPaymentMethod"
    public static let summary =
        "Attaches a PaymentMethod to the customer (the payment-method cache is cleared either way)."
    public static let paramsSchema = JSONSchema.object(
        ["session": sessionID, "paymentMethod": paymentMethodID], required: ["session", "paymentMethod"])
    public static let resultSchema = JSONSchema.ref("CustomerSession")
    public static let errors = customerErrors
}

public enum CustomerDetachPaymentMethod: RPCMethod {
    public typealias Params = PaymentMethodParams
    public typealias Result = CustomerSessionView
    public static let name = "customer.detachPaymentMethod"
    public static let summary =
        "Detaches a PaymentMethod from the customer (the payment-method cache is cleared either way)."
    public static let paramsSchema = JSONSchema.object(
        ["session": sessionID, "paymentMethod": paymentMethodID], required: ["session", "paymentMethod"])
    public static let resultSchema = JSONSchema.ref("CustomerSession")
    public static let errors = customerErrors
}

public enum CustomerUpdateShipping: RPCMethod {
    public struct Params: Codable, Sendable {
        public var session: String
        public var shipping: ShippingAddressParams
        public init(session: String, shipping: ShippingAddressParams) {
            self.session = session
            self.shipping = shipping
        }
    }
    public typealias Result = CustomerSessionView
    public static let name = "customer.updateShipping"
    public static let summary = "Sets the customer's shipping address."
    public static let paramsSchema = JSONSchema.object(
        ["session": sessionID, "shipping": ShippingAddressParams.customerSchema], required: ["session", "shipping"])
    public static let resultSchema = JSONSchema.ref("CustomerSession")
    public static let errors = customerErrors
}

public enum CustomerSelectPaymentMethod: RPCMethod {
    public struct Params: Codable, Sendable {
        public var session: String
        public var paymentMethod: String?
        public init(session: String, paymentMethod: String?) {
            self.session = session
            self.paymentMethod = paymentMethod
        }
    }
    public typealias Result = CustomerSessionView
    public static let name = "customer.selectPaymentMethod"
    public static let summary =
        "Remembers the customer's last selected PaymentMethod (null forgets it), kept per customer as the SDK does."
    public static let paramsSchema = JSONSchema.object(
        ["session": sessionID, "paymentMethod": .nullable(paymentMethodID)], required: ["session"])
    public static let resultSchema = JSONSchema.ref("CustomerSession")
    public static let errors = customerErrors
}

public enum CustomerClearCache: RPCMethod {
    public typealias Params = SessionParams
    public typealias Result = CustomerSessionView
    public static let name = "customer.clearCache"
    public static let summary = "Forgets the cached customer and payment methods."
    public static let paramsSchema = JSONSchema.object(["session": sessionID], required: ["session"])
    public static let resultSchema = JSONSchema.ref("CustomerSession")
    public static let errors = [StpdErrors.notFound, StpdErrors.invalidState]
}

public enum CustomerClose: RPCMethod {
    public typealias Params = SessionParams
    public typealias Result = CustomerSessionView
    public static let name = "customer.close"
    public static let summary = "Closes a customer session; it stays readable, closed."
    public static let paramsSchema = JSONSchema.object(["session": sessionID], required: ["session"])
    public static let resultSchema = JSONSchema.ref("CustomerSession")
    public static let errors = [StpdErrors.notFound]
}
