import Foundation

/// One frame received by a server, classified by the JSON-RPC 2.0 rules before any method runs.
public enum Inbound: Sendable {
    case single(Entry)
    /// A non-empty batch; the replies to its calls go back together as one array.
    case batch([Entry])

    public enum Entry: Sendable {
        /// A well-formed request (or notification, when its id is nil).
        case call(Request)
        /// A member that is not a valid request: it is answered with this error (id null
        /// unless a valid id could be read).
        case invalid(Response)
    }

    /// Nesting deeper than this is refused before decoding, so hostile input cannot exhaust the stack.
    public static let maximumDepth = 128

    public static func parse(_ bytes: Data) -> Inbound {
        if String(validating: bytes, as: UTF8.self) == nil {
            return .single(.invalid(Response(id: .null, error: .parseError("frame is not valid UTF-8"))))
        }
        if let problem = lexicalProblem(bytes, depthLimit: maximumDepth) {
            return .single(.invalid(Response(id: .null, error: .parseError(problem))))
        }
        let value: JSONValue
        do {
            value = try JSONCoding.decode(JSONValue.self, from: bytes)
        } catch {
            return .single(.invalid(Response(id: .null, error: .parseError("not a JSON text"))))
        }
        if case .array(let members) = value {
            if members.isEmpty {
                return .single(.invalid(Response(id: .null, error: .invalidRequest("empty batch"))))
            }
            return .batch(members.map(entry(from:)))
        }
        return .single(entry(from: value))
    }

    static func entry(from value: JSONValue) -> Entry {
        guard case .object(let fields) = value else {
            return .invalid(Response(id: .null, error: .invalidRequest("a request must be a JSON object")))
        }
        var id: RequestID? = nil
        if let rawID = fields["id"] {
            switch rawID {
            case .string, .int, .double, .null: id = rawID
            default:
                return .invalid(Response(id: .null, error: .invalidRequest("id must be a string, number or null")))
            }
        }
        func reject(_ detail: String) -> Entry {
            .invalid(Response(id: id ?? .null, error: .invalidRequest(detail)))
        }
        guard fields["jsonrpc"] == .string("2.0") else { return reject("jsonrpc must be \"2.0\"") }
        guard case .string(let method)? = fields["method"] else { return reject("method must be a string") }
        if let params = fields["params"] {
            switch params {
            case .object, .array: break
            default: return reject("params must be an object or an array")
            }
        }
        return .call(Request(id: id, method: method, params: fields["params"]))
    }

    /// Checks what Foundation's decoder lets through: nesting deep enough to exhaust the stack,
    /// and trailing commas (`[1,]`, `{"a":1,}`), which are not JSON. Cheap enough for every frame.
    static func lexicalProblem(_ bytes: Data, depthLimit: Int) -> String? {
        var depth = 0
        var inString = false
        var escaped = false
        var afterComma = false
        for byte in bytes {
            if inString {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                }
                continue
            }
            switch byte {
            case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\r"), UInt8(ascii: "\n"):
                continue
            case UInt8(ascii: "\""): inString = true
            case UInt8(ascii: "["), UInt8(ascii: "{"):
                depth += 1
                if depth > depthLimit { return "nesting deeper than \(depthLimit) levels" }
            case UInt8(ascii: "]"), UInt8(ascii: "}"):
                if afterComma { return "trailing comma" }
                depth -= 1
            default: break
            }
            afterComma = byte == UInt8(ascii: ",")
        }
        return nil
    }
}
