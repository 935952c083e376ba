import Foundation
import JSONRPC

/// Turns the final HTTP response of a call into a value or a `StripeError` (spec §7.4).
///
/// The SDK tries the expected model first, *regardless of HTTP status*, and only then looks for an
/// `error` object. stpd keeps that rule for typed models, with two deliberate differences:
/// - an `error` object is looked for first. No Stripe object has a top-level `error` field, so for a
///   typed model this changes nothing, and it makes a 200 whose body is `{"error": …}` an error even
///   for a lenient model;
/// - for the untyped route (`JSONValue`), "decodes" would mean "is any JSON object", which would turn
///   every error page into a success; there a non-2xx status is never a success.
public enum ResponseParser {
    public static func parseJSON(_ response: HTTPResponseData) -> Result<JSONValue, StripeError> {
        parse(response) { value in
            guard (200..<300).contains(response.status) else { throw NotSuccess() }
            return value
        }
    }

    public static func parse<T: Decodable>(_ response: HTTPResponseData, as type: T.Type) -> Result<T, StripeError> {
        parse(response) { value in
            // A model is made from the JSON itself: through a `Decoder` its `init(from:)` would
            // first rebuild the same JSON from the decoder's nodes (6% of a poll's CPU).
            if let model = T.self as? any StripeModel.Type {
                return try model.init(json: value.strippingNulls(), codingPath: []) as! T
            }
            return try JSONCoding.typed(T.self, from: value.strippingNulls())
        }
    }

    /// `decode` throws when the body is not the expected object.
    public static func parse<T>(
        _ response: HTTPResponseData, decode: (JSONValue) throws -> T
    ) -> Result<T, StripeError> {
        let requestID = response.headers["Request-Id"]
        // Only an object counts (§7.4 step 2). Spelled out: JSONValue is ExpressibleByNilLiteral, so a
        // bare `nil` in a ternary would silently become `.null`.
        var object: JSONValue? = try? response.body.withUnsafeBytes { try JSONText.parse($0) }
        if object?.objectValue == nil { object = Optional.none }
        if let object, let error = StripeError(body: object, httpStatus: response.status, requestID: requestID) {
            return .failure(error)
        }
        var reason = "the response is not a JSON object"
        if let object {
            do {
                return .success(try decode(object))
            } catch is NotSuccess {
            } catch {
                reason = describe(error)
            }
        }
        return .failure(statusError(response.status, requestID: requestID, reason: reason))
    }

    /// A response with neither the expected object nor an `error` object.
    static func statusError(_ status: Int, requestID: String?, reason: String) -> StripeError {
        let kind: StripeError.Kind =
            switch status {
            case 200..<300: .decoding
            case 401: .authentication
            case 429: .rateLimit
            case 400..<500: .invalidRequest
            default: .api
            }
        let message =
            kind == .decoding
            ? "The response from Stripe failed to get parsed into valid JSON: \(reason)"
            : "Stripe answered HTTP \(status) without an error object"
        return StripeError(kind: kind, message: message, requestID: requestID, httpStatus: status)
    }

    /// Where decoding failed, without the offending value (it could be card data).
    /// `subject` names the whole value when the failure is at its root ("the body", "the result").
    public static func describe(_ error: any Error, subject: String = "the body") -> String {
        func path(_ context: DecodingError.Context) -> String {
            let joined = context.codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue }.joined(
                separator: ".")
            return joined.isEmpty ? subject : joined
        }
        switch error as? DecodingError {
        case .keyNotFound(let key, let context)?:
            let prefix = context.codingPath.isEmpty ? "" : path(context) + "."
            return "missing required field \(prefix)\(key.stringValue)"
        // The models' own descriptions name the expected and found types, never the value.
        case .typeMismatch(_, let context)?, .valueNotFound(_, let context)?, .dataCorrupted(let context)?:
            return "\(path(context)): \(context.debugDescription)"
        default: return "undecodable"
        }
    }

    private struct NotSuccess: Error {}
}

extension JSONValue {
    /// The SDK strips nulls recursively before decoding (spec §6.2), so `"x": null` reads as absent
    /// and an optional field never fails on null; in arrays they are dropped too.
    /// Only what holds a null is rebuilt: the rest is shared with `self` (a Source's reply has a
    /// few dozen members, most of them nested objects without a null, on every poll).
    public func strippingNulls() -> JSONValue {
        switch self {
        case .object(let o) where holdsNull:
            var out: [String: JSONValue] = .init(minimumCapacity: o.count)
            for (key, value) in o where value != .null { out[key] = value.strippingNulls() }
            return .object(out)
        case .array(let a) where holdsNull:
            return .array(a.filter { $0 != .null }.map { $0.strippingNulls() })
        default: return self
        }
    }

    /// Whether a null is anywhere inside (a walk that allocates nothing).
    private var holdsNull: Bool {
        switch self {
        case .null: true
        case .object(let o): o.values.contains { $0.holdsNull }
        case .array(let a): a.contains { $0.holdsNull }
        default: false
        }
    }
}

/// A Stripe string enum decoded as the SDK does (spec §6.1): case-insensitively, with values it does
/// not know mapped to `unknown` instead of failing the whole object. Conformers are
/// `String`-backed enums with an `unknown` case.
public protocol TolerantStringEnum: RawRepresentable, CaseIterable, Codable, Sendable where RawValue == String {
    static var unknown: Self { get }
}

extension TolerantStringEnum {
    public init(apiValue: String) {
        // Stripe sends the raw value as it is spelled (Foundation's case-insensitive compare of
        // every case was 1% of a created session's CPU); only another spelling is looked for.
        if let exact = Self(rawValue: apiValue) {
            self = exact
            return
        }
        self = Self.allCases.first { $0.rawValue.caseInsensitiveCompare(apiValue) == .orderedSame } ?? .unknown
    }

    public init(from decoder: any Decoder) throws {
        self.init(apiValue: try decoder.singleValueContainer().decode(String.self))
    }
}
