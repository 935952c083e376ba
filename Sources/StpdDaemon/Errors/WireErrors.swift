import JSONRPC
import StpdBackends
import StpdCore
import StpdProtocol
import StripeAPI

// The edge: how the domain's errors read to clients, all in this file. A handler throws what the
// domain threw and the router sends it as its contract error (`RPCErrorConvertible`); a failure
// kept in an object's state reads the same way in replies and events (`WireFailures`).

/// How failures in the objects' state read to clients: as the contract's error objects.
public struct WireFailures: FailureRenderer {
    public init() {}

    public func render(_ failure: Failure) -> JSONValue {
        switch failure {
        case .domain(let error): Self.json(error.rpcError)
        case .appRequest(let error): Self.json(error.rpcError)
        case .stripe(let error): Self.json(error.rpcError)
        case .described(let description): description
        }
    }

    /// Any error as the router would send it.
    public func describe(_ error: any Error) -> JSONValue {
        let rpc =
            (error as? any RPCErrorConvertible)?.rpcError ?? (error as? RPCError)
            ?? RPCError.internalError(String(describing: error))
        return Self.json(rpc)
    }

    private static func json(_ error: RPCError) -> JSONValue { (try? JSONCoding.value(of: error)) ?? .null }
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
        case .nextActionUnsupported(let type, let kind, let detail):
            StpdErrors.nextActionUnsupported(detail, data: ["type": .string(type), "kind": .string(kind)])
        case .returnURLRequired(let type, let detail):
            StpdErrors.returnURLRequired(detail, data: ["type": .string(type), "parameter": "returnURL"])
        case .intentPollTimedOut(let type, let deadline, let status):
            StpdErrors.intentPollTimedOut(
                "the customer did not complete \(type) by \(deadline.formatted(.iso8601))",
                data: [
                    "type": .string(type), "deadline": .string(deadline.formatted(.iso8601)),
                    "status": .string(status),
                ])
        case .budgetExceeded(let what, let limit, let setting):
            StpdErrors.tooManyPolls(
                "at most \(limit) \(what)",
                data: ["scope": "user", "limit": .int(Int64(limit)), "setting": .string(setting)])
        case .shippingAddressIncomplete(let fields, let members):
            StpdErrors.shippingAddressIncomplete(
                "missing or not valid: \(members.map { "address.\($0)" }.joined(separator: ", ")) "
                    + "(requiredShippingAddressFields \(fields.joined(separator: ", ")))",
                data: [
                    "parameter": .string("address.\(members.first ?? "")"),
                    "parameters": .array(members.map { .string("address.\($0)") }),
                    "fields": .array(fields.map(JSONValue.string)),
                ])
        }
    }
}

/// AppRequestTimedOut, AppRequestFailed and AppAnswerInvalid, and for answering, NotFound and
/// InvalidState (`data.state`).
extension AppRequestError: RPCErrorConvertible {
    public var rpcError: RPCError {
        switch self {
        case .timedOut(let operation, let after):
            StpdErrors.appRequestTimedOut(
                description, data: ["operation": .string(operation), "timeoutSeconds": .double(after.seconds)])
        case .failed(let message, let code, let operation):
            StpdErrors.appRequestFailed(
                message,
                data: [
                    "operation": .string(operation), "message": .string(message),
                    "code": code.map(JSONValue.string) ?? .null,
                ])
        case .malformedAnswer(let operation, _):
            StpdErrors.appAnswerInvalid(description, data: ["operation": .string(operation)])
        case .notFound(let id):
            StpdErrors.notFound(description, data: ["id": .string(id)])
        case .alreadyFinished(let id, let state):
            StpdErrors.invalidState(description, data: ["id": .string(id), "state": .string(state)])
        }
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

extension MerchantBackendError: RPCErrorConvertible {
    public var rpcError: RPCError {
        StpdErrors.backendError(
            String(describing: self),
            data: ["status": .int(Int64(status)), "body": .string(excerpt), "route": .string(route)])
    }
}

/// Runs a domain call whose `invalidInput` names its input inside the params member `parameter`:
/// `card` and the card's `zip` are `card.zip`.
func naming<T>(inputsInside parameter: String, _ body: () async throws -> T) async throws -> T {
    do {
        return try await body()
    } catch DomainError.invalidInput(let input, let detail) {
        throw DomainError.invalidInput(input: "\(parameter).\(input)", detail: detail)
    }
}

extension ObjectKind {
    /// The member of an error's `data` naming the id, as the RPC params name it.
    fileprivate var parameter: String {
        switch self {
        case .customerSession, .redirect: "session"
        case .customerPreference: "customer"
        case .appRequest: "request"
        case .source: "source"
        case .paymentContext: "context"
        case .paymentIntent, .setupIntent: "id"
        case .debug: "objectId"
        }
    }
}

/// A cursor the log cannot serve (`events.subscribe`, `events.wait`).
extension EventLogError: RPCErrorConvertible {
    public var rpcError: RPCError {
        switch self {
        case .cursorExpired(let oldest):
            StpdErrors.cursorExpired("the oldest seq kept is \(oldest)", data: ["oldestSeq": .int(oldest)])
        case .cursorAhead(let latest):
            StpdErrors.cursorAhead("the latest seq is \(latest)", data: ["latestSeq": .int(latest)])
        }
    }
}

/// Unless a handler names the card's place (`require(_:at:)`), it is `card`, as in paymentContext.addCard.
extension CardRefused: RPCErrorConvertible {
    public var rpcError: RPCError { rpcError(at: "card") }

    func rpcError(at path: String, stripeNames: Bool = false) -> RPCError {
        let what =
            switch field {
            case .number: "card number"
            case .expMonth: "expiry month"
            case .expYear: "expiry year"
            case .cvc: "CVC"
            }
        let name =
            switch (stripeNames, field) {
            case (true, .expMonth): "exp_month"
            case (true, .expYear): "exp_year"
            default: field.rawValue
            }
        let parameter = "\(path).\(name)"
        return StpdErrors.cardInvalid(
            "the \(what) is \(state.rawValue) (\(parameter))",
            data: [
                "parameter": .string(parameter), "field": .string(field.rawValue), "state": .string(state.rawValue),
                "brand": .string(brand.rawValue),
            ])
    }
}

/// A handler may `throw` a `StripeError`: the router sends it as its 3xxx error, with the
/// declaration's message followed by Stripe's, and `rpcData` as `data`. The message is masked by
/// `Redaction` in both places, since clients log errors (Stripe's messages can echo a key prefix or a
/// card number the request carried).
extension StripeError: RPCErrorConvertible {
    public var rpcError: RPCError {
        let masked = Redaction.redact(message)
        var data = rpcData
        if case .object(var members) = data {
            members["message"] = .string(masked)
            data = .object(members)
        }
        return StpdErrors.declaration(for: kind)(masked, data: data)
    }
}
