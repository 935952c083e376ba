import Foundation
import JSONRPC
import StpdValues
import StripeAPI

/// A PaymentIntent or a SetupIntent as the SDK's STPPaymentHandler treats either: confirmed with
/// its client secret, then followed through the next action Stripe asks for.
public protocol StripeIntent: StripeModel {
    /// How the wire names it (methods, events, results).
    associatedtype Naming: IntentNaming
    /// Which of the two (a redirect session's kind, and the word its errors use).
    static var kind: IntentKind { get }
    static func retrieve(clientSecret: String, with api: any PaymentsAPI) async throws -> Self
    /// The refresh endpoint's read (Cash App, Klarna: `IntentRules.refreshes`).
    static func refresh(clientSecret: String, with api: any PaymentsAPI) async throws -> Self
    /// Confirms the intent the params' client secret names.
    static func confirm(_ params: PaymentIntentConfirmParams, with api: any PaymentsAPI) async throws -> Self
    static func verifyMicrodeposits(_ params: VerifyMicrodepositsParams, with api: any PaymentsAPI) async throws
        -> Self
    /// Its polls among the daemon's.
    static func polls(in pollers: IntentPollers) -> IntentPolls<Self>
    /// Its collection in Stripe's API (`/v1/payment_intents`).
    static var collection: String { get }
    /// How Stripe names it when its id is unknown.
    static var secretBearer: SecretBearer { get }

    var id: String { get }
    var clientSecret: String { get }
    /// Stripe's status, as STPPaymentHandler's rules read it.
    var handlerStatus: IntentStatus { get }
    var nextAction: NextAction? { get }
    /// Set when `payment_method` was expanded (stpd expands it, as the SDK does).
    var paymentMethod: PaymentMethod? { get }
    var paymentMethodTypes: [String] { get }
    /// `last_payment_error` (`last_setup_error`), as sent.
    var lastErrorFields: JSONValue? { get }
}

/// An intent's status as STPPaymentHandler's rules read it (`unifiedStatus`): a PaymentIntent's,
/// of which a SetupIntent's are a part.
public typealias IntentStatus = PaymentIntent.Status

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

extension StripeIntent {
    /// Re-reads the intent as the SDK does after an action (`retrieveOrRefreshPaymentIntent`):
    /// through refresh for a payment method of `paymentMethodType` that needs it, else a plain read.
    public static func reread(clientSecret: String, paymentMethodType: String?, with api: any PaymentsAPI)
        async throws -> Self
    {
        IntentRules.refreshes(paymentMethodType)
            ? try await refresh(clientSecret: clientSecret, with: api)
            : try await retrieve(clientSecret: clientSecret, with: api)
    }

    public var requiresAction: Bool { handlerStatus == .requiresAction }

    /// The type of its payment method: the expanded object's, else the only type it allows.
    public var paymentMethodType: String? {
        paymentMethod?.type ?? (paymentMethodTypes.count == 1 ? paymentMethodTypes[0] : nil)
    }
    public var statusName: String { handlerStatus.rawValue }

    /// What replies and events carry: no client secret, and `payment_method` as its id (stpd
    /// expands it to read its type, as the SDK does; clients get the shape Stripe answers by default).
    public var clientFields: JSONValue {
        guard case .object(var members) = allResponseFields.withoutClientSecret else { return allResponseFields }
        if members["payment_method"]?.objectValue != nil {
            members["payment_method"] = members["payment_method"]?["id"]
        }
        return .object(members)
    }
}

extension PaymentIntent: StripeIntent {
    public typealias Naming = PaymentIntentNaming
    public static var kind: IntentKind { .paymentIntent }
    public static func retrieve(clientSecret: String, with api: any PaymentsAPI) async throws -> Self {
        try await api.retrievePaymentIntent(clientSecret: clientSecret)
    }
    public static func refresh(clientSecret: String, with api: any PaymentsAPI) async throws -> Self {
        try await api.refreshPaymentIntent(clientSecret: clientSecret)
    }
    public static func confirm(_ params: PaymentIntentConfirmParams, with api: any PaymentsAPI) async throws -> Self {
        try await api.confirmPaymentIntent(params)
    }
    public static func verifyMicrodeposits(_ params: VerifyMicrodepositsParams, with api: any PaymentsAPI)
        async throws -> Self
    {
        try await api.verifyPaymentIntentMicrodeposits(params)
    }
    public static func polls(in pollers: IntentPollers) -> IntentPolls<Self> { pollers.paymentIntents }
    public static var collection: String { "payment_intents" }
    public static var secretBearer: SecretBearer { .paymentIntent }

    public var handlerStatus: IntentStatus { status }
    public var lastErrorFields: JSONValue? { lastPaymentError?.allResponseFields }
}

extension SetupIntent: StripeIntent {
    public typealias Naming = SetupIntentNaming
    public static var kind: IntentKind { .setupIntent }
    public static func retrieve(clientSecret: String, with api: any PaymentsAPI) async throws -> Self {
        try await api.retrieveSetupIntent(clientSecret: clientSecret)
    }
    public static func refresh(clientSecret: String, with api: any PaymentsAPI) async throws -> Self {
        try await api.refreshSetupIntent(clientSecret: clientSecret)
    }
    public static func confirm(_ params: PaymentIntentConfirmParams, with api: any PaymentsAPI) async throws -> Self {
        try await api.confirmSetupIntent(params)
    }
    public static func verifyMicrodeposits(_ params: VerifyMicrodepositsParams, with api: any PaymentsAPI)
        async throws -> Self
    {
        try await api.verifySetupIntentMicrodeposits(params)
    }
    public static func polls(in pollers: IntentPollers) -> IntentPolls<Self> { pollers.setupIntents }
    public static var collection: String { "setup_intents" }
    public static var secretBearer: SecretBearer { .setupIntent }

    public var handlerStatus: IntentStatus { IntentStatus(apiValue: status.rawValue) }
    public var lastErrorFields: JSONValue? { lastSetupError?.allResponseFields }
}
