import Foundation
import JSONRPC

/// An ephemeral key as the merchant backend returns it: Stripe's raw JSON, unmodified (spec §5.2).
///
/// Valid only with `id`, `created`, `secret`, `expires`, `livemode` and an `associated_objects`
/// entry of type `customer` or `issuing.card`; anything else is undecodable, reported as a
/// `StripeError` of kind `.ephemeralKeyDecoding` (the SDK's code 1000). As in the SDK, nulls count
/// as absent and the two times are unix seconds given as a number or a numeric string.
///
/// One deliberate difference: `secret` must be an `ek_` key. The SDK takes any string, but the
/// daemon sends it as a bearer token, and a backend mistakenly returning its `sk_` key must not
/// have that key used (and so spread) by the daemon.
///
/// The secret is a `StripeKey`, so the key prints redacted; like `StripeKey`, it is deliberately
/// not Encodable and cannot slip into a JSON result or event.
public struct EphemeralKey: Sendable, Hashable, Decodable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    public let id: String
    public let created: Date
    public let expires: Date
    public let livemode: Bool
    /// The `ek_…` secret: the bearer key for the customer's API calls.
    public let secret: StripeKey
    /// From the `associated_objects` entry of type `customer`.
    public let customerID: String?
    /// From the `associated_objects` entry of type `issuing.card`.
    public let issuingCardID: String?

    public init(
        id: String, created: Date, expires: Date, livemode: Bool, secret: StripeKey, customerID: String?,
        issuingCardID: String? = nil
    ) {
        self.id = id
        self.created = created
        self.expires = expires
        self.livemode = livemode
        self.secret = secret
        self.customerID = customerID
        self.issuingCardID = issuingCardID
    }

    /// Decodes the provider's raw JSON. Throws `StripeError` of kind `.ephemeralKeyDecoding`, whose
    /// message names what is wrong but never quotes a value (it could be the secret).
    public init(json: JSONValue) throws(StripeError) {
        let json = json.strippingNulls()
        guard let object = json.objectValue else { throw Self.failure("the response is not a JSON object") }
        func string(_ key: String) throws(StripeError) -> String {
            guard let value = object[key] else { throw Self.failure("missing required field \(key)") }
            guard let text = value.stringValue, !text.isEmpty else {
                throw Self.failure("\(key) is not a non-empty string")
            }
            return text
        }
        func date(_ key: String) throws(StripeError) -> Date {
            guard let value = object[key] else { throw Self.failure("missing required field \(key)") }
            guard let seconds = Self.unixSeconds(value) else { throw Self.failure("\(key) is not a unix time") }
            return Date(timeIntervalSince1970: seconds)
        }
        id = try string("id")
        created = try date("created")
        expires = try date("expires")
        guard let secret = StripeKey(try string("secret")), secret.kind == .ephemeral else {
            throw Self.failure("secret is not an ephemeral key (ek_…)")
        }
        self.secret = secret
        guard let live = object["livemode"] else { throw Self.failure("missing required field livemode") }
        // The SDK only requires presence, and reads an unreadable value as live (`stp_bool(…, or: true)`).
        livemode = Self.bool(live) ?? true
        guard let associated = object["associated_objects"] else {
            throw Self.failure("missing required field associated_objects")
        }
        guard let entries = associated.arrayValue else { throw Self.failure("associated_objects is not an array") }
        var customerID: String?
        var issuingCardID: String?
        for entry in entries {
            guard let id = entry["id"]?.stringValue, !id.isEmpty else { continue }
            switch entry["type"]?.stringValue {
            case "customer": customerID = customerID ?? id
            case "issuing.card": issuingCardID = issuingCardID ?? id
            default: break
            }
        }
        guard customerID != nil || issuingCardID != nil else {
            throw Self.failure("associated_objects has no customer or issuing.card entry")
        }
        self.customerID = customerID
        self.issuingCardID = issuingCardID
    }

    /// Through `JSONValue`, so both routes share one rule; the failure becomes a `DecodingError`
    /// whose description carries the reason. Use `init(json:)` to get the `StripeError` itself.
    public init(from decoder: any Decoder) throws {
        let value = try JSONValue(from: decoder)
        do {
            try self.init(json: value)
        } catch {
            throw DecodingError.dataCorrupted(
                .init(codingPath: decoder.codingPath, debugDescription: error.message, underlyingError: error))
        }
    }

    /// `expires - now`: how long the key stays usable at `now`.
    public func remainingLifetime(at now: Date) -> TimeInterval { expires.timeIntervalSince(now) }

    public var description: String {
        "EphemeralKey(\(id), secret: \(secret), customer: \(customerID ?? "none"), expires: \(expires))"
    }
    public var debugDescription: String { description }
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "id": id, "created": created, "expires": expires, "livemode": livemode, "secret": secret.description,
                "customerID": customerID as Any, "issuingCardID": issuingCardID as Any,
            ], displayStyle: .struct)
    }

    public static func failure(_ reason: String) -> StripeError {
        StripeError(kind: .ephemeralKeyDecoding, message: "The ephemeral key could not be decoded: \(reason)")
    }

    /// A number, or a string holding one (the SDK's `stp_date`).
    static func unixSeconds(_ value: JSONValue) -> TimeInterval? {
        let seconds: Double? =
            switch value {
            case .int(let i): Double(i)
            case .double(let d): d
            case .string(let s): Double(s.trimmingCharacters(in: .whitespaces))
            default: nil
            }
        guard let seconds, seconds.isFinite else { return nil }
        return seconds
    }

    /// A boolean, a number (non-zero is true) or the strings `true`/`false`/`1`/`0`, roughly the
    /// SDK's `stp_bool`; nil for anything else.
    static func bool(_ value: JSONValue) -> Bool? {
        switch value {
        case .bool(let b): b
        case .int(let i): i != 0
        case .double(let d): d != 0
        case .string(let s) where ["true", "1"].contains(s.lowercased()): true
        case .string(let s) where ["false", "0"].contains(s.lowercased()): false
        default: nil
        }
    }
}
