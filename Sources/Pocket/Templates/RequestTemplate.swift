#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A named set of request settings, as MTPocket's request templates: register
/// one on a client, then build requests from it anywhere. A request made from
/// a template copies it and merges, the request's own values winning.
///
/// ```swift
/// var api = RequestTemplate(baseURL: URL(string: "http://button.example/")!)
/// api.timeouts = Timeouts(read: .seconds(2))
/// api.headers.authorize(try .basic(username: user, password: password))
/// api.query["sessionId"] = "fewoijalkfsdjlfsdhlaes"
/// client.register(api, as: "api")
/// let request = try client.request(.get, "needles/:id", template: "api", identifiers: [7])
/// ```
///
/// Every setting is optional; an unset one falls back to the client's
/// (`Configuration`). A value, `Codable` and `Hashable`, like `PocketRequest`.
public struct PocketRequestTemplate: Sendable, Hashable, Codable {
    /// Base URL of relative paths; nil: the client's `Configuration.baseURL`.
    public var baseURL: URL?
    /// Format (headers, validation, decoding); nil: the client's `Configuration.format` (JSON by default).
    public var format: PocketContentFormat?
    /// Timeouts; nil: the client's.
    public var timeouts: PocketTimeouts?
    /// Header fields every request from the template carries; a request's
    /// field of the same name replaces one. Empty by default.
    public var headers: PocketHeaders
    /// Query parameters every request carries (MTPocket's `params`), merged
    /// under the request's parameters (a request's `.null` removes one).
    /// Empty by default. They may also fill `{name}` placeholders.
    public var query: [String: PocketParameterValue]
    /// Array and boolean style of the query; nil: the client's `Configuration.queryEncoding`.
    public var queryEncoding: PocketQueryEncoding?
    /// Validation of the responses; nil: the client's `Configuration.validation` (off by default).
    public var validation: PocketValidation?
    /// TLS settings; nil: the client's.
    public var tls: PocketTLSConfiguration?
    /// `Expect: 100-continue` wait for bodies; nil: none.
    public var expectContinue: Duration?
    /// How redirects are followed; nil: the client's `Configuration.redirects`.
    public var redirects: PocketRedirectPolicy?

    /// A template; everything unset (nil, empty) by default, falling back to the client.
    public init(baseURL: URL? = nil, format: PocketContentFormat? = nil, timeouts: PocketTimeouts? = nil,
                headers: PocketHeaders = [:], query: [String: PocketParameterValue] = [:],
                queryEncoding: PocketQueryEncoding? = nil, validation: PocketValidation? = nil) {
        self.baseURL = baseURL
        self.format = format
        self.timeouts = timeouts
        self.headers = headers
        self.query = query
        self.queryEncoding = queryEncoding
        self.validation = validation
    }

    /// A request from this template, with `configuration` as the fallback
    /// for what the template leaves unset, and the arguments winning over both.
    /// See `PocketRequest.init(_:path:baseURL:…)` for `path`, `identifiers` and `parameters`.
    public func makeRequest(_ method: PocketMethod = .get, _ path: String, identifiers: [PocketParameterValue] = [],
                            parameters: [String: PocketParameterValue] = [:], headers: PocketHeaders = [:],
                            body: PocketRequestBody? = nil, format: PocketContentFormat? = nil,
                            configuration: PocketClient.Configuration = PocketClient.Configuration()) throws -> PocketRequest {
        var merged = configuration.defaultQuery
        merged.merge(query) { _, mine in mine }
        merged.merge(parameters) { _, own in own }
        var allHeaders = self.headers
        allHeaders.merge(headers)
        var request = try PocketRequest(method, path: path, baseURL: baseURL ?? configuration.baseURL,
                                  identifiers: identifiers, parameters: merged, headers: allHeaders, body: body,
                                  format: format ?? self.format ?? configuration.format,
                                  queryEncoding: queryEncoding ?? configuration.queryEncoding)
        request.timeouts = timeouts
        request.validation = validation
        request.tls = tls
        request.expectContinue = expectContinue
        request.redirects = redirects
        return request
    }
}
