import Foundation
import JSONRPC
import StripeAPI
import Synchronization

/// The SDK's `STPCustomerContext`: talks to Stripe directly with the customer's ephemeral key.
/// The customer and its payment methods are each cached for 60 s; attaching or detaching always
/// clears the payment-method cache (success or failure); Apple Pay cards are hidden unless asked
/// for. Every call first gets a key, so concurrent calls share one key fetch.
public final class StripeCustomerContext: CustomerBackend {
    /// `CachedCustomerMaxAge` in the SDK.
    public static let cacheMaxAge: TimeInterval = 60

    public let keys: any CustomerKeySource
    private let stripe: any StripeAPIClient
    private let includeApplePay: Bool
    private let now: @Sendable () -> Date

    private struct Cache {
        var customer: (value: Customer, at: Date)?
        var paymentMethods: (value: [PaymentMethod], at: Date)?
    }

    private let cache = Mutex(Cache())

    public init(
        keys: any CustomerKeySource, stripe: any StripeAPIClient, includeApplePay: Bool = false,
        now: @escaping @Sendable () -> Date = Date.init
    ) {
        self.keys = keys
        self.stripe = stripe
        self.includeApplePay = includeApplePay
        self.now = now
    }

    /// What the SDK does on init: fetch both, sharing one key fetch; errors surface on use.
    public func prefetch() async {
        async let customer = try? retrieveCustomer()
        async let methods = try? listPaymentMethods()
        _ = await (customer, methods)
    }

    public func foreground() { keys.foreground() }

    public func clearCache() {
        cache.withLock { $0 = Cache() }
    }

    /// When each cache was filled, for `customer.get` (nil: empty or expired).
    public var cacheTimes: (customer: Date?, paymentMethods: Date?) {
        let current = now()
        return cache.withLock { c in
            (
                c.customer.flatMap { fresh($0.at, current) ? $0.at : nil },
                c.paymentMethods.flatMap { fresh($0.at, current) ? $0.at : nil }
            )
        }
    }

    public func retrieveCustomer() async throws -> Customer {
        let current = now()
        if let hit = cache.withLock({ $0.customer }), fresh(hit.at, current) { return hit.value }
        let key = try await keys.customerKey()
        let customer = try await stripe.send(
            StripeRequest(.get, "/v1/customers/\(try pathID(key.customer))", key: key.secret), as: Customer.self)
        cache.withLock { $0.customer = (customer, now()) }
        return customer
    }

    public func listPaymentMethods() async throws -> [PaymentMethod] {
        let current = now()
        if let hit = cache.withLock({ $0.paymentMethods }), fresh(hit.at, current) { return hit.value }
        let key = try await keys.customerKey()
        let list = try await stripe.send(
            StripeRequest(
                .get, "/v1/payment_methods", params: ["customer": .string(try pathID(key.customer)), "type": "card"],
                key: key.secret),
            as: PaymentMethodList.self)
        let methods = list.filtered(includingApplePay: includeApplePay)
        cache.withLock { $0.paymentMethods = (methods, now()) }
        return methods
    }

    public func attachPaymentMethod(id: String) async throws {
        let key = try await keys.customerKey()
        defer { cache.withLock { $0.paymentMethods = nil } }
        _ = try await stripe.send(
            StripeRequest(
                .post, "/v1/payment_methods/\(try pathID(id))/attach",
                params: ["customer": .string(try pathID(key.customer))], key: key.secret),
            as: PaymentMethod.self)
    }

    public func detachPaymentMethod(id: String) async throws {
        let key = try await keys.customerKey()
        defer { cache.withLock { $0.paymentMethods = nil } }
        _ = try await stripe.send(
            StripeRequest(.post, "/v1/payment_methods/\(try pathID(id))/detach", key: key.secret),
            as: PaymentMethod.self)
    }

    public func updateShipping(_ shipping: StripeAddress) async throws {
        let key = try await keys.customerKey()
        let customer = try await stripe.send(
            StripeRequest(
                .post, "/v1/customers/\(try pathID(key.customer))", params: ["shipping": shipping.shippingParams],
                key: key.secret),
            as: Customer.self)
        cache.withLock { $0.customer = (customer, now()) }
    }

    private func fresh(_ at: Date, _ current: Date) -> Bool {
        current.timeIntervalSince(at) < Self.cacheMaxAge
    }
}

/// Stripe ids go into URL paths: anything but letters, digits and `_` is refused rather than escaped.
func pathID(_ id: String?) throws -> String {
    guard let id, !id.isEmpty, id.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") }) else {
        throw StripeError(kind: .invalidRequest, message: "not a Stripe id: \(id ?? "(none)")")
    }
    return id
}
