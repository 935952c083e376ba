import JSONRPC
import StpdCore
import StpdProtocol

extension ObjectTooLarge: RPCErrorConvertible {
    public var rpcError: RPCError {
        StpdErrors.objectTooLarge(
            "\(kind) state of \(bytes) bytes; at most \(limit)",
            data: [
                "objectId": .string(objectId), "bytes": .int(Int64(bytes)), "limit": .int(Int64(limit)),
                "setting": "STPD_MAX_OBJECT_BYTES",
            ])
    }
}
