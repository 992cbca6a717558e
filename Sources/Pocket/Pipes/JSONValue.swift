#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Any JSON value, for what a pipe reads without knowing the model's shape:
/// the record id, paging links in a body, a list under a key.
// TODO(merge): use the api branch's JSON value type if it has one.
enum JSONValue: Codable, Sendable, Hashable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        if c.decodeNil() { self = .null }
        else if let b = try? c.decode(Bool.self) { self = .bool(b) }
        else if let i = try? c.decode(Int64.self) { self = .int(i) }
        else if let d = try? c.decode(Double.self) { self = .double(d) }
        else if let s = try? c.decode(String.self) { self = .string(s) }
        else if let a = try? c.decode([JSONValue].self) { self = .array(a) }
        else { self = .object(try c.decode([String: JSONValue].self)) }
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        switch self {
        case .null: try c.encodeNil()
        case .bool(let b): try c.encode(b)
        case .int(let i): try c.encode(i)
        case .double(let d): try c.encode(d)
        case .string(let s): try c.encode(s)
        case .array(let a): try c.encode(a)
        case .object(let o): try c.encode(o)
        }
    }

    /// The value at a dot-separated key path (`"meta.paging.next"`), or nil.
    func value(at path: String) -> JSONValue? {
        var current = self
        for key in path.split(separator: ".") {
            guard case .object(let o) = current, let v = o[String(key)] else { return nil }
            current = v
        }
        return current
    }

    /// A record id as it goes into a URL: a non-empty string or a number;
    /// nil for null, an empty string, or anything else.
    var idString: String? {
        switch self {
        case .string(let s): return s.isEmpty ? nil : s
        case .int(let i): return String(i)
        case .double(let d): return d == d.rounded() && abs(d) < 1e15 ? String(Int64(d)) : String(d)
        default: return nil
        }
    }

    /// A query parameter value: strings as they are, numbers and booleans
    /// as JSON writes them; nil for null, arrays and objects.
    var parameterString: String? {
        switch self {
        case .bool(let b): return b ? "true" : "false"
        case .string(let s): return s
        case .int, .double: return idString
        default: return nil
        }
    }
}
