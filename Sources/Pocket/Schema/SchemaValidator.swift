/// Applies a schema to a JSON tree: checks it, runs transformers and mappers,
/// and applies the options. One walk, no copying of what does not change.
///
/// `.response` reads (JSON → Swift values: transformers' `value(from:)`,
/// mappers' `model(from:)`); `.request` writes (Swift values → JSON: the
/// reverse transformers and mappers, then the same checks), so a request body
/// or a set of path parameters is held to its schema before it is sent.
struct SchemaValidator {
    enum Direction { case response, request }

    /// What became of a value.
    enum Outcome {
        case unchanged
        case replaced(PocketJSONValue)
        /// A mapper returned nil, or a `null` counts as absent: leave it out.
        case removed
    }

    struct Failure: Error {
        enum Kind {
            case missingKey
            case typeMismatch(expected: String, got: PocketJSONValue)
            case transform(tag: String, message: String)
            case unknownTag(String)
            case mapping(tag: String, mapper: String, error: any Error)
            /// Arrays and dictionaries nest past `PocketJSONParser.defaultMaxDepth`
            /// (a tree built in code; parsed bodies never get here).
            case tooDeep
            /// A schema file that could not be loaded: reported as it is.
            case schema(PocketError)
        }
        var kind: Kind
        /// Path components from the failing value up to the root.
        var reversedPath: [PocketSchemaPath.Component] = []
    }

    enum Resolved {
        case transformer(AnyValueTransformer)
        case mapper(AnyObjectMapper, PocketSchema.Node)
    }

    let registry: PocketSchemaRegistry
    let options: PocketSchemaOptions
    let direction: Direction
    /// Tags resolved so far. A schema uses a handful, so a linear scan
    /// (short strings compare in two words) beats hashing the tag per value.
    private var resolved: [(tag: String, resolved: Resolved)] = []
    /// Arrays and dictionaries entered and not yet left: the recursion is
    /// bounded by it, so a deep tree built in code cannot exhaust the stack.
    private var depth = 0

    init(registry: PocketSchemaRegistry, options: PocketSchemaOptions? = nil, direction: Direction) {
        self.registry = registry
        self.options = options ?? registry.options
        self.direction = direction
    }

    /// Applies `node` to the whole document `root`; throws `PocketError`.
    mutating func apply(_ root: PocketJSONValue, _ node: PocketSchema.Node) throws -> PocketJSONValue {
        do {
            switch try validate(root, node) {
            case .unchanged: return root
            case let .replaced(value): return value
            case .removed: return .null
            }
        } catch let failure {
            throw failure.pocketError(body: root)
        }
    }

    mutating func validate(_ value: PocketJSONValue, _ node: PocketSchema.Node) throws(Failure) -> Outcome {
        switch node {
        case .any:
            return .unchanged
        case .string:
            switch value {
            case .string: return .unchanged
            case .int where options.coercesNumbersAndStrings, .double where options.coercesNumbersAndStrings:
                return .replaced(.string(value.description))
            default: return try mismatch(value, node)
            }
        case .number:
            switch value {
            case .int, .double: return .unchanged
            case let .string(s) where options.coercesNumbersAndStrings:
                if let i = Int(s) { return .replaced(.int(i)) }
                if let d = Double(s), d.isFinite { return .replaced(.double(d)) }
                return try mismatch(value, node)
            default: return try mismatch(value, node)
            }
        case .bool:
            if case .bool = value { return .unchanged }
            return try mismatch(value, node)
        case let .array(element):
            guard case let .array(elements) = value else { return try mismatch(value, node) }
            guard let element else { return .unchanged }
            try enter()
            defer { depth -= 1 }
            return try validateArray(elements, element)
        case let .object(fields):
            guard case let .object(object) = value else { return try mismatch(value, node) }
            try enter()
            defer { depth -= 1 }
            return try validateObject(object, fields)
        case let .tag(tag):
            return try validateTagged(value, tag)
        }
    }

    private mutating func enter() throws(Failure) {
        depth += 1
        if depth > PocketJSONParser.defaultMaxDepth {
            depth -= 1
            throw Failure(kind: .tooDeep)
        }
    }

    private func mismatch(_ value: PocketJSONValue, _ node: PocketSchema.Node) throws(Failure) -> Outcome {
        if case .null = value, options.nulls == .asIs { return .unchanged }
        throw Failure(kind: .typeMismatch(expected: node.typeName, got: value))
    }

    private mutating func validateArray(_ elements: [PocketJSONValue], _ node: PocketSchema.Node) throws(Failure) -> Outcome {
        var result: [PocketJSONValue]? = nil
        for i in elements.indices {
            let outcome: Outcome
            do {
                outcome = try validate(elements[i], node)
            } catch var failure {
                failure.reversedPath.append(.index(i))
                throw failure
            }
            switch outcome {
            case .unchanged:
                if result != nil { result!.append(elements[i]) }
            case let .replaced(v):
                if result == nil { result = Array(elements[0..<i]); result!.reserveCapacity(elements.count) }
                result!.append(v)
            case .removed:
                if result == nil { result = Array(elements[0..<i]) }
            }
        }
        return result.map { .replaced(.array($0)) } ?? .unchanged
    }

    private mutating func validateObject(_ input: PocketJSONObject, _ fields: [PocketSchema.Field]) throws(Failure) -> Outcome {
        var object = input
        var changed = false
        var removals: [Int] = []
        var matched = 0
        var hint = 0
        let members = input.members
        for field in fields {
            let position = Self.find(field.name, in: members, from: hint)
            var present = position != nil
            if let position, case .null = members[position].value, options.nulls == .absent {
                if case .any = field.node {} else { present = false }
            }
            guard let position, present else {
                if field.optional {
                    if let position {
                        matched += 1
                        removals.append(position)
                    }
                    continue
                }
                throw Failure(kind: .missingKey, reversedPath: [.key(field.name)])
            }
            matched += 1
            hint = position + 1
            let outcome: Outcome
            do {
                outcome = try validate(members[position].value, field.node)
            } catch var failure {
                failure.reversedPath.append(.key(field.name))
                throw failure
            }
            switch outcome {
            case .unchanged: break
            case let .replaced(v):
                object.setValue(v, at: position)
                changed = true
            case .removed:
                removals.append(position)
            }
        }
        if options.unknownKeys == .drop, matched < members.count {
            var named = Set<String>(minimumCapacity: fields.count)
            for field in fields { named.insert(field.name) }
            for (i, member) in members.enumerated() where !named.contains(member.key) { removals.append(i) }
        }
        if !removals.isEmpty {
            object.removeMembers(at: Array(Set(removals)).sorted())
            changed = true
        }
        return changed ? .replaced(.object(object)) : .unchanged
    }

    /// The position of `key`, searching from `hint` first: members usually
    /// come in the schema's order, so this is one comparison per key.
    @inline(__always)
    private static func find(_ key: String, in members: [(key: String, value: PocketJSONValue)], from hint: Int) -> Int? {
        var i = hint
        while i < members.count {
            if members[i].key == key { return i }
            i += 1
        }
        i = 0
        while i < min(hint, members.count) {
            if members[i].key == key { return i }
            i += 1
        }
        return nil
    }

    private mutating func resolve(_ tag: String) throws(Failure) -> Resolved {
        for entry in resolved where entry.tag == tag { return entry.resolved }
        let r: Resolved
        if let t = registry.transformers[tag] {
            r = .transformer(t)
        } else if let m = registry.mappers[tag] {
            do {
                r = .mapper(m, try registry.node(of: direction == .response ? m.schema : m.requestSchema))
            } catch let error as PocketError {
                throw Failure(kind: .schema(error))
            } catch {
                throw Failure(kind: .schema(PocketError(.invalidSchema, "\(error)")))
            }
        } else {
            throw Failure(kind: .unknownTag(tag))
        }
        resolved.append((tag, r))
        return r
    }

    private mutating func validateTagged(_ value: PocketJSONValue, _ tag: String) throws(Failure) -> Outcome {
        if case .null = value, options.nulls == .asIs { return .unchanged }
        switch try resolve(tag) {
        case let .transformer(t):
            if direction == .request, case let .mapped(box) = value {
                let json: PocketJSONValue?
                do {
                    json = try t.toJSON(box.value)
                } catch {
                    throw Failure(kind: .transform(tag: tag, message: Self.describe(error)))
                }
                guard let json else {
                    throw Failure(kind: .typeMismatch(expected: "\(t.valueType) for \(tag)", got: value))
                }
                return .replaced(json)
            }
            guard t.accepted.accepts(value) else {
                throw Failure(kind: .typeMismatch(expected: t.accepted.names + " for \(tag)", got: value))
            }
            let transformed: any Sendable
            do {
                transformed = try t.toValue(value)
            } catch {
                throw Failure(kind: .transform(tag: tag, message: Self.describe(error)))
            }
            // A request keeps the JSON it was given once it is known to transform.
            return direction == .response ? .replaced(.mapped(transformed)) : .unchanged
        case let .mapper(m, node):
            var json = value
            if direction == .request, case let .mapped(box) = value {
                let written: PocketJSONValue?
                do {
                    written = try m.toJSON(box.value)
                } catch {
                    throw Failure(kind: .mapping(tag: tag, mapper: m.name, error: error))
                }
                guard let written else {
                    throw Failure(kind: .typeMismatch(expected: "\(m.modelType) for \(tag)", got: value))
                }
                json = written
            }
            switch try validate(json, node) {
            case .unchanged: break
            case let .replaced(v): json = v
            case .removed: return .removed
            }
            if direction == .request {
                return .replaced(json)
            }
            do {
                guard let model = try m.toModel(json) else { return .removed }
                return .replaced(.mapped(model))
            } catch {
                throw Failure(kind: .mapping(tag: tag, mapper: m.name, error: error))
            }
        }
    }

    static func describe(_ error: any Error) -> String {
        if let e = error as? PocketError { return e.message }
        if let e = error as? TransformError { return e.description }
        if let e = error as? DecodingError { return DecodingErrorPath.describe(e) }
        return String(describing: error)
    }
}

extension SchemaValidator.Failure {
    /// The `PocketError` for this failure, with TyphoonRestClient's wording
    /// and an excerpt of `body` around the failing place.
    func pocketError(body: PocketJSONValue) -> PocketError {
        let path = PocketSchemaPath(reversedPath.reversed())
        let code: PocketError.Code
        let reason: String
        var excerptPath = path
        switch kind {
        case let .schema(error):
            return error
        case .tooDeep:
            return PocketError(.jsonNestingTooDeep,
                               "JSON nests deeper than \(PocketJSONParser.defaultMaxDepth) arrays and dictionaries at \(path)")
        case .missingKey:
            code = .schemaValidationFailed
            excerptPath = PocketSchemaPath(Array(path.components.dropLast()))
            reason = "Can't find value for \(Self.place(path))"
        case let .typeMismatch(expected, got):
            code = .schemaValidationFailed
            reason = "Type mismatch for \(Self.place(path)): expected \(expected), got \(Self.preview(got))"
        case let .transform(tag, message):
            code = .schemaTransformFailed
            reason = "Can't transform value for \(Self.place(path)) with \(tag): \(message)"
        case let .unknownTag(tag):
            code = .schemaUnknownTag
            reason = "No value transformer or object mapper is registered for tag '\(tag)', used for \(Self.place(path))"
        case let .mapping(tag, mapper, error):
            code = .schemaMappingFailed
            reason = "Can't map value for \(Self.place(path)) with \(tag) (\(mapper)): \(SchemaValidator.describe(error))"
        }
        let excerpt = JSONWriter.excerpt(of: body, at: excerptPath)
        let violation = PocketSchemaViolation(reason: reason, path: path, excerpt: excerpt)
        return PocketError(code, reason + "\n" + excerpt, underlying: violation)
    }

    /// `key 'k' in 'root.a' dictionary`, `item 3 in 'root.a' array`, or `'root'`.
    static func place(_ path: PocketSchemaPath) -> String {
        guard let last = path.components.last else { return "'root'" }
        let parent = PocketSchemaPath(Array(path.components.dropLast()))
        switch last {
        case let .key(k): return "key '\(k)' in '\(parent)' dictionary"
        case let .index(i): return "item \(i) in '\(parent)' array"
        }
    }

    /// `string "abc"`, `number 42`, `array`, `dictionary`, `null`.
    static func preview(_ value: PocketJSONValue) -> String {
        switch value {
        case .array, .object, .null, .mapped: return value.typeName
        default:
            var text = value.description
            if text.count > 40 { text = String(text.prefix(40)) + "…" }
            return value.typeName + " " + text
        }
    }
}
