import JSONRPC
import StpdCore
import StpdProtocol

/// `appRequest.*`: the app's answers to what the daemon asked it.
enum AppRequestHandlers {
    static func register(into router: inout MethodRouter<CallContext>, broker: AppRequestBroker) {
        router.register(AppRequestAnswer.self) { params, context in
            let reply: AppRequestReply =
                switch params.answer {
                case .result(let result): .result(result)
                case .error(let error): .failure(AppRequestFailure(message: error.message, code: error.code))
                }
            try await broker.answer(id: params.request, for: context.caller, reply)
            return .init()
        }
        router.register(AppRequestGet.self) { params, context in
            try await broker.get(id: params.request, for: context.caller)
        }
    }
}
