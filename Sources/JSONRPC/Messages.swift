import Foundation

/// A request id as the client sent it (string, number or null); echoed back verbatim.
public typealias RequestID = JSONValue

/// A request or notification received from a peer. `id == nil` means a notification.
public struct Request: Sendable, Hashable {
    public var id: RequestID?
    public var method: String
    public var params: JSONValue?

    public init(id: RequestID?, method: String, params: JSONValue?) {
        self.id = id
        self.method = method
        self.params = params
    }

    public var isNotification: Bool { id == nil }
}

extension Request: Codable {
    enum CodingKeys: String, CodingKey { case jsonrpc, id, method, params }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        id = try c.decodeIfPresent(JSONValue.self, forKey: .id)
        // decodeIfPresent maps an explicit `"id": null` to nil; it is a request all the same.
        if id == nil, c.contains(.id) { id = .null }
        method = try c.decode(String.self, forKey: .method)
        params = try c.decodeIfPresent(JSONValue.self, forKey: .params)
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode("2.0", forKey: .jsonrpc)
        if let id { try c.encode(id, forKey: .id) }
        try c.encode(method, forKey: .method)
        try c.encodeIfPresent(params, forKey: .params)
    }
}

/// A reply: exactly one of `result` and `error`.
public struct Response: Sendable, Hashable {
    public var id: RequestID
    public var outcome: Result<JSONValue, RPCError>

    public init(id: RequestID, result: JSONValue) {
        self.id = id
        self.outcome = .success(result)
    }

    public init(id: RequestID, error: RPCError) {
        self.id = id
        self.outcome = .failure(error)
    }
}

extension Response: Codable {
    enum CodingKeys: String, CodingKey { case jsonrpc, id, result, error }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        id = try c.decodeIfPresent(JSONValue.self, forKey: .id) ?? .null
        if let error = try c.decodeIfPresent(RPCError.self, forKey: .error) {
            outcome = .failure(error)
        } else {
            outcome = .success(try c.decodeIfPresent(JSONValue.self, forKey: .result) ?? .null)
        }
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode("2.0", forKey: .jsonrpc)
        try c.encode(id, forKey: .id)
        switch outcome {
        case .success(let result): try c.encode(result, forKey: .result)
        case .failure(let error): try c.encode(error, forKey: .error)
        }
    }
}

/// What a client reads from the daemon: a reply to one of its requests, or a notification.
public enum ServerMessage: Sendable {
    case response(Response)
    case notification(Request)

    public static func parse(_ bytes: Data) throws -> ServerMessage {
        let value = try JSONCoding.decode(JSONValue.self, from: bytes)
        if value["method"] != nil {
            return .notification(try JSONCoding.typed(Request.self, from: value))
        }
        return .response(try JSONCoding.typed(Response.self, from: value))
    }
}
