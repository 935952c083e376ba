/// The single declaration of one RPC method: its name, its typed params and result, their
/// schemas, and the application errors it may return. The server's router, stpctl and the
/// OpenRPC contract are all driven by these declarations, so they cannot drift apart.
public protocol RPCMethod: Sendable {
    associatedtype Params: Codable & Sendable
    associatedtype Result: Codable & Sendable

    static var name: String { get }
    static var summary: String { get }
    static var description: String? { get }
    static var paramsSchema: JSONSchema { get }
    static var resultSchema: JSONSchema { get }
    /// The application errors this method may return, each declared once (the contract lists
    /// them under `components/errors` and refers to them by name).
    static var errors: [ErrorDeclaration] { get }
    /// Still served, but to be removed in the next major version of the protocol (docs/protocol.md,
    /// "Compatibility"); the description says what replaces it.
    static var deprecated: Bool { get }
}

extension RPCMethod {
    public static var description: String? { nil }
    public static var deprecated: Bool { false }
    public static var errors: [ErrorDeclaration] { [] }
}

/// Params of a method that takes none. Any member sent is an error (like an unknown parameter).
public struct NoParams: Codable, Sendable, Hashable {
    public init() {}
}
