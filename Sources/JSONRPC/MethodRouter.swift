/// Maps method names to handlers built from `RPCMethod` declarations: validates params against
/// the declared schema (so errors name the parameter), decodes them, runs the handler and
/// encodes its result. `Context` is whatever the server knows about the caller.
///
/// Routing is split in two so a server can answer cheaply: `route` runs synchronously (method
/// lookup, validation, decoding, and the answer of a constant method), and only a handler's
/// body is left to run asynchronously.
public struct MethodRouter<Context: Sendable>: Sendable {
    public typealias Routed = RoutedCall

    private typealias Entry = @Sendable (_ params: JSONValue, _ id: RequestID?, _ context: Context) -> Routed

    private var entries: [String: Entry] = [:]
    private let validator: SchemaValidator

    /// `maxStringBytes` bounds every string in every call's params (see `SchemaValidator`).
    public init(definitions: [String: JSONValue] = [:], maxStringBytes: Int? = nil) {
        validator = SchemaValidator(definitions: definitions, maxStringBytes: maxStringBytes)
    }

    public var methodNames: Set<String> { Set(entries.keys) }

    /// Registers a handler that runs asynchronously, as a task of the caller's connection.
    public mutating func register<M: RPCMethod>(
        _ method: M.Type, _ body: @escaping @Sendable (M.Params, Context) async throws -> M.Result
    ) {
        precondition(entries[M.name] == nil, "\(M.name) registered twice")
        let validator = self.validator
        let emptyIsValid = Self.acceptsEmpty(M.self, validator)
        entries[M.name] = { raw, id, context in
            let params: M.Params
            do throws(RPCError) {
                params = try Self.decode(M.self, raw, validator, emptyIsValid: emptyIsValid)
            } catch {
                return .answered(id.map { Response(id: $0, error: error) })
            }
            return .pending {
                let outcome: Result<JSONValue, RPCError>
                do {
                    outcome = .success(try JSONCoding.value(of: try await body(params, context)))
                } catch {
                    outcome = .failure(Self.rpcError(error))
                }
                return id.map { Response(id: $0, outcome: outcome) }
            }
        }
    }

    /// Registers a method whose answer never changes while the router lives (`daemon.ping`,
    /// `rpc.discover`): its result is encoded once. With `immediate` it is answered where the
    /// request is read; without (a large result), its reply is written by a task.
    public mutating func registerConstant<M: RPCMethod>(
        _ method: M.Type, result: M.Result, immediate: Bool = true
    ) throws {
        precondition(entries[M.name] == nil, "\(M.name) registered twice")
        let validator = self.validator
        let emptyIsValid = Self.acceptsEmpty(M.self, validator)
        let encoded = try JSONCoding.value(of: result)
        entries[M.name] = { raw, id, _ in
            do throws(RPCError) {
                _ = try Self.decode(M.self, raw, validator, emptyIsValid: emptyIsValid)
            } catch {
                return .answered(id.map { Response(id: $0, error: error) })
            }
            let response = id.map { Response(id: $0, result: encoded) }
            return immediate ? .answered(response) : .pending { response }
        }
    }

    /// Decides what to do with one call: everything but a regular handler's body happens here.
    public func route(_ request: Request, context: Context) -> Routed {
        guard let entry = entries[request.method] else {
            return .answered(request.id.map { Response(id: $0, error: .methodNotFound(request.method)) })
        }
        if let error = request.paramsError {
            return .answered(request.id.map { Response(id: $0, error: error) })
        }
        switch request.params {
        case .array:
            let error = RPCError.invalidParams("params must be an object (by-name)", parameter: "params")
            return .answered(request.id.map { Response(id: $0, error: error) })
        default:
            return entry(request.params ?? .object([:]), request.id, context)
        }
    }

    /// Runs one call. Returns nil for a notification (whose outcome, even an error, is not sent).
    public func handle(_ request: Request, context: Context) async -> Response? {
        switch route(request, context: context) {
        case .answered(let response): return response
        case .pending(let run): return await run()
        }
    }

    /// Whether `{}` passes the method's schema: then a call without params needs no validation.
    private static func acceptsEmpty<M: RPCMethod>(_ method: M.Type, _ validator: SchemaValidator) -> Bool {
        do throws(SchemaValidator.Failure) {
            try validator.validate(.object([:]), against: M.paramsSchema)
            return true
        } catch {
            return false
        }
    }

    private static func decode<M: RPCMethod>(
        _ method: M.Type, _ raw: JSONValue, _ validator: SchemaValidator, emptyIsValid: Bool
    ) throws(RPCError) -> M.Params {
        do throws(SchemaValidator.Failure) {
            if emptyIsValid, case .object(let members) = raw, members.isEmpty {
                // Checked once at registration.
            } else {
                try validator.validate(raw, against: M.paramsSchema)
            }
        } catch {
            var invalid = RPCError.invalidParams(error.reason, parameter: error.path.isEmpty ? "params" : error.path)
            if case .object(var data)? = invalid.data, !error.data.isEmpty {
                data.merge(error.data) { named, _ in named }
                invalid.data = .object(data)
            }
            throw invalid
        }
        do {
            return try JSONCoding.typed(M.Params.self, from: raw)
        } catch let error as RPCError {
            throw error
        } catch let error as DecodingError {
            throw RPCError.invalidParams(error)
        } catch {
            throw RPCError.invalidParams(String(describing: error), parameter: "params")
        }
    }

    private static func rpcError(_ error: any Error) -> RPCError {
        switch error {
        case let error as RPCError: return error
        case let error as any RPCErrorConvertible: return error.rpcError
        case is CancellationError: return .cancelled
        default: return .internalError(String(describing: error))
        }
    }
}

/// What was decided about one call where it was read.
public enum RoutedCall: Sendable {
    /// Answered already (nil: a notification, which gets no reply).
    case answered(Response?)
    /// The handler still has to run; the closure runs it and gives the reply.
    case pending(@Sendable () async -> Response?)
}

/// An error of the domain that knows its JSON-RPC form.
public protocol RPCErrorConvertible: Error {
    var rpcError: RPCError { get }
}

extension RPCError {
    /// -32602 for params that passed the schema but did not decode, naming the member from the
    /// error's coding path (`since`, `filter.types[0]`) instead of quoting Swift's error text.
    static func invalidParams(_ error: DecodingError) -> RPCError {
        func name(_ path: [CodingKey]) -> String {
            let components: [JSONPathComponent] = path.map { key in
                key.intValue.map(JSONPathComponent.index) ?? .member(key.stringValue)
            }
            return components.isEmpty ? "params" : components.dotted
        }
        switch error {
        case .typeMismatch(_, let context):
            return .invalidParams(context.debugDescription, parameter: name(context.codingPath))
        case .valueNotFound(_, let context):
            return .invalidParams(context.debugDescription, parameter: name(context.codingPath))
        case .keyNotFound(let key, let context):
            return .invalidParams("is required", parameter: name(context.codingPath + [key]))
        case .dataCorrupted(let context):
            return .invalidParams(context.debugDescription, parameter: name(context.codingPath))
        @unknown default: return .invalidParams(String(describing: error), parameter: "params")
        }
    }
}

extension Response {
    public init(id: RequestID, outcome: Result<JSONValue, RPCError>) {
        switch outcome {
        case .success(let value): self.init(id: id, result: value)
        case .failure(let error): self.init(id: id, error: error)
        }
    }
}
