/// A value for a path placeholder, an identifier, a query parameter or a
/// form field: text, a number, a boolean, an array, a nested dictionary, or
/// `null` (skipped).
///
/// Literals build it directly, so parameters read like the dictionaries the
/// Objective-C libraries took:
///
/// ```swift
/// let query: [String: PocketParameterValue] = ["page": 2, "tags": ["a", "b"], "filter": ["state": "open"], "project_id": nil]
/// let optional: Int? = nil
/// let more: [String: PocketParameterValue] = ["project_id": PocketParameterValue(optional)]   // null: skipped
/// ```
///
/// `Codable` and `Hashable`, so templates and archived requests that hold
/// parameters stay values.
public enum PocketParameterValue: Sendable, Hashable, Codable {
    /// Text, percent-encoded where it goes.
    case string(String)
    /// An integer, written in decimal.
    case integer(Int)
    /// A floating-point number, written as Swift's shortest round-trip form (`1.5`).
    case double(Double)
    /// A boolean: `true`/`false` (or `1`/`0`, `PocketQueryEncoding.boolStyle`).
    case bool(Bool)
    /// A list: comma-joined in a path, per `PocketQueryEncoding.arrayStyle` in a query.
    case array([PocketParameterValue])
    /// Nested fields, `key[sub]=value` in a query (not allowed in a path).
    case dictionary([String: PocketParameterValue])
    /// No value: a query parameter or form field is left out, an identifier
    /// removes its `:placeholder`, a `{placeholder}` is an error.
    case null

    /// `value`'s text (`LosslessStringConvertible`: `Int`, `String`, `Double`,
    /// `Bool`, `Character`, …), or `.null` for nil. Integers and booleans keep
    /// their kind, so `Bool` follows `PocketQueryEncoding.boolStyle`.
    public init<T: LosslessStringConvertible>(_ value: T?) {
        switch value {
        case nil: self = .null
        case let v as Int: self = .integer(v)
        case let v as Bool: self = .bool(v)
        case let v as Double: self = .double(v)
        case let v?: self = .string(v.description)
        }
    }

    /// True for `.null`.
    public var isNull: Bool { self == .null }

    /// Decodes the plain JSON value (`"a"`, `1`, `true`, `[…]`, `{…}`, `null`);
    /// a number with no fraction decodes as `.integer`.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        if c.decodeNil() { self = .null }
        else if let b = try? c.decode(Bool.self) { self = .bool(b) }
        else if let i = try? c.decode(Int.self) { self = .integer(i) }
        else if let d = try? c.decode(Double.self) { self = .double(d) }
        else if let s = try? c.decode(String.self) { self = .string(s) }
        else if let a = try? c.decode([PocketParameterValue].self) { self = .array(a) }
        else { self = .dictionary(try c.decode([String: PocketParameterValue].self)) }
    }

    /// Encodes the plain JSON value.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        switch self {
        case .string(let s): try c.encode(s)
        case .integer(let i): try c.encode(i)
        case .double(let d): try c.encode(d)
        case .bool(let b): try c.encode(b)
        case .array(let a): try c.encode(a)
        case .dictionary(let d): try c.encode(d)
        case .null: try c.encodeNil()
        }
    }
}

extension PocketParameterValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral, ExpressibleByNilLiteral {
    /// `"text"` → `.string`.
    public init(stringLiteral value: String) { self = .string(value) }
    /// `2` → `.integer`.
    public init(integerLiteral value: Int) { self = .integer(value) }
    /// `1.5` → `.double`.
    public init(floatLiteral value: Double) { self = .double(value) }
    /// `true` → `.bool`.
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    /// `[1, 2]` → `.array`.
    public init(arrayLiteral elements: PocketParameterValue...) { self = .array(elements) }
    /// `["a": 1]` → `.dictionary` (a repeated key keeps its last value).
    public init(dictionaryLiteral elements: (String, PocketParameterValue)...) {
        self = .dictionary(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
    /// `nil` → `.null`.
    public init(nilLiteral: ()) { self = .null }
}
