/// A JSON-RPC error object. The reserved codes are the spec's; application codes are declared
/// by the method registry (outside -32768...-32000) so clients can switch on them.
public struct RPCError: Error, Sendable, Hashable, Codable {
    public var code: Int
    public var message: String
    public var data: JSONValue?
    /// What the daemon's log says about an internal error and its client is never told (a
    /// store's error may quote SQL, a path, another user's data): not on the wire, not compared.
    public var logDetail: String?

    enum CodingKeys: String, CodingKey { case code, message, data }

    public init(code: Int, message: String, data: JSONValue? = nil) {
        self.code = code
        self.message = message
        self.data = data
    }

    public static func == (a: RPCError, b: RPCError) -> Bool {
        a.code == b.code && a.message == b.message && a.data == b.data
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(code)
        hasher.combine(message)
        hasher.combine(data)
    }

    public static let parseErrorCode = -32700
    public static let invalidRequestCode = -32600
    public static let methodNotFoundCode = -32601
    public static let invalidParamsCode = -32602
    public static let internalErrorCode = -32603

    public static func parseError(_ detail: String) -> RPCError {
        RPCError(code: parseErrorCode, message: "Parse error: \(detail)")
    }

    public static func invalidRequest(_ detail: String, data: JSONValue? = nil) -> RPCError {
        RPCError(code: invalidRequestCode, message: "Invalid request: \(detail)", data: data)
    }

    public static func methodNotFound(_ method: String) -> RPCError {
        RPCError(code: methodNotFoundCode, message: "Method not found: \(method)", data: ["method": .string(method)])
    }

    /// `parameter` is a JSON-pointer-like path (`url`, `filter.types[0]`; `params` for the params
    /// as a whole) so the client knows what to fix: every -32602 names one.
    public static func invalidParams(_ detail: String, parameter: String) -> RPCError {
        RPCError(
            code: invalidParamsCode, message: "Invalid params: \(parameter): \(detail)",
            data: ["parameter": .string(parameter)])
    }

    /// A -32603 that says "Internal error" and nothing more; `detail` is for the log only.
    public static func internalError(_ detail: String) -> RPCError {
        var error = RPCError(code: internalErrorCode, message: "Internal error")
        error.logDetail = detail
        return error
    }

    private static let cancelledDetail = "the call was cancelled"

    /// A call whose task was cancelled (its connection closed, its subscriber dropped): nobody is
    /// waiting for the answer, and it is no failure of the daemon's.
    public static let cancelled = internalError(cancelledDetail)

    public var isCancellation: Bool { code == Self.internalErrorCode && logDetail == Self.cancelledDetail }
}
