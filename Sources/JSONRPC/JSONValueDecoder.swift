import Foundation

/// Decodes a `Decodable` straight from a `JSONValue`, with no bytes in between. It accepts what
/// Foundation's JSONDecoder accepts with its default strategies (whole-valued doubles as
/// integers, base64 `Data`, `URL` from a string); its errors carry the coding path, which the
/// router turns into the parameter's name.
enum JSONValueDecoder {
    static func decode<T: Decodable>(_ type: T.Type, from value: JSONValue) throws -> T {
        try NodeDecoder(value: value, codingPath: []).decodeValue(type)
    }
}

private struct NodeDecoder: Decoder {
    let value: JSONValue
    let codingPath: [CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case .object(let members) = value else { throw mismatch([String: JSONValue].self, value, codingPath) }
        return KeyedDecodingContainer(KeyedValueContainer<Key>(members: members, codingPath: codingPath))
    }

    func unkeyedContainer() throws -> UnkeyedDecodingContainer {
        guard case .array(let elements) = value else { throw mismatch([JSONValue].self, value, codingPath) }
        return UnkeyedValueContainer(elements: elements, codingPath: codingPath)
    }

    func singleValueContainer() throws -> SingleValueDecodingContainer { self }

    func decodeValue<T: Decodable>(_ type: T.Type) throws -> T {
        if type == JSONValue.self { return value as! T }
        if type == String.self { return try decode(String.self) as! T }
        if type == Int.self { return try decode(Int.self) as! T }
        if type == Bool.self { return try decode(Bool.self) as! T }
        if type == Double.self { return try decode(Double.self) as! T }
        if type == URL.self {
            guard let url = URL(string: try decode(String.self)) else {
                throw DecodingError.dataCorrupted(.init(codingPath: codingPath, debugDescription: "not a valid URL"))
            }
            return url as! T
        }
        if type == Data.self {
            guard let data = Data(base64Encoded: try decode(String.self)) else {
                throw DecodingError.dataCorrupted(.init(codingPath: codingPath, debugDescription: "not valid base64"))
            }
            return data as! T
        }
        return try T(from: self)
    }
}

extension NodeDecoder: SingleValueDecodingContainer {
    func decodeNil() -> Bool { value == .null }

    func decode(_ type: Bool.Type) throws -> Bool {
        guard case .bool(let flag) = value else { throw mismatch(type, value, codingPath) }
        return flag
    }

    func decode(_ type: String.Type) throws -> String {
        guard case .string(let text) = value else { throw mismatch(type, value, codingPath) }
        return text
    }

    func decode(_ type: Double.Type) throws -> Double {
        switch value {
        case .int(let number): return Double(number)
        case .double(let number): return number
        default: throw mismatch(type, value, codingPath)
        }
    }

    func decode(_ type: Float.Type) throws -> Float { Float(try decode(Double.self)) }
    func decode(_ type: Int.Type) throws -> Int { try integer(type) }
    func decode(_ type: Int8.Type) throws -> Int8 { try integer(type) }
    func decode(_ type: Int16.Type) throws -> Int16 { try integer(type) }
    func decode(_ type: Int32.Type) throws -> Int32 { try integer(type) }
    func decode(_ type: Int64.Type) throws -> Int64 { try integer(type) }
    func decode(_ type: UInt.Type) throws -> UInt { try integer(type) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try integer(type) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try integer(type) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try integer(type) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try integer(type) }
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try decodeValue(type) }

    private func integer<T: FixedWidthInteger>(_ type: T.Type) throws -> T {
        let converted: T?
        switch value {
        case .int(let number): converted = T(exactly: number)
        case .double(let number): converted = T(exactly: number)
        default: throw mismatch(type, value, codingPath)
        }
        guard let converted else {
            throw DecodingError.dataCorrupted(
                .init(
                    codingPath: codingPath,
                    debugDescription: "\(value.jsonText) is not a whole number in \(T.min)...\(T.max)"))
        }
        return converted
    }
}

private struct KeyedValueContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let members: [String: JSONValue]
    let codingPath: [CodingKey]

    var allKeys: [Key] { members.keys.compactMap { Key(stringValue: $0) } }

    func contains(_ key: Key) -> Bool { members[key.stringValue] != nil }

    private func member(_ key: Key) throws -> NodeDecoder {
        guard let value = members[key.stringValue] else {
            throw DecodingError.keyNotFound(
                key, .init(codingPath: codingPath, debugDescription: "no member \"\(key.stringValue)\""))
        }
        return NodeDecoder(value: value, codingPath: codingPath + [key])
    }

    private func nonNull(_ key: Key, _ type: Any.Type) throws -> NodeDecoder {
        let decoder = try member(key)
        if decoder.value == .null {
            throw DecodingError.valueNotFound(
                type, .init(codingPath: decoder.codingPath, debugDescription: "null where a value is required"))
        }
        return decoder
    }

    func decodeNil(forKey key: Key) throws -> Bool { try member(key).value == .null }
    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try nonNull(key, type).decode(type) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try nonNull(key, type).decode(type) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try nonNull(key, type).decode(type) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try nonNull(key, type).decode(type) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try nonNull(key, type).decode(type) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try nonNull(key, type).decode(type) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try nonNull(key, type).decode(type) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try nonNull(key, type).decode(type) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try nonNull(key, type).decode(type) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try nonNull(key, type).decode(type) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try nonNull(key, type).decode(type) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try nonNull(key, type).decode(type) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try nonNull(key, type).decode(type) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try nonNull(key, type).decode(type) }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try member(key).decodeValue(type)
    }

    func nestedContainer<NestedKey: CodingKey>(
        keyedBy type: NestedKey.Type, forKey key: Key
    ) throws -> KeyedDecodingContainer<NestedKey> {
        try member(key).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> UnkeyedDecodingContainer {
        try member(key).unkeyedContainer()
    }

    func superDecoder() throws -> Decoder {
        NodeDecoder(value: members["super"] ?? .null, codingPath: codingPath + [JSONKey("super")])
    }

    func superDecoder(forKey key: Key) throws -> Decoder {
        NodeDecoder(value: members[key.stringValue] ?? .null, codingPath: codingPath + [key])
    }
}

private struct UnkeyedValueContainer: UnkeyedDecodingContainer {
    let elements: [JSONValue]
    let codingPath: [CodingKey]
    var currentIndex = 0

    init(elements: [JSONValue], codingPath: [CodingKey]) {
        self.elements = elements
        self.codingPath = codingPath
    }

    var count: Int? { elements.count }
    var isAtEnd: Bool { currentIndex >= elements.count }

    private mutating func next(_ type: Any.Type) throws -> NodeDecoder {
        let path = codingPath + [JSONKey(index: currentIndex)]
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(type, .init(codingPath: path, debugDescription: "the array ends here"))
        }
        defer { currentIndex += 1 }
        return NodeDecoder(value: elements[currentIndex], codingPath: path)
    }

    private mutating func nonNull(_ type: Any.Type) throws -> NodeDecoder {
        if !isAtEnd, elements[currentIndex] == .null {
            throw DecodingError.valueNotFound(
                type,
                .init(
                    codingPath: codingPath + [JSONKey(index: currentIndex)],
                    debugDescription: "null where a value is required"))
        }
        return try next(type)
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd, elements[currentIndex] == .null else { return false }
        currentIndex += 1
        return true
    }

    mutating func decode(_ type: Bool.Type) throws -> Bool { try nonNull(type).decode(type) }
    mutating func decode(_ type: String.Type) throws -> String { try nonNull(type).decode(type) }
    mutating func decode(_ type: Double.Type) throws -> Double { try nonNull(type).decode(type) }
    mutating func decode(_ type: Float.Type) throws -> Float { try nonNull(type).decode(type) }
    mutating func decode(_ type: Int.Type) throws -> Int { try nonNull(type).decode(type) }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { try nonNull(type).decode(type) }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { try nonNull(type).decode(type) }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { try nonNull(type).decode(type) }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { try nonNull(type).decode(type) }
    mutating func decode(_ type: UInt.Type) throws -> UInt { try nonNull(type).decode(type) }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try nonNull(type).decode(type) }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try nonNull(type).decode(type) }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try nonNull(type).decode(type) }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try nonNull(type).decode(type) }
    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { try next(type).decodeValue(type) }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy type: NestedKey.Type
    ) throws -> KeyedDecodingContainer<NestedKey> {
        try next(type).container(keyedBy: type)
    }

    mutating func nestedUnkeyedContainer() throws -> UnkeyedDecodingContainer {
        try next([JSONValue].self).unkeyedContainer()
    }

    mutating func superDecoder() throws -> Decoder { try next(JSONValue.self) }
}

private func mismatch(_ type: Any.Type, _ value: JSONValue, _ codingPath: [CodingKey]) -> DecodingError {
    if value == .null {
        return .valueNotFound(type, .init(codingPath: codingPath, debugDescription: "null where a value is required"))
    }
    return .typeMismatch(
        type, .init(codingPath: codingPath, debugDescription: "expected \(jsonTypeName(type)), got \(value.typeName)"))
}

private func jsonTypeName(_ type: Any.Type) -> String {
    switch type {
    case is String.Type: return "string"
    case is Bool.Type: return "boolean"
    case is Double.Type, is Float.Type: return "number"
    case is any FixedWidthInteger.Type: return "integer"
    case is [String: JSONValue].Type: return "object"
    case is [JSONValue].Type: return "array"
    default: return "\(type)"
    }
}

extension JSONValue {
    /// The value as compact JSON text (for messages).
    var jsonText: String { String(decoding: JSONText.bytes(self), as: UTF8.self) }
}
