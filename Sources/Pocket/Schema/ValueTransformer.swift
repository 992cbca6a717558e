/// A two-way conversion between a JSON value and a Swift value, registered
/// under a tag (`"{date_iso8601}"`) and used wherever a schema has that tag.
///
/// ```swift
/// struct CentsTransformer: PocketValueTransformer {
///     var acceptedTypes: PocketJSONTypes { .number }
///     func value(from json: PocketJSONValue) throws -> Decimal { Decimal(json.int!) / 100 }
///     func json(from value: Decimal) throws -> PocketJSONValue { .int(NSDecimalNumber(decimal: value * 100).intValue) }
/// }
/// registry.register(CentsTransformer(), for: "{cents}")
/// ```
public protocol PocketValueTransformer: Sendable {
    /// The Swift value the transformer makes from JSON, and writes back.
    associatedtype Value: Sendable
    /// The JSON types this transformer reads; a value of another type fails
    /// validation with a type mismatch before `value(from:)` is called.
    /// Default: `.string`, what most transformers (dates, URLs) read.
    var acceptedTypes: PocketJSONTypes { get }
    /// Response direction: the Swift value for a JSON value of an accepted
    /// type. Throw (any error) to reject it; the message becomes part of a
    /// `.schemaTransformFailed` error.
    func value(from json: PocketJSONValue) throws -> Value
    /// Request direction: the JSON value for a Swift value.
    func json(from value: Value) throws -> PocketJSONValue
}

extension PocketValueTransformer {
    /// Strings only.
    public var acceptedTypes: PocketJSONTypes { .string }
}

/// A set of JSON types, for `PocketValueTransformer.acceptedTypes`.
public struct PocketJSONTypes: OptionSet, Sendable, Hashable {
    /// The bits.
    public let rawValue: Int
    /// A set from its bits.
    public init(rawValue: Int) { self.rawValue = rawValue }
    /// JSON strings.
    public static let string = PocketJSONTypes(rawValue: 1)
    /// JSON numbers.
    public static let number = PocketJSONTypes(rawValue: 2)
    /// `true` and `false`.
    public static let bool = PocketJSONTypes(rawValue: 4)
    /// Arrays.
    public static let array = PocketJSONTypes(rawValue: 8)
    /// Dictionaries.
    public static let object = PocketJSONTypes(rawValue: 16)
    /// `null`.
    public static let null = PocketJSONTypes(rawValue: 32)
    /// Every JSON type.
    public static let all: PocketJSONTypes = [.string, .number, .bool, .array, .object, .null]

    func accepts(_ value: PocketJSONValue) -> Bool {
        switch value {
        case .string: return contains(PocketJSONTypes.string)
        case .int, .double: return contains(PocketJSONTypes.number)
        case .bool: return contains(PocketJSONTypes.bool)
        case .array: return contains(PocketJSONTypes.array)
        case .object: return contains(PocketJSONTypes.object)
        case .null: return contains(PocketJSONTypes.null)
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
    let accepted: PocketJSONTypes
    let valueType: Any.Type
    let toValue: @Sendable (PocketJSONValue) throws -> any Sendable
    let toJSON: @Sendable (any Sendable) throws -> PocketJSONValue?

    init<T: PocketValueTransformer>(_ t: T) {
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
