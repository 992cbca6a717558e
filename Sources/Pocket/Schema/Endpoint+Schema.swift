extension PocketEndpoint {
    /// Holds `parameters` to `schema` (request direction, with the client's
    /// `Configuration.schemas`); nothing for no schema or an optional file
    /// that is not there. The parameters are sent as they are: the schema
    /// checks them (keys, types, tagged values that must transform).
    func checkSchema(_ schema: PocketSchema?, _ parameters: [String: PocketParameterValue], _ client: PocketClient) throws {
        let schemas = client.configuration.schemas
        guard let schema, !schemas.isAbsent(schema) else { return }
        _ = try schemas.encode(.object(PocketJSONObject(parameters.sorted { $0.key < $1.key }.map { ($0.key, PocketJSONValue($0.value)) })),
                               schema: schema)
    }
}

extension PocketJSONValue {
    /// The JSON value of a request parameter (a dictionary's keys sorted).
    public init(_ parameter: PocketParameterValue) {
        switch parameter {
        case let .string(s): self = .string(s)
        case let .integer(i): self = .int(i)
        case let .double(d): self = .double(d)
        case let .bool(b): self = .bool(b)
        case .null: self = .null
        case let .array(elements): self = .array(elements.map(PocketJSONValue.init))
        case let .dictionary(d):
            self = .object(PocketJSONObject(d.sorted { $0.key < $1.key }.map { ($0.key, PocketJSONValue($0.value)) }))
        }
    }
}
