import Foundation
import JSONRPC
import StripeAPI
import Testing

/// `EphemeralKey` decoding (spec §5.2).
@Suite("EphemeralKey model")
struct EphemeralKeyModelTests {
    func decodingError(_ json: JSONValue) -> StripeError? {
        do {
            _ = try EphemeralKey(json: json)
            return nil
        } catch {
            return error
        }
    }

    func removing(_ field: String, from json: JSONValue) -> JSONValue {
        var object = json.objectValue ?? [:]
        object[field] = nil
        return .object(object)
    }

    func replacing(_ field: String, with value: JSONValue, in json: JSONValue) -> JSONValue {
        var object = json.objectValue ?? [:]
        object[field] = value
        return .object(object)
    }

    @Test func decodesStripesJSON() throws {
        let key = try EphemeralKey(json: ephemeralKeyJSON(7, expiresIn: 1800))
        #expect(key.id == "ephkey_7")
        #expect(key.created == t0)
        #expect(key.expires == t0.addingTimeInterval(1800))
        #expect(key.livemode == false)
        #expect(key.secret.kind == .ephemeral)
        #expect(key.secret.secret == "ek_test_secret7abcdefghijklmnopqrstuvwxyz")
        #expect(key.customerID == "cus_123")
        #expect(key.issuingCardID == nil)
        #expect(key.remainingLifetime(at: t0) == 1800)
    }

    @Test func decodableRouteMatches() throws {
        let data = try JSONCoding.encode(ephemeralKeyJSON())
        let key = try JSONDecoder().decode(EphemeralKey.self, from: data)
        #expect(key == (try EphemeralKey(json: ephemeralKeyJSON())))
        let bad = try JSONCoding.encode(removing("secret", from: ephemeralKeyJSON()))
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(EphemeralKey.self, from: bad) }
    }

    @Test func timesMayBeNumericStringsOrFractional() throws {
        var json = replacing("created", with: .string("\(Int(t0.timeIntervalSince1970))"), in: ephemeralKeyJSON())
        json = replacing("expires", with: .double(t0.timeIntervalSince1970 + 60.5), in: json)
        let key = try EphemeralKey(json: json)
        #expect(key.created == t0)
        #expect(key.expires == t0.addingTimeInterval(60.5))
        #expect(
            decodingError(replacing("created", with: "yesterday", in: ephemeralKeyJSON()))?.kind
                == .ephemeralKeyDecoding)
        #expect(decodingError(replacing("expires", with: true, in: ephemeralKeyJSON()))?.kind == .ephemeralKeyDecoding)
    }

    @Test(arguments: ["id", "created", "secret", "expires", "livemode", "associated_objects"])
    func missingRequiredFieldIsADecodingFailure(field: String) throws {
        let error = try #require(decodingError(removing(field, from: ephemeralKeyJSON())))
        #expect(error.kind == .ephemeralKeyDecoding)
        #expect(error.message.contains(field))
        // Null reads as absent, as in the SDK.
        #expect(decodingError(replacing(field, with: .null, in: ephemeralKeyJSON()))?.kind == .ephemeralKeyDecoding)
    }

    @Test func associatedObjectsNeedACustomerOrIssuingCard() throws {
        #expect(decodingError(ephemeralKeyJSON(customer: nil))?.kind == .ephemeralKeyDecoding)
        let other: JSONValue = [["type": "account", "id": "acct_1"], ["type": "customer"]]
        #expect(decodingError(ephemeralKeyJSON(associated: other))?.kind == .ephemeralKeyDecoding)
        let card = try EphemeralKey(json: ephemeralKeyJSON(associated: [["type": "issuing.card", "id": "ic_1"]]))
        #expect(card.issuingCardID == "ic_1")
        #expect(card.customerID == nil)
    }

    @Test func secretMustBeAnEphemeralKey() {
        for secret: JSONValue in ["sk_test_abcdefghijklmnopqrstuvwxyz", "not a key", "", 42] {
            let error = decodingError(replacing("secret", with: secret, in: ephemeralKeyJSON()))
            #expect(error?.kind == .ephemeralKeyDecoding)
            #expect(error?.message.contains("sk_test") == false, "never quotes the value")
        }
    }

    @Test func livemodeNeedsOnlyToBePresent() throws {
        #expect(try EphemeralKey(json: replacing("livemode", with: true, in: ephemeralKeyJSON())).livemode)
        #expect(try !EphemeralKey(json: replacing("livemode", with: "false", in: ephemeralKeyJSON())).livemode)
        // Unreadable reads as live, as the SDK's `stp_bool(…, or: true)` does.
        #expect(try EphemeralKey(json: replacing("livemode", with: ["x": 1], in: ephemeralKeyJSON())).livemode)
    }

    @Test func notAnObject() {
        #expect(decodingError(["a", "b"])?.kind == .ephemeralKeyDecoding)
        #expect(decodingError(.null)?.kind == .ephemeralKeyDecoding)
    }

    @Test func printsRedacted() throws {
        let key = try EphemeralKey(json: ephemeralKeyJSON())
        let full = key.secret.secret
        var dumped = ""
        dump(key, to: &dumped)
        for text in [String(describing: key), String(reflecting: key), "\(key)", dumped] {
            #expect(!text.contains(full))
            #expect(!text.contains("secret1abcdefghijkl"))
        }
        #expect("\(key)".contains("ek_test_…"))
    }
}
