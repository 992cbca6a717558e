#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The value an empty body decodes to: `response.decode(PocketEmpty.self)` for
/// endpoints that answer 204, or to say "no content expected".
public struct PocketEmpty: Sendable, Hashable, Codable {
    /// The empty value.
    public init() {}
}

/// Types an empty body decodes to without error: `PocketEmpty` and any `Optional` (nil).
protocol EmptyBodyDecodable {
    static var emptyBodyValue: Self { get }
}

extension PocketEmpty: EmptyBodyDecodable {
    static var emptyBodyValue: PocketEmpty { PocketEmpty() }
}

extension Optional: EmptyBodyDecodable {
    static var emptyBodyValue: Optional { nil }
}

extension PocketResponse {
    /// The body decoded as `T` per the request's format (JSON by default).
    ///
    /// - An empty body (204, 205, 304, a HEAD response, an empty 200)
    ///   decodes as `PocketEmpty()` or as nil for an optional `T`, without error;
    ///   as any other type it is `.decodingFailed`.
    /// - `String` decodes as the charset-aware `decodedText()` and `Data` as
    ///   the bytes, whatever the format.
    /// - JSON (`.json`, `.form` formats) goes through `decoder`. A failure is
    ///   `.decodingFailed` whose message names the JSON path, as
    ///   TyphoonRestClient does: `value for key 'category' not found at
    ///   root.issues[1]`. The error carries the head and body; `underlying`
    ///   is the `DecodingError`.
    /// - Text and binary formats decode only `String` and `Data`.
    ///
    /// Decoding does not validate the status: chain `validate()` first when
    /// an error status must not be read as a value.
    ///
    /// When the request had a `schema`, `client.send` has already validated
    /// and mapped the body: `T` is then what the root mapper made, or the
    /// result decoded as `T` (`decoder` unused; see `PocketJSONValue.decode`).
    public func decode<T: Decodable>(_ type: T.Type = T.self, decoder: JSONDecoder = JSONDecoder()) throws -> T {
        if let schemaResult { return try decode(schemaResult, as: T.self) }
        if body.isEmpty, let empty = T.self as? any EmptyBodyDecodable.Type {
            return empty.emptyBodyValue as! T
        }
        if T.self == Data.self { return body as! T }
        if T.self == String.self {
            do { return try decodedText() as! T } catch let error as PocketError {
                throw PocketError(.decodingFailed, error.message, underlying: error, response: head, body: body)
            }
        }
        guard !body.isEmpty else {
            throw PocketError(.decodingFailed, "cannot decode \(T.self) from an empty body (HTTP \(status))",
                              response: head, body: body)
        }
        guard format.decoding == .json else {
            throw PocketError(.decodingFailed,
                              "the \(format.contentType) format decodes only String and Data, not \(T.self)",
                              response: head, body: body)
        }
        do {
            return try decoder.decode(T.self, from: body)
        } catch let error as DecodingError {
            throw PocketError(.decodingFailed, "cannot decode \(T.self): " + DecodingErrorPath.describe(error),
                              underlying: error, response: head, body: body)
        } catch {
            throw PocketError(.decodingFailed, "cannot decode \(T.self): \(error)", response: head, body: body)
        }
    }
}

/// Names where a `DecodingError` happened as a JSON path, `root.issues[1].category`.
enum DecodingErrorPath {
    static func path(_ codingPath: [any CodingKey]) -> String {
        var s = "root"
        for key in codingPath {
            if let i = key.intValue, key.stringValue == "Index \(i)" {
                s += "[\(i)]"
            } else {
                s += "." + key.stringValue
            }
        }
        return s
    }

    static func describe(_ error: DecodingError) -> String {
        switch error {
        case let .keyNotFound(key, context):
            return "value for key '\(key.stringValue)' not found at \(path(context.codingPath)) (\(path(context.codingPath + [key])))"
        case let .valueNotFound(type, context):
            return "expected \(type) but found null at \(path(context.codingPath))"
        case let .typeMismatch(type, context):
            return "expected \(type) at \(path(context.codingPath)): \(context.debugDescription)"
        case let .dataCorrupted(context):
            if context.codingPath.isEmpty { return "the body is not valid JSON: \(context.debugDescription)" }
            return "invalid value at \(path(context.codingPath)): \(context.debugDescription)"
        @unknown default:
            return "\(error)"
        }
    }
}
