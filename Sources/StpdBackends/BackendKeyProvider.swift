import Foundation
import JSONRPC
import StpdCore
import StripeAPI

/// The SDK's `STPCustomerEphemeralKeyProvider` as an HTTP call to the merchant's ephemeral-key
/// endpoint (spec §5.2).
///
/// `POST {url}` with `Content-Type: application/x-www-form-urlencoded` and the body
/// `api_version=<version>` (e.g. `api_version=2020-08-27`), plus `Accept: application/json`,
/// `User-Agent: stpd` and the configured `Authorization` value when set. The endpoint creates a key
/// for the logged-in user's customer with Stripe's *create ephemeral key* call, passing that version
/// as the `Stripe-Version` header, and answers 2xx with Stripe's JSON unmodified. That JSON is
/// returned as is; `EphemeralKeyManager` decides whether it is a usable key.
///
/// Errors: a Stripe-shaped `{"error": {...}}` body → that `StripeError`; any other non-2xx →
/// `MerchantBackendError` naming the status; a 2xx body that is not JSON → `StripeError` of kind
/// `.ephemeralKeyDecoding` (EphemeralKeyInvalid); no answer → `StripeError` of kind `.connection`.
///
/// One retry, at once, after a connection fault (refused, reset, closed without an answer; not a
/// timeout): unlike the customer routes, creating a key twice is harmless (an unused key just
/// expires), and keys are fetched rarely enough that a kept-alive connection has often been closed
/// by the server in between.
///
/// The URL must be `https://`, or `http://` to a loopback host only; it may have a query, not
/// `user:password@` nor a fragment.
public final class BackendKeyProvider: EphemeralKeyProvider, CustomStringConvertible {
    public let url: String
    public var timeout: Duration { http.timeout }
    private let http: BackendHTTP
    private let route: String

    public init(
        url: String, authorization: String? = nil, timeout: Duration = MerchantBackend.defaultTimeout,
        transport: any StripeHTTPTransport, userAgent: String = "stpd"
    ) throws(BackendConfigurationError) {
        self.url = try BackendURL.validate(
            url, setting: "ephemeral key URL", allowQuery: true, stripTrailingSlash: false)
        route = BackendURL.path(of: self.url)
        http = try BackendHTTP(
            transport: transport, authorization: authorization, timeout: timeout, userAgent: userAgent)
    }

    /// Never prints the Authorization value.
    public var description: String {
        "BackendKeyProvider(\(Redaction.redact(url)), authorization: \(http.authorization == nil ? "none" : Redaction.mask))"
    }

    public func createCustomerKey(apiVersion: String) async throws -> JSONValue {
        let response = try await http.send(
            method: "POST", url: url, route: route, body: FormEncoder.encodeData(["api_version": .string(apiVersion)]),
            contentType: "application/x-www-form-urlencoded", retryOnce: true)
        guard let json = try http.interpret(response, method: "POST", route: route) else {
            throw EphemeralKey.failure("the ephemeral key endpoint's answer (HTTP \(response.status)) is not JSON")
        }
        return json
    }
}
