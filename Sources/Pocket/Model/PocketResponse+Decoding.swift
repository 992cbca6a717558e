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

/// Response text in the charset of its `Content-Type` (RFC 9110 §8.3.2).
enum TextCharset {
    /// The lowercased `charset` parameter of a media type, quotes removed.
    static func parameter(of contentType: String?) -> String? {
        guard let contentType else { return nil }
        for part in contentType.split(separator: ";").dropFirst() {
            let kv = part.split(separator: "=", maxSplits: 1)
            guard kv.count == 2, trimmed(kv[0]).lowercased() == "charset" else { continue }
            var v = trimmed(kv[1])
            if v.count >= 2, v.hasPrefix("\""), v.hasSuffix("\"") { v = String(v.dropFirst().dropLast()) }
            return v.isEmpty ? nil : v.lowercased()
        }
        return nil
    }

    /// `s` without leading and trailing spaces and tabs (HTTP's OWS).
    static func trimmed(_ s: Substring) -> String {
        String(s.drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }

    /// Windows-1252's 0x80–0x9F (the rest is Latin-1); 0 marks the five unassigned bytes.
    private static let cp1252High: [UInt16] = [
        0x20AC, 0, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021, 0x02C6, 0x2030, 0x0160, 0x2039, 0x0152, 0, 0x017D, 0,
        0, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013, 0x2014, 0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0, 0x017E, 0x0178,
    ]

    static func decode(_ body: Data, charset: String?) throws -> String {
        func invalid() -> PocketError {
            PocketError(.unsupportedCharset, "response body is not valid \(charset ?? "utf-8")")
        }
        switch charset ?? "utf-8" {
        case "utf-8", "utf8":
            guard let s = String(validating: body, as: UTF8.self) else { throw invalid() }
            return s
        case "us-ascii", "ascii":
            guard !body.contains(where: { $0 >= 0x80 }) else { throw invalid() }
            return String(decoding: body, as: UTF8.self)
        case "iso-8859-1", "latin1", "iso_8859-1", "l1":
            return String(String.UnicodeScalarView(body.map { Unicode.Scalar($0) }))
        case "windows-1252", "cp1252":
            var scalars = String.UnicodeScalarView()
            for b in body {
                if (0x80...0x9F).contains(b) {
                    let u = cp1252High[Int(b) - 0x80]
                    guard u != 0, let scalar = Unicode.Scalar(u) else { throw invalid() }
                    scalars.append(scalar)
                } else {
                    scalars.append(Unicode.Scalar(b))
                }
            }
            return String(scalars)
        case "utf-16", "utf-16le", "utf-16be":
            guard body.count % 2 == 0 else { throw invalid() }
            var bytes = Array(body)
            var little = charset == "utf-16le"
            if charset == "utf-16", bytes.count >= 2 {
                if bytes[0] == 0xFF && bytes[1] == 0xFE { little = true; bytes.removeFirst(2) }
                else if bytes[0] == 0xFE && bytes[1] == 0xFF { bytes.removeFirst(2) }
            }
            let units = stride(from: 0, to: bytes.count, by: 2).map { i in
                little ? UInt16(bytes[i]) | UInt16(bytes[i + 1]) << 8 : UInt16(bytes[i]) << 8 | UInt16(bytes[i + 1])
            }
            guard let s = String(validating: units, as: UTF16.self) else { throw invalid() }
            return s
        default:
            throw PocketError(.unsupportedCharset, "charset \(charset!) is not supported (utf-8, us-ascii, iso-8859-1, windows-1252, utf-16)")
        }
    }
}
