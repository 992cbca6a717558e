#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension PocketClient {
    /// Sends `request` and applies `schema` to the response body with the
    /// client's `Configuration.schemas`: error check first (the error
    /// parser, then the status), then JSON parsing, validation,
    /// transformers and mappers. Returns the result tree (transformed values
    /// and models as `.mapped`).
    ///
    /// ```swift
    /// let page = try await client.send(request, schema: .response(for: RequestToGetIssues.self))
    /// let issues = page["issues"].mappedArray(of: Issue.self)!
    /// ```
    ///
    /// `errorParser` (this endpoint's) takes precedence over the registry's;
    /// `options` nil: the registry's. Throws what `send(_:)` throws, plus
    /// `.errorResponse` and the schema codes (see `SchemaRegistry.decode`).
    public func send(_ request: Request, schema: Schema, options: SchemaOptions? = nil,
                     errorParser: (any ErrorParser)? = nil) async throws -> JSONValue {
        let response = try await send(request)
        return try response.validated(schema: schema, registry: configuration.schemas, options: options,
                                      errorParser: errorParser)
    }

    /// Sends `request`, applies `schema`, and returns the root as `T`: what a
    /// root mapper made, or the validated value decoded as `T`.
    ///
    /// ```swift
    /// let issue = try await client.send(get, schema: Schema(tag: "{issue}"), as: Issue.self)
    /// ```
    public func send<T: Sendable>(_ request: Request, schema: Schema, as type: T.Type,
                                              options: SchemaOptions? = nil,
                                              errorParser: (any ErrorParser)? = nil) async throws -> T {
        let response = try await send(request)
        return try response.map(schema: schema, registry: configuration.schemas, as: type, options: options,
                                errorParser: errorParser)
    }

    /// Sends `request` with `body` written as JSON through `bodySchema` (its
    /// reverse transformers and mappers: a model, a `JSONValue` or an
    /// `Encodable`), then applies `schema` to the response as
    /// `send(_:schema:options:errorParser:)` does. Sets `Content-Type:
    /// application/json` unless the request has one.
    public func send(_ request: Request, body: any Sendable, bodySchema: Schema, schema: Schema,
                     options: SchemaOptions? = nil, errorParser: (any ErrorParser)? = nil) async throws -> JSONValue {
        var request = request
        request.body = .bytes(try configuration.schemas.encodeBody(body, schema: bodySchema, options: options))
        if request.headers["Content-Type"] == nil { request.headers["Content-Type"] = "application/json" }
        return try await send(request, schema: schema, options: options, errorParser: errorParser)
    }
}

extension Response {
    /// Applies `schema` to this response: the error check (`errorParser`,
    /// else the registry's; then the status), then parsing, validation,
    /// transformers and mappers. See `PocketClient.send(_:schema:options:errorParser:)`.
    public func validated(schema: Schema, registry: SchemaRegistry, options: SchemaOptions? = nil,
                          errorParser: (any ErrorParser)? = nil) throws -> JSONValue {
        try registry.checkError(self, parser: errorParser)
        do {
            return try registry.decode(body, schema: schema, options: options)
        } catch var error as PocketError {
            if error.response == nil { error.response = ResponseHead(status: status, reason: reason, headers: headers) }
            throw error
        }
    }

    /// `validated(...)`, then the root as `T`: what a root mapper made, or,
    /// for a `Decodable` `T`, the validated value decoded as `T` (a
    /// `DecodingError` becomes `.schemaMappingFailed`).
    public func map<T: Sendable>(schema: Schema, registry: SchemaRegistry, as type: T.Type = T.self,
                                             options: SchemaOptions? = nil,
                                             errorParser: (any ErrorParser)? = nil) throws -> T {
        let value = try validated(schema: schema, registry: registry, options: options, errorParser: errorParser)
        if let model = value.mapped(as: T.self) { return model }
        let head = ResponseHead(status: status, reason: reason, headers: headers)
        guard let decodable = T.self as? any Decodable.Type else {
            throw PocketError(.schemaMappingFailed,
                              "the schema's root is not mapped to \(T.self), and \(T.self) is not Decodable", response: head)
        }
        do {
            return try value.decode(decodable) as! T
        } catch {
            throw PocketError(.schemaMappingFailed, "can't decode \(T.self) from the validated body: \(error)",
                              underlying: error as? DecodingError, response: head)
        }
    }
}
