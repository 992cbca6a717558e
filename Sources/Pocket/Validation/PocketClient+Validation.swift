extension PocketClient {
    /// The last step of `send`: the response keeps the request it answers,
    /// and is validated by the request's `validation`, else the client's.
    /// With neither set (the default) that is one copy and one nil check:
    /// no allocation on the fast path.
    func completed(_ response: Response, for request: Request) throws -> Response {
        var response = response
        response.request = request
        if let validation = request.validation ?? configuration.validation {
            try response.validate(validation)
        }
        return response
    }
}
