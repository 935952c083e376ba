import JSONRPC
import StpdCore
import StpdProtocol

/// `debug.*`: test events, only with `--debug-methods`.
enum DebugHandlers {
    static func register(into router: inout MethodRouter<CallContext>, log: EventLog, enabled: Bool) {
        let emitter = DebugEmitter(log: log)
        router.register(DebugEmit.self) { params, context in
            guard enabled else {
                throw StpdErrors.disabled("start stpd with --debug-methods", data: ["setting": "STPD_DEBUG_METHODS"])
            }
            let events = try await emitter.emit(
                objectId: params.objectId, count: params.count ?? 1, payload: params.payload, uid: context.caller.uid)
            return .init(firstSeq: events.first!.seq, lastSeq: events.last!.seq)
        }
    }
}
