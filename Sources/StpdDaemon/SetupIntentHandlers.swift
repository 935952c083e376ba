import JSONRPC
import StpdCore
import StpdProtocol
import StripeAPI

/// `setupIntent.*`.
enum SetupIntentHandlers {
    static func register(into router: inout MethodRouter<CallContext>, handler: PaymentHandler, cards: CardValidator) {
        router.register(SetupIntentRetrieve.self) { params, _ in
            let intent = try await handler.retrieve(SetupIntent.self, clientSecret: params.clientSecret)
            return .init(setupIntent: intent.allResponseFields.withoutClientSecret)
        }
        router.register(SetupIntentConfirm.self) { params, context in
            try cards.require(params.paymentMethod.card, at: "paymentMethod.card")
            let confirm = try params.paymentMethod.confirmParams(
                clientSecret: params.clientSecret, returnURL: params.returnURL, at: "paymentMethod", setupIntent: true)
            let done = try await handler.confirm(SetupIntent.self, confirm, for: context.caller, start: params.start)
            return .init(
                setupIntent: done.intent.allResponseFields.withoutClientSecret, redirect: done.nextAction.redirect)
        }
    }
}
