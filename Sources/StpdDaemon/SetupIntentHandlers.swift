import JSONRPC
import StpdCore
import StpdProtocol
import StripeAPI

/// `setupIntent.*`.
enum SetupIntentHandlers {
    static func register(into router: inout MethodRouter<CallContext>, handler: PaymentHandler) {
        router.register(SetupIntentRetrieve.self) { params, _ in
            let intent = try await handler.retrieve(SetupIntent.self, clientSecret: params.clientSecret)
            return .init(setupIntent: publicFields(intent.allResponseFields))
        }
        router.register(SetupIntentConfirm.self) { params, context in
            let confirm = try params.paymentMethod.confirmParams(
                clientSecret: params.clientSecret, returnURL: params.returnURL, at: "paymentMethod", setupIntent: true)
            let done = try await handler.confirm(SetupIntent.self, confirm, for: context.caller, start: params.start)
            return .init(setupIntent: publicFields(done.intent.allResponseFields), redirect: done.nextAction.redirect)
        }
    }
}
