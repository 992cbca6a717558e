/// A two-way conversion between a JSON value and a Swift value, registered
/// under a tag (`"{date_iso8601}"`) and used wherever a schema has that tag.
///
/// ```swift
/// struct CentsTransformer: ValueTransformer {
///     var acceptedTypes: JSONTypes { .number }
///     func value(from json: JSONValue) throws -> Decimal { Decimal(json.int!) / 100 }
///     func json(from value: Decimal) throws -> JSONValue { .int(NSDecimalNumber(decimal: value * 100).intValue) }
/// }
/// registry.register(CentsTransformer(), for: "{cents}")
/// ```
public protocol ValueTransformer: Sendable {
    associatedtype Value: Sendable
    /// The JSON types this transformer reads; a value of another type fails
    /// validation with a type mismatch before `value(from:)` is called.
    /// Default: `.string`, what most transformers (dates, URLs) read.
    var acceptedTypes: JSONTypes { get }
    /// Response direction: the Swift value for a JSON value of an accepted
    /// type. Throw (any error) to reject it; the message becomes part of a
    /// `.schemaTransformFailed` error.
    func value(from json: JSONValue) throws -> Value
    /// Request direction: the JSON value for a Swift value.
    func json(from value: Value) throws -> JSONValue
}

extension ValueTransformer {
    /// Strings only.
    public var acceptedTypes: JSONTypes { .string }
}

/// A set of JSON types, for `ValueTransformer.acceptedTypes`.
public struct JSONTypes: OptionSet, Sendable, Hashable {
    /// The bits.
    public let rawValue: Int
    /// A set from its bits.
    public init(rawValue: Int) { self.rawValue = rawValue }
    /// JSON strings.
    public static let string = JSONTypes(rawValue: 1)
    /// JSON numbers.
    public static let number = JSONTypes(rawValue: 2)
    /// `true` and `false`.
    public static let bool = JSONTypes(rawValue: 4)
    /// Arrays.
    public static let array = JSONTypes(rawValue: 8)
    /// Dictionaries.
    public static let object = JSONTypes(rawValue: 16)
    /// `null`.
    public static let null = JSONTypes(rawValue: 32)
    /// Every JSON type.
    public static let all: JSONTypes = [.string, .number, .bool, .array, .object, .null]

    func accepts(_ value: JSONValue) -> Bool {
        switch value {
        case .string: return contains(JSONTypes.string)
        case .int, .double: return contains(JSONTypes.number)
        case .bool: return contains(JSONTypes.bool)
        case .array: return contains(JSONTypes.array)
        case .object: return contains(JSONTypes.object)
        case .null: return contains(JSONTypes.null)
        case .mapped: return false
        }
    }

    var names: String {
        var parts: [String] = []
        if contains(.string) { parts.append("string") }
        if contains(.number) { parts.append("number") }
        if contains(.bool) { parts.append("boolean") }
        if contains(.array) { parts.append("array") }
        if contains(.object) { parts.append("dictionary") }
        if contains(.null) { parts.append("null") }
        return parts.joined(separator: " or ")
    }
}

/// A registered transformer with its types erased.
struct AnyValueTransformer: Sendable {
    let accepted: JSONTypes
    let valueType: Any.Type
    let toValue: @Sendable (JSONValue) throws -> any Sendable
    let toJSON: @Sendable (any Sendable) throws -> JSONValue?

    init<T: ValueTransformer>(_ t: T) {
        accepted = t.acceptedTypes
        valueType = T.Value.self
        toValue = { try t.value(from: $0) }
        toJSON = { value in
            guard let typed = value as? T.Value else { return nil }
            return try t.json(from: typed)
        }
    }
}

/// A message-only error for transformers and mappers.
struct TransformError: Error, Sendable, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
