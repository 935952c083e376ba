/// A JSON Schema (draft-07 subset), kept as JSON so it can be embedded in the OpenRPC
/// document unchanged. The builders cover what the contract uses.
public struct JSONSchema: Sendable, Hashable {
    public var json: JSONValue

    public init(_ json: JSONValue) { self.json = json }

    public static let string = JSONSchema(["type": "string"])
    public static let integer = JSONSchema(["type": "integer"])
    public static let number = JSONSchema(["type": "number"])
    public static let boolean = JSONSchema(["type": "boolean"])
    public static let any = JSONSchema([:])

    public static func string(_ description: String, format: String? = nil, pattern: String? = nil) -> JSONSchema {
        var o: [String: JSONValue] = ["type": "string", "description": .string(description)]
        if let format { o["format"] = .string(format) }
        if let pattern { o["pattern"] = .string(pattern) }
        return JSONSchema(.object(o))
    }

    public static func integer(_ description: String, minimum: Int64? = nil, maximum: Int64? = nil) -> JSONSchema {
        var o: [String: JSONValue] = ["type": "integer", "description": .string(description)]
        if let minimum { o["minimum"] = .int(minimum) }
        if let maximum { o["maximum"] = .int(maximum) }
        return JSONSchema(.object(o))
    }

    public static func number(_ description: String, minimum: Double? = nil) -> JSONSchema {
        var o: [String: JSONValue] = ["type": "number", "description": .string(description)]
        if let minimum { o["minimum"] = .double(minimum) }
        return JSONSchema(.object(o))
    }

    public static func boolean(_ description: String) -> JSONSchema {
        JSONSchema(["type": "boolean", "description": .string(description)])
    }

    public static func enumeration(_ values: [String], _ description: String) -> JSONSchema {
        JSONSchema([
            "type": "string", "enum": .array(values.map(JSONValue.string)), "description": .string(description),
        ])
    }

    public static func array(
        of items: JSONSchema, _ description: String? = nil, minItems: Int? = nil, maxItems: Int? = nil
    ) -> JSONSchema {
        var o: [String: JSONValue] = ["type": "array", "items": items.json]
        if let description { o["description"] = .string(description) }
        if let minItems { o["minItems"] = .int(Int64(minItems)) }
        if let maxItems { o["maxItems"] = .int(Int64(maxItems)) }
        return JSONSchema(.object(o))
    }

    /// An object; unknown members are refused unless `additionalProperties` is true, so a typo
    /// in a parameter name is reported instead of silently ignored.
    public static func object(
        _ properties: [String: JSONSchema], required: [String] = [], additionalProperties: Bool = false,
        description: String? = nil
    ) -> JSONSchema {
        var o: [String: JSONValue] = [
            "type": "object",
            "properties": .object(properties.mapValues(\.json)),
            "additionalProperties": .bool(additionalProperties),
        ]
        if !required.isEmpty { o["required"] = .array(required.sorted().map(JSONValue.string)) }
        if let description { o["description"] = .string(description) }
        return JSONSchema(.object(o))
    }

    /// A reference into the contract's `components/schemas`.
    public static func ref(_ name: String) -> JSONSchema {
        JSONSchema(["$ref": .string("#/components/schemas/\(name)")])
    }

    public static func nullable(_ schema: JSONSchema) -> JSONSchema {
        JSONSchema(["oneOf": [schema.json, ["type": "null"]]])
    }

    public static let empty = object([:])

    /// This object schema with `members` that exclude each other: exactly one of them is given
    /// (with `orNone`, at most one). They become the alternatives of a `oneOf`, each titled with
    /// its member so the validator's error names them; the params decode into an enum with a case
    /// per member, so a handler never sees two or none.
    public func exactlyOne(of members: [String], orNone: Bool = false) -> JSONSchema {
        let given: [JSONValue] = members.map { ["title": .string($0), "required": [.string($0)]] }
        var alternatives = given
        if orNone {
            alternatives.append(["title": "none of them", "not": ["anyOf": .array(given)]])
        }
        guard case .object(var schema) = json else { preconditionFailure("exactlyOne(of:) is for object schemas") }
        schema["oneOf"] = .array(alternatives)
        return JSONSchema(.object(schema))
    }
}

extension KeyedDecodingContainer {
    /// Which of `keys` is present, for params whose schema is `JSONSchema.exactlyOne(of:)` (nil:
    /// none, with `orNone`). The router's validation refuses any other case first; this refuses it
    /// again for a value decoded without it.
    public func exactlyOne(of keys: [Key], orNone: Bool = false) throws -> Key? {
        let given = keys.filter { contains($0) }
        if given.count == 1 { return given[0] }
        if given.isEmpty, orNone { return nil }
        let names = keys.map(\.stringValue).joined(separator: ", ")
        throw DecodingError.dataCorrupted(
            .init(codingPath: codingPath, debugDescription: "give \(orNone ? "at most" : "exactly") one of: \(names)"))
    }
}
