/// Turns error responses into typed errors, as TyphoonRestClient's error
/// parser does. Asked about every response sent with a schema, 2xx
/// included, so an API that answers `200 {"success": false}` can be told apart.
///
/// ```swift
/// struct RedmineErrors: PocketErrorParser {
///     var schema: PocketSchema? { try? PocketSchema(json: #"{"errors": [""]}"#) }
///     func error(from response: PocketResponse, json: PocketJSONValue?) -> (any Error & Sendable)? {
///         guard let messages = json?["errors"].array else { return nil }
///         return RedmineError(messages: messages.compactMap(\.string))
///     }
/// }
/// ```
public protocol PocketErrorParser: Sendable {
    /// The schema an error body matches; a body that does not match is not
    /// handed to `error(from:json:)` as JSON (it gets nil). Default: nil (no check).
    var schema: PocketSchema? { get }
    /// The typed error `response` stands for, or nil when it is not an error
    /// (for a non-2xx status, nil leaves the generic `.errorResponse`).
    /// `json` is the parsed body (validated against `schema`, transformed),
    /// or nil when the body is not JSON or does not match.
    func error(from response: PocketResponse, json: PocketJSONValue?) -> (any Error & Sendable)?
}

extension PocketErrorParser {
    /// No schema: every JSON body reaches `error(from:json:)`.
    public var schema: PocketSchema? { nil }
}

/// An error parser from a closure.
///
/// ```swift
/// let parser = PocketClosureErrorParser { response, json in
///     json?["success"].bool == false ? APIError(message: json?["message"].string ?? "") : nil
/// }
/// ```
public struct PocketClosureErrorParser: PocketErrorParser {
    /// The schema error bodies match, or nil for none.
    public let schema: PocketSchema?
    let parse: @Sendable (PocketResponse, PocketJSONValue?) -> (any Error & Sendable)?

    /// `schema` nil (the default): every JSON body reaches the closure.
    public init(schema: PocketSchema? = nil, _ parse: @escaping @Sendable (PocketResponse, PocketJSONValue?) -> (any Error & Sendable)?) {
        self.schema = schema
        self.parse = parse
    }

    /// Calls the closure.
    public func error(from response: PocketResponse, json: PocketJSONValue?) -> (any Error & Sendable)? {
        parse(response, json)
    }
}

extension PocketSchemaRegistry {
    /// Checks `response` for an error before its body is validated: asks
    /// `parser` (the endpoint's, else the registry's) — a typed error is
    /// `.errorResponse` — then the status (`.unacceptableStatus` outside
    /// `acceptedStatus`).
    func checkError(_ response: PocketResponse, parser: (any PocketErrorParser)?, acceptedStatus: [Range<Int>]) throws {
        if let parser = parser ?? errorParser { try Self.check(response, with: parser, registry: self) }
        try response.validate(.status(acceptedStatus))
    }

    /// Throws `.errorResponse` when `parser` finds a typed error in `response`.
    static func check(_ response: PocketResponse, with parser: any PocketErrorParser, registry: PocketSchemaRegistry) throws {
        var json = try? PocketJSONValue(parsing: response.body)
        if let value = json, let schema = parser.schema {
            json = try? registry.validate(value, schema: schema)
        }
        if let typed = parser.error(from: response, json: json) {
            throw PocketError(.errorResponse, "HTTP \(response.httpStatus): \(typed)", underlying: typed,
                              response: response.head, body: response.body)
        }
    }
}

extension PocketEndpoint {
    /// Holds `parameters` to `schema` (request direction, with the client's
    /// `Configuration.schemas`); nothing for no schema or an optional file
    /// that is not there. The parameters are sent as they are: the schema
    /// checks them (keys, types, tagged values that must transform).
    func checkSchema(_ schema: PocketSchema?, _ parameters: [String: PocketParameterValue], _ client: PocketClient) throws {
        let schemas = client.configuration.schemas
        guard let schema, !schemas.isAbsent(schema) else { return }
        _ = try schemas.encode(.object(PocketJSONObject(parameters.sorted { $0.key < $1.key }.map { ($0.key, PocketJSONValue($0.value)) })),
                               schema: schema)
    }
}

extension PocketJSONValue {
    /// The JSON value of a request parameter (a dictionary's keys sorted).
    public init(_ parameter: PocketParameterValue) {
        switch parameter {
        case let .string(s): self = .string(s)
        case let .integer(i): self = .int(i)
        case let .double(d): self = .double(d)
        case let .bool(b): self = .bool(b)
        case .null: self = .null
        case let .array(elements): self = .array(elements.map(PocketJSONValue.init))
        case let .dictionary(d):
            self = .object(PocketJSONObject(d.sorted { $0.key < $1.key }.map { ($0.key, PocketJSONValue($0.value)) }))
        }
    }
}
