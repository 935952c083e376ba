import Foundation

/// Encodes an `Encodable` straight into a `JSONValue`, with no bytes in between. It follows
/// Foundation's JSONEncoder with its default strategies: dates as seconds since 2001 (their own
/// encoding), `Data` as base64, `URL` as its absolute string, non-finite numbers refused.
enum JSONValueEncoder {
    static func encode<T: Encodable>(_ value: T) throws -> JSONValue {
        if T.self == JSONValue.self { return (value as! JSONValue).normalized }
        let root = EncodingNode()
        try root.store(value, codingPath: [])
        return root.resolved()
    }
}

extension JSONValue {
    /// The value as it reads back from its JSON text: whole doubles that fit Int64 are integers.
    var normalized: JSONValue {
        switch self {
        case .double(let number): return Int64(exactly: number).map(JSONValue.int) ?? self
        case .array(let elements): return .array(elements.map(\.normalized))
        case .object(let members): return .object(members.mapValues(\.normalized))
        default: return self
        }
    }
}

/// One value being built; objects and arrays hold their members as nodes so containers handed
/// out earlier can keep adding to them.
private final class EncodingNode {
    var scalar: JSONValue = .null
    var members: [String: EncodingNode]?
    var elements: [EncodingNode]?

    init() {}
    init(_ scalar: JSONValue) { self.scalar = scalar }

    func resolved() -> JSONValue {
        if let members { return .object(members.mapValues { $0.resolved() }) }
        if let elements { return .array(elements.map { $0.resolved() }) }
        return scalar
    }

    func becomeObject() { if members == nil { members = [:] } }
    func becomeArray() { if elements == nil { elements = [] } }

    /// Encodes `value` into this node. (Types are told apart by their metatypes, which is cheap
    /// where `as?` would be a dynamic cast for every value.)
    func store<T: Encodable>(_ value: T, codingPath: [CodingKey]) throws {
        if T.self == String.self {
            scalar = .string(unsafeBitCast(value, to: String.self))
        } else if T.self == Int.self {
            scalar = .int(Int64(unsafeBitCast(value, to: Int.self)))
        } else if T.self == Bool.self {
            scalar = .bool(unsafeBitCast(value, to: Bool.self))
        } else if T.self == JSONValue.self {
            scalar = (value as! JSONValue).normalized
        } else if T.self == Double.self {
            scalar = try Self.number(unsafeBitCast(value, to: Double.self), codingPath)
        } else if T.self == URL.self {
            scalar = .string((value as! URL).absoluteString)
        } else if T.self == Data.self {
            scalar = .string((value as! Data).base64EncodedString())
        } else {
            try value.encode(to: NodeEncoder(node: self, codingPath: codingPath))
        }
    }

    static func number(_ double: Double, _ codingPath: [CodingKey]) throws -> JSONValue {
        guard double.isFinite else {
            throw EncodingError.invalidValue(
                double, .init(codingPath: codingPath, debugDescription: "\(double) is not a JSON number"))
        }
        // A whole number reads back from JSON text as an integer; so it is one here too.
        if let whole = Int64(exactly: double) { return .int(whole) }
        return .double(double)
    }

    static func integer<T: BinaryInteger>(_ value: T) -> JSONValue {
        if let exact = Int64(exactly: value) { return .int(exact) }
        return .double(Double(value))
    }
}

private struct NodeEncoder: Encoder {
    let node: EncodingNode
    let codingPath: [CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        node.becomeObject()
        return KeyedEncodingContainer(KeyedNodeContainer<Key>(node: node, codingPath: codingPath))
    }

    func unkeyedContainer() -> UnkeyedEncodingContainer {
        node.becomeArray()
        return UnkeyedNodeContainer(node: node, codingPath: codingPath)
    }

    func singleValueContainer() -> SingleValueEncodingContainer {
        SingleNodeContainer(node: node, codingPath: codingPath)
    }
}

private struct KeyedNodeContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let node: EncodingNode
    let codingPath: [CodingKey]

    private func set(_ value: JSONValue, _ key: Key) { node.members![key.stringValue] = EncodingNode(value) }

    mutating func encodeNil(forKey key: Key) throws { set(.null, key) }
    mutating func encode(_ value: Bool, forKey key: Key) throws { set(.bool(value), key) }
    mutating func encode(_ value: String, forKey key: Key) throws { set(.string(value), key) }
    mutating func encode(_ value: Double, forKey key: Key) throws {
        set(try EncodingNode.number(value, codingPath + [key]), key)
    }
    mutating func encode(_ value: Float, forKey key: Key) throws {
        set(try EncodingNode.number(Double(value), codingPath + [key]), key)
    }
    mutating func encode(_ value: Int, forKey key: Key) throws { set(.int(Int64(value)), key) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { set(.int(Int64(value)), key) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { set(.int(Int64(value)), key) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { set(.int(Int64(value)), key) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { set(.int(value), key) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { set(EncodingNode.integer(value), key) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { set(.int(Int64(value)), key) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { set(.int(Int64(value)), key) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { set(.int(Int64(value)), key) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { set(EncodingNode.integer(value), key) }

    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        let child = EncodingNode()
        try child.store(value, codingPath: codingPath + [key])
        node.members![key.stringValue] = child
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type, forKey key: Key
    ) -> KeyedEncodingContainer<NestedKey> {
        let child = EncodingNode()
        child.becomeObject()
        node.members![key.stringValue] = child
        return KeyedEncodingContainer(KeyedNodeContainer<NestedKey>(node: child, codingPath: codingPath + [key]))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> UnkeyedEncodingContainer {
        let child = EncodingNode()
        child.becomeArray()
        node.members![key.stringValue] = child
        return UnkeyedNodeContainer(node: child, codingPath: codingPath + [key])
    }

    mutating func superEncoder() -> Encoder { superEncoder(named: "super") }
    mutating func superEncoder(forKey key: Key) -> Encoder { superEncoder(named: key.stringValue) }

    private func superEncoder(named name: String) -> Encoder {
        let child = EncodingNode()
        node.members![name] = child
        return NodeEncoder(node: child, codingPath: codingPath + [JSONKey(name)])
    }
}

private struct UnkeyedNodeContainer: UnkeyedEncodingContainer {
    let node: EncodingNode
    let codingPath: [CodingKey]
    var count: Int { node.elements!.count }

    private func append(_ value: JSONValue) { node.elements!.append(EncodingNode(value)) }
    private var nextPath: [CodingKey] { codingPath + [JSONKey(index: count)] }

    mutating func encodeNil() throws { append(.null) }
    mutating func encode(_ value: Bool) throws { append(.bool(value)) }
    mutating func encode(_ value: String) throws { append(.string(value)) }
    mutating func encode(_ value: Double) throws { append(try EncodingNode.number(value, nextPath)) }
    mutating func encode(_ value: Float) throws { append(try EncodingNode.number(Double(value), nextPath)) }
    mutating func encode(_ value: Int) throws { append(.int(Int64(value))) }
    mutating func encode(_ value: Int8) throws { append(.int(Int64(value))) }
    mutating func encode(_ value: Int16) throws { append(.int(Int64(value))) }
    mutating func encode(_ value: Int32) throws { append(.int(Int64(value))) }
    mutating func encode(_ value: Int64) throws { append(.int(value)) }
    mutating func encode(_ value: UInt) throws { append(EncodingNode.integer(value)) }
    mutating func encode(_ value: UInt8) throws { append(.int(Int64(value))) }
    mutating func encode(_ value: UInt16) throws { append(.int(Int64(value))) }
    mutating func encode(_ value: UInt32) throws { append(.int(Int64(value))) }
    mutating func encode(_ value: UInt64) throws { append(EncodingNode.integer(value)) }

    mutating func encode<T: Encodable>(_ value: T) throws {
        let child = EncodingNode()
        try child.store(value, codingPath: nextPath)
        node.elements!.append(child)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<
        NestedKey
    > {
        let child = EncodingNode()
        child.becomeObject()
        let path = nextPath
        node.elements!.append(child)
        return KeyedEncodingContainer(KeyedNodeContainer<NestedKey>(node: child, codingPath: path))
    }

    mutating func nestedUnkeyedContainer() -> UnkeyedEncodingContainer {
        let child = EncodingNode()
        child.becomeArray()
        let path = nextPath
        node.elements!.append(child)
        return UnkeyedNodeContainer(node: child, codingPath: path)
    }

    mutating func superEncoder() -> Encoder {
        let child = EncodingNode()
        let path = nextPath
        node.elements!.append(child)
        return NodeEncoder(node: child, codingPath: path)
    }
}

private struct SingleNodeContainer: SingleValueEncodingContainer {
    let node: EncodingNode
    let codingPath: [CodingKey]

    mutating func encodeNil() throws { node.scalar = .null }
    mutating func encode(_ value: Bool) throws { node.scalar = .bool(value) }
    mutating func encode(_ value: String) throws { node.scalar = .string(value) }
    mutating func encode(_ value: Double) throws { node.scalar = try EncodingNode.number(value, codingPath) }
    mutating func encode(_ value: Float) throws { node.scalar = try EncodingNode.number(Double(value), codingPath) }
    mutating func encode(_ value: Int) throws { node.scalar = .int(Int64(value)) }
    mutating func encode(_ value: Int8) throws { node.scalar = .int(Int64(value)) }
    mutating func encode(_ value: Int16) throws { node.scalar = .int(Int64(value)) }
    mutating func encode(_ value: Int32) throws { node.scalar = .int(Int64(value)) }
    mutating func encode(_ value: Int64) throws { node.scalar = .int(value) }
    mutating func encode(_ value: UInt) throws { node.scalar = EncodingNode.integer(value) }
    mutating func encode(_ value: UInt8) throws { node.scalar = .int(Int64(value)) }
    mutating func encode(_ value: UInt16) throws { node.scalar = .int(Int64(value)) }
    mutating func encode(_ value: UInt32) throws { node.scalar = .int(Int64(value)) }
    mutating func encode(_ value: UInt64) throws { node.scalar = EncodingNode.integer(value) }
    mutating func encode<T: Encodable>(_ value: T) throws { try node.store(value, codingPath: codingPath) }
}

/// A coding key made at run time: a member name or an array index.
struct JSONKey: CodingKey {
    var stringValue: String
    var intValue: Int?

    init(_ name: String) {
        stringValue = name
        intValue = nil
    }

    init(index: Int) {
        stringValue = "Index \(index)"
        intValue = index
    }

    init?(stringValue: String) { self.init(stringValue) }
    init?(intValue: Int) { self.init(index: intValue) }
}
