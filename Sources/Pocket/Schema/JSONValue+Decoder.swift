#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension PocketJSONValue {
    /// Decodes a `Decodable` from this tree. A field whose value is
    /// `.mapped` takes that value when its type matches (a `Date` a
    /// transformer made, a model a mapper made); a `Date` also decodes from
    /// an RFC 3339 string and a `URL` from a string. Throws `DecodingError`.
    public func decode<T: Decodable>(_ type: T.Type = T.self) throws -> T {
        try JSONValueDecoding.unbox(self, as: T.self, codingPath: [])
    }
}

enum JSONValueDecoding {
    static func unbox<T: Decodable>(_ value: PocketJSONValue, as type: T.Type, codingPath: [any CodingKey]) throws -> T {
        if case let .mapped(box) = value, let typed = box.value as? T { return typed }
        if T.self == Date.self, case let .string(s) = value {
            guard let date = ISO8601.parse(s) else {
                throw DecodingError.dataCorrupted(.init(codingPath: codingPath, debugDescription: "not an RFC 3339 date: '\(s)'"))
            }
            return date as! T
        }
        if T.self == URL.self, case let .string(s) = value {
            guard let url = URL(string: s) else {
                throw DecodingError.dataCorrupted(.init(codingPath: codingPath, debugDescription: "not a URL: '\(s)'"))
            }
            return url as! T
        }
        if T.self == PocketJSONValue.self { return value as! T }
        return try T(from: ValueDecoder(value: value, codingPath: codingPath))
    }
}

private struct ValueDecoder: Decoder, SingleValueDecodingContainer {
    let value: PocketJSONValue
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case let .object(object) = value else { throw mismatch([String: PocketJSONValue].self) }
        return KeyedDecodingContainer(KeyedContainer<Key>(object: object, codingPath: codingPath))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case let .array(elements) = value else { throw mismatch([PocketJSONValue].self) }
        return UnkeyedContainer(elements: elements, codingPath: codingPath)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { self }

    func mismatch(_ type: Any.Type) -> DecodingError {
        .typeMismatch(type, .init(codingPath: codingPath, debugDescription: "expected \(type), found \(value.typeName)"))
    }

    func decodeNil() -> Bool { value.isNull }
    func decode(_ type: Bool.Type) throws -> Bool {
        guard case let .bool(b) = value else { throw mismatch(type) }
        return b
    }
    func decode(_ type: String.Type) throws -> String {
        guard case let .string(s) = value else { throw mismatch(type) }
        return s
    }
    func decode(_ type: Double.Type) throws -> Double {
        guard let d = value.double else { throw mismatch(type) }
        return d
    }
    func decode(_ type: Float.Type) throws -> Float {
        guard let d = value.double else { throw mismatch(type) }
        return Float(d)
    }
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
    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try JSONValueDecoding.unbox(value, as: type, codingPath: codingPath)
    }

    private func integer<I: FixedWidthInteger>(_ type: I.Type) throws -> I {
        guard let i = value.int else { throw mismatch(type) }
        guard let exact = I(exactly: i) else {
            throw DecodingError.dataCorrupted(.init(codingPath: codingPath, debugDescription: "\(i) does not fit in \(type)"))
        }
        return exact
    }
}

private struct IndexKey: CodingKey {
    var stringValue: String { "Index \(intValue!)" }
    var intValue: Int?
    init(_ i: Int) { intValue = i }
    init?(stringValue: String) { nil }
    init?(intValue: Int) { self.intValue = intValue }
}

private struct KeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let object: PocketJSONObject
    let codingPath: [any CodingKey]

    var allKeys: [Key] { object.members.compactMap { Key(stringValue: $0.key) } }
    func contains(_ key: Key) -> Bool { object[key.stringValue] != nil }

    private func value(_ key: Key) throws -> PocketJSONValue {
        guard let v = object[key.stringValue] else {
            throw DecodingError.keyNotFound(key, .init(codingPath: codingPath, debugDescription: "no value for key '\(key.stringValue)'"))
        }
        return v
    }

    private func decoder(_ key: Key) throws -> ValueDecoder {
        ValueDecoder(value: try value(key), codingPath: codingPath + [key])
    }

    func decodeNil(forKey key: Key) throws -> Bool { (object[key.stringValue] ?? .null).isNull }
    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try decoder(key).decode(type) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try decoder(key).decode(type) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try decoder(key).decode(type) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try decoder(key).decode(type) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try decoder(key).decode(type) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try decoder(key).decode(type) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try decoder(key).decode(type) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try decoder(key).decode(type) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try decoder(key).decode(type) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try decoder(key).decode(type) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try decoder(key).decode(type) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try decoder(key).decode(type) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try decoder(key).decode(type) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try decoder(key).decode(type) }
    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try JSONValueDecoding.unbox(try value(key), as: type, codingPath: codingPath + [key])
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws
        -> KeyedDecodingContainer<NestedKey> {
        try decoder(key).container(keyedBy: type)
    }
    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try decoder(key).unkeyedContainer()
    }
    func superDecoder() throws -> any Decoder {
        ValueDecoder(value: object["super"] ?? .null, codingPath: codingPath)
    }
    func superDecoder(forKey key: Key) throws -> any Decoder {
        ValueDecoder(value: object[key.stringValue] ?? .null, codingPath: codingPath + [key])
    }
}

private struct UnkeyedContainer: UnkeyedDecodingContainer {
    let elements: [PocketJSONValue]
    let codingPath: [any CodingKey]
    var currentIndex = 0

    init(elements: [PocketJSONValue], codingPath: [any CodingKey]) {
        self.elements = elements
        self.codingPath = codingPath
    }

    var count: Int? { elements.count }
    var isAtEnd: Bool { currentIndex >= elements.count }

    private mutating func next() throws -> ValueDecoder {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(PocketJSONValue.self, .init(codingPath: codingPath, debugDescription: "unkeyed container is at its end"))
        }
        defer { currentIndex += 1 }
        return ValueDecoder(value: elements[currentIndex], codingPath: codingPath + [IndexKey(currentIndex)])
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd, elements[currentIndex].isNull else { return false }
        currentIndex += 1
        return true
    }
    mutating func decode(_ type: Bool.Type) throws -> Bool { try next().decode(type) }
    mutating func decode(_ type: String.Type) throws -> String { try next().decode(type) }
    mutating func decode(_ type: Double.Type) throws -> Double { try next().decode(type) }
    mutating func decode(_ type: Float.Type) throws -> Float { try next().decode(type) }
    mutating func decode(_ type: Int.Type) throws -> Int { try next().decode(type) }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { try next().decode(type) }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { try next().decode(type) }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { try next().decode(type) }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { try next().decode(type) }
    mutating func decode(_ type: UInt.Type) throws -> UInt { try next().decode(type) }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try next().decode(type) }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try next().decode(type) }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try next().decode(type) }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try next().decode(type) }
    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { try next().decode(type) }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws
        -> KeyedDecodingContainer<NestedKey> {
        try next().container(keyedBy: type)
    }
    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer { try next().unkeyedContainer() }
    mutating func superDecoder() throws -> any Decoder { try next() }
}
