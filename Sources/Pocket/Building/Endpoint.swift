#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A request described as a type (TyphoonRestClient's `TRCRequest`,
/// STNetTaskQueue's `STNetTask`): method, path with `{placeholders}`,
/// parameters, headers, body, and what the response becomes — plus its own
/// retry policy and timeout. Everything but `path` has a default.
///
/// ```swift
/// struct GetIssue: PocketEndpoint {
///     typealias Output = Issue                     // Decodable: validated (2xx) and decoded
///     let id: Int
///     var path: String { "issues/{id}.json" }
///     var pathParameters: [String: PocketParameterValue] { ["id": .integer(id)] }
///     var retryPolicy: PocketRetryPolicy? { PocketRetryPolicy(maxAttempts: 3) }
/// }
///
/// struct CreatePost: PocketEndpoint {
///     typealias Output = Post
///     struct Parameters: Encodable, Sendable { var title: String; var userId: Int; @Unpacked var draft = "" }
///     var method: HTTPMethod { .post }
///     var path: String { "posts" }
///     let parameters: Parameters                   // packed: {"title": …, "user_id": …} as the JSON body
/// }
///
/// let issue = try await client.send(GetIssue(id: 42))   // against Configuration.baseURL
/// ```
///
/// Parameters are packed from an `Encodable` value (`PocketParameterPacking`:
/// snake_case keys, ignored fields, date transforms). GET, HEAD and DELETE
/// put them in the query; other methods in the body, in the endpoint's
/// `format` (the client's, JSON by default; `.form` for a form body). A packed parameter
/// named like a `{placeholder}` fills it and is not sent again.
public protocol PocketEndpoint: Sendable {
    /// What `process` makes of the response.
    associatedtype Output: Sendable
    /// The packed parameters; `PocketNoParameters` by default.
    associatedtype Parameters: Encodable & Sendable = PocketNoParameters

    /// `.get` by default.
    var method: PocketMethod { get }
    /// Relative to the client's `baseURL` (or an absolute URL), with
    /// `{name}` placeholders filled from `pathParameters` and the packed parameters.
    var path: String { get }
    /// Values for `{name}` placeholders; none by default.
    var pathParameters: [String: PocketParameterValue] { get }
    /// Query parameters besides the packed ones; none by default.
    var query: [String: PocketParameterValue] { get }
    /// Header fields; none by default (the format writes `Accept` and `Content-Type`).
    var headers: PocketHeaders { get }
    /// The value packed into parameters (see the type's doc).
    var parameters: Parameters { get }
    /// How `parameters` are packed: snake_case keys, dates as epoch seconds by default.
    var packing: PocketParameterPacking { get }
    /// An explicit body; nil (the default) sends the packed parameters as
    /// the body for methods other than GET, HEAD and DELETE.
    var body: PocketRequestBody? { get }
    /// The body and response format; nil (the default) uses the client's
    /// `Configuration.format` (JSON unless changed).
    var format: PocketContentFormat? { get }
    /// This endpoint's retry policy; nil (the default) uses the client's.
    var retryPolicy: PocketRetryPolicy? { get }
    /// A total deadline for each attempt; nil (the default) uses the client's timeouts.
    var timeout: Duration? { get }
    /// A request template registered on the client (`client.register(_:as:)`)
    /// to build from: its base URL, headers, query and timeouts; nil (the
    /// default) builds from the client's configuration.
    var template: String? { get }
    /// Middleware for this endpoint's requests, after the client's; none by default.
    var middleware: [any PocketMiddleware] { get }
    /// The key endpoint observers subscribe to; the `path` template by default,
    /// so one observer hears every `GetIssue` whatever its id.
    var observerKey: String { get }
    /// The schema the response is held to in `send`, before `process`
    /// (`PocketRequest.schema`). Default: `TypeName.response.json` in the client's
    /// `Configuration.schemas.resources` when that file exists, else none.
    var responseSchema: PocketSchema? { get }
    /// The schema the URL parameters (path placeholders, query, packed
    /// parameters that go to the URL) are held to before anything is sent.
    /// Default: `TypeName.path.json` when that file exists, else none.
    var pathParametersSchema: PocketSchema? { get }
    /// The schema packed parameters sent as the body are held to before
    /// anything is sent. Default: `TypeName.request.json` when that file exists, else none.
    var requestSchema: PocketSchema? { get }
    /// This endpoint's error parser (`PocketRequest.errorParser`), in place of the
    /// client's `Configuration.schemas.errorParser`; nil by default.
    var errorParser: (any PocketErrorParser)? { get }
    /// Turns the response into `Output`. Defaults: the response itself for
    /// `PocketResponse`; for a `Decodable` output, validated (2xx, else
    /// `.unacceptableStatus`) then decoded (`.decodingFailed`).
    func process(_ response: PocketResponse) throws -> Output
}

/// No parameters: packs to nothing.
public struct PocketNoParameters: Encodable, Sendable, Hashable {
    /// The empty parameters.
    public init() {}
    /// Encodes an empty keyed container.
    public func encode(to encoder: any Encoder) throws {
        _ = encoder.container(keyedBy: NoKeys.self)
    }
    private enum NoKeys: CodingKey {}
}

extension PocketEndpoint {
    /// Default: GET.
    public var method: PocketMethod { .get }
    /// Default: none.
    public var pathParameters: [String: PocketParameterValue] { [:] }
    /// Default: none.
    public var query: [String: PocketParameterValue] { [:] }
    /// Default: none.
    public var headers: PocketHeaders { [:] }
    /// Default: snake_case keys, dates as epoch seconds.
    public var packing: PocketParameterPacking { PocketParameterPacking() }
    /// Default: nil (packed parameters for body methods).
    public var body: PocketRequestBody? { nil }
    /// Default: nil, the client's format.
    public var format: PocketContentFormat? { nil }
    /// Default: nil, the client's policy.
    public var retryPolicy: PocketRetryPolicy? { nil }
    /// Default: nil, the client's timeouts.
    public var timeout: Duration? { nil }
    /// Default: none (the client's configuration).
    public var template: String? { nil }
    /// Default: none.
    public var middleware: [any PocketMiddleware] { [] }
    /// Default: the `path` template.
    public var observerKey: String { path }
    /// Default: `TypeName.response.json`, if the client's schema resources have it.
    public var responseSchema: PocketSchema? { .response(for: Self.self, optional: true) }
    /// Default: `TypeName.path.json`, if the client's schema resources have it.
    public var pathParametersSchema: PocketSchema? { .pathParameters(for: Self.self, optional: true) }
    /// Default: `TypeName.request.json`, if the client's schema resources have it.
    public var requestSchema: PocketSchema? { .request(for: Self.self, optional: true) }
    /// Default: nil, the client's.
    public var errorParser: (any PocketErrorParser)? { nil }
}

extension PocketEndpoint where Parameters == PocketNoParameters {
    /// Nothing to pack.
    public var parameters: PocketNoParameters { PocketNoParameters() }
}

extension PocketEndpoint where Output == PocketResponse {
    /// The response as it is.
    public func process(_ response: PocketResponse) throws -> PocketResponse { response }
}

extension PocketEndpoint where Output: Decodable {
    /// `response.validate().decode(Output.self)`: 2xx only, then decoded per `format`.
    public func process(_ response: PocketResponse) throws -> Output {
        try response.validate().decode(Output.self)
    }
}

extension PocketEndpoint {
    /// Whether packed parameters go to the query (GET, HEAD, DELETE) rather than the body.
    public var packsIntoQuery: Bool { method == .get || method == .head || method == .delete }

    /// The request this endpoint describes, built by `client.request` (the
    /// API layer: base URL, default query, query encoding, `{placeholder}`
    /// filling, the endpoint's template). Nothing is sent.
    public func request(on client: PocketClient) throws -> PocketRequest {
        // The same precedence as `client.request`: the endpoint's, then its template's, then the client's.
        let registered = template.flatMap { client.template(named: $0) }
        let queryEncoding = registered?.queryEncoding ?? client.configuration.queryEncoding
        let format = self.format ?? registered?.format ?? client.configuration.format
        let packed = try packing.pack(parameters)
        var placeholders = pathParameters
        var rest: [String: PocketParameterValue] = [:]
        for (key, value) in packed {
            if placeholders[key] == nil, path.contains("{\(key)}") { placeholders[key] = value } else { rest[key] = value }
        }
        var requestBody = body
        var urlParameters = query.merging(placeholders) { _, placeholder in placeholder }
        if packsIntoQuery {
            urlParameters.merge(rest) { explicit, _ in explicit }
        } else if requestBody == nil, !rest.isEmpty {
            try checkSchema(requestSchema, rest, client)
            requestBody = try Self.encodeBody(rest, format: format, queryEncoding: queryEncoding)
        }
        try checkSchema(pathParametersSchema, urlParameters, client)
        var request = try client.request(method, path, template: template, parameters: urlParameters, headers: headers,
                                         body: requestBody, format: self.format)
        if let timeout {
            var timeouts = request.timeouts ?? client.configuration.timeouts
            timeouts.total = timeout
            request.timeouts = timeouts
        }
        request.schema = responseSchema
        request.errorParser = errorParser
        return request
    }

    /// Packed parameters as a body in `format`: a form for `.form`, JSON otherwise.
    static func encodeBody(_ fields: [String: PocketParameterValue], format: PocketContentFormat,
                           queryEncoding: PocketQueryEncoding) throws -> PocketRequestBody {
        if format.contentType == PocketContentFormat.form.contentType { return .form(fields, encoding: queryEncoding) }
        return try .json(fields)
    }

    /// Send options carrying this endpoint's policy, middleware and observer key.
    func sendOptions() -> PocketSendOptions {
        PocketSendOptions(middleware: middleware, retry: retryPolicy, endpoint: observerKey)
    }
}

extension PocketClient {
    /// Sends `endpoint` (built by `endpoint.request(on:)`) through the client's
    /// request path (its retry policy, middleware and observer key included) and
    /// returns what its `process` makes of the response.
    ///
    /// ```swift
    /// let issue = try await client.send(GetIssue(id: 42))
    /// ```
    nonisolated(nonsending) public func send<E: PocketEndpoint>(_ endpoint: E, progress: PocketProgressHandler? = nil) async throws -> E.Output {
        let request = try endpoint.request(on: self)
        let response = try await send(request, options: endpoint.sendOptions(), progress: progress)
        return try endpoint.process(response)
    }
}

extension PocketRequestQueue {
    /// Queues `endpoint` (see `PocketClient.send(_:progress:)` for endpoints)
    /// and returns its processed output.
    public func send<E: PocketEndpoint>(_ endpoint: E, priority: PocketQueuePriority = .normal) async throws -> E.Output {
        let request = try endpoint.request(on: client)
        return try endpoint.process(try await send(request, priority: priority, options: endpoint.sendOptions()))
    }
}

/// Marks a property that parameter packing leaves out (STNetTaskQueue's
/// `STIgnore`): it is never sent, whatever the format.
///
/// ```swift
/// struct Login: Encodable, Sendable { var user: String; @Unpacked var rememberLocally = true }
/// ```
@propertyWrapper
public struct PocketUnpacked<Value: Sendable>: Sendable {
    /// The value, usable in Swift but never packed.
    public var wrappedValue: Value
    /// Wraps `wrappedValue`.
    public init(wrappedValue: Value) { self.wrappedValue = wrappedValue }
}

extension PocketUnpacked: Encodable {
    /// Writes nothing (reached only outside a keyed container).
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encodeNil()
    }
}

extension PocketUnpacked: Hashable where Value: Hashable {}
extension PocketUnpacked: Equatable where Value: Equatable {}

extension KeyedEncodingContainer {
    /// Skips an `@PocketUnpacked` property: its key is not written at all.
    public mutating func encode<Value>(_ value: PocketUnpacked<Value>, forKey key: Key) throws {}
}
