/// A request id exactly as the peer wrote it: a JSON string (quotes and escapes included), a
/// number or `null`. JSON-RPC requires the reply to carry the same id, so it is kept as text and
/// written back byte for byte: `12345678901234567890123`, `-0` and `1e2` stay what they were,
/// where a round trip through a number type would change them.
///
/// Two ids are equal when their texts are equal (`1` and `1.0` are different ids).
public struct RequestID: Sendable, Hashable, CustomStringConvertible {
    /// The JSON text of the id. Always a valid JSON string, number or `null`.
    public let json: String

    /// `json` must already be a valid JSON string, number or null (the scanner guarantees it).
    init(validatedJSON json: String) {
        self.json = json
    }

    public static let null = RequestID(validatedJSON: "null")

    public init(_ number: Int64) {
        json = String(number)
    }

    public init(_ text: String) {
        var bytes: [UInt8] = []
        JSONWriter.writeString(text, to: &bytes)
        json = String(decoding: bytes, as: UTF8.self)
    }

    /// The id a `JSONValue` stands for; nil for values an id cannot be (booleans, arrays, objects).
    public init?(_ value: JSONValue) {
        switch value {
        case .null: self = .null
        case .int(let number): self.init(number)
        case .string(let text): self.init(text)
        case .double(let number):
            guard number.isFinite else { return nil }
            var bytes: [UInt8] = []
            JSONWriter.write(.double(number), to: &bytes)
            self.init(validatedJSON: String(decoding: bytes, as: UTF8.self))
        default: return nil
        }
    }

    /// The id as a JSON value (a number may lose digits here; `json` never does).
    public var value: JSONValue {
        (try? JSONText.parse(Array(json.utf8))) ?? .null
    }

    public var intValue: Int64? { Int64(json) }
    public var isNull: Bool { json == "null" }
    public var description: String { json }
}

extension RequestID: ExpressibleByIntegerLiteral, ExpressibleByStringLiteral {
    public init(integerLiteral value: Int64) { self.init(value) }
    public init(stringLiteral value: String) { self.init(value) }
}

extension RequestID: Codable {
    public init(from decoder: Decoder) throws {
        let value = try JSONValue(from: decoder)
        guard let id = RequestID(value) else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: decoder.codingPath, debugDescription: "an id must be a string, number or null"))
        }
        self = id
    }

    public func encode(to encoder: Encoder) throws {
        try value.encode(to: encoder)
    }
}
