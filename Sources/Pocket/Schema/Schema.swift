#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What a JSON document must look like, written as a sample of it, as in
/// TyphoonRestClient: paste a real response and edit it.
///
/// - Every key is required unless its name ends in `{?}` (`"category{?}"`).
/// - A value's type comes from the sample: string, number, boolean, array,
///   dictionary; `null` in the sample accepts any value.
/// - The first element of an array is the schema of every element; an empty
///   array accepts any elements.
/// - A string of the form `"{tag}"` stands for what the registry holds under
///   that tag: a value transformer (`"{date_iso8601}"`) or an object mapper
///   (`"{issue}"`), which validates the value against its own schema and
///   maps it to a model.
/// - A sample whose only key is `"{root}"` describes a root that is not a
///   dictionary: `{"{root}": ["{issue}"]}` is an array of issues.
///
/// ```swift
/// let schema = try PocketSchema(json: #"{"issues": ["{issue}"], "total_count": 0, "note{?}": ""}"#)
/// let schema = PocketSchema.response(for: RequestToGetIssues.self)   // RequestToGetIssues.response.json
/// ```
public struct PocketSchema: Sendable {
    indirect enum Node: Sendable {
        /// `null` in the sample: any value.
        case any
        case string
        case number
        case bool
        /// Elements all match the node; nil for an empty sample array (any elements).
        case array(Node?)
        case object([Field])
        /// `"{name}"`, braces included.
        case tag(String)

        var typeName: String {
            switch self {
            case .any: return "any value"
            case .string: return "string"
            case .number: return "number"
            case .bool: return "boolean"
            case .array: return "array"
            case .object: return "dictionary"
            case let .tag(t): return t
            }
        }
    }

    struct Field: Sendable {
        var name: String
        var optional: Bool
        var node: Node
    }

    enum Storage: Sendable {
        case node(Node)
        /// A file in the registry's `resources`, loaded when first used;
        /// when `optional`, a missing file means no schema.
        case resource(String, optional: Bool)
    }

    let storage: Storage

    init(node: Node) { storage = .node(node) }

    /// A schema from a sample JSON document. Throws `.invalidSchema` when the
    /// text is not JSON (the message says where).
    public init(json: String) throws {
        do {
            self.init(sample: try PocketJSONValue(parsing: json))
        } catch let error as PocketError {
            throw PocketError(.invalidSchema, "schema is not valid JSON: \(error.message)", underlying: error)
        }
    }

    /// A schema from a sample JSON document in UTF-8 (see `init(json:)`).
    public init(data: Data) throws {
        do {
            self.init(sample: try PocketJSONValue(parsing: data))
        } catch let error as PocketError {
            throw PocketError(.invalidSchema, "schema is not valid JSON: \(error.message)", underlying: error)
        }
    }

    /// A schema from a sample already parsed.
    public init(sample: PocketJSONValue) {
        self.init(node: PocketSchema.node(sample).rooted)
    }

    /// A schema that is just one tag: the whole document goes through that
    /// transformer or mapper (`PocketSchema(tag: "{issue}")` maps a root issue).
    public init(tag: String) {
        self.init(node: .tag(PocketSchema.normalizedTag(tag)))
    }

    /// The schema file `fileName` in the registry's `resources`
    /// (`PocketSchemaRegistry.resources`), loaded and parsed once, when first used.
    /// A missing file is `.schemaNotFound`, unless `optional` (false by
    /// default): then it means no schema, and nothing is validated — for
    /// conventions that apply only where someone wrote the file.
    public static func resource(_ fileName: String, optional: Bool = false) -> PocketSchema {
        PocketSchema(storage: .resource(fileName, optional: optional))
    }

    /// `TypeName.response.json`: the response schema of an endpoint type, by
    /// TyphoonRestClient's naming rule (`RequestToGetIssues.response.json`);
    /// `optional` as for `resource(_:optional:)`.
    public static func response(for type: Any.Type, optional: Bool = false) -> PocketSchema {
        .resource("\(type).response.json", optional: optional)
    }

    /// `TypeName.request.json`: the request body schema of an endpoint type;
    /// `optional` as for `resource(_:optional:)`.
    public static func request(for type: Any.Type, optional: Bool = false) -> PocketSchema {
        .resource("\(type).request.json", optional: optional)
    }

    /// `TypeName.path.json`: the schema of an endpoint type's path
    /// parameters; `optional` as for `resource(_:optional:)`.
    public static func pathParameters(for type: Any.Type, optional: Bool = false) -> PocketSchema {
        .resource("\(type).path.json", optional: optional)
    }

    private init(storage: Storage) { self.storage = storage }

    /// The file name of a resource schema, or nil for a schema given inline.
    public var resourceName: String? {
        if case let .resource(name, _) = storage { return name }
        return nil
    }

    static let optionalSuffix = "{?}"

    static func node(_ sample: PocketJSONValue) -> Node {
        switch sample {
        case .null, .mapped: return .any
        case .bool: return .bool
        case .int, .double: return .number
        case let .string(s): return isTag(s) ? .tag(s) : .string
        case let .array(elements): return .array(elements.first.map(node))
        case let .object(object):
            return .object(object.members.map { member in
                let optional = member.key.hasSuffix(optionalSuffix)
                let name = optional ? String(member.key.dropLast(optionalSuffix.count)) : member.key
                return Field(name: name, optional: optional, node: node(member.value))
            })
        }
    }

    /// `{name}` with a non-empty name of no spaces or braces.
    static func isTag(_ s: String) -> Bool {
        let u = s.utf8
        guard u.count > 2, u.first == UInt8(ascii: "{"), u.last == UInt8(ascii: "}") else { return false }
        return !u.dropFirst().dropLast().contains { $0 == UInt8(ascii: "{") || $0 == UInt8(ascii: "}") || $0 == 0x20 }
    }

    /// `date_iso8601` and `{date_iso8601}` both name the tag `{date_iso8601}`.
    static func normalizedTag(_ tag: String) -> String {
        isTag(tag) ? tag : "{\(tag)}"
    }
}

/// Where a value sits in a JSON tree, written as TyphoonRestClient writes it:
/// `root.issues[1].category`.
public struct PocketSchemaPath: Sendable, Hashable, CustomStringConvertible {
    /// One step down: a dictionary key or an array index.
    public enum Component: Sendable, Hashable {
        /// A dictionary key.
        case key(String)
        /// An array index, from 0.
        case index(Int)
    }

    /// From the root down.
    public var components: [Component]

    /// A path; no components is the root.
    public init(_ components: [Component] = []) { self.components = components }

    /// `root`, then `.key` and `[index]` per component.
    public var description: String {
        var s = "root"
        for c in components {
            switch c {
            case let .key(k): s += "." + k
            case let .index(i): s += "[\(i)]"
            }
        }
        return s
    }

    func appending(_ c: Component) -> PocketSchemaPath { PocketSchemaPath(components + [c]) }
}

/// How strictly a schema applies. The defaults are TyphoonRestClient's:
/// types exact, extra keys kept, a `null` counts as a missing value.
public struct PocketSchemaOptions: Sendable, Hashable {
    /// What happens to keys the schema does not name.
    public enum UnknownKeys: Sendable, Hashable {
        /// Passed through unvalidated (the default): servers add fields over
        /// time, and a new field must not break old clients.
        case keep
        /// Removed from the result, so a model sees only what the schema names.
        case drop
    }

    /// What a JSON `null` means.
    public enum Nulls: Sendable, Hashable {
        /// `null` counts as absent (the default, as most APIs mean it): an
        /// optional key with `null` is removed from the result; a required
        /// key with `null` fails as missing; a `null` array element fails.
        case absent
        /// `null` passes wherever a value may be, kept as `null`;
        /// transformers and mappers are not called for it.
        case asIs
    }

    /// Keys the schema does not name: `.keep` by default.
    public var unknownKeys: UnknownKeys = .keep
    /// Accept a numeric string where a number is expected (`"42"` → 42) and a
    /// number where a string is expected (42 → `"42"`). Off by default: a
    /// type change is usually an API change worth hearing about.
    public var coercesNumbersAndStrings = false
    /// `null` handling: `.absent` by default.
    public var nulls: Nulls = .absent

    /// Options; each default as documented on its property.
    public init(unknownKeys: UnknownKeys = .keep, coercesNumbersAndStrings: Bool = false, nulls: Nulls = .absent) {
        self.unknownKeys = unknownKeys
        self.coercesNumbersAndStrings = coercesNumbersAndStrings
        self.nulls = nulls
    }
}
