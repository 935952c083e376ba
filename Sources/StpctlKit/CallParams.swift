import Foundation
import JSONRPC

/// Turns the arguments of `stpctl call METHOD ARGS...` into by-name params: either one JSON
/// object text, or `key=value` pairs whose dotted keys (`a.b=1`) build nested objects.
public enum CallParams {
    public struct ParseError: Error, Equatable, CustomStringConvertible {
        public var description: String
        init(_ description: String) { self.description = description }
    }

    /// Nil when there are no arguments, so the request carries no `params` member.
    public static func parse(_ arguments: [String]) throws -> JSONValue? {
        guard let first = arguments.first else { return nil }
        if first.hasPrefix("{") {
            guard arguments.count == 1 else {
                throw ParseError("a JSON object must be the only argument after the method; got \(arguments.count)")
            }
            return try json(first, what: "params")
        }
        var root: [String: JSONValue] = [:]
        for argument in arguments {
            guard let equals = argument.firstIndex(of: "=") else {
                throw ParseError("expected key=value or one JSON object, got '\(argument)'")
            }
            let key = String(argument[..<equals])
            let path = key.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
            guard !path.contains(where: \.isEmpty) else {
                throw ParseError("'\(key)' is not a valid key (dotted keys need a name between the dots)")
            }
            let value = try value(String(argument[argument.index(after: equals)...]), key: key)
            try insert(value, path: path, depth: 0, into: &root)
        }
        return .object(root)
    }

    /// `{`, `[` or `"` start raw JSON; `true`, `false`, `null` and JSON numbers are scalars;
    /// anything else is taken as a string, so ids and names need no quoting.
    public static func value(_ text: String, key: String) throws -> JSONValue {
        switch text {
        case "true": return .bool(true)
        case "false": return .bool(false)
        case "null": return .null
        default: break
        }
        if let first = text.first, "{[\"".contains(first) { return try json(text, what: "the value of '\(key)'") }
        guard text.wholeMatch(of: jsonNumber) != nil else { return .string(text) }
        let isInteger = !text.contains(where: { ".eE".contains($0) })
        if isInteger, let int = Int64(text) { return .int(int) }
        guard let double = Double(text), double.isFinite else {
            throw ParseError("the value of '\(key)' is out of range: \(text)")
        }
        return .double(double)
    }

    // JSON's number grammar; `\d` would also accept non-ASCII digits.
    static var jsonNumber: Regex<Substring> { /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/ }

    static func json(_ text: String, what: String) throws -> JSONValue {
        do {
            return try JSONCoding.decode(JSONValue.self, from: Data(text.utf8))
        } catch {
            throw ParseError("\(what) is not valid JSON: \(text)")
        }
    }

    static func insert(_ value: JSONValue, path: [String], depth: Int, into object: inout [String: JSONValue]) throws {
        let name = path[depth]
        let key = path.joined(separator: ".")
        if depth == path.count - 1 {
            guard object[name] == nil else { throw ParseError("'\(key)' is given more than once") }
            object[name] = value
            return
        }
        var child: [String: JSONValue]
        switch object[name] {
        case nil: child = [:]
        case .object(let existing): child = existing
        default:
            let prefix = path[...depth].joined(separator: ".")
            throw ParseError("'\(key)' needs '\(prefix)' to be an object, but it was given a value")
        }
        try insert(value, path: path, depth: depth + 1, into: &child)
        object[name] = .object(child)
    }
}
