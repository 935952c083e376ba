import JSONRPC

/// Where customer ephemeral keys come from (spec §5.2): the merchant backend creates the key with
/// the API version it is given and returns Stripe's JSON unmodified. The daemon implements it as
/// an HTTP POST to the merchant backend, or as a request to the app over its socket.
///
/// Errors thrown are handed to every caller waiting for the key, as they are. Returning JSON that is
/// not a usable key is not an error here: `EphemeralKeyManager` reports it as
/// `StripeError.Kind.ephemeralKeyDecoding`.
public protocol EphemeralKeyProvider: Sendable {
    func createCustomerKey(apiVersion: String) async throws -> JSONValue
}
