import JSONRPC
import StpdProtocol

/// Why the domain refused or failed an operation. It speaks of objects and inputs, not of the
/// wire: the contract's error (code, message, `data`) is derived here, and a handler that knows
/// an input's JSON path (`source.clientSecret`) names it with `at(_:)`.
public enum DomainError: Error, Sendable, Hashable {
    /// The id names no object the caller may see; another uid's object answers the same way,
    /// so an id's existence is not revealed.
    case notFound(ObjectKind, id: String)
    /// A thing the operation names inside an object is not there (a payment option).
    case notInObject(ObjectKind, id: String, member: String, value: String, detail: String)
    /// The operation does not apply to the object's state (`state` names it).
    case invalidState(ObjectKind, id: String, state: String, detail: String)
    /// An input is missing or unusable; `input` is its name as the domain knows it.
    case invalidInput(input: String, detail: String)
    /// The configuration turns this off; `setting` names the switch.
    case disabled(setting: String, detail: String)
    /// No redirect is possible for the Source or PaymentIntent (the SDK would make no context).
    case redirectUnavailable(detail: String, data: [String: JSONValue])
    /// Opening a URL failed, or a WeChat Pay Source has no app to open.
    case redirectOpenFailed(detail: String, data: [String: JSONValue])
    /// The app reported that the customer closed the page it showed (the SDK's code 80).
    case redirectCancelled(detail: String?, data: [String: JSONValue])
    /// The app reported that the first load of a stripe.com page failed (the SDK's code 40).
    case redirectLoadFailed(detail: String?, data: [String: JSONValue])
    /// The pending action was answered, timed out or never existed.
    case pendingActionGone(action: String, detail: String)
    /// Carried in a payment context's state: nobody answered the pending action in time.
    case pendingActionTimedOut(action: String, kind: String, detail: String)
    /// Carried in a payment context's state: the payment did not succeed.
    case paymentFailed(detail: String?, data: [String: JSONValue])

    /// The same error with a wire path for an `invalidInput` (other errors are unchanged).
    public func at(_ parameter: String) -> DomainError {
        guard case .invalidInput(_, let detail) = self else { return self }
        return .invalidInput(input: parameter, detail: detail)
    }
}

extension DomainError: RPCErrorConvertible {
    public var rpcError: RPCError {
        switch self {
        case .notFound(let kind, let id):
            StpdErrors.notFound("no \(kind.noun) \(id)", data: [kind.parameter: .string(id)])
        case .notInObject(_, _, let member, let value, let detail):
            StpdErrors.notFound(detail, data: [member: .string(value)])
        case .invalidState(_, _, let state, let detail):
            StpdErrors.invalidState(detail, data: ["state": .string(state)])
        case .invalidInput(let input, let detail):
            RPCError.invalidParams(detail, parameter: input)
        case .disabled(let setting, let detail):
            StpdErrors.disabled(detail, data: ["setting": .string(setting)])
        case .redirectUnavailable(let detail, let data):
            StpdErrors.redirectUnavailable(detail, data: .object(data))
        case .redirectOpenFailed(let detail, let data):
            StpdErrors.redirectOpenFailed(detail, data: .object(data))
        case .redirectCancelled(let detail, let data):
            StpdErrors.redirectCancelled(detail, data: .object(data))
        case .redirectLoadFailed(let detail, let data):
            StpdErrors.redirectLoadFailed(detail, data: .object(data))
        case .pendingActionGone(let action, let detail):
            StpdErrors.pendingActionGone(detail, data: ["action": .string(action)])
        case .pendingActionTimedOut(let action, let kind, let detail):
            StpdErrors.pendingActionTimedOut(detail, data: ["action": .string(action), "kind": .string(kind)])
        case .paymentFailed(let detail, let data):
            StpdErrors.paymentFailed(detail, data: data.isEmpty ? nil : .object(data))
        }
    }
}

extension RPCError {
    /// An error as JSON inside an object's state (a poll's or a redirect's end, a context's
    /// result): the contract's form of whatever failed.
    static func json(_ error: any Error) -> JSONValue {
        let rpc =
            (error as? any RPCErrorConvertible)?.rpcError ?? (error as? RPCError)
            ?? RPCError.internalError(String(describing: error))
        return (try? JSONCoding.value(of: rpc)) ?? .null
    }
}

extension StoreUnavailable: RPCErrorConvertible {
    public var rpcError: RPCError {
        var data: [String: JSONValue] = [:]
        if let instance { data["instance"] = .string(instance) }
        if outcomeUnknown { data["outcome"] = "unknown" }
        return StpdErrors.storeUnavailable(reason, data: data.isEmpty ? nil : .object(data))
    }
}

extension StateUnreadable: RPCErrorConvertible {
    public var rpcError: RPCError {
        var data: [String: JSONValue] = ["object": .string(objectId)]
        if let instance { data["instance"] = .string(instance) }
        return StpdErrors.stateUnreadable(reason, data: .object(data))
    }
}
