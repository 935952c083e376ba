import Foundation
import JSONRPC
import StripeAPI

/// A PaymentIntent or a SetupIntent as the SDK's STPPaymentHandler treats either: confirmed with
/// its client secret, then followed through the next action Stripe asks for.
public protocol StripeIntent: Sendable {
    /// Which of the two (a redirect session's kind, and the word its errors use).
    static var kind: IntentKind { get }
    static func retrieve(clientSecret: String, with api: any PaymentsAPI) async throws -> Self
    /// Confirms the intent the params' client secret names.
    static func confirm(_ params: PaymentIntentConfirmParams, with api: any PaymentsAPI) async throws -> Self

    var id: String { get }
    /// Stripe's status, as sent.
    var statusName: String { get }
    var requiresAction: Bool { get }
    var nextAction: NextAction? { get }
    /// A `redirect_to_url` action's URLs while the intent requires it.
    var redirectURLs: (url: URL, returnURL: URL)? { get }
    var allResponseFields: JSONValue { get }
}

public enum IntentKind: String, Sendable {
    case paymentIntent, setupIntent

    /// As messages name it.
    var noun: String {
        switch self {
        case .paymentIntent: "PaymentIntent"
        case .setupIntent: "SetupIntent"
        }
    }
}

extension PaymentIntent: StripeIntent {
    public static var kind: IntentKind { .paymentIntent }
    public static func retrieve(clientSecret: String, with api: any PaymentsAPI) async throws -> Self {
        try await api.retrievePaymentIntent(clientSecret: clientSecret)
    }
    public static func confirm(_ params: PaymentIntentConfirmParams, with api: any PaymentsAPI) async throws -> Self {
        try await api.confirmPaymentIntent(params)
    }
    public var statusName: String { status.rawValue }
    public var requiresAction: Bool { status == .requiresAction }
}

extension SetupIntent: StripeIntent {
    public static var kind: IntentKind { .setupIntent }
    public static func retrieve(clientSecret: String, with api: any PaymentsAPI) async throws -> Self {
        try await api.retrieveSetupIntent(clientSecret: clientSecret)
    }
    public static func confirm(_ params: PaymentIntentConfirmParams, with api: any PaymentsAPI) async throws -> Self {
        try await api.confirmSetupIntent(params)
    }
    public var statusName: String { status.rawValue }
    public var requiresAction: Bool { status == .requiresAction }
}
