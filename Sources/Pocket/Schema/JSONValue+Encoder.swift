#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension PocketJSONValue {
    /// The JSON tree of an `Encodable` value. A `Date` becomes
    /// `.mapped(date)`, left for a schema tag (`{date_iso8601}`) to write;
    /// a `URL` becomes its string; a `PocketJSONValue` is taken as it is.
    /// Keys keep the order they were encoded in. Throws `EncodingError`.
    public init(encoding value: some Encodable) throws {
        let node = EncoderNode()
        try node.box(value, codingPath: [])
        self = node.finalized()
    }
}

/// One value being encoded. Containers hand out references to their
/// children, as `Encoder` requires (a nested container writes into its parent).
private final class EncoderNode {
    var value: PocketJSONValue = .null
    var members: [(String, EncoderNode)]?
    var elements: [EncoderNode]?

    func finalized() -> PocketJSONValue {
        if let members {
            return .object(PocketJSONObject(members.map { ($0.0, $0.1.finalized()) }))
        }
        if let elements { return .array(elements.map { $0.finalized() }) }
        return value
    }

    func box<T: Encodable>(_ v: T, codingPath: [any CodingKey]) throws {
        switch v {
        case let date as Date: value = .mapped(date)
        case let url as URL: value = .string(url.absoluteString)
        case let json as PocketJSONValue: value = json
        default: try v.encode(to: ValueEncoder(node: self, codingPath: codingPath))
        }
    }
}

private struct ValueEncoder: Encoder, SingleValueEncodingContainer {
    let node: EncoderNode
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        if node.members == nil { node.members = [] }
        return KeyedEncodingContainer(KeyedContainer<Key>(node: node, codingPath: codingPath))
    }
    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        if node.elements == nil { node.elements = [] }
        return UnkeyedContainer(node: node, codingPath: codingPath)
    }
    func singleValueContainer() -> any SingleValueEncodingContainer { self }

    func encodeNil() throws { node.value = .null }
    func encode(_ value: Bool) throws { node.value = .bool(value) }
    func encode(_ value: String) throws { node.value = .string(value) }
    func encode(_ value: Double) throws { node.value = try Self.number(value, codingPath) }
    func encode(_ value: Float) throws { node.value = try Self.number(Double(value), codingPath) }
    func encode(_ value: Int) throws { node.value = .int(value) }
    func encode(_ value: Int8) throws { node.value = .int(Int(value)) }
    func encode(_ value: Int16) throws { node.value = .int(Int(value)) }
    func encode(_ value: Int32) throws { node.value = .int(Int(value)) }
    func encode(_ value: Int64) throws { node.value = .int(Int(value)) }
    func encode(_ value: UInt) throws { node.value = try Self.unsigned(UInt64(value), codingPath) }
    func encode(_ value: UInt8) throws { node.value = .int(Int(value)) }
    func encode(_ value: UInt16) throws { node.value = .int(Int(value)) }
    func encode(_ value: UInt32) throws { node.value = .int(Int(value)) }
    func encode(_ value: UInt64) throws { node.value = try Self.unsigned(value, codingPath) }
    func encode<T: Encodable>(_ value: T) throws { try node.box(value, codingPath: codingPath) }

    static func number(_ d: Double, _ codingPath: [any CodingKey]) throws -> PocketJSONValue {
        guard d.isFinite else {
            throw EncodingError.invalidValue(d, .init(codingPath: codingPath, debugDescription: "JSON has no \(d)"))
        }
        return .double(d)
    }

    static func unsigned(_ u: UInt64, _ codingPath: [any CodingKey]) throws -> PocketJSONValue {
        if let i = Int(exactly: u) { return .int(i) }
        return .double(Double(u))
    }
}

private struct KeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let node: EncoderNode
    let codingPath: [any CodingKey]

    private func child(_ key: Key) -> EncoderNode {
        let child = EncoderNode()
        if let i = node.members!.firstIndex(where: { $0.0 == key.stringValue }) {
            node.members![i].1 = child
        } else {
            node.members!.append((key.stringValue, child))
        }
        return child
    }
    private func encoder(_ key: Key) -> ValueEncoder { ValueEncoder(node: child(key), codingPath: codingPath + [key]) }

    mutating func encodeNil(forKey key: Key) throws { child(key).value = .null }
    mutating func encode(_ value: Bool, forKey key: Key) throws { try encoder(key).encode(value) }
    mutating func encode(_ value: String, forKey key: Key) throws { try encoder(key).encode(value) }
    mutating func encode(_ value: Double, forKey key: Key) throws { try encoder(key).encode(value) }
    mutating func encode(_ value: Float, forKey key: Key) throws { try encoder(key).encode(value) }
    mutating func encode(_ value: Int, forKey key: Key) throws { try encoder(key).encode(value) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { try encoder(key).encode(value) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { try encoder(key).encode(value) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { try encoder(key).encode(value) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { try encoder(key).encode(value) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { try encoder(key).encode(value) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { try encoder(key).encode(value) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { try encoder(key).encode(value) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { try encoder(key).encode(value) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { try encoder(key).encode(value) }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        try child(key).box(value, codingPath: codingPath + [key])
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key)
        -> KeyedEncodingContainer<NestedKey> {
        encoder(key).container(keyedBy: keyType)
    }
    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        encoder(key).unkeyedContainer()
    }
    mutating func superEncoder() -> any Encoder {
        let child = EncoderNode()
        node.members!.append(("super", child))
        return ValueEncoder(node: child, codingPath: codingPath)
    }
    mutating func superEncoder(forKey key: Key) -> any Encoder { encoder(key) }
}

private struct UnkeyedContainer: UnkeyedEncodingContainer {
    let node: EncoderNode
    let codingPath: [any CodingKey]
    var count: Int { node.elements!.count }

    private func next() -> ValueEncoder {
        let child = EncoderNode()
        node.elements!.append(child)
        return ValueEncoder(node: child, codingPath: codingPath)
    }

    mutating func encodeNil() throws { next().node.value = .null }
    mutating func encode(_ value: Bool) throws { try next().encode(value) }
    mutating func encode(_ value: String) throws { try next().encode(value) }
    mutating func encode(_ value: Double) throws { try next().encode(value) }
    mutating func encode(_ value: Float) throws { try next().encode(value) }
    mutating func encode(_ value: Int) throws { try next().encode(value) }
    mutating func encode(_ value: Int8) throws { try next().encode(value) }
    mutating func encode(_ value: Int16) throws { try next().encode(value) }
    mutating func encode(_ value: Int32) throws { try next().encode(value) }
    mutating func encode(_ value: Int64) throws { try next().encode(value) }
    mutating func encode(_ value: UInt) throws { try next().encode(value) }
    mutating func encode(_ value: UInt8) throws { try next().encode(value) }
    mutating func encode(_ value: UInt16) throws { try next().encode(value) }
    mutating func encode(_ value: UInt32) throws { try next().encode(value) }
    mutating func encode(_ value: UInt64) throws { try next().encode(value) }
    mutating func encode<T: Encodable>(_ value: T) throws { try next().encode(value) }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        next().container(keyedBy: keyType)
    }
    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer { next().unkeyedContainer() }
    mutating func superEncoder() -> any Encoder { next() }
}
