#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

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
