#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What schema tags mean, where schema files live, and how schemas apply:
/// TyphoonRestClient's registrations, as a value.
///
/// Set it on a client (`PocketClient.Configuration.schemas`) or use it on its own.
///
/// ```swift
/// var schemas = PocketSchemaRegistry()                                 // built-in transformers registered
/// schemas.resources = Bundle.module.resourceURL                  // *.response.json files
/// schemas.register(IssueMapper(), for: "{issue}")
/// schemas.register(Project.self, for: "{project}")               // a Decodable type as a mapper
/// let page = try schemas.decode(response.body, schema: .response(for: RequestToGetIssues.self))
/// ```
public struct PocketSchemaRegistry: Sendable {
    var transformers: [String: AnyValueTransformer] = [:]
    var mappers: [String: AnyObjectMapper] = [:]

    /// The directory schema files are read from (`PocketSchema.resource`,
    /// `.response(for:)`, a mapper's default schema): usually
    /// `Bundle.module.resourceURL` of the module that holds them. Files are
    /// found at the top or in any subdirectory. nil (the default): only
    /// inline schemas work; a named one fails with `.schemaNotFound`.
    public var resources: URL? {
        didSet { cache = SchemaFileCache() }
    }

    /// How schemas apply; see `PocketSchemaOptions` for the defaults.
    public var options = PocketSchemaOptions()

    /// Turns error responses into typed errors for every request sent with a
    /// schema (an endpoint may give its own). nil (the default): a non-2xx
    /// status fails with `.errorResponse` and the body as text in the message.
    public var errorParser: (any PocketErrorParser)?

    /// Parsed schema files, shared by copies of this registry.
    var cache = SchemaFileCache()

    /// A registry with the built-in transformers: `{date_iso8601}` (`Date`),
    /// `{url}` (`URL`), `{number}` (`Double`), `{int}` (`Int`), `{string}` (`String`).
    public init() {
        register(PocketValueTransformers.ISO8601Date(), for: "{date_iso8601}")
        register(PocketValueTransformers.URLString(), for: "{url}")
        register(PocketValueTransformers.Number(), for: "{number}")
        register(PocketValueTransformers.Integer(), for: "{int}")
        register(PocketValueTransformers.Text(), for: "{string}")
    }

    /// Registers `transformer` for `tag` (`"{date}"` or `"date"`), replacing
    /// whatever was registered for it.
    public mutating func register<T: PocketValueTransformer>(_ transformer: T, for tag: String) {
        let tag = PocketSchema.normalizedTag(tag)
        mappers[tag] = nil
        transformers[tag] = AnyValueTransformer(transformer)
    }

    /// Registers `mapper` for `tag`, replacing whatever was registered for it.
    public mutating func register<M: PocketObjectMapper>(_ mapper: M, for tag: String) {
        let tag = PocketSchema.normalizedTag(tag)
        transformers[tag] = nil
        mappers[tag] = AnyObjectMapper(mapper)
    }

    /// Registers a `Decodable` type as the mapper for `tag` (`PocketDecodableMapper`);
    /// its schema is `schema`, or by default the resource `TypeName.response.json`.
    public mutating func register<T: Decodable & Sendable>(_ type: T.Type, for tag: String, schema: PocketSchema? = nil) {
        register(PocketDecodableMapper(type, schema: schema), for: tag)
    }

    /// The tags registered, sorted.
    public var tags: [String] { (Array(transformers.keys) + Array(mappers.keys)).sorted() }

    /// The parsed root node of `schema`, reading its file on first use.
    func node(of schema: PocketSchema) throws -> PocketSchema.Node {
        switch schema.storage {
        case let .node(node): return node
        case let .resource(name, optional):
            if optional, !cache.exists(name, in: resources) { return .any }
            return try cache.node(named: name, in: resources)
        }
    }

    /// True for an optional resource schema whose file is not there: it
    /// stands for no schema at all (the answer is cached per file name).
    public func isAbsent(_ schema: PocketSchema) -> Bool {
        guard case let .resource(name, optional: true) = schema.storage else { return false }
        return !cache.exists(name, in: resources)
    }
}

/// Parsed schema files by name, behind a lock; one per `resources` setting.
final class SchemaFileCache: Sendable {
    private let nodes = Lock<[String: PocketSchema.Node]>([:])
    /// File name → path, indexed on the first lookup that misses the top level.
    private let index = Lock<[String: String]?>(nil)
    /// Whether a file exists, by name: asked on every send of an endpoint
    /// whose schema is optional, so answered from memory after the first time.
    private let presence = Lock<[String: Bool]>([:])

    func exists(_ name: String, in directory: URL?) -> Bool {
        if let known = presence.withLock({ $0[name] }) { return known }
        let found = directory.map { (try? locate(name, in: $0)) != nil } ?? false
        presence.withLock { $0[name] = found }
        return found
    }

    func node(named name: String, in directory: URL?) throws -> PocketSchema.Node {
        if let node = nodes.withLock({ $0[name] }) { return node }
        guard let directory else {
            throw PocketError(.schemaNotFound,
                              "schema '\(name)' is a resource, but SchemaRegistry.resources is not set (e.g. Bundle.module.resourceURL)")
        }
        let path = try locate(name, in: directory)
        let data: Data
        do {
            data = try Data(contentsOf: URL(filePath: path))
        } catch {
            throw PocketError(.schemaNotFound, "can't read schema file \(path): \(error)")
        }
        let node: PocketSchema.Node
        do {
            node = try PocketSchema.node(PocketJSONValue(parsing: data)).rooted
        } catch let error as PocketError {
            throw PocketError(.invalidSchema, "schema file \(name) is not valid JSON: \(error.message)", underlying: error)
        }
        nodes.withLock { $0[name] = node }
        return node
    }

    private func locate(_ name: String, in directory: URL) throws -> String {
        let top = directory.appending(path: name).path(percentEncoded: false)
        if FileManager.default.fileExists(atPath: top) { return top }
        let root = directory.path(percentEncoded: false)
        let found = index.withLock { index -> String? in
            if index == nil {
                var map: [String: String] = [:]
                let subpaths = (try? FileManager.default.subpathsOfDirectory(atPath: root)) ?? []
                for sub in subpaths.sorted() {
                    let last = sub.split(separator: "/").last.map(String.init) ?? sub
                    if map[last] == nil { map[last] = root + (root.hasSuffix("/") ? "" : "/") + sub }
                }
                index = map
            }
            return index?[name]
        }
        guard let found else {
            throw PocketError(.schemaNotFound, "no schema file '\(name)' in \(root) or its subdirectories")
        }
        return found
    }
}

extension PocketSchema.Node {
    /// A sample `{"{root}": X}` means X at the root.
    var rooted: PocketSchema.Node {
        if case let .object(fields) = self, fields.count == 1, fields[0].name == "{root}" { return fields[0].node }
        return self
    }
}

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

extension PocketSchemaRegistry {
    /// Path parameters held to their schema, ready for `PocketRequest(path:parameters:)`
    /// (which fills `{name}` placeholders and makes the rest the query).
    ///
    /// The parameters go through `schema` in the request direction, as a body
    /// does: required keys and types are checked, and values a tag
    /// transforms are written by the reverse transformer (`.mapped(date)` at
    /// `{date_iso8601}` becomes its string). With the default options a
    /// `null` counts as absent: an optional parameter is left out, a required
    /// one fails as missing.
    ///
    /// ```swift
    /// // RequestToGetIssue.path.json: {"issue_id": 1, "include{?}": [""], "since{?}": "{date_iso8601}"}
    /// let parameters = try schemas.pathParameters(["issue_id": 42, "since": .mapped(date)],
    ///                                             schema: .pathParameters(for: RequestToGetIssue.self))
    /// let request = try PocketRequest(path: "issues/{issue_id}.json", baseURL: base, parameters: parameters)
    /// ```
    ///
    /// Throws the schema codes (`.schemaValidationFailed`, …) with
    /// TyphoonRestClient's messages, and `.schemaMappingFailed` for a value a
    /// URL cannot carry (a mapped value no tag transforms, a non-finite number).
    public func pathParameters(_ parameters: PocketJSONValue, schema: PocketSchema,
                               options: PocketSchemaOptions? = nil) throws -> [String: PocketParameterValue] {
        guard case let .object(object) = try encode(parameters, schema: schema, options: options) else {
            throw PocketError(.schemaValidationFailed, "path parameters must be a dictionary, not \(parameters.typeName)")
        }
        var result: [String: PocketParameterValue] = [:]
        for member in object.members { result[member.key] = try Self.parameter(member.value, name: member.key) }
        return result
    }

    private static func parameter(_ value: PocketJSONValue, name: String) throws -> PocketParameterValue {
        switch value {
        case .null: return .null
        case let .bool(b): return .bool(b)
        case let .int(i): return .integer(i)
        case let .double(d):
            guard d.isFinite else { throw PocketError(.schemaMappingFailed, "parameter '\(name)' is \(d)") }
            return .double(d)
        case let .string(s): return .string(s)
        case let .array(elements): return .array(try elements.map { try parameter($0, name: name) })
        case let .object(o):
            var d: [String: PocketParameterValue] = [:]
            for member in o.members { d[member.key] = try parameter(member.value, name: name + "." + member.key) }
            return .dictionary(d)
        case let .mapped(box):
            throw PocketError(.schemaMappingFailed,
                              "parameter '\(name)' is a \(type(of: box.value)), which its schema has no tag to write as text")
        }
    }
}
