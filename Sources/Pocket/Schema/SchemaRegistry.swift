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
/// var schemas = SchemaRegistry()                                 // built-in transformers registered
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
