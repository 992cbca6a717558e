/// Maps a JSON dictionary (or any JSON value) to a model and back, with the
/// schema that value must match: TyphoonRestClient's object mapper.
///
/// Registered under a tag (`registry.register(IssueMapper(), for: "{issue}")`),
/// it applies wherever a schema has that tag: the value is validated against
/// `schema` (whose own tags apply too, so mappers nest), transformed, then
/// handed to `model(from:)`, which may read it without checks: required keys
/// are there and every value has its schema's type.
///
/// ```swift
/// struct IssueMapper: PocketObjectMapper {
///     // schema: IssueMapper.response.json in the registry's resources, by default
///     func model(from json: PocketJSONValue) throws -> Issue? {
///         Issue(id: json["id"].int!, subject: json["subject"].string!,
///               authorName: json["author"]["name"].string,          // optional key
///               created: json["created_on"].mapped(as: Date.self)!)
///     }
/// }
/// ```
public protocol PocketObjectMapper: Sendable {
    /// The value the mapper makes from the validated JSON.
    associatedtype Model: Sendable
    /// The schema of the JSON this mapper reads. Default: the resource
    /// `TypeName.response.json`, TyphoonRestClient's naming rule.
    var schema: PocketSchema { get }
    /// The schema of the JSON this mapper writes for request bodies.
    /// Default: `schema`.
    var requestSchema: PocketSchema { get }
    /// The model for a validated, transformed value. Return nil to skip it:
    /// in an array the element is left out, in a dictionary the key is.
    func model(from json: PocketJSONValue) throws -> Model?
    /// The JSON for a model, for request bodies. Values a schema tag
    /// transforms (dates, nested models) may be left as `.mapped(value)`.
    /// Default: throws `.schemaMappingFailed` (a one-way mapper).
    func json(from model: Model) throws -> PocketJSONValue
}

extension PocketObjectMapper {
    /// `TypeName.response.json` in the registry's resources.
    public var schema: PocketSchema { .resource("\(Self.self).response.json") }
    /// The response schema.
    public var requestSchema: PocketSchema { schema }
    /// Throws `.schemaMappingFailed`: a one-way mapper.
    public func json(from model: Model) throws -> PocketJSONValue {
        throw PocketError(.schemaMappingFailed,
                          "\(Self.self) maps JSON to \(Model.self) only; implement json(from:) to write \(Model.self) as JSON")
    }
}

/// A `Decodable` type as an object mapper: the validated, transformed value
/// is decoded with `PocketJSONValue.decode(_:)`, so a `Date` field takes what
/// `{date_iso8601}` made and a nested tagged model what its mapper made.
/// When `Model` is also `Encodable`, models map back to JSON for request bodies.
///
/// ```swift
/// struct Issue: Codable, Sendable { let id: Int; let subject: String; let created_on: Date }
/// registry.register(Issue.self, for: "{issue}")            // schema: Issue.response.json
/// ```
public struct PocketDecodableMapper<Model: Decodable & Sendable>: PocketObjectMapper {
    /// The schema of the JSON read.
    public let schema: PocketSchema
    /// The schema of the JSON written.
    public let requestSchema: PocketSchema

    /// `schema` nil (the default): the resource `ModelName.response.json`.
    public init(_ type: Model.Type = Model.self, schema: PocketSchema? = nil, requestSchema: PocketSchema? = nil) {
        let s = schema ?? .resource("\(Model.self).response.json")
        self.schema = s
        self.requestSchema = requestSchema ?? s
    }

    /// `Model(from:)` over the validated tree (`PocketJSONValue.decode`).
    public func model(from json: PocketJSONValue) throws -> Model? { try json.decode(Model.self) }

    /// The model's `Encodable` encoding (`PocketJSONValue(encoding:)`); throws
    /// `.schemaMappingFailed` when `Model` is not `Encodable`.
    public func json(from model: Model) throws -> PocketJSONValue {
        guard let encodable = model as? any Encodable else {
            throw PocketError(.schemaMappingFailed, "\(Model.self) is not Encodable, so it can't be written as JSON")
        }
        return try PocketJSONValue(encoding: encodable)
    }
}

/// A registered mapper with its types erased.
struct AnyObjectMapper: Sendable {
    let name: String
    let modelType: Any.Type
    let schema: PocketSchema
    let requestSchema: PocketSchema
    let toModel: @Sendable (PocketJSONValue) throws -> (any Sendable)?
    let toJSON: @Sendable (any Sendable) throws -> PocketJSONValue?

    init<M: PocketObjectMapper>(_ m: M) {
        name = "\(M.self)"
        modelType = M.Model.self
        schema = m.schema
        requestSchema = m.requestSchema
        toModel = { try m.model(from: $0) }
        toJSON = { value in
            guard let typed = value as? M.Model else { return nil }
            return try m.json(from: typed)
        }
    }
}
