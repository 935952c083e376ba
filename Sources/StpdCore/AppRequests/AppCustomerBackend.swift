import Foundation
import JSONRPC
import StripeAPI

/// The customer-session adapter whose kind is "the app itself": each operation is an app request
/// (see `AppRequestBroker`) that the app answers with an RPC, usually after asking its own backend.
///
/// Operations and what the app answers (results are Stripe's JSON, unmodified):
/// - `retrieveCustomer` `{}` → the customer;
/// - `listPaymentMethods` `{}` → a list object (`{"data": [...]}`) or an array of payment methods;
///   entries that do not decode as a PaymentMethod are skipped, as in Stripe lists;
/// - `attachPaymentMethod` `{paymentMethod}`, `detachPaymentMethod` `{paymentMethod}` → anything
///   (the payment method, or null);
/// - `updateShipping` `{shipping: {name, phone, address: {line1, line2, city, state, postal_code,
///   country}}}` (Stripe's customer `shipping` params, absent fields omitted) → anything.
///
/// Nothing is cached (the app decides what to cache): `clearCache` does nothing. Apple Pay cards
/// are dropped from the list unless `includeApplePay`, as `StripeCustomerContext` does.
public final class AppCustomerBackend: CustomerBackend {
    public static let defaultTimeout: Duration = .seconds(30)

    public enum Operation: String, Sendable, CaseIterable {
        case retrieveCustomer, listPaymentMethods, attachPaymentMethod, detachPaymentMethod, updateShipping
    }

    private let broker: AppRequestBroker
    public let ownerUID: UInt32
    public let session: String
    public let includeApplePay: Bool
    public let timeout: Duration

    public init(
        broker: AppRequestBroker, ownerUID: UInt32, session: String, includeApplePay: Bool = false,
        timeout: Duration = AppCustomerBackend.defaultTimeout
    ) {
        self.broker = broker
        self.ownerUID = ownerUID
        self.session = session
        self.includeApplePay = includeApplePay
        self.timeout = timeout
    }

    public func retrieveCustomer() async throws -> Customer {
        let answer = try await ask(.retrieveCustomer, [:])
        return try Self.decode(answer, for: .retrieveCustomer) { try Customer(json: $0) }
    }

    public func listPaymentMethods() async throws -> [PaymentMethod] {
        let answer = try await ask(.listPaymentMethods, [:])
        let list = try Self.decode(answer, for: .listPaymentMethods) { json in
            // A bare array reads as a list's `data`.
            try PaymentMethodList(json: json.arrayValue.map { ["data": .array($0)] } ?? json)
        }
        return list.filtered(includingApplePay: includeApplePay)
    }

    public func attachPaymentMethod(id: String) async throws {
        _ = try await ask(.attachPaymentMethod, ["paymentMethod": .string(id)])
    }

    public func detachPaymentMethod(id: String) async throws {
        _ = try await ask(.detachPaymentMethod, ["paymentMethod": .string(id)])
    }

    public func updateShipping(_ shipping: StripeAddress) async throws {
        _ = try await ask(.updateShipping, ["shipping": shipping.shippingParams])
    }

    public func clearCache() {}

    private func ask(_ operation: Operation, _ params: JSONValue) async throws -> JSONValue {
        try await broker.ask(
            owner: ownerUID, session: session, operation: operation.rawValue, params: params, timeout: timeout)
    }

    /// `decode(answer)`, with a failure reported as `AppRequestError.malformedAnswer` naming the operation.
    static func decode<T>(_ answer: JSONValue, for operation: Operation, _ decode: (JSONValue) throws -> T) throws -> T
    {
        do {
            return try decode(answer)
        } catch {
            throw AppRequestError.malformedAnswer(
                operation: operation.rawValue, detail: ResponseParser.describe(error, subject: "the result"))
        }
    }
}
