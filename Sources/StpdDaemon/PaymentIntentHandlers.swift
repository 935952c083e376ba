import JSONRPC
import StpdCore
import StpdProtocol
import StripeAPI

/// `paymentIntent.*`.
enum PaymentIntentHandlers {
    static func register(
        into router: inout MethodRouter<CallContext>, api: any PaymentsAPI, redirects: RedirectSessions
    ) {
        router.register(PaymentIntentRetrieve.self) { params, _ in
            let intent = try await api.retrievePaymentIntent(clientSecret: params.clientSecret)
            return .init(paymentIntent: publicFields(intent.allResponseFields))
        }
        router.register(PaymentIntentConfirm.self) { params, context in
            let confirm = try params.paymentMethod.confirmParams(
                clientSecret: params.clientSecret, returnURL: params.returnURL, at: "paymentMethod")
            let intent = try await api.confirmPaymentIntent(confirm)
            var session: RedirectSessionView?
            if intent.redirectURLs != nil {
                session = try await redirects.create(
                    for: context.caller, paymentIntent: intent, clientSecret: params.clientSecret, followUpTimeout: nil)
                if let start = params.start, let id = session?.id {
                    session = try await redirects.start(
                        id: id, for: context.caller, mode: start.mode, opener: start.opener)
                }
            }
            return .init(paymentIntent: publicFields(intent.allResponseFields), redirect: session)
        }
    }
}

/// A Stripe object without its client secret, for replies that other tools may log (the
/// `setupIntent.*` replies too).
func publicFields(_ fields: JSONValue) -> JSONValue {
    guard case .object(var members) = fields else { return fields }
    members["client_secret"] = nil
    return .object(members)
}
