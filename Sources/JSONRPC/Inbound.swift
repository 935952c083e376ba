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

    /// Nesting deeper than this is refused while reading, so hostile input cannot exhaust the stack.
    public static let maximumDepth = JSONText.maximumDepth

    public static func parse(_ bytes: Data, maximumBatch: Int = .max) -> Inbound {
        bytes.withUnsafeBytes { parse($0, maximumBatch: maximumBatch) }
    }

    /// Reads one frame (without its newline). Syntax errors anywhere make the whole frame -32700;
    /// a batch of more than `maximumBatch` requests is one -32600.
    public static func parse(_ bytes: UnsafeRawBufferPointer, maximumBatch: Int = .max) -> Inbound {
        var scanner = JSONScanner(bytes, depthLimit: maximumDepth)
        do throws(JSONSyntaxError) {
            scanner.skipWhitespace()
            guard scanner.peek() == UInt8(ascii: "[") else {
                let envelope = try Envelope.scan(&scanner, depth: 0)
                try scanner.expectEnd()
                return .single(entry(envelope))
            }
            // A batch past the limit is refused before any of it is built.
            let length = batchLength(bytes, from: scanner.offset)
            if length > maximumBatch {
                let error = RPCError.invalidRequest(
                    "a batch of \(length) requests is over the limit of \(maximumBatch)",
                    data: ["maxBatchRequests": .int(Int64(maximumBatch))])
                return .single(.invalid(Response(id: .null, error: error)))
            }
            scanner.offset += 1
            scanner.skipWhitespace()
            var envelopes: [Envelope] = []
            if scanner.peek() == UInt8(ascii: "]") {
                scanner.offset += 1
            } else {
                repeat {
                    envelopes.append(try Envelope.scan(&scanner, depth: 1))
                } while try !scanner.endOfContainer(UInt8(ascii: "]"))
            }
            try scanner.expectEnd()
            if envelopes.isEmpty {
                return .single(.invalid(Response(id: .null, error: .invalidRequest("empty batch"))))
            }
            return .batch(envelopes.map(entry(_:)))
        } catch {
            return .single(.invalid(Response(id: .null, error: .parseError(error.description))))
        }
    }

    /// How many members the array at `start` has, by a quick look at its commas (strings
    /// skipped, nothing validated); a malformed array is found out later by the real reading.
    static func batchLength(_ bytes: UnsafeRawBufferPointer, from start: Int) -> Int {
        var depth = 0
        var commas = 0
        var inString = false
        var escaped = false
        var empty = true
        var index = start
        while index < bytes.count {
            let byte = bytes[index]
            index += 1
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
            case UInt8(ascii: "\""): inString = true
            case UInt8(ascii: "["), UInt8(ascii: "{"): depth += 1
            case UInt8(ascii: "]"), UInt8(ascii: "}"):
                depth -= 1
                if depth == 0 { return empty ? 0 : commas + 1 }
            case UInt8(ascii: ","): if depth == 1 { commas += 1 }
            case 0x20, 0x09, 0x0A, 0x0D: continue
            default: break
            }
            if depth > 1 || (depth == 1 && byte != UInt8(ascii: "[")) { empty = false }
        }
        return empty ? 0 : commas + 1
    }

    static func entry(_ envelope: Envelope) -> Entry {
        guard envelope.isObject else {
            return .invalid(Response(id: .null, error: .invalidRequest("a request must be a JSON object")))
        }
        var id: RequestID? = nil
        if let rawID = envelope.id {
            switch rawID {
            case .string, .int, .double, .null: id = envelope.rawID
            default:
                return .invalid(Response(id: .null, error: .invalidRequest("id must be a string, number or null")))
            }
        }
        if let duplicate = envelope.duplicate {
            // Two ids: neither can be trusted as the one to echo.
            let echoed = duplicate == "id" ? .null : id ?? .null
            return .invalid(Response(id: echoed, error: .invalidRequest("member \"\(duplicate)\" is given twice")))
        }
        func reject(_ detail: String) -> Entry {
            .invalid(Response(id: id ?? .null, error: .invalidRequest(detail)))
        }
        guard envelope.jsonrpc == .string("2.0") else { return reject("jsonrpc must be \"2.0\"") }
        guard case .string(let method)? = envelope.method else { return reject("method must be a string") }
        if let params = envelope.params {
            switch params {
            case .object, .array: break
            default: return reject("params must be an object or an array")
            }
        }
        let paramsError = envelope.paramsProblem.map { problem in
            RPCError.invalidParams(problem.description, parameter: problem.path.dotted)
        }
        return .call(Request(id: id, method: method, params: envelope.params, paramsError: paramsError))
    }
}

/// What stands where a request (or reply) object should be: its members of JSON-RPC, the exact
/// text of its `id`, and what its members say that the values cannot hold. Other members are
/// read (and checked for duplicates) but not kept.
struct Envelope {
    /// The value itself when it is not an object.
    var other: JSONValue?
    var id: JSONValue?
    /// The text of the `id` member as sent.
    var rawID: RequestID?
    var jsonrpc: JSONValue?
    var method: JSONValue?
    var params: JSONValue?
    var result: JSONValue?
    var error: JSONValue?
    /// The first member given twice.
    var duplicate: String?
    /// The first problem inside `params`, its path relative to `params`.
    var paramsProblem: JSONValueProblem?

    var isObject: Bool { other == nil }

    /// Reads one whole JSON text as an envelope (a client reading the daemon's frames).
    static func read(_ bytes: UnsafeRawBufferPointer) throws(JSONSyntaxError) -> Envelope {
        var scanner = JSONScanner(bytes, depthLimit: JSONText.maximumDepth)
        let envelope = try scan(&scanner, depth: 0)
        try scanner.expectEnd()
        return envelope
    }

    /// Reads the value at the scanner's position; `depth` is the level of its container.
    static func scan(_ scanner: inout JSONScanner, depth: Int) throws(JSONSyntaxError) -> Envelope {
        var envelope = Envelope()
        scanner.skipWhitespace()
        guard scanner.peek() == UInt8(ascii: "{") else {
            envelope.other = try scanner.value(depth: depth)
            return envelope
        }
        let level = depth + 1
        guard level <= scanner.depthLimit else { throw scanner.failure("nesting too deep") }
        scanner.offset += 1
        scanner.skipWhitespace()
        if scanner.peek() == UInt8(ascii: "}") {
            scanner.offset += 1
            return envelope
        }
        var others: [String] = []
        repeat {
            let name = try scanner.envelopeMemberName()
            scanner.skipWhitespace()
            let start = scanner.offset
            let problemsBefore = scanner.problems.count
            let member = try scanner.value(depth: level)
            if name == "params", scanner.problems.count > problemsBefore, envelope.paramsProblem == nil {
                let text = UnsafeRawBufferPointer(rebasing: scanner.bytes[start..<scanner.offset])
                envelope.paramsProblem = JSONText.firstProblem(in: text)
            }
            // Outside params nothing else is read closely enough for a problem to matter.
            scanner.problems.removeSubrange(problemsBefore...)
            let previous: JSONValue?
            switch name {
            case "id":
                previous = envelope.id
                envelope.id = member
                let text = UnsafeRawBufferPointer(rebasing: scanner.bytes[start..<scanner.offset])
                envelope.rawID = RequestID(validatedJSON: String(decoding: text, as: UTF8.self))
            case "jsonrpc": (previous, envelope.jsonrpc) = (envelope.jsonrpc, member)
            case "method": (previous, envelope.method) = (envelope.method, member)
            case "params": (previous, envelope.params) = (envelope.params, member)
            case "result": (previous, envelope.result) = (envelope.result, member)
            case "error": (previous, envelope.error) = (envelope.error, member)
            default:
                previous = others.contains(name) ? .null : nil
                others.append(name)
            }
            if previous != nil, envelope.duplicate == nil { envelope.duplicate = name }
        } while try !scanner.endOfContainer(UInt8(ascii: "}"))
        return envelope
    }
}

extension JSONScanner {
    private static let envelopeNames: [(bytes: [UInt8], name: String)] = [
        "jsonrpc", "id", "method", "params", "result", "error",
    ].map { (Array($0.utf8), $0) }

    /// A member name and its colon, where the names of JSON-RPC's members are recognised from
    /// their bytes (no string is built for them).
    mutating func envelopeMemberName() throws(JSONSyntaxError) -> String {
        skipWhitespace()
        guard peek() == UInt8(ascii: "\"") else { throw failure("expected a member name") }
        let start = offset + 1
        var end = start
        while end < bytes.count, bytes[end] != UInt8(ascii: "\""), bytes[end] != UInt8(ascii: "\\") { end += 1 }
        if end < bytes.count, bytes[end] == UInt8(ascii: "\"") {
            let raw = UnsafeRawBufferPointer(rebasing: bytes[start..<end])
            for known in Self.envelopeNames where known.bytes.count == raw.count && known.bytes.elementsEqual(raw) {
                offset = end + 1
                try expect(UInt8(ascii: ":"), "':'")
                return known.name
            }
        }
        return try memberName()
    }

    mutating func expectEnd() throws(JSONSyntaxError) {
        skipWhitespace()
        guard atEnd else { throw failure("text continues after the value") }
    }
}
