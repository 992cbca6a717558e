#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension SchemaRegistry {
    /// A URL from a path template and parameters, as TyphoonRestClient
    /// builds one: each `{name}` in `path` takes the parameter `name`; the
    /// other parameters become the query, in order; `null` parameters are
    /// left out. Parameters are first held to `schema` (if given) in the
    /// request direction, so `.mapped(date)` at `{date_iso8601}` is written
    /// as its string and a missing required one fails as a schema does.
    ///
    /// ```swift
    /// let url = try schemas.url("issues/{issue_id}.json", relativeTo: base,
    ///                           parameters: ["issue_id": 42, "include": "journals"],
    ///                           schema: .pathParameters(for: RequestToGetIssue.self))
    /// // base/issues/42.json?include=journals
    /// ```
    ///
    /// Values are percent-encoded (all but RFC 3986 unreserved characters).
    /// Strings, numbers and booleans fill both path and query; an array
    /// repeats its key in the query. Throws `.missingPathParameter` for a
    /// `{name}` with no value, `.invalidURL` for a dictionary value.
    public func url(_ path: String, relativeTo base: URL, parameters: JSONValue = [:], schema: Schema? = nil,
                    options: SchemaOptions? = nil) throws -> URL {
        var params = parameters
        if let schema { params = try encode(parameters, schema: schema, options: options) }
        guard case let .object(object) = params else {
            throw PocketError(.invalidURL, "path parameters must be a dictionary, not \(params.typeName)")
        }
        var used = Set<String>()
        var filled = ""
        var rest = Substring(path)
        while let open = rest.firstIndex(of: "{") {
            guard let close = rest[open...].firstIndex(of: "}") else { break }
            filled += rest[..<open]
            let name = String(rest[rest.index(after: open)..<close])
            guard let value = object[name], !value.isNull else {
                throw PocketError(.missingPathParameter, "path '\(path)' needs parameter '\(name)', which has no value")
            }
            filled += Self.percentEncoded(try Self.text(value, name: name, inPath: true))
            used.insert(name)
            rest = rest[rest.index(after: close)...]
        }
        filled += rest
        var query: [String] = []
        for member in object.members where !used.contains(member.key) && !member.value.isNull {
            let key = Self.percentEncoded(member.key)
            if case let .array(elements) = member.value {
                for element in elements where !element.isNull {
                    query.append(key + "=" + Self.percentEncoded(try Self.text(element, name: member.key, inPath: false)))
                }
            } else {
                query.append(key + "=" + Self.percentEncoded(try Self.text(member.value, name: member.key, inPath: false)))
            }
        }
        var text = base.absoluteString
        if !text.hasSuffix("/"), !filled.hasPrefix("/") { text += "/" }
        if text.hasSuffix("/"), filled.hasPrefix("/") { filled.removeFirst() }
        text += filled
        if !query.isEmpty { text += (filled.contains("?") ? "&" : "?") + query.joined(separator: "&") }
        guard let url = URL(string: text) else { throw PocketError(.invalidURL, "not a URL: \(text)") }
        return url
    }

    private static func text(_ value: JSONValue, name: String, inPath: Bool) throws -> String {
        switch value {
        case let .string(s): return s
        case let .bool(b): return b ? "true" : "false"
        case .int, .double: return value.description
        case .array where !inPath:
            throw PocketError(.invalidURL, "query parameter '\(name)' is an array of arrays or dictionaries")
        default:
            throw PocketError(.invalidURL,
                              "parameter '\(name)' is \(value.typeName == "array" ? "an" : "a") \(value.typeName); a URL takes strings, numbers and booleans")
        }
    }

    /// Percent-encodes everything but RFC 3986 unreserved characters.
    static func percentEncoded(_ s: String) -> String {
        var out = ""
        out.reserveCapacity(s.utf8.count)
        let hex = Array("0123456789ABCDEF".unicodeScalars)
        for b in s.utf8 {
            switch b {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."),
                 UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(b))
            default:
                out += "%"
                out.unicodeScalars.append(hex[Int(b >> 4)])
                out.unicodeScalars.append(hex[Int(b & 0xF)])
            }
        }
        return out
    }
}
