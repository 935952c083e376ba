import JSONRPC
import StpdCore
import StpdProtocol
import StripeAPI

/// `paymentIntent.*`.
enum PaymentIntentHandlers {
    static func register(into router: inout MethodRouter<CallContext>, handler: PaymentHandler, cards: CardValidator) {
        router.register(PaymentIntentRetrieve.self) { params, _ in
            let intent = try await handler.retrieve(PaymentIntent.self, clientSecret: params.clientSecret)
            return .init(paymentIntent: intent.allResponseFields.withoutClientSecret)
        }
        router.register(PaymentIntentConfirm.self) { params, context in
            try cards.require(params.paymentMethod.card, at: "paymentMethod.card")
            let confirm = try params.paymentMethod.confirmParams(
                clientSecret: params.clientSecret, returnURL: params.returnURL, at: "paymentMethod")
            let done = try await handler.confirm(PaymentIntent.self, confirm, for: context.caller, start: params.start)
            return .init(
                paymentIntent: done.intent.allResponseFields.withoutClientSecret, redirect: done.nextAction.redirect)
        }
    }
}
