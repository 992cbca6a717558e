extension PocketClient {
    /// The last step of `send`: the response keeps the request it answers,
    /// and is validated by the request's `validation`, else the client's,
    /// then by the request's `schema` (`response.schemaResult`). With none
    /// set (the default) that is one copy and two nil checks: no allocation
    /// on the fast path.
    func completed(_ response: PocketResponse, for request: PocketRequest) throws -> PocketResponse {
        var response = response
        response.request = request
        let validation = request.validation ?? configuration.validation
        if let validation {
            try response.validate(validation)
        }
        if let schema = request.schema, !configuration.schemas.isAbsent(schema) {
            response.schemaResult = try response.validated(schema: schema, registry: configuration.schemas,
                                                           errorParser: request.errorParser,
                                                           acceptedStatus: validation?.statusCodes)
        } else if let parser = request.errorParser {
            try PocketSchemaRegistry.check(response, with: parser, registry: configuration.schemas)
        }
        return response
    }
}
