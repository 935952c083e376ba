import Foundation
import JSONRPC
import StripeAPI

/// The Stripe calls Sources, polls, redirects and intents make, with the key the daemon holds (the SDK's
/// publishable-key client model). The daemon implements it over StripeClient; tests script it.
public protocol PaymentsAPI: Sendable {
    func createSource(_ params: [String: JSONValue]) async throws -> Source
    func retrieveSource(id: String, clientSecret: String) async throws -> Source
    /// One poll request, without the client's own retries (the poller has its schedule).
    func pollSource(id: String, clientSecret: String) async -> PollFetchResult
    func retrievePaymentIntent(clientSecret: String) async throws -> PaymentIntent
    func confirmPaymentIntent(_ params: PaymentIntentConfirmParams) async throws -> PaymentIntent
    func retrieveSetupIntent(clientSecret: String) async throws -> SetupIntent
    /// A SetupIntent's confirmation has a PaymentIntent's form (client secret, payment method, return URL).
    func confirmSetupIntent(_ params: PaymentIntentConfirmParams) async throws -> SetupIntent
    func verifyPaymentIntentMicrodeposits(_ params: VerifyMicrodepositsParams) async throws -> PaymentIntent
    func verifySetupIntentMicrodeposits(_ params: VerifyMicrodepositsParams) async throws -> SetupIntent
    /// `POST /v1/payment_intents/{id}/refresh`: the SDK's read for the types whose intent is updated
    /// late (`IntentRules.refreshes`); Stripe brings the intent up to date before answering.
    func refreshPaymentIntent(clientSecret: String) async throws -> PaymentIntent
    func refreshSetupIntent(clientSecret: String) async throws -> SetupIntent
    /// Requests `url` and ignores the answer (Alipay's return URL, `NextAction.alipayReturnPing`).
    func ping(_ url: URL) async
    /// A card PaymentMethod (the options screen's "add card"); the card never reaches storage or logs.
    func createCardPaymentMethod(_ card: CardInput) async throws -> PaymentMethod
}

extension PaymentsAPI {
    /// A Stripe that has no refresh (a test's): the plain read.
    public func refreshPaymentIntent(clientSecret: String) async throws -> PaymentIntent {
        try await retrievePaymentIntent(clientSecret: clientSecret)
    }
    public func refreshSetupIntent(clientSecret: String) async throws -> SetupIntent {
        try await retrieveSetupIntent(clientSecret: clientSecret)
    }
    public func ping(_ url: URL) async {}
}
