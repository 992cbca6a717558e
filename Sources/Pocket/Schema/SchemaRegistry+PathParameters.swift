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
    /// let request = try Request(path: "issues/{issue_id}.json", baseURL: base, parameters: parameters)
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
