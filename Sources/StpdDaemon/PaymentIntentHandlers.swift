import JSONRPC
import StpdCore
import StpdProtocol
import StripeAPI

/// `paymentIntent.*`.
enum PaymentIntentHandlers {
    static func register(into router: inout MethodRouter<CallContext>, handler: PaymentHandler) {
        router.register(PaymentIntentRetrieve.self) { params, _ in
            let intent = try await handler.retrieve(PaymentIntent.self, clientSecret: params.clientSecret)
            return .init(paymentIntent: publicFields(intent.allResponseFields))
        }
        router.register(PaymentIntentConfirm.self) { params, context in
            let confirm = try params.paymentMethod.confirmParams(
                clientSecret: params.clientSecret, returnURL: params.returnURL, at: "paymentMethod")
            let done = try await handler.confirm(PaymentIntent.self, confirm, for: context.caller, start: params.start)
            return .init(paymentIntent: publicFields(done.intent.allResponseFields), redirect: done.nextAction.redirect)
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
