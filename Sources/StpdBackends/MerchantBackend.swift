import Foundation
import JSONRPC
import StpdCore
import StripeAPI

/// A customer backend served by the merchant's own server: the SDK's "make your application's API
/// client conform to `STPBackendAPIAdapter`" (spec §5.1), as five REST routes under a base URL.
/// The merchant's server knows which Stripe customer the logged-in user is, calls Stripe with its
/// secret key, and relays Stripe's answers.
///
/// ## Routes
///
/// `{base}` is the configured base URL (trailing slashes removed), e.g.
/// `https://shop.example.com/api/stpd`, so the first route is `https://shop.example.com/api/stpd/customer`.
///
/// | method | path | request body | success answer |
/// |---|---|---|---|
/// | `GET`  | `{base}/customer` | none | the Stripe customer JSON, unmodified (Stripe's *retrieve customer* answer) |
/// | `GET`  | `{base}/customer/payment_methods` | none | a Stripe list `{"object":"list","data":[PaymentMethod, …]}` (Stripe's *list payment methods* answer with `customer` and `type=card`), or a bare JSON array of PaymentMethods |
/// | `POST` | `{base}/customer/payment_methods/{id}/attach` | `{}` | any 2xx; the body is ignored (Stripe's *attach* with the customer's id) |
/// | `POST` | `{base}/customer/payment_methods/{id}/detach` | `{}` | any 2xx; the body is ignored (Stripe's *detach*) |
/// | `POST` | `{base}/customer/shipping` | `{"name","phone","address":{"line1","line2","city","state","postal_code","country"}}`, absent fields omitted (`address` always present, possibly `{}`) | any 2xx; the body is ignored (Stripe's *update customer* with `shipping`) |
///
/// Every request carries `Accept: application/json` and `User-Agent: stpd`, and `Authorization`
/// with the configured value as given (e.g. `Bearer <token>`) when one is set. POSTs carry
/// `Content-Type: application/json` and a JSON body. `{id}` is a PaymentMethod id (`pm_…`): stpd
/// refuses, without any request, an id with anything but ASCII letters, digits and `_`, so it is
/// never escaped.
///
/// ## Errors
///
/// - A Stripe-shaped body `{"error": {"type", "code", "decline_code", "param", "message"}}` is the
///   error it describes, whatever the status (a 402 with Stripe's card error reaches the app as
///   StripeCardError with its decline code). Relay Stripe's error body and status as they are; a
///   `Request-Id` header is passed on as the error's request id.
/// - Any other non-2xx answer is a `MerchantBackendError` with the status and a short excerpt of the
///   body, secrets masked.
/// - A 2xx answer to a GET that is not the expected JSON is a `StripeError` of kind `.decoding`.
/// - No answer (refused, reset, closed, timed out after `timeout`) is a `StripeError` of kind
///   `.connection`.
///
/// ## Retries and caching
///
/// GETs are retried once, at once, after a connection fault (refused, reset, closed without an
/// answer, as when a kept-alive connection was closed by the server), not after a timeout. POSTs
/// are never retried: the merchant's backend is not known to be idempotent, and a POST that got no
/// answer may have been carried out. Nothing is cached (the merchant's backend decides what is
/// fresh); `clearCache()` does nothing.
///
/// Apple Pay cards (`card.wallet.type == apple_pay`) are dropped from the payment-method list
/// unless `includeApplePay`, as `StripeCustomerContext` does.
///
/// The base URL must be `https://`, or `http://` to a loopback host only (`localhost`, 127.0.0.0/8,
/// `::1`): the Authorization value and the customer's data would otherwise travel in clear. It
/// must not carry `user:password@`, a query or a fragment.
public final class MerchantBackend: CustomerBackend, CustomStringConvertible {
    public static let defaultTimeout: Duration = .seconds(30)

    /// As configured, trailing slashes removed.
    public let baseURL: String
    public let includeApplePay: Bool
    public var timeout: Duration { http.timeout }
    private let http: BackendHTTP

    /// `transport` is the HTTP layer (the daemon's `AsyncHTTPTransport`, whose client follows no
    /// redirects, so the Authorization value never goes elsewhere); the caller keeps owning it.
    /// `authorization` is the whole `Authorization` header value. Throws when the URL or the
    /// Authorization value is unusable (see the type's documentation).
    public init(
        baseURL: String, authorization: String? = nil, timeout: Duration = MerchantBackend.defaultTimeout,
        includeApplePay: Bool = false, transport: any StripeHTTPTransport, userAgent: String = "stpd"
    ) throws(BackendConfigurationError) {
        self.baseURL = try BackendURL.validate(
            baseURL, setting: "merchant backend URL", allowQuery: false, stripTrailingSlash: true)
        self.includeApplePay = includeApplePay
        http = try BackendHTTP(
            transport: transport, authorization: authorization, timeout: timeout, userAgent: userAgent)
    }

    /// Never prints the Authorization value.
    public var description: String {
        "MerchantBackend(\(baseURL), authorization: \(http.authorization == nil ? "none" : Redaction.mask))"
    }

    public func retrieveCustomer() async throws -> Customer {
        let (json, response) = try await get("/customer")
        do {
            return try Customer(json: json)
        } catch {
            throw http.undecodable(response, method: "GET", route: "/customer", reason: ResponseParser.describe(error))
        }
    }

    public func listPaymentMethods() async throws -> [PaymentMethod] {
        let route = "/customer/payment_methods"
        let (json, response) = try await get(route)
        // A bare array is taken as the list's `data`.
        let listJSON: JSONValue = json.arrayValue.map { ["object": "list", "data": .array($0)] } ?? json
        let list: PaymentMethodList
        do {
            list = try PaymentMethodList(json: listJSON)
        } catch {
            throw http.undecodable(
                response, method: "GET", route: route,
                reason: "expected a list object with data or a JSON array: " + ResponseParser.describe(error))
        }
        return list.filtered(includingApplePay: includeApplePay)
    }

    public func attachPaymentMethod(id: String) async throws {
        try await post("/customer/payment_methods/\(try Self.pathID(id))/attach", body: [:])
    }

    public func detachPaymentMethod(id: String) async throws {
        try await post("/customer/payment_methods/\(try Self.pathID(id))/detach", body: [:])
    }

    public func updateShipping(_ shipping: StripeAddress) async throws {
        try await post("/customer/shipping", body: shipping.shippingParams)
    }

    /// Nothing is cached.
    public func clearCache() {}

    // MARK: -

    private func get(_ route: String) async throws -> (JSONValue, HTTPResponseData) {
        let response = try await http.send(method: "GET", url: baseURL + route, route: route, retryOnce: true)
        guard let json = try http.interpret(response, method: "GET", route: route) else {
            throw http.undecodable(response, method: "GET", route: route, reason: "the body is not JSON")
        }
        return (json, response)
    }

    private func post(_ route: String, body: JSONValue) async throws {
        let data = try JSONCoding.encode(body)
        let response = try await http.send(
            method: "POST", url: baseURL + route, route: route, body: data, contentType: "application/json",
            retryOnce: false)
        _ = try http.interpret(response, method: "POST", route: route)
    }

    /// Ids go into URL paths: anything but ASCII letters, digits and `_` is refused rather than
    /// escaped (as `StripeCustomerContext` does for Stripe's own paths).
    static func pathID(_ id: String) throws(StripeError) -> String {
        guard !id.isEmpty, id.utf8.count <= 255,
            id.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") })
        else {
            let shown = Redaction.redact(String(id.prefix(64)))
            throw StripeError(
                kind: .invalidRequest, message: "not a payment method id: \"\(shown)\"")
        }
        return id
    }
}
