import Foundation
import JSONRPC

/// A Stripe object decoded the way the SDK's `decodedObject(fromAPIResponse:)` does (spec §6.2):
/// - nulls are stripped first (`"x": null` reads as absent);
/// - a missing or mistyped *required* field fails the whole object, with a `DecodingError` whose path
///   names it (so `ResponseParser` reports "missing required field id");
/// - an optional field of the wrong type reads as absent, an optional sub-object that fails its own
///   rules reads as nil, an unknown enum string reads as `.unknown`, extra fields are ignored;
/// - the whole object is kept as `allResponseFields`, to pass through to clients unchanged.
public protocol StripeModel: Decodable, Sendable {
    /// Decodes from an already null-stripped object. `codingPath` only names where it sits, for errors.
    init(json: JSONValue, codingPath: [any CodingKey]) throws
    /// The object as decoded, after null stripping (the SDK keeps its null-stripped dictionary).
    var allResponseFields: JSONValue { get }
}

extension StripeModel {
    /// Decodes `json` (nulls stripped here, so raw JSON is fine).
    public init(json: JSONValue) throws {
        try self.init(json: json.strippingNulls(), codingPath: [])
    }

    /// The body of every model's `init(from:)`: works from any decoder (JSONDecoder included).
    static func decode(from decoder: any Decoder) throws -> Self {
        try Self(json: JSONValue(from: decoder).strippingNulls(), codingPath: decoder.codingPath)
    }
}

extension JSONValue {
    /// A Stripe object without its `client_secret`: what stpd keeps and replies with, since replies,
    /// events and stored objects reach other processes and logs, and the secret only serves calls to
    /// Stripe (the methods that need it return it in a member of their own).
    public var withoutClientSecret: JSONValue {
        guard case .object(var members) = self else { return self }
        members["client_secret"] = nil
        return .object(members)
    }
}

/// A coding key for error paths.
struct ModelKey: CodingKey {
    var stringValue: String
    var intValue: Int?
    init(_ string: String) { stringValue = string }
    init?(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) {
        stringValue = String(intValue)
        self.intValue = intValue
    }
}

/// The fields of one JSON object, read with the SDK's `NSDictionary+Stripe` getter rules.
struct ModelFields {
    let json: JSONValue
    let object: [String: JSONValue]
    let codingPath: [any CodingKey]

    init(_ json: JSONValue, codingPath: [any CodingKey]) throws {
        guard case .object(let object) = json else {
            throw DecodingError.typeMismatch(
                [String: JSONValue].self,
                .init(codingPath: codingPath, debugDescription: "Expected an object, found \(json.typeName)"))
        }
        self.json = json
        self.object = object
        self.codingPath = codingPath
    }

    subscript(key: String) -> JSONValue? {
        guard let value = object[key], value != .null else { return nil }
        return value
    }

    func path(_ key: String) -> [any CodingKey] { codingPath + [ModelKey(key)] }

    // MARK: Required

    /// Present with any value (the SDK's `dict["livemode"] == nil` test).
    func requirePresent(_ key: String) throws -> JSONValue {
        guard let value = self[key] else {
            throw DecodingError.keyNotFound(
                ModelKey(key), .init(codingPath: codingPath, debugDescription: "Missing required field \(key)"))
        }
        return value
    }

    /// A string (the SDK's `stp_string`, which is nil for any other type).
    func requireString(_ key: String) throws -> String {
        let value = try requirePresent(key)
        guard case .string(let s) = value else {
            throw DecodingError.typeMismatch(
                String.self,
                .init(codingPath: path(key), debugDescription: "Expected a string, found \(value.typeName)"))
        }
        return s
    }

    /// A JSON number (the SDK's `stp_number`).
    func requireInt(_ key: String) throws -> Int {
        let value = try requirePresent(key)
        guard let n = int(key) else {
            throw DecodingError.typeMismatch(
                Int.self, .init(codingPath: path(key), debugDescription: "Expected a number, found \(value.typeName)"))
        }
        return n
    }

    func requireArray(_ key: String) throws -> [JSONValue] {
        let value = try requirePresent(key)
        guard case .array(let a) = value else {
            throw DecodingError.typeMismatch(
                [JSONValue].self,
                .init(codingPath: path(key), debugDescription: "Expected an array, found \(value.typeName)"))
        }
        return a
    }

    // MARK: Optional: nil when absent or of another type

    func string(_ key: String) -> String? { self[key]?.stringValue }

    /// A JSON number only (`stp_number`); doubles truncate, as NSNumber's intValue does.
    func int(_ key: String) -> Int? {
        switch self[key] {
        case .int(let i)?: return Int(exactly: i)
        case .double(let d)? where d.isFinite && abs(d) < 9.0e15: return Int(d)
        default: return nil
        }
    }

    /// A number or a numeric string, as seconds since 1970 (`stp_date`). Unlike NSString's
    /// `doubleValue`, text that is not a number reads as absent rather than as 1970.
    func date(_ key: String) -> Date? {
        switch self[key] {
        case .int(let i)?: return Date(timeIntervalSince1970: TimeInterval(i))
        case .double(let d)? where d.isFinite: return Date(timeIntervalSince1970: d)
        case .string(let s)?:
            return Double(s.trimmingCharacters(in: .whitespaces)).flatMap { $0.isFinite ? $0 : nil }
                .map { Date(timeIntervalSince1970: $0) }
        default: return nil
        }
    }

    /// `stp_bool`: a bool or number as such; a string is true when it is "true" (any case) or when
    /// NSString's `boolValue` says so (first non-blank character, after a sign and leading zeros, is
    /// Y, y, T, t or 1-9); anything else is `nil`.
    func bool(_ key: String) -> Bool? {
        switch self[key] {
        case .bool(let b)?: return b
        case .int(let i)?: return i != 0
        case .double(let d)?: return d != 0
        case .string(let s)?: return s.lowercased() == "true" || Self.nsStringBoolValue(s)
        default: return nil
        }
    }

    static func nsStringBoolValue(_ s: String) -> Bool {
        var rest = Substring(s).drop { $0 == " " || $0 == "\t" || $0 == "\n" }
        if rest.first == "+" || rest.first == "-" { rest = rest.dropFirst() }
        rest = rest.drop { $0 == "0" }
        guard let first = rest.first else { return false }
        return "YyTt123456789".contains(first)
    }

    /// `stp_url`: a non-empty string that parses as a URL.
    func url(_ key: String) -> URL? {
        guard let s = string(key), !s.isEmpty else { return nil }
        return URL.strict(s)
    }

    func object(_ key: String) -> JSONValue? {
        guard let value = self[key], case .object = value else { return nil }
        return value
    }

    func array(_ key: String) -> [JSONValue]? { self[key]?.arrayValue }

    /// An enum from a string field; nil when absent or not a string, `.unknown` when unmapped.
    func enumValue<E: TolerantStringEnum>(_ key: String, as type: E.Type = E.self) -> E? {
        string(key).map(E.init(apiValue:))
    }

    /// A sub-object decoded tolerantly: nil when absent, not an object, or failing its own rules.
    func model<M: StripeModel>(_ key: String, as type: M.Type = M.self) -> M? {
        guard let value = object(key) else { return nil }
        return try? M(json: value, codingPath: path(key))
    }

    /// An id given either as a string or as an expanded object's `id`.
    func idOrExpanded(_ key: String) -> String? {
        switch self[key] {
        case .string(let s)?: return s
        case .object(let o)?: return o["id"]?.stringValue
        default: return nil
        }
    }
}

/// A postal address with the contact fields the SDK's `STPAddress` carries alongside it (a customer's
/// shipping name and phone, an owner's email). All optional; unknown fields ignored.
public struct StripeAddress: StripeModel, Hashable {
    public var name: String?
    public var phone: String?
    public var email: String?
    public var line1: String?
    public var line2: String?
    public var city: String?
    public var state: String?
    public var postalCode: String?
    public var country: String?
    public var allResponseFields: JSONValue

    public init(json: JSONValue, codingPath: [any CodingKey]) throws {
        let f = try ModelFields(json, codingPath: codingPath)
        name = f.string("name")
        phone = f.string("phone")
        email = f.string("email")
        line1 = f.string("line1")
        line2 = f.string("line2")
        city = f.string("city")
        state = f.string("state")
        postalCode = f.string("postal_code")
        country = f.string("country")
        allResponseFields = json
    }

    public init(from decoder: any Decoder) throws { self = try .decode(from: decoder) }
}
