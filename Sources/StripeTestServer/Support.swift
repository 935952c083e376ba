import Foundation
import JSONRPC

typealias Obj = [String: JSONValue]

/// One HTTP request as the core sees it (header names lower-cased).
public struct TestHTTPRequest: Sendable {
    public var method: String
    public var path: String
    public var query: String
    public var headers: [String: String]
    public var body: [UInt8]

    public init(method: String, path: String, query: String = "", headers: [String: String] = [:], body: [UInt8] = []) {
        self.method = method.uppercased()
        self.path = path
        self.query = query
        self.headers = Dictionary(headers.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { _, b in b })
        self.body = body
    }

    public func header(_ name: String) -> String? { headers[name.lowercased()] }
}

/// What to send back: a response, or (`drop`) nothing at all, the connection closed.
public struct TestHTTPResponse: Sendable {
    public var status: Int
    public var headers: [(String, String)]
    public var body: [UInt8]
    public var drop: Bool

    public init(status: Int, headers: [(String, String)] = [], body: [UInt8] = [], drop: Bool = false) {
        self.status = status
        self.headers = headers
        self.body = body
        self.drop = drop
    }

    static func json(_ status: Int, _ value: JSONValue, headers: [(String, String)] = []) -> TestHTTPResponse {
        let data = (try? JSONCoding.encode(value, pretty: true)) ?? Data("{}".utf8)
        return TestHTTPResponse(
            status: status, headers: [("Content-Type", "application/json")] + headers, body: Array(data))
    }
}

/// Who a request authenticated as.
public enum AuthKind: String, Sendable, Codable {
    case secret, publishable, ephemeral, none, invalid
}

/// One entry of the request log (`GET /_test/requests`): what was sent, with the form (query and
/// body) decoded into nested JSON, and who sent it (`auth`, the key's kind).
public struct LoggedRequest: Sendable, Equatable {
    public var seq: Int
    public var method: String
    public var path: String
    public var query: String
    public var idempotencyKey: String?
    public var auth: AuthKind
    public var status: Int?  // nil when the connection was dropped without a response
    public var replayed: Bool
    public var fault: String?  // "status", "drop", "delay" when an injected fault shaped the response
    public var stripeVersion: String?
    public var body: String

    var json: JSONValue {
        [
            "seq": .int(Int64(seq)), "method": .string(method), "path": .string(path), "query": .string(query),
            "idempotency_key": idempotencyKey.map(JSONValue.string) ?? .null,
            "auth": .string(auth.rawValue),
            "status": status.map { .int(Int64($0)) } ?? .null,
            "replayed": .bool(replayed),
            "fault": fault.map(JSONValue.string) ?? .null,
            "stripe_version": stripeVersion.map(JSONValue.string) ?? .null,
            "body": .string(body),
            "form": .object(FormDecoding.tree(FormDecoding.pairs(query) + FormDecoding.pairs(body))),
        ]
    }
}

/// An injected fault (`POST /_test/faults`). It matches requests by method (optional) and path
/// (a prefix, or a regular expression when it starts with `^`), fires `times` times in the order
/// faults were added, then expires.
public struct Fault: Sendable, Equatable {
    public var method: String?
    public var path: String
    public var status: Int?
    public var body: JSONValue?
    public var headers: [String: String]
    public var times: Int
    public var delayMs: Int
    public var drop: Bool
    /// Handle the request for real first (so it takes effect and its idempotent response is
    /// stored), then replace the response with the fault: "the response was lost".
    public var afterHandling: Bool

    public init(
        method: String? = nil, path: String, status: Int? = nil, body: JSONValue? = nil,
        headers: [String: String] = [:], times: Int = 1, delayMs: Int = 0, drop: Bool = false,
        afterHandling: Bool = false
    ) {
        self.method = method?.uppercased()
        self.path = path
        self.status = status
        self.body = body
        self.headers = headers
        self.times = times
        self.delayMs = delayMs
        self.drop = drop
        self.afterHandling = afterHandling
    }

    init(json: JSONValue) throws(APIError) {
        guard let o = json.objectValue else { throw .invalid("a fault must be a JSON object") }
        guard let path = o["path"]?.stringValue else { throw .missing("path") }
        let allowed: Set<String> = [
            "method", "path", "status", "body", "headers", "times", "delayMs", "drop", "afterHandling",
        ]
        if let bad = o.keys.sorted().first(where: { !allowed.contains($0) }) { throw .unknownParameters([bad]) }
        var headers: [String: String] = [:]
        for (k, v) in o["headers"]?.objectValue ?? [:] {
            headers[k] = v.stringValue ?? v.intValue.map { String($0) } ?? ""
        }
        var drop = false
        if case .bool(let b)? = o["drop"] { drop = b }
        var after = false
        if case .bool(let b)? = o["afterHandling"] { after = b }
        self.init(
            method: o["method"]?.stringValue, path: path, status: o["status"]?.intValue.map { Int($0) },
            body: o["body"], headers: headers, times: Int(o["times"]?.intValue ?? 1),
            delayMs: Int(o["delayMs"]?.intValue ?? 0), drop: drop, afterHandling: after)
        if status == nil, !drop, delayMs == 0 { throw .invalid("a fault needs status, drop or delayMs") }
        if path.hasPrefix("^"), (try? Regex(path)) == nil {
            throw .invalid("invalid regular expression: \(path)", param: "path")
        }
    }

    func matches(method m: String, path p: String) -> Bool {
        if let method, method != m { return false }
        if path.hasPrefix("^") {
            guard let regex = try? Regex(path) else { return false }
            return (try? regex.prefixMatch(in: p)) != nil
        }
        return p.hasPrefix(path)
    }

    var json: JSONValue {
        var o: Obj = [
            "path": .string(path), "times": .int(Int64(times)), "delayMs": .int(Int64(delayMs)),
            "drop": .bool(drop), "afterHandling": .bool(afterHandling),
        ]
        if let method { o["method"] = .string(method) }
        if let status { o["status"] = .int(Int64(status)) }
        if let body { o["body"] = body }
        if !headers.isEmpty { o["headers"] = .object(headers.mapValues(JSONValue.string)) }
        return .object(o)
    }

    /// The response this fault gives (default bodies in Stripe's error shape).
    func response() -> TestHTTPResponse {
        let status = self.status ?? 500
        let body: JSONValue
        if let b = self.body {
            body = b
        } else if status == 429 {
            body =
                APIError(
                    status: 429, type: "invalid_request_error",
                    message:
                        "Too many requests hit the API too quickly. We recommend an exponential backoff of your requests.",
                    code: "rate_limit"
                ).body
        } else if status >= 500 {
            body = APIError(status: status, type: "api_error", message: "An unknown error occurred").body
        } else {
            body = APIError(status: status, type: "invalid_request_error", message: "Injected fault").body
        }
        return .json(status, body, headers: headers.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })
    }
}

enum IDs {
    static func make(_ prefix: String, length: Int = 24) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
        var s = prefix
        for _ in 0..<length { s.append(alphabet.randomElement()!) }
        return s
    }
}

extension JSONValue {
    /// Form values arrive as strings; this reads "true"/"false" too.
    var boolFromForm: Bool? {
        switch self {
        case .bool(let b): return b
        case .string(let s): return s == "true" ? true : (s == "false" ? false : nil)
        default: return nil
        }
    }
}
