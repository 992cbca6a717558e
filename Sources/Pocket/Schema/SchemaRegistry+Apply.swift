#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension PocketSchemaRegistry {
    /// Response direction: parses `body`, validates it against `schema`,
    /// runs transformers and mappers, and returns the result (transformed
    /// values and models as `.mapped`). Throws `PocketError`:
    /// `.malformedJSON`, `.jsonNestingTooDeep`, `.schemaValidationFailed`,
    /// `.schemaTransformFailed`, `.schemaUnknownTag`, `.schemaMappingFailed`,
    /// `.schemaNotFound`, `.invalidSchema`. `options` nil: the registry's.
    public func decode(_ body: Data, schema: PocketSchema, options: PocketSchemaOptions? = nil) throws -> PocketJSONValue {
        try validate(PocketJSONValue(parsing: body), schema: schema, options: options)
    }

    /// Response direction for a parsed value (see `decode(_:schema:options:)`).
    public func validate(_ value: PocketJSONValue, schema: PocketSchema, options: PocketSchemaOptions? = nil) throws -> PocketJSONValue {
        var validator = SchemaValidator(registry: self, options: options, direction: .response)
        return try validator.apply(value, node(of: schema))
    }

    /// Response direction, then the root as `T`: the model a root mapper
    /// made (`PocketSchema(tag: "{issue}")`, `{"{root}": "{issue}"}`), or, when the
    /// root is not mapped, the validated value decoded as `T` (`Decodable`).
    public func decode<T: Decodable & Sendable>(_ type: T.Type, from body: Data, schema: PocketSchema,
                                                options: PocketSchemaOptions? = nil) throws -> T {
        let value = try decode(body, schema: schema, options: options)
        if let model = value.mapped(as: T.self) { return model }
        return try value.decode(T.self)
    }

    /// The validator as a pure function of bytes and schema, for fuzzing
    /// and tests: never throws, never traps.
    public func validate(_ bytes: UnsafeRawBufferPointer, schema: PocketSchema,
                         options: PocketSchemaOptions? = nil) -> Result<PocketJSONValue, PocketError> {
        do {
            let value = try PocketJSONParser.parse(bytes)
            return .success(try validate(value, schema: schema, options: options))
        } catch let error as PocketError {
            return .failure(error)
        } catch {
            return .failure(PocketError(.unknown, "\(error)", underlying: nil))
        }
    }

    /// Request direction: the plain JSON for `value`, written through
    /// `schema`'s reverse transformers and mappers (a `.mapped(Date)` at a
    /// `{date_iso8601}` becomes its string, a `.mapped(issue)` at `{issue}`
    /// the mapper's JSON), then held to the schema like a response.
    public func encode(_ value: PocketJSONValue, schema: PocketSchema, options: PocketSchemaOptions? = nil) throws -> PocketJSONValue {
        var validator = SchemaValidator(registry: self, options: options, direction: .request)
        return try validator.apply(value, node(of: schema))
    }

    /// Request direction for a model: its JSON through the mapper registered
    /// for the schema's root tag, or an `Encodable` model's encoding, then
    /// `encode(_:schema:options:)`; returns JSON bytes for a request body.
    public func encodeBody(_ model: any Sendable, schema: PocketSchema, options: PocketSchemaOptions? = nil) throws -> Data {
        let value: PocketJSONValue
        if let json = model as? PocketJSONValue {
            value = json
        } else if case .tag = try node(of: schema) {
            value = .mapped(model)
        } else if let encodable = model as? any Encodable {
            value = try PocketJSONValue(encoding: encodable)
        } else {
            throw PocketError(.schemaMappingFailed,
                              "\(type(of: model)) is not Encodable and the schema's root is not a mapper tag")
        }
        return try encode(value, schema: schema, options: options).jsonData()
    }
}
