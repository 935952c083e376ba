import Foundation
import Synchronization

/// Checks a value against a `JSONSchema` (the draft-07 keywords the contract uses: type,
/// properties, required, additionalProperties, items, minItems, maxItems, enum, const, minimum,
/// maximum, minLength, pattern, oneOf, anyOf, not and local `$ref`s). The daemon uses it to report bad
/// params by name; tests use it to hold every reply to its declared schema.
///
/// A `pattern` must match the whole string, whatever its anchors say: NSRegularExpression's `$`
/// also matches before a last line terminator (`pm_card_visa\n` passed `^pm_[a-z_]+$`), so a match
/// that stops short of the true end of the string is no match.
///
/// With `maxStringBytes`, every string in the value (and every member name), wherever it is and
/// whatever its schema says, is at most that many bytes of UTF-8: params cannot make the daemon
/// hold or store a long text, even inside free-form JSON.
public struct SchemaValidator: Sendable {
    public struct Failure: Error, Sendable, Hashable, CustomStringConvertible {
        /// Where the value broke the schema, e.g. `filter.types[1]`; empty for the value itself.
        public var path: String
        public var reason: String
        /// Details for the error's `data` beside the parameter (the limit broken).
        public var data: [String: JSONValue] = [:]
        public var description: String { path.isEmpty ? reason : "\(path): \(reason)" }
    }

    /// Named schemas that `{"$ref": "#/components/schemas/Name"}` resolves to.
    public var definitions: [String: JSONValue]
    public var maxStringBytes: Int?

    public init(definitions: [String: JSONValue] = [:], maxStringBytes: Int? = nil) {
        self.definitions = definitions
        self.maxStringBytes = maxStringBytes
    }

    public func validate(_ value: JSONValue, against schema: JSONSchema) throws(Failure) {
        try check(value, schema.json, path: "")
    }

    private func check(_ value: JSONValue, _ schema: JSONValue, path: String) throws(Failure) {
        guard case .object(let s) = schema else { return }
        if case .string(let ref)? = s["$ref"] {
            let name = String(ref.split(separator: "/").last ?? "")
            guard let target = definitions[name] else { throw Failure(path: path, reason: "unresolved schema \(ref)") }
            return try check(value, target, path: path)
        }
        if let types = s["type"] {
            let allowed = types.arrayValue?.compactMap(\.stringValue) ?? [types.stringValue].compactMap { $0 }
            if !allowed.contains(where: { Self.matches(value, type: $0) }) {
                if allowed.contains("integer"), case .double(let d) = value, d.rounded() == d {
                    throw Failure(path: path, reason: "must be an integer in \(Int64.min)...\(Int64.max)")
                }
                throw Failure(
                    path: path, reason: "expected \(allowed.joined(separator: " or ")), got \(value.typeName)")
            }
        }
        if let options = s["enum"]?.arrayValue, !options.contains(value) {
            let listed = options.compactMap(\.stringValue).joined(separator: ", ")
            throw Failure(path: path, reason: "must be one of: \(listed)")
        }
        if let constant = s["const"], constant != value {
            throw Failure(path: path, reason: "must be \(constant)")
        }
        switch value {
        case .object(let members): try checkObject(members, s, path: path)
        case .array(let items):
            // Counted before any item is looked at: a long array is refused for its length.
            if let min = s["minItems"]?.intValue, items.count < min {
                throw Failure(
                    path: path, reason: "has \(items.count) items; at least \(min) are needed",
                    data: ["minItems": .int(Int64(min))])
            }
            if let max = s["maxItems"]?.intValue, items.count > max {
                throw Failure(
                    path: path, reason: "has \(items.count) items; at most \(max) are accepted",
                    data: ["maxItems": .int(Int64(max))])
            }
            for (i, item) in items.enumerated() {
                if let itemSchema = s["items"] {
                    try check(item, itemSchema, path: "\(path)[\(i)]")
                } else {
                    try checkSizes(item, path: "\(path)[\(i)]")
                }
            }
        case .string(let text):
            try checkSize(text, path: path)
            if let min = s["minLength"]?.intValue, text.count < min {
                throw Failure(path: path, reason: "must be at least \(min) characters")
            }
            if let pattern = s["pattern"]?.stringValue, !Self.wholly(text, matches: pattern) {
                throw Failure(path: path, reason: "must match \(pattern)")
            }
        case .int, .double:
            let number: Double =
                if case .int(let i) = value { Double(i) } else if case .double(let d) = value { d } else { 0 }
            if let min = s["minimum"].flatMap(Self.double), number < min {
                throw Failure(path: path, reason: "must be at least \(Self.show(min))")
            }
            if let max = s["maximum"].flatMap(Self.double), number > max {
                throw Failure(path: path, reason: "must be at most \(Self.show(max))")
            }
        default: break
        }
        // After the value's own keywords, so a bad member is blamed on itself (`descriptorCode`)
        // rather than on the alternatives around it.
        try checkComposition(value, s, path: path)
    }

    /// `oneOf`, `anyOf` and `not`. An alternative's `title` names it in the error (the members of
    /// `JSONSchema.exactlyOne(of:)`); untitled ones are numbered from 1.
    private func checkComposition(_ value: JSONValue, _ s: [String: JSONValue], path: String) throws(Failure) {
        if let negated = s["not"] {
            if (try? check(value, negated, path: path)) != nil {
                throw Failure(path: path, reason: "must not match \(Self.name(of: negated, index: 0))")
            }
        }
        guard let alternatives = s["oneOf"]?.arrayValue ?? s["anyOf"]?.arrayValue else { return }
        var failures: [(name: String, failure: Failure)] = []
        var matched: [String] = []
        for (index, alternative) in alternatives.enumerated() {
            do throws(Failure) {
                try check(value, alternative, path: path)
                matched.append(Self.name(of: alternative, index: index))
            } catch {
                failures.append((Self.name(of: alternative, index: index), error))
            }
        }
        if matched.isEmpty, let first = failures.first {
            // Untitled alternatives (a nullable's value beside its null) are one type in several
            // forms: the first one's error is the useful one. Titled ones each say why they failed.
            guard alternatives.contains(where: { $0["title"] != nil }) else { throw first.failure }
            let reasons = failures.map { name, failure in
                failure.path == name ? failure.description : "\(name): \(failure.description)"
            }
            throw Failure(path: path, reason: "matches none of its alternatives (\(reasons.joined(separator: "; ")))")
        }
        if matched.count > 1, s["oneOf"] != nil {
            throw Failure(
                path: path,
                reason: "matches more than one of its alternatives (\(matched.joined(separator: ", "))); give one")
        }
    }

    /// An alternative's `title`, or its place (from 1).
    private static func name(of alternative: JSONValue, index: Int) -> String {
        alternative["title"]?.stringValue ?? "alternative \(index + 1)"
    }

    private func checkObject(_ members: [String: JSONValue], _ s: [String: JSONValue], path: String) throws(Failure) {
        let properties = s["properties"]?.objectValue ?? [:]
        for name in (s["required"]?.arrayValue ?? []).compactMap(\.stringValue) where members[name] == nil {
            throw Failure(path: Self.join(path, name), reason: "is required")
        }
        for (name, member) in members.sorted(by: { $0.key < $1.key }) {
            try checkName(name, path: path)
            if let propertySchema = properties[name] {
                try check(member, propertySchema, path: Self.join(path, name))
            } else if let extra = s["additionalProperties"] {
                if extra == .bool(false) { throw Failure(path: Self.join(path, name), reason: "unknown member") }
                try check(member, extra, path: Self.join(path, name))
            } else {
                try checkSizes(member, path: Self.join(path, name))
            }
        }
    }

    /// The size bound alone, for values the schema leaves free.
    private func checkSizes(_ value: JSONValue, path: String) throws(Failure) {
        guard maxStringBytes != nil else { return }
        switch value {
        case .string(let text): try checkSize(text, path: path)
        case .array(let items): for (i, item) in items.enumerated() { try checkSizes(item, path: "\(path)[\(i)]") }
        case .object(let members):
            for (name, member) in members.sorted(by: { $0.key < $1.key }) {
                try checkName(name, path: path)
                try checkSizes(member, path: Self.join(path, name))
            }
        default: break
        }
    }

    private func checkSize(_ text: String, path: String) throws(Failure) {
        guard let maxStringBytes, text.utf8.count > maxStringBytes else { return }
        throw Failure(
            path: path, reason: "is \(text.utf8.count) bytes long; at most \(maxStringBytes) bytes are accepted",
            data: ["maxBytes": .int(Int64(maxStringBytes))])
    }

    /// A member name over the bound is named by its object, since the name itself is too long to quote.
    private func checkName(_ name: String, path: String) throws(Failure) {
        guard let maxStringBytes, name.utf8.count > maxStringBytes else { return }
        throw Failure(
            path: path,
            reason: "has a member name \(name.utf8.count) bytes long; at most \(maxStringBytes) bytes are accepted",
            data: ["maxBytes": .int(Int64(maxStringBytes))])
    }

    /// Whether `pattern` matches all of `text`, up to its true end (see the type's comment).
    /// Each pattern is compiled once (`String.range(of:options: .regularExpression)` looked its
    /// regex up in Foundation's cache under a key it formatted on every call: 2.6% of a created
    /// session's CPU). The patterns are the contract's, so the cache is as bounded as the schemas.
    public static func wholly(_ text: String, matches pattern: String) -> Bool {
        guard let (loose, anchored) = compiled(pattern) else { return false }
        let whole = NSRange(location: 0, length: text.utf16.count)
        let found = loose.value.rangeOfFirstMatch(in: text, options: [], range: whole)
        guard found.location != NSNotFound else { return false }
        if NSMaxRange(found) == whole.length { return true }
        // The first match stopped short (a `$` before a last newline, or an unanchored pattern):
        // one anchored at both ends decides.
        return anchored.value.rangeOfFirstMatch(in: text, options: [], range: whole).location != NSNotFound
    }

    /// NSRegularExpression is immutable once made, and safe to match with from any thread.
    private struct Compiled: @unchecked Sendable {
        let value: NSRegularExpression
    }

    private static let cache = Mutex<[String: (Compiled, Compiled)]>([:])

    /// The pattern, and the pattern anchored at both ends; nil when it does not compile (then
    /// nothing matches, as `range(of:options:)` found nothing).
    private static func compiled(_ pattern: String) -> (Compiled, Compiled)? {
        if let found = cache.withLock({ $0[pattern] }) { return found }
        guard let loose = try? NSRegularExpression(pattern: pattern),
            let anchored = try? NSRegularExpression(pattern: "^(?:\(pattern))\\z")
        else { return nil }
        let made = (Compiled(value: loose), Compiled(value: anchored))
        cache.withLock { $0[pattern] = made }
        return made
    }

    static func join(_ path: String, _ name: String) -> String { path.isEmpty ? name : "\(path).\(name)" }

    static func matches(_ value: JSONValue, type: String) -> Bool {
        switch (type, value) {
        case ("null", .null), ("boolean", .bool), ("string", .string), ("array", .array), ("object", .object):
            return true
        case ("integer", .int), ("number", .int), ("number", .double): return true
        // Whole doubles count as integers only where Int64 holds them: beyond it they lost digits.
        case ("integer", .double(let d)): return Int64(exactly: d) != nil
        default: return false
        }
    }

    static func double(_ v: JSONValue) -> Double? {
        switch v {
        case .int(let i): return Double(i)
        case .double(let d): return d
        default: return nil
        }
    }

    static func show(_ d: Double) -> String { d.rounded() == d ? String(Int64(d)) : String(d) }
}
