#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension PocketRequest {
    /// A request for `path` resolved against `baseURL`: the building block of
    /// templates, scoped clients and pipes.
    ///
    /// ```swift
    /// // MTPocket: ":placeholders" from identifiers, in order
    /// let r = try PocketRequest(path: "companies/:company_id/employee/:id", baseURL: base, identifiers: [3, [2, 4]])
    /// // → http://host/companies/3/employee/2,4
    /// // TyphoonRestClient: "{placeholders}" from parameters; the rest become the query
    /// let i = try PocketRequest(path: "issues/{issue_id}.json", baseURL: base, parameters: ["issue_id": 42, "include": "journals"])
    /// // → http://host/issues/42.json?include=journals
    /// ```
    ///
    /// - `path`: relative (appended to `baseURL`'s path, see below) or an
    ///   absolute `http(s)://` URL, which replaces `baseURL`. May carry
    ///   `:name` and `{name}` placeholders (see `identifiers` and
    ///   `parameters`) and a literal `?query`. The seam between base and path
    ///   is one `/` whatever either side has, so no base segment is lost; runs
    ///   of `/` collapse to one; a trailing `/` is kept.
    /// - `identifiers`: fill `:name` placeholders in order; an array is
    ///   comma-joined; a placeholder left without one is removed; more
    ///   identifiers than placeholders is `.invalidPathTemplate`.
    /// - `parameters`: fill `{name}` placeholders (a missing one is
    ///   `.missingPathParameter`); the others become query parameters
    ///   (`queryEncoding`); `.null` ones are skipped.
    /// - `format`: JSON by default. Writes `Accept` and, when there is a
    ///   body, `Content-Type`, unless `headers` has them.
    ///
    /// Throws `.invalidURL` (no base for a relative path, or the result does
    /// not parse) and `.unsupportedScheme` (not http/https).
    public init(_ method: PocketMethod = .get, path: String, baseURL: URL? = nil,
                identifiers: [PocketParameterValue] = [], parameters: [String: PocketParameterValue] = [:],
                headers: PocketHeaders = [:], body: PocketRequestBody? = nil,
                format: PocketContentFormat = .json, queryEncoding: PocketQueryEncoding = PocketQueryEncoding()) throws {
        var origin = ""
        var template = path
        if let absolute = URLResolution.splitAbsolute(path) {
            origin = absolute.origin
            template = absolute.rest
        }
        var literalQuery = ""
        if let hash = template.firstIndex(of: "#") { template = String(template[..<hash]) }
        if let q = template.firstIndex(of: "?") {
            literalQuery = PercentEncoding.encodeLiteral(String(template[template.index(after: q)...]),
                                                         allowed: PercentEncoding.isQueryLiteral)
            template = String(template[..<q])
        }
        let (filled, unused) = try PathTemplate(template: template).fill(identifiers: identifiers, parameters: parameters)
        let query = [literalQuery, queryEncoding.encode(unused)].filter { !$0.isEmpty }.joined(separator: "&")
        let url = try URLResolution.resolve(origin + filled + (query.isEmpty ? "" : "?" + query), base: baseURL,
                                            extraQuery: "")
        var headers = headers
        if !headers.contains("Accept") { headers["Accept"] = format.accept }
        if let body, !headers.contains("Content-Type"), Self.formatDescribes(body) {
            headers["Content-Type"] = format.contentType
        }
        self.init(method: method, url: url, headers: headers, body: body)
        self.format = format
    }

    /// Whether the format's `Content-Type` is the right one for `body`.
    /// Exhaustive on purpose: a kind of body that brings its own type
    /// (a multipart form's boundary) must answer false here.
    private static func formatDescribes(_ body: PocketRequestBody) -> Bool {
        switch body.source {
        case .bytes, .file, .stream: return true
        case .multipart: return false // its Content-Type carries the boundary
        }
    }
}

/// Joins a base URL, a filled path and query strings into one URL.
///
/// The path is always appended to the base URL's path, whether or not either
/// has a slash at the seam (`http://h/api/v1` + `needles` and
/// `http://h/api/v1/` + `/needles` both give `http://h/api/v1/needles`):
/// unlike RFC 3986 reference resolution, no segment of the base is lost and
/// a leading `/` does not jump to the root. Runs of `/` in the path become
/// one (a trailing `/` is kept: servers tell `items/` from `items`). An
/// absolute `http(s)://` path replaces the base.
enum URLResolution {
    /// `scheme://authority` and the rest of an absolute URL string, or nil for a relative one.
    static func splitAbsolute(_ s: String) -> (origin: String, rest: String)? {
        let bytes = Array(s.utf8)
        guard let first = bytes.first, (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(first | 0x20) else { return nil }
        var i = 1
        while i < bytes.count, isSchemeByte(bytes[i]) { i += 1 }
        guard bytes.count >= i + 3, bytes[i] == UInt8(ascii: ":"), bytes[i + 1] == UInt8(ascii: "/"),
              bytes[i + 2] == UInt8(ascii: "/") else { return nil }
        var end = i + 3
        while end < bytes.count, bytes[end] != UInt8(ascii: "/"), bytes[end] != UInt8(ascii: "?"),
              bytes[end] != UInt8(ascii: "#") {
            end += 1
        }
        return (String(decoding: bytes[..<end], as: UTF8.self), String(decoding: bytes[end...], as: UTF8.self))
    }

    /// RFC 3986 §3.1: ALPHA / DIGIT / "+" / "-" / ".".
    private static func isSchemeByte(_ b: UInt8) -> Bool {
        let l = b | 0x20
        return (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(l) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(b)
            || b == UInt8(ascii: "+") || b == UInt8(ascii: "-") || b == UInt8(ascii: ".")
    }

    /// `path` with every run of slashes collapsed to one.
    static func collapsingSlashes(_ path: String) -> String {
        guard path.contains("//") else { return path }
        var out = ""
        var lastSlash = false
        for c in path {
            if c == "/" {
                if lastSlash { continue }
                lastSlash = true
            } else {
                lastSlash = false
            }
            out.append(c)
        }
        return out
    }

    /// The URL for `origin` + `path` + the non-empty `queries` joined with `&`.
    static func url(origin: String, path: String, queries: [String]) throws -> URL {
        var s = origin
        var p = collapsingSlashes(path)
        if !p.hasPrefix("/") { p = "/" + p }
        s += p
        let query = queries.filter { !$0.isEmpty }.joined(separator: "&")
        if !query.isEmpty { s += "?" + query }
        guard let url = URL(string: s), let scheme = url.scheme?.lowercased() else {
            throw PocketError(.invalidURL, "not a URL: \(s)")
        }
        guard scheme == "http" || scheme == "https" else {
            throw PocketError(.unsupportedScheme, "unsupported URL scheme '\(scheme)': only http and https")
        }
        guard url.host(percentEncoded: true).map({ !$0.isEmpty }) ?? false else {
            throw PocketError(.invalidURL, "URL has no host: \(s)")
        }
        return url
    }

    /// Resolves a filled path (maybe an absolute URL, maybe with `?query`)
    /// against `base`, appending `extraQuery`.
    static func resolve(_ pathAndQuery: String, base: URL?, extraQuery: String) throws -> URL {
        let (origin, basePath, baseQuery): (String, String, String?)
        var rest = pathAndQuery
        if let absolute = splitAbsolute(pathAndQuery) {
            (origin, basePath, baseQuery) = (absolute.origin, "", nil)
            rest = absolute.rest
        } else {
            guard let base else {
                throw PocketError(.invalidURL,
                                  "'\(pathAndQuery)' is a relative path and there is no base URL (set Configuration.baseURL, a template's baseURL, or pass an absolute URL)")
            }
            guard let split = splitAbsolute(base.absoluteString) else {
                throw PocketError(.invalidURL, "base URL is not absolute: \(base.absoluteString)")
            }
            origin = split.origin
            basePath = base.path(percentEncoded: true)
            baseQuery = base.query(percentEncoded: true)
        }
        if let hash = rest.firstIndex(of: "#") { rest = String(rest[..<hash]) }
        var ownQuery: String?
        if let q = rest.firstIndex(of: "?") {
            ownQuery = String(rest[rest.index(after: q)...])
            rest = String(rest[..<q])
        }
        var path = basePath
        if !rest.isEmpty {
            if !path.hasSuffix("/") { path += "/" }
            path += rest.drop { $0 == "/" }
        }
        return try url(origin: origin, path: path, queries: [baseQuery ?? "", ownQuery ?? "", extraQuery])
    }
}
