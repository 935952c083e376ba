/// Maps method names to handlers built from `RPCMethod` declarations: validates params against
/// the declared schema (so errors name the parameter), decodes them, runs the handler and
/// encodes its result. `Context` is whatever the server knows about the caller.
public struct MethodRouter<Context: Sendable>: Sendable {
    public typealias Handler = @Sendable (JSONValue, Context) async throws -> JSONValue

    private var handlers: [String: Handler] = [:]
    private let validator: SchemaValidator

    public init(definitions: [String: JSONValue] = [:]) {
        validator = SchemaValidator(definitions: definitions)
    }

    public var methodNames: Set<String> { Set(handlers.keys) }

    public mutating func register<M: RPCMethod>(
        _ method: M.Type, _ body: @escaping @Sendable (M.Params, Context) async throws -> M.Result
    ) {
        precondition(handlers[M.name] == nil, "\(M.name) registered twice")
        let validator = self.validator
        handlers[M.name] = { raw, context in
            do throws(SchemaValidator.Failure) {
                try validator.validate(raw, against: M.paramsSchema)
            } catch {
                throw RPCError.invalidParams(error.reason, parameter: error.path.isEmpty ? nil : error.path)
            }
            let params: M.Params
            do {
                params = try JSONCoding.typed(M.Params.self, from: raw)
            } catch {
                throw RPCError.invalidParams(String(describing: error), parameter: nil)
            }
            return try JSONCoding.value(of: try await body(params, context))
        }
    }

    /// Runs one call. Returns nil for a notification (whose outcome, even an error, is not sent).
    public func handle(_ request: Request, context: Context) async -> Response? {
        let outcome: Result<JSONValue, RPCError>
        if let handler = handlers[request.method] {
            switch request.params {
            case .array:
                outcome = .failure(.invalidParams("params must be an object (by-name)", parameter: nil))
            default:
                do {
                    outcome = .success(try await handler(request.params ?? .object([:]), context))
                } catch let error as RPCError {
                    outcome = .failure(error)
                } catch let error as any RPCErrorConvertible {
                    outcome = .failure(error.rpcError)
                } catch {
                    outcome = .failure(.internalError(String(describing: error)))
                }
            }
        } else {
            outcome = .failure(.methodNotFound(request.method))
        }
        guard let id = request.id else { return nil }
        return Response(id: id, outcome: outcome)
    }
}

/// An error of the domain that knows its JSON-RPC form.
public protocol RPCErrorConvertible: Error {
    var rpcError: RPCError { get }
}

extension Response {
    public init(id: RequestID, outcome: Result<JSONValue, RPCError>) {
        switch outcome {
        case .success(let value): self.init(id: id, result: value)
        case .failure(let error): self.init(id: id, error: error)
        }
    }
}
