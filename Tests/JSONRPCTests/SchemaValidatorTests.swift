import JSONRPC
import Testing

// The validator is what turns a bad parameter into "-32602, data.parameter = filter.types[1]",
// and what holds every reply to its declared schema in the end-to-end tests, so each keyword
// the contract uses is checked for both acceptance and the path it reports.

/// The failure for `value`, or nil when it validates.
private func check(
    _ value: JSONValue, _ schema: JSONSchema, definitions: [String: JSONValue] = [:]
) -> SchemaValidator.Failure? {
    do {
        try SchemaValidator(definitions: definitions).validate(value, against: schema)
        return nil
    } catch {
        return error
    }
}

@Suite struct SchemaValidatorTypeTests {
    @Test(arguments: [
        (JSONSchema.string, JSONValue.string("x")),
        (.integer, .int(3)),
        (.integer, .double(3.0)),  // a whole number written with a fraction is still an integer
        (.number, .int(3)),
        (.number, .double(3.5)),
        (.boolean, .bool(false)),
        (JSONSchema(["type": "null"]), .null),
        (JSONSchema(["type": "array"]), .array([1, "a"])),
        (JSONSchema(["type": "object"]), .object(["a": 1])),
        (.any, .null),
        (JSONSchema(["type": ["string", "null"]]), .null),
    ])
    func accepts(schema: JSONSchema, value: JSONValue) {
        #expect(check(value, schema) == nil)
    }

    @Test(arguments: [
        (JSONSchema.string, JSONValue.int(1)),
        (.integer, .double(3.5)),
        (.integer, .string("3")),
        (.number, .string("3")),
        (.boolean, .int(1)),
        (.boolean, .string("true")),
        (JSONSchema(["type": "null"]), .int(0)),
        (JSONSchema(["type": "array"]), .object(["a": 1])),
        (JSONSchema(["type": "object"]), .array([1])),
        (JSONSchema(["type": ["string", "null"]]), .int(1)),
    ])
    func refuses(schema: JSONSchema, value: JSONValue) throws {
        let failure = try #require(check(value, schema))
        #expect(failure.path == "")
        #expect(failure.reason.contains("expected"))
    }

    @Test func reasonNamesBothTypes() throws {
        let failure = try #require(check(.int(1), .string))
        #expect(failure.reason == "expected string, got integer")
        #expect(failure.description == "expected string, got integer")
    }
}

@Suite struct SchemaValidatorObjectTests {
    static let filter = JSONSchema.object(
        [
            "limit": .integer("How many", minimum: 1, maximum: 100),
            "filter": .object(
                [
                    "types": .array(of: .enumeration(["customer.updated", "source.chargeable"], "Event type")),
                    "since": .integer("Sequence number", minimum: 0),
                ],
                required: ["types"]),
        ],
        required: ["filter"])

    @Test func acceptsAValidValue() {
        #expect(check(["limit": 5, "filter": ["types": ["customer.updated"], "since": 0]], Self.filter) == nil)
    }

    @Test func missingRequiredMemberIsNamed() throws {
        let top = try #require(check(["limit": 5], Self.filter))
        #expect(top.path == "filter")
        #expect(top.reason == "is required")
        let nested = try #require(check(["filter": ["since": 3]], Self.filter))
        #expect(nested.path == "filter.types")
        #expect(nested.description == "filter.types: is required")
    }

    @Test func unknownMemberIsNamed() throws {
        let top = try #require(check(["filter": ["types": []], "limt": 5], Self.filter))
        #expect(top.path == "limt")
        #expect(top.reason == "unknown member")
        let nested = try #require(check(["filter": ["types": [], "sinse": 1]], Self.filter))
        #expect(nested.path == "filter.sinse")
    }

    @Test func additionalPropertiesTrueOrAbsentAllowsUnknownMembers() {
        let open = JSONSchema.object(["a": .string], additionalProperties: true)
        #expect(check(["a": "x", "b": 1], open) == nil)
        #expect(check(["anything": 1], JSONSchema(["type": "object"])) == nil)
    }

    @Test func additionalPropertiesSchemaChecksUnknownMembers() throws {
        let map = JSONSchema(["type": "object", "additionalProperties": ["type": "integer"]])
        #expect(check(["a": 1, "b": 2], map) == nil)
        let bad = try #require(check(["a": 1, "b": "two"], map))
        #expect(bad.path == "b")
    }

    @Test func arrayItemPathHasItsIndex() throws {
        let bad = try #require(check(["filter": ["types": ["customer.updated", "nope"]]], Self.filter))
        #expect(bad.path == "filter.types[1]")
        #expect(bad.reason == "must be one of: customer.updated, source.chargeable")
        let wrongType = try #require(check(["filter": ["types": ["customer.updated", 7]]], Self.filter))
        #expect(wrongType.path == "filter.types[1]")
    }

    @Test func nestedArraysOfObjects() throws {
        let schema = JSONSchema.array(of: .object(["id": .string], required: ["id"]))
        let bad = try #require(check([["id": "a"], ["id": "b"], [:]], schema))
        #expect(bad.path == "[2].id")
    }

    @Test func minimumAndMaximum() throws {
        #expect(check(["filter": ["types": []], "limit": 1], Self.filter) == nil)
        #expect(check(["filter": ["types": []], "limit": 100], Self.filter) == nil)
        let low = try #require(check(["filter": ["types": []], "limit": 0], Self.filter))
        #expect(low.path == "limit")
        #expect(low.reason == "must be at least 1")
        let high = try #require(check(["filter": ["types": []], "limit": 101], Self.filter))
        #expect(high.reason == "must be at most 100")
        let fractional = JSONSchema.number("Amount", minimum: 0.5)
        #expect(check(0.5, fractional) == nil)
        #expect(check(0.25, fractional)?.reason == "must be at least 0.5")
    }

    @Test func enumConstMinLengthAndPattern() throws {
        let kind = JSONSchema.enumeration(["a", "b"], "Kind")
        #expect(check("a", kind) == nil)
        #expect(check("c", kind)?.reason == "must be one of: a, b")
        #expect(check(true, JSONSchema(["const": true])) == nil)
        #expect(check(false, JSONSchema(["const": true])) != nil)
        #expect(check("", JSONSchema(["type": "string", "minLength": 1]))?.reason == "must be at least 1 characters")
        let id = JSONSchema.string("Source id", pattern: "^src_[A-Za-z0-9]+$")
        #expect(check("src_123", id) == nil)
        #expect(check("cus_123", id)?.reason == "must match ^src_[A-Za-z0-9]+$")
    }

    /// `$` also matches before a last line terminator; a pattern must match to the true end.
    @Test(arguments: ["\n", "\r\n", "\r", "\u{2028}", "\u{2029}", "\u{85}"])
    func aPatternMatchesUpToTheTrueEnd(_ terminator: String) {
        let id = JSONSchema.string("Source id", pattern: "^src_[A-Za-z0-9]+$")
        #expect(check(.string("src_123" + terminator), id)?.reason == "must match ^src_[A-Za-z0-9]+$")
        #expect(check(.string(terminator + "src_123"), id) != nil)
        let unanchored = JSONSchema.string("Digits", pattern: "[0-9]+")
        #expect(check("123", unanchored) == nil)
        #expect(check(.string("123" + terminator), unanchored) != nil, "a pattern is a whole-string match")
    }

    @Test func itemCountsAreBounded() {
        let pair = JSONSchema.array(of: .integer, "Two amounts", minItems: 2, maxItems: 2)
        #expect(check([1, 2], pair) == nil)
        let three = check([1, 2, 3], pair)
        #expect(three?.reason == "has 3 items; at most 2 are accepted")
        #expect(three?.data == ["maxItems": 2])
        #expect(check([1], pair)?.reason == "has 1 items; at least 2 are needed")
        // Blamed on the array itself, not on a member beside it.
        let params = JSONSchema.object(["amounts": pair, "descriptorCode": .string], required: [])
        #expect(check(["amounts": [1, 2, 3]], params)?.path == "amounts")
    }
}

@Suite struct SchemaValidatorCompositionTests {
    static let definitions: [String: JSONValue] = [
        "Money": JSONSchema.object(
            ["amount": .integer("Minor units", minimum: 0), "currency": .string], required: ["amount", "currency"]
        ).json,
        "Order": JSONSchema.object(["total": .ref("Money"), "lines": .array(of: .ref("Money"))], required: ["total"])
            .json,
    ]

    @Test func refResolves() throws {
        #expect(check(["amount": 100, "currency": "eur"], .ref("Money"), definitions: Self.definitions) == nil)
        let bad = try #require(check(["amount": -1, "currency": "eur"], .ref("Money"), definitions: Self.definitions))
        #expect(bad.path == "amount")
    }

    @Test func refsInsideRefsKeepTheFullPath() throws {
        let order: JSONValue = [
            "total": ["amount": 1, "currency": "eur"], "lines": [["amount": 1, "currency": "eur"], ["amount": 1]],
        ]
        let bad = try #require(check(order, .ref("Order"), definitions: Self.definitions))
        #expect(bad.path == "lines[1].currency")
        #expect(bad.reason == "is required")
    }

    @Test func unresolvedRefIsAFailure() throws {
        let bad = try #require(check(["amount": 1], .ref("Nope"), definitions: Self.definitions))
        #expect(bad.reason.contains("#/components/schemas/Nope"))
    }

    @Test func nullable() throws {
        let schema = JSONSchema.nullable(.ref("Money"))
        #expect(check(.null, schema, definitions: Self.definitions) == nil)
        #expect(check(["amount": 1, "currency": "usd"], schema, definitions: Self.definitions) == nil)
        #expect(check("free", schema, definitions: Self.definitions) != nil)
        // When no alternative matches, the failure comes from the first one (the real schema),
        // so the path still names the member at fault.
        let bad = try #require(check(["amount": 1], schema, definitions: Self.definitions))
        #expect(bad.path == "currency")
    }

    @Test func oneOfRefusesAValueMatchingTwoAlternatives() throws {
        let ambiguous = JSONSchema(["oneOf": [["type": "number"], ["type": "integer"]]])
        #expect(check(1.5, ambiguous) == nil)
        #expect(
            check(1, ambiguous)?.reason
                == "matches more than one of its alternatives (alternative 1, alternative 2); give one")
        let anyOf = JSONSchema(["anyOf": [["type": "number"], ["type": "integer"]]])
        #expect(check(1, anyOf) == nil)
        #expect(check("1", anyOf) != nil)
    }

    /// `exactlyOne(of:)`: members that exclude each other, refused with their names whether two
    /// are given or none; a bad member is still blamed on itself.
    @Test func exactlyOneOfMembers() throws {
        let schema = JSONSchema.object(
            ["id": .string, "code": .string("Code", pattern: "^SM[0-9]{4}$"), "note": .string]
        ).exactlyOne(of: ["id", "code"])
        #expect(check(["id": "a"], schema) == nil)
        #expect(check(["code": "SM1234", "note": "n"], schema) == nil)
        let both = try #require(check(["id": "a", "code": "SM1234"], schema))
        #expect(both.path == "")
        #expect(both.reason == "matches more than one of its alternatives (id, code); give one")
        let none = try #require(check(["note": "n"], schema))
        #expect(none.reason == "matches none of its alternatives (id: is required; code: is required)")
        let bad = try #require(check(["code": "SM12"], schema))
        #expect(bad.path == "code")
    }

    @Test func atMostOneOfMembers() throws {
        let schema = JSONSchema.object(["amount": .integer, "items": .array(of: .integer), "currency": .string])
            .exactlyOne(of: ["amount", "items"], orNone: true)
        #expect(check(["currency": "usd"], schema) == nil)
        #expect(check(["amount": 1], schema) == nil)
        #expect(check(["items": []], schema) == nil)
        #expect(
            check(["amount": 1, "items": [1]], schema)?.reason
                == "matches more than one of its alternatives (amount, items); give one")
    }

    @Test func notRefusesWhatMatches() throws {
        let schema = JSONSchema(["not": ["title": "a null", "type": "null"]])
        #expect(check(1, schema) == nil)
        #expect(check(.null, schema)?.reason == "must not match a null")
    }
}
