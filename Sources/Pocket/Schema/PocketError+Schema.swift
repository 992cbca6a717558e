extension PocketError.Code {
    // Schemas, JSON and mapping (Schema/)

    /// A body is not JSON; the message gives line and column.
    public static let malformedJSON = PocketError.Code("malformed_json")
    /// JSON nests deeper than the limit (`PocketJSONParser.defaultMaxDepth`, 128):
    /// a body when parsed, a tree built in code when validated or written.
    public static let jsonNestingTooDeep = PocketError.Code("json_nesting_too_deep")
    /// A JSON value does not match its schema: a required key is missing or
    /// a value has the wrong type. `underlying` is the `PocketSchemaViolation`.
    public static let schemaValidationFailed = PocketError.Code("schema_validation_failed")
    /// A value transformer could not transform a value (e.g. a date that
    /// does not parse). `underlying` is the `PocketSchemaViolation`.
    public static let schemaTransformFailed = PocketError.Code("schema_transform_failed")
    /// A schema names a tag no transformer or mapper is registered for.
    public static let schemaUnknownTag = PocketError.Code("schema_unknown_tag")
    /// An object mapper threw, or a value has no JSON form (a model with no
    /// mapper back to JSON, a non-finite number).
    public static let schemaMappingFailed = PocketError.Code("schema_mapping_failed")
    /// A schema file is not where its name says (`resources` unset, or no such file).
    public static let schemaNotFound = PocketError.Code("schema_not_found")
    /// A schema is not a valid JSON sample.
    public static let invalidSchema = PocketError.Code("invalid_schema")
    /// An error parser found an error in the response (an error status's
    /// body, or a 2xx it declared an error, e.g. `{"success": false}`);
    /// `underlying` is the parser's typed error. A bad status no parser
    /// typed is `.unacceptableStatus`.
    public static let errorResponse = PocketError.Code("error_response")
}

/// Where and why a JSON value failed its schema; the `underlying` of
/// `.schemaValidationFailed` and `.schemaTransformFailed` errors.
public struct PocketSchemaViolation: Error, Sendable, Hashable {
    /// The sentence TyphoonRestClient users know, e.g.
    /// `Can't find value for key 'category' in 'root.issues[1]' dictionary`.
    public var reason: String
    /// The failing value's place (for a missing key: the key's place).
    public var path: PocketSchemaPath
    /// The body pretty-printed around the failing place, that line marked with `>`.
    public var excerpt: String
}
