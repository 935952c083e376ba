/// One application error of a contract: clients switch on `code`, humans read `message`. A method
/// lists the declarations it may return (`RPCMethod.errors`), so a misspelt error does not compile.
public struct ErrorDeclaration: Sendable {
    public var name: String
    public var code: Int
    public var message: String
    public var description: String

    public init(name: String, code: Int, message: String, description: String) {
        self.name = name
        self.code = code
        self.message = message
        self.description = description
    }

    /// The error as sent, with details for this occurrence in `data`.
    public func callAsFunction(_ detail: String? = nil, data: JSONValue? = nil) -> RPCError {
        RPCError(code: code, message: detail.map { "\(message): \($0)" } ?? message, data: data)
    }
}
