/// A JSON value, as parsed from a response body or built for a request body.
///
/// Schemas validate `PocketJSONValue`s and transform them: a value a transformer or
/// an object mapper produced (a `Date`, a model) sits in the tree as
/// `.mapped`, so one tree carries both raw JSON and typed values.
///
/// ```swift
/// let value = try PocketJSONValue(parsing: response.body)
/// let name = value["issues"][0]["project"]["name"].string    // String?
/// ```
public enum PocketJSONValue: Sendable {
    /// `null`.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// A number written without fraction or exponent that fits in `Int`.
    case int(Int)
    /// Any other number.
    case double(Double)
    /// A string, escapes decoded.
    case string(String)
    /// An array, in order.
    case array([PocketJSONValue])
    /// A dictionary, keys in the order they came.
    case object(PocketJSONObject)
    /// A Swift value a value transformer or object mapper made; never produced
    /// by the parser. Written back to JSON only through a schema's reverse
    /// transformers (`PocketSchemaRegistry.encode`).
    case mapped(PocketMappedValue)

    /// Wraps a transformed or mapped Swift value.
    public static func mapped(_ value: any Sendable) -> PocketJSONValue { .mapped(PocketMappedValue(value)) }

    /// The type's name as validation messages say it: `string`, `number`,
    /// `boolean`, `array`, `dictionary`, `null`, or the mapped value's type.
    public var typeName: String {
        switch self {
        case .null: return "null"
        case .bool: return "boolean"
        case .int, .double: return "number"
        case .string: return "string"
        case .array: return "array"
        case .object: return "dictionary"
        case let .mapped(box): return String(describing: type(of: box.value))
        }
    }
}

/// A transformed or mapped Swift value inside a `PocketJSONValue` tree: a box, so
/// the tree's elements stay small whatever the value's size.
public final class PocketMappedValue: Sendable {
    /// The value itself, e.g. a `Date` or a model.
    public let value: any Sendable
    /// Boxes `value`.
    public init(_ value: any Sendable) { self.value = value }
}

extension PocketJSONValue {
    /// The string, or nil for another type.
    public var string: String? { if case let .string(s) = self { return s }; return nil }
    /// The number as `Int` (a double only when it is integral), or nil.
    public var int: Int? {
        switch self {
        case let .int(i): return i
        case let .double(d): return d.rounded() == d && abs(d) < 9.2e18 ? Int(d) : nil
        default: return nil
        }
    }
    /// The number as `Double`, or nil.
    public var double: Double? {
        switch self {
        case let .int(i): return Double(i)
        case let .double(d): return d
        default: return nil
        }
    }
    /// The boolean, or nil.
    public var bool: Bool? { if case let .bool(b) = self { return b }; return nil }
    /// The elements, or nil for another type.
    public var array: [PocketJSONValue]? { if case let .array(a) = self { return a }; return nil }
    /// The dictionary, or nil for another type.
    public var object: PocketJSONObject? { if case let .object(o) = self { return o }; return nil }
    /// True for `null`.
    public var isNull: Bool { if case .null = self { return true }; return false }

    /// The transformed or mapped value as `T` (a `Date`, a model), or nil
    /// when this is not a mapped `T`.
    public func mapped<T>(as type: T.Type = T.self) -> T? {
        if case let .mapped(box) = self { return box.value as? T }
        return nil
    }

    /// The elements of an array of mapped `T` (e.g. what an `{issue}` mapper
    /// made), or nil when this is not an array of them.
    public func mappedArray<T>(of type: T.Type = T.self) -> [T]? {
        guard case let .array(elements) = self else { return nil }
        var result: [T] = []
        result.reserveCapacity(elements.count)
        for element in elements {
            guard let t = element.mapped(as: T.self) else { return nil }
            result.append(t)
        }
        return result
    }

    /// The value for `key` of a dictionary; `.null` when absent or not a dictionary.
    public subscript(key: String) -> PocketJSONValue {
        if case let .object(o) = self, let v = o[key] { return v }
        return .null
    }

    /// The element at `index` of an array; `.null` when out of range or not an array.
    public subscript(index: Int) -> PocketJSONValue {
        if case let .array(a) = self, a.indices.contains(index) { return a[index] }
        return .null
    }
}

extension PocketJSONValue: Equatable {
    /// Structural equality; `int` and `double` compare by numeric value;
    /// mapped values are equal when both are the same `Equatable` value.
    public static func == (lhs: PocketJSONValue, rhs: PocketJSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): return true
        case let (.bool(a), .bool(b)): return a == b
        case let (.int(a), .int(b)): return a == b
        case (.int, .double), (.double, .int), (.double, .double): return lhs.double == rhs.double
        case let (.string(a), .string(b)): return a == b
        case let (.array(a), .array(b)): return a == b
        case let (.object(a), .object(b)): return a == b
        case let (.mapped(a), .mapped(b)): return a === b || isEqual(a.value, b.value)
        default: return false
        }
    }

    private static func isEqual(_ a: any Sendable, _ b: any Sendable) -> Bool {
        guard let a = a as? any Equatable else { return false }
        return a.isEqual(to: b)
    }
}

extension Equatable {
    fileprivate func isEqual(to other: Any) -> Bool {
        guard let other = other as? Self else { return false }
        return self == other
    }
}

extension PocketJSONValue: ExpressibleByNilLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByStringLiteral, ExpressibleByArrayLiteral,
    ExpressibleByDictionaryLiteral {
    /// `nil` → `.null`.
    public init(nilLiteral: ()) { self = .null }
    /// `true` → `.bool`.
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    /// `2` → `.int`.
    public init(integerLiteral value: Int) { self = .int(value) }
    /// `1.5` → `.double`.
    public init(floatLiteral value: Double) { self = .double(value) }
    /// `"text"` → `.string`.
    public init(stringLiteral value: String) { self = .string(value) }
    /// `[1, 2]` → `.array`.
    public init(arrayLiteral elements: PocketJSONValue...) { self = .array(elements) }
    /// `["a": 1]` → `.object`, keys in the order written.
    public init(dictionaryLiteral elements: (String, PocketJSONValue)...) {
        self = .object(PocketJSONObject(elements))
    }
}

extension PocketJSONValue: CustomStringConvertible {
    /// Compact JSON; a mapped value prints as its Swift description in angle brackets.
    public var description: String { JSONWriter.string(self, pretty: false) }
}

/// A JSON dictionary that keeps its keys in the order they came.
///
/// Lookups scan the keys (fast for the dozens of keys API objects have);
/// objects with more than `indexThreshold` keys also keep a hash index.
/// The parser rejects a key given twice; built by hand, a repeated key
/// keeps its first place and its last value.
public struct PocketJSONObject: Sendable, Equatable {
    /// The members in order.
    public private(set) var members: [(key: String, value: PocketJSONValue)]
    private var index: [String: Int]?

    static let indexThreshold = 24

    /// An empty dictionary.
    public init() { members = [] }

    /// A dictionary of these members, in this order.
    public init(_ members: [(String, PocketJSONValue)]) {
        self.members = []
        self.members.reserveCapacity(members.count)
        for (key, value) in members { self[key] = value }
    }

    init(members: [(key: String, value: PocketJSONValue)]) {
        self.members = members
        buildIndexIfLarge()
    }

    private mutating func buildIndexIfLarge() {
        guard members.count > Self.indexThreshold else { index = nil; return }
        var index = [String: Int](minimumCapacity: members.count)
        for (i, member) in members.enumerated() { index[member.key] = i }
        self.index = index
    }

    /// Number of members.
    public var count: Int { members.count }
    /// The keys in order.
    public var keys: [String] { members.map(\.key) }

    /// The position of the member named `key` (keys are unique: the parser
    /// rejects a repeated key, and setting one replaces its value).
    func position(of key: String) -> Int? {
        if let index { return index[key] }
        var i = 0
        while i < members.count {
            if members[i].key == key { return i }
            i += 1
        }
        return nil
    }

    /// The value for `key`, or nil. Setting nil removes the key; setting a
    /// new key appends it.
    public subscript(key: String) -> PocketJSONValue? {
        get { position(of: key).map { members[$0].value } }
        set {
            if let i = position(of: key) {
                if let newValue {
                    members[i].value = newValue
                } else {
                    members.remove(at: i)
                    buildIndexIfLarge()
                }
            } else if let newValue {
                members.append((key: key, value: newValue))
                if index != nil {
                    index![key] = members.count - 1
                } else if members.count > Self.indexThreshold {
                    buildIndexIfLarge()
                }
            }
        }
    }

    /// Replaces the value at member position `i` (used by the validator).
    mutating func setValue(_ value: PocketJSONValue, at i: Int) { members[i].value = value }

    /// Removes the members at `positions` (ascending).
    mutating func removeMembers(at positions: [Int]) {
        for i in positions.reversed() { members.remove(at: i) }
        buildIndexIfLarge()
    }

    /// Same keys with equal values, in any order.
    public static func == (lhs: PocketJSONObject, rhs: PocketJSONObject) -> Bool {
        guard lhs.count == rhs.count else { return false }
        for member in lhs.members {
            guard let other = rhs[member.key], other == member.value else { return false }
        }
        return true
    }
}
