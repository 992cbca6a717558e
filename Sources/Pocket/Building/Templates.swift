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
/// var api = PocketRequestTemplate(baseURL: URL(string: "http://button.example/")!)
/// api.timeouts = PocketTimeouts(read: .seconds(2))
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

/// A client's named templates, shared with its scoped clients.
final class TemplateRegistry: Sendable {
    private let templates = Lock<[String: PocketRequestTemplate]>([:])

    func register(_ template: PocketRequestTemplate, as name: String) {
        templates.withLock { $0[name] = template }
    }

    func remove(_ name: String) {
        _ = templates.withLock { $0.removeValue(forKey: name) }
    }

    func template(named name: String) -> PocketRequestTemplate? {
        templates.withLock { $0[name] }
    }

    var names: [String] { templates.withLock { $0.keys.sorted() } }
}

extension PocketClient {
    /// Registers `template` under `name` (replacing one of that name), as
    /// MTPocket's `addRequestTemplate:name:`. Thread-safe; scoped clients
    /// made from this client (and the client it was scoped from) share the
    /// registry.
    public func register(_ template: PocketRequestTemplate, as name: String) {
        templates.register(template, as: name)
    }

    /// Removes the template registered as `name`, if any.
    public func removeTemplate(named name: String) {
        templates.remove(name)
    }

    /// The template registered as `name`, or nil.
    public func template(named name: String) -> PocketRequestTemplate? {
        templates.template(named: name)
    }

    /// A request for `path` against the client's `baseURL`, or built from
    /// the template registered as `template` (MTPocket's
    /// `requestWithTemplate:path:identifiers:method:body:params:`). The
    /// request's own values win over the template's, which win over the
    /// client's configuration. Nothing is sent: pass it to `send`, keep it,
    /// archive it.
    ///
    /// ```swift
    /// let request = try client.request(.get, "companies/:company_id/employee/:id",
    ///                                  template: "api", identifiers: [3, [2, 4]])
    /// let employees = try await client.send(request).validate().decode([Employee].self)
    /// ```
    ///
    /// Throws `.unknownTemplate` for a name nothing is registered under, and
    /// the errors of `PocketRequest.init(_:path:baseURL:…)`.
    public func request(_ method: PocketMethod = .get, _ path: String, template: String? = nil,
                        identifiers: [PocketParameterValue] = [], parameters: [String: PocketParameterValue] = [:],
                        headers: PocketHeaders = [:], body: PocketRequestBody? = nil,
                        format: PocketContentFormat? = nil) throws -> PocketRequest {
        var base = PocketRequestTemplate()
        if let template {
            guard let registered = templates.template(named: template) else {
                throw PocketError(.unknownTemplate, "no template is registered as '\(template)'"
                                  + " (registered: \(templates.names.joined(separator: ", ")))")
            }
            base = registered
        }
        return try base.makeRequest(method, path, identifiers: identifiers, parameters: parameters,
                                    headers: headers, body: body, format: format, configuration: configuration)
    }

    /// A client for a part of this one's API, sharing its connection pool,
    /// engine threads and templates: `path` is appended to the base URL
    /// (`api/v2` → `http://host/api/v2/…` for relative paths), `headers`
    /// merge over the default headers (sent with every request, as default
    /// headers are), `query` over the default query, and `timeouts`,
    /// `format` and `validation` replace the client's when given.
    ///
    /// ```swift
    /// let github = client.scoped(path: "repos/apple/swift", headers: ["Authorization": "Bearer …"])
    /// let issues = try await github.send(try github.request(.get, "issues", parameters: ["state": "open"]))
    /// ```
    ///
    /// Scoped clients are cheap (no thread, no socket of their own). The
    /// engine stops when the last client sharing it is released, or at the
    /// first `shutdown()` of any of them. Throws `.invalidURL` when `path`
    /// needs a base URL and the client has none.
    public func scoped(path: String? = nil, headers: PocketHeaders = [:], query: [String: PocketParameterValue] = [:],
                       timeouts: PocketTimeouts? = nil, format: PocketContentFormat? = nil,
                       validation: PocketValidation? = nil) throws -> PocketClient {
        var scoped = configuration
        if let path {
            scoped.baseURL = try PocketRequest(path: path, baseURL: configuration.baseURL).url
        }
        scoped.defaultHeaders.merge(headers)
        scoped.defaultQuery.merge(query) { _, new in new }
        if let timeouts { scoped.timeouts = timeouts }
        if let format { scoped.format = format }
        if let validation { scoped.validation = validation }
        return PocketClient(sharing: engine, templates: templates, hub: hub, configuration: scoped)
    }
}
