#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Turns an `Encodable` value into request parameters (STNetTaskQueue's
/// parameter packing): property names become snake_case keys (the
/// separator is configurable), ignored fields are left out, dates become
/// epoch seconds, milliseconds or ISO 8601 text, nested values stay nested
/// (a query writes them `a[b]=…`), nil optionals are omitted.
///
/// ```swift
/// struct Search: Encodable, Sendable {
///     var userId = 7                  // user_id=7
///     var createdAfter: Date          // created_after=1700000000
///     @Unpacked var cacheKey = "x"    // never sent
/// }
/// let fields = try PocketParameterPacking().pack(Search(createdAfter: date))
/// ```
public struct PocketParameterPacking: Sendable {
    /// How property names become keys.
    public enum KeyStyle: Sendable, Hashable {
        /// As written.
        case unchanged
        /// `userId` → `user_id`, `URLString` → `url_string`, with this separator.
        case snakeCase(separator: String)
    }

    /// How `Date` values are written.
    public enum DateStyle: Sendable {
        /// Seconds since 1970 (an integer when whole): what STNetTaskQueue's example sends.
        case secondsSince1970
        /// Milliseconds since 1970.
        case millisecondsSince1970
        /// ISO 8601 text, e.g. `2023-11-14T22:13:20Z`.
        case iso8601
        /// Your own text.
        case custom(@Sendable (Date) -> String)
    }

    /// `.snakeCase(separator: "_")` by default: the convention of most REST APIs.
    public var keys: KeyStyle
    /// `.secondsSince1970` by default.
    public var dates: DateStyle
    /// Property names (as written in Swift, or as converted) left out, at any
    /// depth; none by default. `@PocketUnpacked` marks a property in the type itself.
    public var ignored: Set<String>

    /// A packing; each parameter defaults as its property says.
    public init(keys: KeyStyle = .snakeCase(separator: "_"), dates: DateStyle = .secondsSince1970, ignored: Set<String> = []) {
        self.keys = keys
        self.dates = dates
        self.ignored = ignored
    }

    /// The packed fields of `value`, which must encode as a keyed container
    /// (a struct or class, or a dictionary with string keys). Throws
    /// `.encodingFailed` otherwise, or when the value cannot be encoded.
    public func pack<T: Encodable>(_ value: T) throws -> [String: PocketParameterValue] {
        if value is PocketNoParameters { return [:] }
        let encoder = JSONEncoder()
        let keys = self.keys
        let ignored = self.ignored
        encoder.keyEncodingStrategy = .custom { path in
            let name = path.last?.stringValue ?? ""
            if ignored.contains(name) { return PackingKey(Self.ignoredMarker) }
            if path.last?.intValue != nil { return path.last! }
            let converted = Self.convert(name, keys)
            return PackingKey(ignored.contains(converted) ? Self.ignoredMarker : converted)
        }
        switch dates {
        case .secondsSince1970: encoder.dateEncodingStrategy = .secondsSince1970
        case .millisecondsSince1970: encoder.dateEncodingStrategy = .millisecondsSince1970
        case .iso8601: encoder.dateEncodingStrategy = .iso8601
        case .custom(let format):
            encoder.dateEncodingStrategy = .custom { date, encoder in
                var container = encoder.singleValueContainer()
                try container.encode(format(date))
            }
        }
        let tree: PocketParameterValue
        do {
            tree = try JSONDecoder().decode(PocketParameterValue.self, from: encoder.encode(value))
        } catch {
            throw PocketError(.encodingFailed, "cannot pack \(T.self) into parameters: \(error)", underlying: error)
        }
        guard case .dictionary(let fields) = Self.stripIgnored(tree) else {
            throw PocketError(.encodingFailed, "\(T.self) does not pack into named parameters (it is not a struct or dictionary)")
        }
        return fields
    }

    /// `name` in `style`: a separator before each word after the first,
    /// words split at lower→upper case and at the end of an acronym.
    static func convert(_ name: String, _ style: KeyStyle) -> String {
        guard case .snakeCase(let separator) = style else { return name }
        let chars = Array(name)
        var out = ""
        for (i, c) in chars.enumerated() {
            if c.isUppercase, i > 0 {
                let previous = chars[i - 1]
                let nextIsLower = i + 1 < chars.count && chars[i + 1].isLowercase
                if previous.isLowercase || previous.isNumber || (previous.isUppercase && nextIsLower) {
                    if !out.hasSuffix(separator) { out += separator }
                }
            }
            out += c.lowercased()
        }
        return out
    }

    /// A key no Swift property can have, given to ignored fields and then removed.
    static let ignoredMarker = "\u{0}ignored"

    static func stripIgnored(_ value: PocketParameterValue) -> PocketParameterValue {
        switch value {
        case .dictionary(let fields):
            var kept: [String: PocketParameterValue] = [:]
            for (key, field) in fields where key != ignoredMarker { kept[key] = stripIgnored(field) }
            return .dictionary(kept)
        case .array(let elements):
            return .array(elements.map(stripIgnored))
        default:
            return value
        }
    }
}

/// A coding key made from a string.
struct PackingKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(_ string: String) { stringValue = string }
    init?(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { return nil }
}
