import JSONRPC
import StpdProtocol
import Testing

/// A method's `paramsSchema` and its `Params` type are declared side by side: a property the
/// schema lists but `Params` never reads is accepted and then ignored, and a member `Params`
/// reads that the schema does not list can never arrive (the schema refuses unknown members).
/// This keeps the two the same set of names for every method.
@Suite struct ParamsKeysTests {
    @Test(arguments: StpdAPI.methods.map(MethodCase.init))
    func schemaPropertiesAreTheCodingKeys(_ method: MethodCase) throws {
        let schema = method.type.paramsSchema.json
        let properties = Set(schema["properties"]?.objectValue?.keys.map { $0 } ?? [])
        let keys = try codingKeys(method.type, sample: Self.sample(schema))
        #expect(properties.subtracting(keys).isEmpty, "\(method): schema properties Params never reads")
        #expect(keys.subtracting(properties).isEmpty, "\(method): Params keys the schema does not list")
    }

    /// The probe sees every key a `Params` reads, the optional ones included.
    @Test func theProbeSeesEveryKey() throws {
        let schema = Drifted.paramsSchema.json
        #expect(try codingKeys(Drifted.self, sample: Self.sample(schema)) == ["name", "count"])
    }

    private enum Drifted: RPCMethod {
        struct Params: Codable, Sendable {
            var name: String
            var count: Int?
        }
        typealias Result = Bool
        static let name = "test.drifted"
        static let summary = "A declaration whose schema and Params differ."
        static let paramsSchema = JSONSchema.object(["name": .string, "size": .integer], required: ["name"])
        static let resultSchema = JSONSchema.boolean
    }

    /// The keys `M.Params`'s decoder asks for, decoding `sample` (required members only; every
    /// optional member is asked for too, and found absent).
    private func codingKeys<M: RPCMethod>(_ method: M.Type, sample: JSONValue) throws -> Set<String> {
        let inner = try JSONCoding.typed(DecoderCapture.self, from: sample).decoder
        let recorder = KeyRecorder()
        _ = try M.Params(from: RecordingDecoder(inner: inner, recorder: recorder))
        return recorder.keys
    }

    /// A value the schema accepts, as small as it can be: required members only, the first choice
    /// of an enumeration or a `oneOf` (of an object's exclusive members too), empty arrays.
    static func sample(_ schema: JSONValue) -> JSONValue {
        if let ref = schema["$ref"]?.stringValue, let name = ref.split(separator: "/").last,
            let named = StpdAPI.schemas[String(name)]
        {
            return sample(named.json)
        }
        if let constant = schema["const"] { return constant }
        if let first = schema["enum"]?.arrayValue?.first { return first }
        for combinator in ["oneOf", "anyOf"] where schema["properties"] == nil {
            if let choices = schema[combinator]?.arrayValue,
                let choice = choices.first(where: { $0["type"] != "null" }) ?? choices.first
            {
                return sample(choice)
            }
        }
        let type = schema["type"]?.stringValue ?? schema["type"]?.arrayValue?.first { $0 != "null" }?.stringValue
        switch type {
        case "string": return schema["format"] == "uri" ? "https://example.com/return" : "x"
        case "integer", "number": return schema["minimum"] ?? 1
        case "boolean": return true
        case "array":
            let count = Int(schema["minItems"]?.intValue ?? 0)
            return .array(Array(repeating: sample(schema["items"] ?? .object([:])), count: count))
        default:
            let properties = schema["properties"]?.objectValue ?? [:]
            // Members that exclude each other (`exactlyOne(of:)`): the first one's.
            let alternative = schema["oneOf"]?.arrayValue?.first?["required"]?.arrayValue ?? []
            let required = ((schema["required"]?.arrayValue ?? []) + alternative).compactMap(\.stringValue)
            return .object(Dictionary(uniqueKeysWithValues: required.map { ($0, sample(properties[$0] ?? .null)) }))
        }
    }
}

struct MethodCase: CustomTestStringConvertible, Sendable {
    let type: any RPCMethod.Type
    var testDescription: String { type.name }
}

/// Hands out the decoder it was decoded with, to wrap it.
private struct DecoderCapture: Decodable {
    let decoder: any Decoder
    init(from decoder: any Decoder) throws { self.decoder = decoder }
}

private final class KeyRecorder: @unchecked Sendable {
    var keys: Set<String> = []
}

/// A decoder that notes every key asked of its top-level container and decodes the rest as `inner`.
private struct RecordingDecoder: Decoder {
    let inner: any Decoder
    let recorder: KeyRecorder
    var codingPath: [any CodingKey] { inner.codingPath }
    var userInfo: [CodingUserInfoKey: Any] { inner.userInfo }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(RecordingContainer(inner: try inner.container(keyedBy: type), recorder: recorder))
    }
    func unkeyedContainer() throws -> any UnkeyedDecodingContainer { try inner.unkeyedContainer() }
    func singleValueContainer() throws -> any SingleValueDecodingContainer { try inner.singleValueContainer() }
}

private struct RecordingContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let inner: KeyedDecodingContainer<Key>
    let recorder: KeyRecorder
    var codingPath: [any CodingKey] { inner.codingPath }
    var allKeys: [Key] { inner.allKeys }

    private func noting(_ key: Key) -> Key {
        recorder.keys.insert(key.stringValue)
        return key
    }

    func contains(_ key: Key) -> Bool { inner.contains(noting(key)) }
    func decodeNil(forKey key: Key) throws -> Bool { try inner.decodeNil(forKey: noting(key)) }
    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try inner.decode(type, forKey: noting(key))
    }
    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try inner.decode(type, forKey: noting(key)) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try inner.decode(type, forKey: noting(key)) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try inner.decode(type, forKey: noting(key)) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try inner.decode(type, forKey: noting(key)) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try inner.decode(type, forKey: noting(key)) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try inner.decode(type, forKey: noting(key)) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try inner.decode(type, forKey: noting(key)) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try inner.decode(type, forKey: noting(key)) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try inner.decode(type, forKey: noting(key)) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try inner.decode(type, forKey: noting(key)) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try inner.decode(type, forKey: noting(key)) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try inner.decode(type, forKey: noting(key)) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try inner.decode(type, forKey: noting(key)) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try inner.decode(type, forKey: noting(key)) }
    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws
        -> KeyedDecodingContainer<NestedKey>
    {
        try inner.nestedContainer(keyedBy: type, forKey: noting(key))
    }
    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try inner.nestedUnkeyedContainer(forKey: noting(key))
    }
    func superDecoder() throws -> any Decoder { try inner.superDecoder() }
    func superDecoder(forKey key: Key) throws -> any Decoder { try inner.superDecoder(forKey: noting(key)) }
}
