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
    /// let r = try Request(path: "companies/:company_id/employee/:id", baseURL: base, identifiers: [3, [2, 4]])
    /// // → http://host/companies/3/employee/2,4
    /// // TyphoonRestClient: "{placeholders}" from parameters; the rest become the query
    /// let i = try Request(path: "issues/{issue_id}.json", baseURL: base, parameters: ["issue_id": 42, "include": "journals"])
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
