import Foundation
import JSONRPC

/// `application/x-www-form-urlencoded` exactly as the iOS SDK's STPFormEncoder writes it (spec §7.2),
/// so request bodies are byte-for-byte reproducible in tests.
///
/// Rules, and the choices the SDK leaves open:
/// - Object keys are sorted ascending at every level with Swift's `String <` on the *unescaped* key
///   (the SDK sorts its dictionary keys before escaping). Keys sort as strings, so an object
///   `{"10": x, "2": y}` gives `a[10]` before `a[2]`; arrays keep index order (`a[2]` before `a[10]`).
/// - Nested objects → `parent[child]`, arrays → `parent[0]`, `parent[1]`…; the brackets the encoder
///   inserts are never escaped, the key segments and values always are.
/// - `true`/`false`; integers without `.0`; other doubles by Swift's shortest round-trip description.
/// - `null` is omitted (the SDK drops nil properties; its NSNull handling differs by version).
/// - Empty objects and arrays produce no pair at all, as in the SDK (to clear a field on Stripe,
///   send an empty string, which encodes as `key=`).
public enum FormEncoder {
    /// The body for a POST: `a=1&b[c]=2`.
    public static func encode(_ params: [String: JSONValue]) -> String {
        pairs(params).map { "\($0.key)=\($0.value)" }.joined(separator: "&")
    }

    public static func encodeData(_ params: [String: JSONValue]) -> Data {
        Data(encode(params).utf8)
    }

    /// `url` with `params` appended as a query (`?`, or `&` when it already has one); unchanged when
    /// nothing encodes.
    public static func appendingQuery(to url: String, _ params: [String: JSONValue]) -> String {
        let query = encode(params)
        guard !query.isEmpty else { return url }
        return url + (url.contains("?") ? "&" : "?") + query
    }

    /// The escaped (key, value) pairs in output order.
    public static func pairs(_ params: [String: JSONValue]) -> [(key: String, value: String)] {
        var out: [(key: String, value: String)] = []
        for key in params.keys.sorted() {
            append(params[key]!, key: escape(key), to: &out)
        }
        return out
    }

    private static func append(_ value: JSONValue, key: String, to out: inout [(key: String, value: String)]) {
        switch value {
        case .null:
            return
        case .object(let object):
            for child in object.keys.sorted() {
                append(object[child]!, key: "\(key)[\(escape(child))]", to: &out)
            }
        case .array(let array):
            for (index, element) in array.enumerated() {
                append(element, key: "\(key)[\(index)]", to: &out)
            }
        case .bool(let b): out.append((key, b ? "true" : "false"))
        case .int(let i): out.append((key, String(i)))
        case .double(let d): out.append((key, escape(numberText(d))))
        case .string(let s): out.append((key, escape(s)))
        }
    }

    /// Whole doubles print as integers, as NSNumber's description does (`1.0` → `1`).
    static func numberText(_ d: Double) -> String {
        if d.rounded() == d, abs(d) < 9.0e15 { return String(Int64(d)) }
        return "\(d)"
    }

    /// RFC 3986 query-allowed characters minus `:#[]@!$&'()*+,;=`, leaving unreserved characters,
    /// `/` and `?`. Everything else is %-escaped as UTF-8 with upper-case hex, as Foundation does.
    public static func escape(_ s: String) -> String {
        var out = ""
        out.reserveCapacity(s.utf8.count)
        for byte in s.utf8 {
            if isAllowed(byte) {
                out.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                out += "%" + hex(byte >> 4) + hex(byte & 0xF)
            }
        }
        return out
    }

    private static func isAllowed(_ b: UInt8) -> Bool {
        switch b {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        case UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"),
            UInt8(ascii: "/"), UInt8(ascii: "?"):
            return true
        default:
            return false
        }
    }

    private static func hex(_ nibble: UInt8) -> String {
        String(UnicodeScalar(nibble < 10 ? nibble + 48 : nibble + 55))
    }
}
