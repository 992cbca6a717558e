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
/// struct GetIssue: Endpoint {
///     typealias Output = Issue                     // Decodable: validated (2xx) and decoded
///     let id: Int
///     var path: String { "issues/{id}.json" }
///     var pathParameters: [String: ParameterValue] { ["id": .integer(id)] }
///     var retryPolicy: RetryPolicy? { RetryPolicy(maxAttempts: 3) }
/// }
///
/// struct CreatePost: Endpoint {
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
/// Parameters are packed from an `Encodable` value (`ParameterPacking`:
/// snake_case keys, ignored fields, date transforms). GET, HEAD and DELETE
/// put them in the query; other methods in the body, in the endpoint's
/// `format` (the client's, JSON by default; `.form` for a form body). A packed parameter
/// named like a `{placeholder}` fills it and is not sent again.
public protocol Endpoint: Sendable {
    /// What `process` makes of the response.
    associatedtype Output: Sendable
    /// The packed parameters; `NoParameters` by default.
    associatedtype Parameters: Encodable & Sendable = NoParameters

    /// `.get` by default.
    var method: HTTPMethod { get }
    /// Relative to the client's `baseURL` (or an absolute URL), with
    /// `{name}` placeholders filled from `pathParameters` and the packed parameters.
    var path: String { get }
    /// Values for `{name}` placeholders; none by default.
    var pathParameters: [String: ParameterValue] { get }
    /// Query parameters besides the packed ones; none by default.
    var query: [String: ParameterValue] { get }
    /// Header fields; none by default (the format writes `Accept` and `Content-Type`).
    var headers: HTTPHeaders { get }
    /// The value packed into parameters (see the type's doc).
    var parameters: Parameters { get }
    /// How `parameters` are packed: snake_case keys, dates as epoch seconds by default.
    var packing: ParameterPacking { get }
    /// An explicit body; nil (the default) sends the packed parameters as
    /// the body for methods other than GET, HEAD and DELETE.
    var body: RequestBody? { get }
    /// The body and response format; nil (the default) uses the client's
    /// `Configuration.format` (JSON unless changed).
    var format: ContentFormat? { get }
    /// This endpoint's retry policy; nil (the default) uses the client's.
    var retryPolicy: RetryPolicy? { get }
    /// A total deadline for each attempt; nil (the default) uses the client's timeouts.
    var timeout: Duration? { get }
    /// A request template registered on the client (`client.register(_:as:)`)
    /// to build from: its base URL, headers, query and timeouts; nil (the
    /// default) builds from the client's configuration.
    var template: String? { get }
    /// Middleware for this endpoint's requests, after the client's; none by default.
    var middleware: [any Middleware] { get }
    /// The key endpoint observers subscribe to; the `path` template by default,
    /// so one observer hears every `GetIssue` whatever its id.
    var observerKey: String { get }
    /// Turns the response into `Output`. Defaults: the response itself for
    /// `Response`; for a `Decodable` output, validated (2xx, else
    /// `.unacceptableStatus`) then decoded (`.decodingFailed`).
    func process(_ response: Response) throws -> Output
}

/// No parameters: packs to nothing.
public struct NoParameters: Encodable, Sendable, Hashable {
    /// The empty parameters.
    public init() {}
    /// Encodes an empty keyed container.
    public func encode(to encoder: any Encoder) throws {
        _ = encoder.container(keyedBy: NoKeys.self)
    }
    private enum NoKeys: CodingKey {}
}

extension Endpoint {
    /// Default: GET.
    public var method: HTTPMethod { .get }
    /// Default: none.
    public var pathParameters: [String: ParameterValue] { [:] }
    /// Default: none.
    public var query: [String: ParameterValue] { [:] }
    /// Default: none.
    public var headers: HTTPHeaders { [:] }
    /// Default: snake_case keys, dates as epoch seconds.
    public var packing: ParameterPacking { ParameterPacking() }
    /// Default: nil (packed parameters for body methods).
    public var body: RequestBody? { nil }
    /// Default: nil, the client's format.
    public var format: ContentFormat? { nil }
    /// Default: nil, the client's policy.
    public var retryPolicy: RetryPolicy? { nil }
    /// Default: nil, the client's timeouts.
    public var timeout: Duration? { nil }
    /// Default: none (the client's configuration).
    public var template: String? { nil }
    /// Default: none.
    public var middleware: [any Middleware] { [] }
    /// Default: the `path` template.
    public var observerKey: String { path }
}

extension Endpoint where Parameters == NoParameters {
    /// Nothing to pack.
    public var parameters: NoParameters { NoParameters() }
}

extension Endpoint where Output == Response {
    /// The response as it is.
    public func process(_ response: Response) throws -> Response { response }
}

extension Endpoint where Output: Decodable {
    /// `response.validate().decode(Output.self)`: 2xx only, then decoded per `format`.
    public func process(_ response: Response) throws -> Output {
        try response.validate().decode(Output.self)
    }
}

extension Endpoint {
    /// Whether packed parameters go to the query (GET, HEAD, DELETE) rather than the body.
    public var packsIntoQuery: Bool { method == .get || method == .head || method == .delete }

    /// The request this endpoint describes, built by `client.request` (the
    /// API layer: base URL, default query, query encoding, `{placeholder}`
    /// filling, the endpoint's template). Nothing is sent.
    public func request(on client: PocketClient) throws -> Request {
        // The same precedence as `client.request`: the endpoint's, then its template's, then the client's.
        let registered = template.flatMap { client.template(named: $0) }
        let queryEncoding = registered?.queryEncoding ?? client.configuration.queryEncoding
        let format = self.format ?? registered?.format ?? client.configuration.format
        let packed = try packing.pack(parameters)
        var placeholders = pathParameters
        var rest: [String: ParameterValue] = [:]
        for (key, value) in packed {
            if placeholders[key] == nil, path.contains("{\(key)}") { placeholders[key] = value } else { rest[key] = value }
        }
        var requestBody = body
        var urlParameters = query.merging(placeholders) { _, placeholder in placeholder }
        if packsIntoQuery {
            urlParameters.merge(rest) { explicit, _ in explicit }
        } else if requestBody == nil, !rest.isEmpty {
            requestBody = try Self.encodeBody(rest, format: format, queryEncoding: queryEncoding)
        }
        var request = try client.request(method, path, template: template, parameters: urlParameters, headers: headers,
                                         body: requestBody, format: self.format)
        if let timeout {
            var timeouts = request.timeouts ?? client.configuration.timeouts
            timeouts.total = timeout
            request.timeouts = timeouts
        }
        return request
    }

    /// Packed parameters as a body in `format`: a form for `.form`, JSON otherwise.
    static func encodeBody(_ fields: [String: ParameterValue], format: ContentFormat,
                           queryEncoding: QueryEncoding) throws -> RequestBody {
        if format.contentType == ContentFormat.form.contentType { return .form(fields, encoding: queryEncoding) }
        return try .json(fields)
    }

    /// Send options carrying this endpoint's policy, middleware and observer key.
    func sendOptions() -> SendOptions {
        SendOptions(middleware: middleware, retry: retryPolicy, endpoint: observerKey)
    }
}
