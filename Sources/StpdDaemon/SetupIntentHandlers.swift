import JSONRPC
import StpdCore
import StpdProtocol
import StripeAPI

/// `setupIntent.*`.
enum SetupIntentHandlers {
    static func register(
        into router: inout MethodRouter<CallContext>, api: any PaymentsAPI, redirects: RedirectSessions
    ) {
        router.register(SetupIntentRetrieve.self) { params, _ in
            let intent = try await api.retrieveSetupIntent(clientSecret: params.clientSecret)
            return .init(setupIntent: publicFields(intent.allResponseFields))
        }
        router.register(SetupIntentConfirm.self) { params, context in
            let confirm = try params.paymentMethod.confirmParams(
                clientSecret: params.clientSecret, returnURL: params.returnURL, at: "paymentMethod", setupIntent: true)
            let intent = try await api.confirmSetupIntent(confirm)
            var session: RedirectSessionView?
            if intent.redirectURLs != nil {
                session = try await redirects.create(
                    for: context.caller, setupIntent: intent, clientSecret: params.clientSecret, followUpTimeout: nil)
                if let start = params.start, let id = session?.id {
                    session = try await redirects.start(
                        id: id, for: context.caller, mode: start.mode, opener: start.opener)
                }
            }
            return .init(setupIntent: publicFields(intent.allResponseFields), redirect: session)
        }
    }
}
