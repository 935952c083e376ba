import Foundation

/// A request or notification received from a peer. `id == nil` means a notification.
public struct Request: Sendable, Hashable {
    public var id: RequestID?
    public var method: String
    public var params: JSONValue?
    /// Set when the params as sent cannot be held faithfully by `params` (a member given twice,
    /// a number beyond Double's range): the router answers it, naming the member, once the
    /// method is known to exist.
    public var paramsError: RPCError?

    public init(id: RequestID?, method: String, params: JSONValue?, paramsError: RPCError? = nil) {
        self.id = id
        self.method = method
        self.params = params
        self.paramsError = paramsError
    }

    public var isNotification: Bool { id == nil }

    /// The request as one compact JSON text (no newline).
    public func write(to out: inout [UInt8]) {
        out.append(UInt8(ascii: "{"))
        if let id {
            out.append(contentsOf: #""id":"#.utf8)
            out.append(contentsOf: id.json.utf8)
            out.append(UInt8(ascii: ","))
        }
        out.append(contentsOf: #""jsonrpc":"2.0","method":"#.utf8)
        JSONWriter.writeString(method, to: &out)
        if let params {
            out.append(contentsOf: #","params":"#.utf8)
            JSONWriter.write(params, to: &out)
        }
        out.append(UInt8(ascii: "}"))
    }
}

extension Request: Codable {
    enum CodingKeys: String, CodingKey { case jsonrpc, id, method, params }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        id = try c.decodeIfPresent(RequestID.self, forKey: .id)
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

    /// The reply as one compact JSON text (no newline), its id exactly as the request had it.
    public func write(to out: inout [UInt8]) {
        out.append(UInt8(ascii: "{"))
        if case .failure(let error) = outcome {
            out.append(contentsOf: #""error":"#.utf8)
            error.write(to: &out)
            out.append(UInt8(ascii: ","))
        }
        out.append(contentsOf: #""id":"#.utf8)
        out.append(contentsOf: id.json.utf8)
        out.append(contentsOf: #","jsonrpc":"2.0""#.utf8)
        if case .success(let result) = outcome {
            out.append(contentsOf: #","result":"#.utf8)
            JSONWriter.write(result, to: &out)
        }
        out.append(UInt8(ascii: "}"))
    }
}

extension RPCError {
    func write(to out: inout [UInt8]) {
        out.append(contentsOf: #"{"code":"#.utf8)
        JSONWriter.writeInteger(Int64(code), to: &out)
        if let data {
            out.append(contentsOf: #","data":"#.utf8)
            JSONWriter.write(data, to: &out)
        }
        out.append(contentsOf: #","message":"#.utf8)
        JSONWriter.writeString(message, to: &out)
        out.append(UInt8(ascii: "}"))
    }
}

extension Response: Codable {
    enum CodingKeys: String, CodingKey { case jsonrpc, id, result, error }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        id = try c.decodeIfPresent(RequestID.self, forKey: .id) ?? .null
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
        try bytes.withUnsafeBytes { try parse($0) }
    }

    /// Reads one frame; the reply's id keeps the exact text the daemon wrote.
    public static func parse(_ bytes: UnsafeRawBufferPointer) throws -> ServerMessage {
        let envelope = try Envelope.read(bytes)
        guard envelope.isObject else { throw JSONSyntaxError(reason: "a message must be a JSON object", offset: 0) }
        let id = envelope.rawID
        if case .string(let method)? = envelope.method {
            return .notification(Request(id: id, method: method, params: envelope.params))
        }
        if let error = envelope.error {
            return .response(Response(id: id ?? .null, error: try JSONCoding.typed(RPCError.self, from: error)))
        }
        return .response(Response(id: id ?? .null, result: envelope.result ?? .null))
    }
}
