#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension PocketRequestBody {
    /// `value` encoded as JSON, as bytes (replayable, `Content-Length`).
    ///
    /// The default encoder sorts keys, so the same value always gives the same
    /// bytes (an archived request compares and hashes equal to a rebuilt one).
    /// Throws `.encodingFailed` (the `EncodingError` as `underlying`), e.g.
    /// for a non-finite `Double`. The `Content-Type` comes from the request's
    /// format (JSON by default) or its headers: a body is bytes only.
    public static func json<T: Encodable>(_ value: T, encoder: JSONEncoder = PocketRequestBody.defaultJSONEncoder())
        throws -> PocketRequestBody {
        do {
            return .bytes(try encoder.encode(value))
        } catch {
            throw PocketError(.encodingFailed, "cannot encode \(T.self) as JSON: \(error)", underlying: error)
        }
    }

    /// A `JSONEncoder` with sorted keys and unescaped slashes: `.json`'s default.
    public static func defaultJSONEncoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }

    /// `fields` as `application/x-www-form-urlencoded` (HTML's form
    /// encoding: UTF-8, `+` for a space, everything but `A–Z a–z 0–9 - . _ ~`
    /// percent-encoded; keys in order; nested values and arrays as in
    /// `PocketQueryEncoding`, brackets by default). Use with `format: .form`
    /// (or a `Content-Type` header).
    public static func form(_ fields: [String: PocketParameterValue], encoding: PocketQueryEncoding = PocketQueryEncoding()) -> PocketRequestBody {
        .bytes(Data(encoding.encode(fields, spaceAsPlus: true).utf8))
    }
}
