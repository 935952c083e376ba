/// Why a JSON text could not be read: it is not JSON (RFC 8259), not UTF-8, or nested too deep.
public struct JSONSyntaxError: Error, Sendable, Hashable, CustomStringConvertible {
    public var reason: String
    /// Byte offset in the text where reading stopped.
    public var offset: Int
    public var description: String { "\(reason) at byte \(offset)" }
}

/// One step of a path into a JSON value.
public enum JSONPathComponent: Sendable, Hashable {
    case member(String)
    case index(Int)
}

extension Array where Element == JSONPathComponent {
    /// The path as the -32602 errors name parameters: `filter.types[0]`.
    public var dotted: String {
        var text = ""
        for component in self {
            switch component {
            case .member(let name): text += text.isEmpty ? name : ".\(name)"
            case .index(let index): text += "[\(index)]"
            }
        }
        return text
    }
}

/// Something well-formed JSON says that a `JSONValue` cannot hold faithfully.
public struct JSONValueProblem: Sendable, Hashable, CustomStringConvertible {
    public enum Kind: Sendable, Hashable {
        /// An object names the same member twice (RFC 8259 leaves the meaning open; stpd refuses it).
        case duplicateMember
        /// A number beyond Double's range (`1e400`).
        case numberOutOfRange
    }

    public var kind: Kind
    /// Where, from the value being read.
    public var path: [JSONPathComponent]

    public var description: String {
        switch kind {
        case .duplicateMember: return "member given more than once"
        case .numberOutOfRange: return "number out of range (beyond ±1.8e308)"
        }
    }
}

/// A strict, allocation-light reader of JSON text (RFC 8259) straight from bytes.
///
/// Invariants: no trailing commas, leading zeros, comments, NaN, control characters in strings,
/// unpaired surrogates or invalid UTF-8; nesting at most `depthLimit` levels (so hostile input
/// cannot exhaust the stack). Duplicate members and out-of-range numbers are not syntax errors:
/// they are collected in `problems`, with their paths, for the caller to judge.
struct JSONScanner: ~Copyable {
    let bytes: UnsafeRawBufferPointer
    var offset = 0
    let depthLimit: Int
    /// The members and indices leading to the value being read (for `problems`), kept only
    /// when `tracksPaths`: problems are rare, so a first reading leaves paths empty and the
    /// value with a problem is read again to name it.
    var path: [JSONPathComponent] = []
    let tracksPaths: Bool
    var problems: [JSONValueProblem] = []

    init(_ bytes: UnsafeRawBufferPointer, depthLimit: Int, tracksPaths: Bool = false) {
        self.bytes = bytes
        self.depthLimit = depthLimit
        self.tracksPaths = tracksPaths
    }

    func failure(_ reason: String) -> JSONSyntaxError { JSONSyntaxError(reason: reason, offset: offset) }

    var atEnd: Bool { offset >= bytes.count }

    func peek() -> UInt8? { offset < bytes.count ? bytes[offset] : nil }

    mutating func skipWhitespace() {
        while offset < bytes.count {
            switch bytes[offset] {
            case 0x20, 0x09, 0x0A, 0x0D: offset += 1
            default: return
            }
        }
    }

    mutating func expect(_ byte: UInt8, _ what: String) throws(JSONSyntaxError) {
        skipWhitespace()
        guard offset < bytes.count, bytes[offset] == byte else { throw failure("expected \(what)") }
        offset += 1
    }

    /// Reads one value; `depth` is the nesting level of the container holding it.
    mutating func value(depth: Int) throws(JSONSyntaxError) -> JSONValue {
        skipWhitespace()
        guard offset < bytes.count else { throw failure("unexpected end of text") }
        switch bytes[offset] {
        case UInt8(ascii: "{"): return try object(depth: depth + 1)
        case UInt8(ascii: "["): return try array(depth: depth + 1)
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"):
            try literal("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try literal("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try literal("null")
            return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try number()
        default: throw failure("unexpected character")
        }
    }

    mutating func object(depth: Int) throws(JSONSyntaxError) -> JSONValue {
        guard depth <= depthLimit else { throw failure("nesting deeper than \(depthLimit) levels") }
        offset += 1
        skipWhitespace()
        if peek() == UInt8(ascii: "}") {
            offset += 1
            return .object([:])
        }
        var members: [String: JSONValue] = [:]
        while true {
            let name = try memberName()
            if tracksPaths { path.append(.member(name)) }
            let member = try value(depth: depth)
            if members.updateValue(member, forKey: name) != nil {
                var location = path
                if !tracksPaths { location.append(.member(name)) }
                problems.append(JSONValueProblem(kind: .duplicateMember, path: location))
            }
            if tracksPaths { path.removeLast() }
            if try endOfContainer(UInt8(ascii: "}")) { return .object(members) }
        }
    }

    mutating func array(depth: Int) throws(JSONSyntaxError) -> JSONValue {
        guard depth <= depthLimit else { throw failure("nesting deeper than \(depthLimit) levels") }
        offset += 1
        skipWhitespace()
        if peek() == UInt8(ascii: "]") {
            offset += 1
            return .array([])
        }
        var elements: [JSONValue] = []
        while true {
            if tracksPaths { path.append(.index(elements.count)) }
            elements.append(try value(depth: depth))
            if tracksPaths { path.removeLast() }
            if try endOfContainer(UInt8(ascii: "]")) { return .array(elements) }
        }
    }

    /// A member's name and the colon after it.
    mutating func memberName() throws(JSONSyntaxError) -> String {
        skipWhitespace()
        guard peek() == UInt8(ascii: "\"") else { throw failure("expected a member name") }
        let name = try string()
        try expect(UInt8(ascii: ":"), "':'")
        return name
    }

    /// After a member or element: true at the container's end, false after a comma.
    mutating func endOfContainer(_ closing: UInt8) throws(JSONSyntaxError) -> Bool {
        skipWhitespace()
        guard offset < bytes.count else { throw failure("unexpected end of text") }
        let byte = bytes[offset]
        offset += 1
        if byte == closing { return true }
        guard byte == UInt8(ascii: ",") else {
            throw failure("expected ',' or '\(Character(Unicode.Scalar(closing)))'")
        }
        return false
    }

    mutating func literal(_ word: StaticString) throws(JSONSyntaxError) {
        let count = word.utf8CodeUnitCount
        guard bytes.count - offset >= count else { throw failure("unexpected end of text") }
        for i in 0..<count where bytes[offset + i] != word.utf8Start[i] { throw failure("unexpected character") }
        offset += count
    }

    mutating func number() throws(JSONSyntaxError) -> JSONValue {
        let start = offset
        let negative = bytes[offset] == UInt8(ascii: "-")
        if negative { offset += 1 }
        guard let first = peek(), isDigit(first) else { throw failure("expected a digit") }
        var magnitude: UInt64 = 0
        var fitsUInt64 = true
        if first == UInt8(ascii: "0") {
            offset += 1
            if let next = peek(), isDigit(next) { throw failure("leading zero in a number") }
        } else {
            while let digit = peek(), isDigit(digit) {
                let (times10, overflow1) = magnitude.multipliedReportingOverflow(by: 10)
                let (sum, overflow2) = times10.addingReportingOverflow(UInt64(digit - UInt8(ascii: "0")))
                if overflow1 || overflow2 { fitsUInt64 = false }
                magnitude = sum
                offset += 1
            }
        }
        var isInteger = true
        if peek() == UInt8(ascii: ".") {
            isInteger = false
            offset += 1
            try digits()
        }
        if let e = peek(), e == UInt8(ascii: "e") || e == UInt8(ascii: "E") {
            isInteger = false
            offset += 1
            if let sign = peek(), sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") { offset += 1 }
            try digits()
        }
        if isInteger, fitsUInt64 {
            if !negative, magnitude <= UInt64(Int64.max) { return .int(Int64(magnitude)) }
            if negative, magnitude <= UInt64(Int64.max) + 1 { return .int(0 &- Int64(truncatingIfNeeded: magnitude)) }
        }
        let text = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<offset]), as: UTF8.self)
        guard let double = Double(text), double.isFinite else {
            problems.append(JSONValueProblem(kind: .numberOutOfRange, path: path))
            return .null
        }
        // `1e2` and `100.0` are whole: integers, as a whole-valued double is everywhere else.
        if let whole = Int64(exactly: double) { return .int(whole) }
        return .double(double)
    }

    private mutating func digits() throws(JSONSyntaxError) {
        guard let first = peek(), isDigit(first) else { throw failure("expected a digit") }
        while let digit = peek(), isDigit(digit) { offset += 1 }
    }

    private func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

    /// A string starting at its opening quote.
    mutating func string() throws(JSONSyntaxError) -> String {
        offset += 1
        let start = offset
        var ascii = true
        while offset < bytes.count {
            let byte = bytes[offset]
            if byte == UInt8(ascii: "\"") {
                let raw = UnsafeRawBufferPointer(rebasing: bytes[start..<offset])
                offset += 1
                if ascii { return String(decoding: raw, as: UTF8.self) }
                guard let text = String(validating: raw, as: UTF8.self) else { throw failure("invalid UTF-8") }
                return text
            }
            if byte == UInt8(ascii: "\\") { return try escapedString(from: start) }
            if byte < 0x20 { throw failure("control character in a string") }
            if byte >= 0x80 { ascii = false }
            offset += 1
        }
        throw failure("unterminated string")
    }

    /// The slow path: a string with escapes, decoded into a buffer from `start`.
    private mutating func escapedString(from start: Int) throws(JSONSyntaxError) -> String {
        var decoded = [UInt8](UnsafeRawBufferPointer(rebasing: bytes[start..<offset]))
        while offset < bytes.count {
            let byte = bytes[offset]
            offset += 1
            switch byte {
            case UInt8(ascii: "\""):
                guard let text = String(validating: decoded, as: UTF8.self) else { throw failure("invalid UTF-8") }
                return text
            case UInt8(ascii: "\\"):
                guard offset < bytes.count else { throw failure("unterminated string") }
                let escape = bytes[offset]
                offset += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): decoded.append(escape)
                case UInt8(ascii: "b"): decoded.append(0x08)
                case UInt8(ascii: "f"): decoded.append(0x0C)
                case UInt8(ascii: "n"): decoded.append(0x0A)
                case UInt8(ascii: "r"): decoded.append(0x0D)
                case UInt8(ascii: "t"): decoded.append(0x09)
                case UInt8(ascii: "u"): try appendUnicodeEscape(to: &decoded)
                default: throw failure("invalid escape")
                }
            case 0..<0x20: throw failure("control character in a string")
            default: decoded.append(byte)
            }
        }
        throw failure("unterminated string")
    }

    private mutating func appendUnicodeEscape(to decoded: inout [UInt8]) throws(JSONSyntaxError) {
        var scalar = try hex4()
        if (0xD800...0xDBFF).contains(scalar) {
            guard bytes.count - offset >= 6, bytes[offset] == UInt8(ascii: "\\"), bytes[offset + 1] == UInt8(ascii: "u")
            else { throw failure("unpaired surrogate") }
            offset += 2
            let low = try hex4()
            guard (0xDC00...0xDFFF).contains(low) else { throw failure("unpaired surrogate") }
            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
        } else if (0xDC00...0xDFFF).contains(scalar) {
            throw failure("unpaired surrogate")
        }
        guard let unicode = Unicode.Scalar(scalar) else { throw failure("invalid \\u escape") }
        decoded.append(contentsOf: UTF8.encode(unicode)!)
    }

    private mutating func hex4() throws(JSONSyntaxError) -> UInt32 {
        guard bytes.count - offset >= 4 else { throw failure("invalid \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[offset]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw failure("invalid \\u escape")
            }
            value = value << 4 | UInt32(digit)
            offset += 1
        }
        return value
    }
}

/// Reading and writing JSON text without Foundation.
public enum JSONText {
    /// The deepest nesting `parse` accepts.
    public static let maximumDepth = 128

    /// Reads one JSON text. Duplicate members and out-of-range numbers are refused like syntax
    /// errors (the message names where), since a value holding them would not say what was sent.
    public static func parse(_ bytes: UnsafeRawBufferPointer) throws(JSONSyntaxError) -> JSONValue {
        var scanner = JSONScanner(bytes, depthLimit: maximumDepth)
        let value = try scanner.value(depth: 0)
        scanner.skipWhitespace()
        guard scanner.atEnd else { throw scanner.failure("text continues after the value") }
        if !scanner.problems.isEmpty, let problem = firstProblem(in: bytes) {
            throw JSONSyntaxError(reason: "\(problem.path.dotted): \(problem)", offset: 0)
        }
        return value
    }

    /// The first problem in a well-formed value, with its path (a second, slower reading).
    static func firstProblem(in bytes: UnsafeRawBufferPointer) -> JSONValueProblem? {
        var scanner = JSONScanner(bytes, depthLimit: maximumDepth, tracksPaths: true)
        _ = try? scanner.value(depth: 0)
        return scanner.problems.first
    }

    public static func parse(_ bytes: [UInt8]) throws(JSONSyntaxError) -> JSONValue {
        let result = bytes.withUnsafeBytes { raw in Result { () throws(JSONSyntaxError) in try parse(raw) } }
        return try result.get()
    }

    /// Compact JSON, members sorted by name, slashes unescaped (the form of every frame).
    public static func bytes(_ value: JSONValue) -> [UInt8] {
        var out: [UInt8] = []
        JSONWriter.write(value, to: &out)
        return out
    }

    /// The length of `bytes(value)`, counted without writing it.
    public static func size(_ value: JSONValue) -> Int { JSONWriter.size(value) }
}
