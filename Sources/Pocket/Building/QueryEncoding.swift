/// How parameters become a query string (or an
/// `application/x-www-form-urlencoded` body).
///
/// Keys and values are percent-encoded per RFC 3986: everything but the
/// unreserved characters (`A–Z a–z 0–9 - . _ ~`) is written `%XX` in UTF-8,
/// brackets of nested keys included (`a%5B%5D=1` on the wire is `a[]=1`).
/// Parameters are written in key order, so a request built twice has the
/// same URL (and the same hash). `.null` values are left out.
///
/// ```swift
/// var encoding = QueryEncoding()
/// encoding.arrayStyle = .commaSeparated         // ids=1,2
/// ```
public struct PocketQueryEncoding: Sendable, Hashable, Codable {
    /// How an array value is written.
    public enum ArrayStyle: String, Sendable, Hashable, Codable {
        /// `a[]=1&a[]=2` (Rails, PHP, AFNetworking's default).
        case brackets
        /// `a[0]=1&a[1]=2`.
        case indexed
        /// `a=1&a=2` (Go, Python, most Java servers).
        case repeated
        /// `a=1,2`: one field, elements comma-joined (a comma inside an element is `%2C`).
        case commaSeparated
    }

    /// How a boolean value is written.
    public enum BoolStyle: String, Sendable, Hashable, Codable {
        /// `true` / `false`.
        case literal
        /// `1` / `0`.
        case numeric
    }

    /// `.brackets` by default: the convention of AFNetworking and MTPocket's
    /// Rails backends, and the only style that keeps a one-element array an
    /// array on those servers.
    public var arrayStyle: ArrayStyle
    /// `.literal` (`true`/`false`) by default: what JSON-minded APIs expect.
    public var boolStyle: BoolStyle

    /// Brackets for arrays and `true`/`false` unless told otherwise.
    public init(arrayStyle: ArrayStyle = .brackets, boolStyle: BoolStyle = .literal) {
        self.arrayStyle = arrayStyle
        self.boolStyle = boolStyle
    }

    /// `parameters` as `key=value` pairs joined with `&`, already
    /// percent-encoded; empty for no (or only null) parameters.
    ///
    /// Nested dictionaries are written `a[b]=1`; arrays follow `arrayStyle`,
    /// except that containers inside an array are always indexed
    /// (`a[0][b]=1`), since the flat styles cannot express them. An empty
    /// array or dictionary writes nothing, in every style.
    public func encode(_ parameters: [String: PocketParameterValue]) -> String {
        encode(parameters, spaceAsPlus: false)
    }

    func encode(_ parameters: [String: PocketParameterValue], spaceAsPlus: Bool) -> String {
        var out = ""
        for key in parameters.keys.sorted() {
            append(parameters[key]!, key: key, to: &out, spaceAsPlus: spaceAsPlus)
        }
        return out
    }

    private func scalar(_ value: PocketParameterValue) -> String? {
        switch value {
        case .string(let s): return s
        case .integer(let i): return String(i)
        case .double(let d): return d.description
        case .bool(let b): return boolStyle == .literal ? (b ? "true" : "false") : (b ? "1" : "0")
        case .array, .dictionary, .null: return nil
        }
    }

    private func append(_ value: PocketParameterValue, key: String, to out: inout String, spaceAsPlus: Bool) {
        func field(_ k: String, _ v: String) {
            if !out.isEmpty { out += "&" }
            out += PercentEncoding.encode(k, spaceAsPlus: spaceAsPlus)
            out += "="
            out += PercentEncoding.encode(v, spaceAsPlus: spaceAsPlus)
        }
        switch value {
        case .null:
            return
        case .dictionary(let d):
            for k in d.keys.sorted() { append(d[k]!, key: "\(key)[\(k)]", to: &out, spaceAsPlus: spaceAsPlus) }
        case .array(let elements):
            let nested = elements.contains { if case .array = $0 { return true }; if case .dictionary = $0 { return true }; return false }
            let style = nested ? .indexed : arrayStyle
            switch style {
            case .brackets:
                for e in elements { append(e, key: key + "[]", to: &out, spaceAsPlus: spaceAsPlus) }
            case .indexed:
                for (i, e) in elements.enumerated() { append(e, key: "\(key)[\(i)]", to: &out, spaceAsPlus: spaceAsPlus) }
            case .repeated:
                for e in elements { append(e, key: key, to: &out, spaceAsPlus: spaceAsPlus) }
            case .commaSeparated:
                let parts = elements.compactMap(scalar)
                if parts.isEmpty { return }
                if !out.isEmpty { out += "&" }
                out += PercentEncoding.encode(key, spaceAsPlus: spaceAsPlus) + "="
                out += parts.map { PercentEncoding.encode($0, spaceAsPlus: spaceAsPlus) }.joined(separator: ",")
            }
        default:
            field(key, scalar(value)!)
        }
    }
}
