import Foundation
import JSONRPC

/// Decodes `application/x-www-form-urlencoded` bodies and queries in the syntax the client's
/// `StripeAPI.FormEncoder` (and the iOS SDK's STPFormEncoder) writes: `a[b][0]=x`, percent-escaped
/// key segments and values, `+` read as a space (the encoder escapes a literal `+` as `%2B`).
public enum FormDecoding {
    /// One decoded pair: the key's segments (`a[b][0]` → `["a", "b", "0"]`; `a[]` → `["a", ""]`),
    /// the key as sent (unescaped), and the value.
    public struct Pair: Sendable, Equatable {
        public var segments: [String]
        public var key: String
        public var value: String
    }

    public static func pairs(_ text: String) -> [Pair] {
        var out: [Pair] = []
        for part in text.split(separator: "&", omittingEmptySubsequences: true) {
            let kv = part.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let rawKey = unescape(String(kv[0]))
            let value = kv.count > 1 ? unescape(String(kv[1])) : ""
            guard !rawKey.isEmpty else { continue }
            out.append(Pair(segments: segments(of: rawKey), key: rawKey, value: value))
        }
        return out
    }

    /// `a[b][c]` → `["a", "b", "c"]`. Text after a malformed bracket is kept as one segment.
    public static func segments(of key: String) -> [String] {
        guard let open = key.firstIndex(of: "[") else { return [key] }
        var result = [String(key[..<open])]
        var rest = key[open...]
        while rest.first == "[", let close = rest.firstIndex(of: "]") {
            result.append(String(rest[rest.index(after: rest.startIndex)..<close]))
            rest = rest[rest.index(after: close)...]
        }
        if !rest.isEmpty { result[result.count - 1] += String(rest) }
        return result
    }

    /// Percent-decoding, with `+` as a space; invalid escapes are kept as they are.
    public static func unescape(_ s: String) -> String {
        let bytes = Array(s.utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var i = 0
        while i < bytes.count {
            let b = bytes[i]
            if b == UInt8(ascii: "+") {
                out.append(UInt8(ascii: " "))
            } else if b == UInt8(ascii: "%"), i + 2 < bytes.count, let h = hexValue(bytes[i + 1]),
                let l = hexValue(bytes[i + 2])
            {
                out.append(h << 4 | l)
                i += 2
            } else {
                out.append(b)
            }
            i += 1
        }
        return String(decoding: out, as: UTF8.self)
    }

    private static func hexValue(_ b: UInt8) -> UInt8? {
        switch b {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return b - 48
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return b - 87
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return b - 55
        default: return nil
        }
    }

    /// The pairs as a tree: nested objects; an object whose keys are all indices (`0`, `1`, or the
    /// empty `[]` segment, which appends) becomes an array in index order. Values stay strings.
    public static func tree(_ pairs: [Pair]) -> [String: JSONValue] {
        let root = Node()
        for pair in pairs {
            var node = root
            for (i, segment) in pair.segments.enumerated() {
                let isLast = i == pair.segments.count - 1
                let name = segment.isEmpty ? String(node.children.count) : segment
                if isLast {
                    if node.children[name] == nil { node.order.append(name) }
                    let leaf = Node()
                    leaf.value = pair.value
                    node.children[name] = leaf
                } else {
                    if let existing = node.children[name], existing.value == nil {
                        node = existing
                    } else {
                        if node.children[name] == nil { node.order.append(name) }
                        let child = Node()
                        node.children[name] = child
                        node = child
                    }
                }
            }
        }
        return root.objectValue
    }

    public static func decode(_ text: String) -> [String: JSONValue] { tree(pairs(text)) }

    private final class Node {
        var value: String?
        var children: [String: Node] = [:]
        var order: [String] = []

        var objectValue: [String: JSONValue] {
            var out: [String: JSONValue] = [:]
            for (k, v) in children { out[k] = v.json }
            return out
        }

        var json: JSONValue {
            if let value { return .string(value) }
            let indices = order.compactMap { Int($0) }
            if !order.isEmpty, indices.count == order.count {
                return .array(indices.sorted().map { children[String($0)]!.json })
            }
            return .object(objectValue)
        }
    }
}

/// Which parameters an endpoint accepts, as key patterns in bracket syntax:
/// `shipping[address][line1]`; `*` matches any one segment, `#` an array index (or `[]`),
/// `**` any rest (including nothing more).
struct ParamSpec: Sendable {
    let patterns: [[String]]

    init(_ patterns: [String]) {
        self.patterns = patterns.map(FormDecoding.segments(of:))
    }

    func merged(_ other: [String]) -> ParamSpec { ParamSpec(raw: patterns + other.map(FormDecoding.segments(of:))) }

    private init(raw: [[String]]) { self.patterns = raw }

    /// The keys of `pairs` that no pattern allows, as sent, in order, without duplicates.
    func unknown(in pairs: [FormDecoding.Pair]) -> [String] {
        var out: [String] = []
        for pair in pairs where !allows(pair) {
            let display = Self.display(pair.segments)
            if !out.contains(display) { out.append(display) }
        }
        return out
    }

    private func allows(_ pair: FormDecoding.Pair) -> Bool {
        for pattern in patterns {
            if Self.matches(pattern[...], pair.segments[...]) { return true }
            // `shipping=` clears a whole hash: a strict prefix of an allowed key with an empty value.
            if pair.value.isEmpty, pair.segments.count < pattern.count,
                Self.matches(pattern.prefix(pair.segments.count), pair.segments[...])
            {
                return true
            }
        }
        return false
    }

    private static func matches(_ pattern: ArraySlice<String>, _ key: ArraySlice<String>) -> Bool {
        guard let p = pattern.first else { return key.isEmpty }
        if p == "**" { return true }
        guard let k = key.first else { return false }
        switch p {
        case "*": break
        case "#": if !(k.isEmpty || Int(k) != nil) { return false }
        default: if p != k { return false }
        }
        return matches(pattern.dropFirst(), key.dropFirst())
    }

    static func display(_ segments: [String]) -> String {
        guard let first = segments.first else { return "" }
        return first + segments.dropFirst().map { "[\($0)]" }.joined()
    }
}
