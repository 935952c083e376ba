import JSONRPC
import StpdCore
import StpdProtocol

/// `appRequest.*`: the app's answers to what the daemon asked it.
enum AppRequestHandlers {
    static func register(into router: inout MethodRouter<CallContext>, broker: AppRequestBroker) {
        router.register(AppRequestAnswer.self) { params, context in
            if params.result != nil, params.error != nil {
                throw RPCError.invalidParams("give result or error, not both", parameter: "error")
            }
            try await broker.answer(
                id: params.request, for: context.caller, result: params.result ?? (params.error == nil ? .null : nil),
                error: params.error.map { AppRequestFailure(message: $0.message, code: $0.code) })
            return .init()
        }
        router.register(AppRequestGet.self) { params, context in
            try await broker.get(id: params.request, for: context.caller)
        }
    }
}
