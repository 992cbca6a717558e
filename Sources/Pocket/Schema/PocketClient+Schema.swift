#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension PocketClient {
    /// Sends `request` and applies `schema` to the response with the
    /// client's `Configuration.schemas`: the error parser first, then the
    /// status (2xx, or the request's or client's `PocketValidation`), then JSON
    /// parsing, validation, transformers and mappers. Returns the result
    /// tree (transformed values and models as `.mapped`).
    ///
    /// ```swift
    /// let page = try await client.send(request, schema: .response(for: RequestToGetIssues.self))
    /// let issues = page["issues"].mappedArray(of: Issue.self)!
    /// ```
    ///
    /// `errorParser` (this endpoint's) takes precedence over the registry's;
    /// `options` nil: the registry's. Throws what `send(_:)` throws, plus
    /// `.errorResponse`, `.unacceptableStatus` and the schema codes (see
    /// `PocketSchemaRegistry.decode`). Setting `request.schema` and calling
    /// `send(_:)` does the same with the registry's options and parser.
    nonisolated(nonsending) public func send(_ request: PocketRequest, schema: PocketSchema, options: PocketSchemaOptions? = nil,
                     errorParser: (any PocketErrorParser)? = nil) async throws -> PocketJSONValue {
        var request = request
        request.schema = nil
        let response = try await send(request)
        return try response.validated(schema: schema, registry: configuration.schemas, options: options,
                                      errorParser: errorParser,
                                      acceptedStatus: (request.validation ?? configuration.validation)?.statusCodes)
    }

    /// Sends `request`, applies `schema`, and returns the root as `T`: what a
    /// root mapper made, or, for a `Decodable` `T`, the result decoded as `T`.
    ///
    /// ```swift
    /// let issue = try await client.send(get, schema: PocketSchema(tag: "{issue}"), as: Issue.self)
    /// ```
    nonisolated(nonsending) public func send<T: Sendable>(_ request: PocketRequest, schema: PocketSchema, as type: T.Type,
                                  options: PocketSchemaOptions? = nil,
                                  errorParser: (any PocketErrorParser)? = nil) async throws -> T {
        var request = request
        request.schema = nil
        var response = try await send(request)
        response.schemaResult = try response.validated(schema: schema, registry: configuration.schemas,
                                                       options: options, errorParser: errorParser,
                                                       acceptedStatus: (request.validation ?? configuration.validation)?.statusCodes)
        return try response.decode(response.schemaResult!, as: T.self)
    }

    /// Sends `request` with `body` written as JSON through `bodySchema` (its
    /// reverse transformers and mappers: a model, a `PocketJSONValue` or an
    /// `Encodable`), then applies `schema` to the response as
    /// `send(_:schema:options:errorParser:)` does. Sets `Content-Type:
    /// application/json` unless the request has one. A body that fails its
    /// schema throws before anything is sent.
    nonisolated(nonsending) public func send(_ request: PocketRequest, body: any Sendable, bodySchema: PocketSchema, schema: PocketSchema,
                     options: PocketSchemaOptions? = nil, errorParser: (any PocketErrorParser)? = nil) async throws -> PocketJSONValue {
        var request = request
        request.body = .bytes(try configuration.schemas.encodeBody(body, schema: bodySchema, options: options))
        if request.headers["Content-Type"] == nil { request.headers["Content-Type"] = "application/json" }
        return try await send(request, schema: schema, options: options, errorParser: errorParser)
    }
}

extension PocketResponse {
    /// Applies `schema` to this response: the error check (`errorParser`,
    /// else the registry's; then the status: `acceptedStatus`, else the
    /// request's `PocketValidation`, else 2xx), then parsing, validation,
    /// transformers and mappers. See `PocketClient.send(_:schema:options:errorParser:)`.
    /// Errors carry the head and the body.
    public func validated(schema: PocketSchema, registry: PocketSchemaRegistry, options: PocketSchemaOptions? = nil,
                          errorParser: (any PocketErrorParser)? = nil, acceptedStatus: [Range<Int>]? = nil) throws -> PocketJSONValue {
        try registry.checkError(self, parser: errorParser,
                                acceptedStatus: acceptedStatus ?? request?.validation?.statusCodes ?? [200..<300])
        do {
            return try registry.decode(body, schema: schema, options: options)
        } catch var error as PocketError {
            if error.response == nil { error.response = head }
            if error.body == nil { error.body = body }
            throw error
        }
    }

    /// `validated(...)`, then the root as `T`: what a root mapper made, or,
    /// for a `Decodable` `T`, the result decoded as `T`.
    public func map<T: Sendable>(schema: PocketSchema, registry: PocketSchemaRegistry, as type: T.Type = T.self,
                                 options: PocketSchemaOptions? = nil,
                                 errorParser: (any PocketErrorParser)? = nil) throws -> T {
        try decode(validated(schema: schema, registry: registry, options: options, errorParser: errorParser), as: T.self)
    }

    /// A schema's result as `T`: the root's mapped value, or the tree
    /// decoded (a `DecodingError` is `.decodingFailed`, its path named as
    /// `PocketResponse.decode` names it).
    func decode<T>(_ value: PocketJSONValue, as type: T.Type) throws -> T {
        if let model = value.mapped(as: T.self) { return model }
        guard let decodable = T.self as? any Decodable.Type else {
            throw PocketError(.decodingFailed, "the schema's root is not mapped to \(T.self), and \(T.self) is not Decodable",
                              response: head, body: body)
        }
        do {
            return try value.decode(decodable) as! T
        } catch let error as DecodingError {
            throw PocketError(.decodingFailed, "cannot decode \(T.self): " + DecodingErrorPath.describe(error),
                              underlying: error, response: head, body: body)
        }
    }
}
