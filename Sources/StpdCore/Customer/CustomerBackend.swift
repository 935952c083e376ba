import JSONRPC
import StripeAPI

/// The SDK's `STPBackendAPIAdapter`: where a customer session gets its customer and payment
/// methods. Three kinds exist: Stripe directly with ephemeral keys (`StripeCustomerContext`),
/// the merchant's own backend over HTTP, and the app itself answering over the socket.
public protocol CustomerBackend: Sendable {
    func retrieveCustomer() async throws -> Customer
    func listPaymentMethods() async throws -> [PaymentMethod]
    func attachPaymentMethod(id: String) async throws
    func detachPaymentMethod(id: String) async throws
    func updateShipping(_ shipping: StripeAddress) async throws
    /// Forgets cached answers (a no-op for backends that cache nothing).
    func clearCache()
    /// The app came to the foreground (`app.foreground`).
    func foreground()
}

extension CustomerBackend {
    /// Nothing to do for backends that hold no keys.
    public func foreground() {}
}

/// What authorizes a customer session's Stripe calls, and for which customer.
public protocol CustomerKeySource: Sendable {
    func customerKey() async throws -> (secret: StripeKey, customer: String)
    /// The app came to the foreground.
    func foreground()
}

extension CustomerKeySource {
    /// Nothing to do for a key that does not expire.
    public func foreground() {}
}

extension EphemeralKeyManager: CustomerKeySource {
    /// The SDK's client model: the customer's ephemeral key (it names the customer).
    public func customerKey() async throws -> (secret: StripeKey, customer: String) {
        let key = try await key()
        // A stored key always has a customer: the manager refuses keys without one.
        return (key.secret, key.customerID ?? "")
    }

    /// As the SDK's key manager on becoming active: a key that has expired is fetched again now
    /// (at most once an hour), so the next call does not wait.
    public func foreground() { refreshEagerly() }
}

/// stpd beside a server: its own secret or restricted key, for one customer.
public struct ServerKeySource: CustomerKeySource {
    public let key: StripeKey
    public let customer: String

    public init(key: StripeKey, customer: String) {
        self.key = key
        self.customer = customer
    }

    public func customerKey() async throws -> (secret: StripeKey, customer: String) { (key, customer) }
}

/// Sends requests to the Stripe API; `StripeClient` is the real one, tests script their own.
public protocol StripeAPIClient: Sendable {
    func send<T: Decodable>(_ request: StripeRequest, as type: T.Type) async throws -> T
}

extension StripeClient: StripeAPIClient {}

extension StripeAddress {
    /// The `shipping` params of a customer update, as the SDK sends them (absent fields omitted).
    public var shippingParams: JSONValue {
        var address: [String: JSONValue] = [:]
        for (key, value) in [
            ("line1", line1), ("line2", line2), ("city", city), ("state", state), ("postal_code", postalCode),
            ("country", country),
        ] {
            if let value { address[key] = .string(value) }
        }
        var shipping: [String: JSONValue] = ["address": .object(address)]
        if let name { shipping["name"] = .string(name) }
        if let phone { shipping["phone"] = .string(phone) }
        return .object(shipping)
    }
}
