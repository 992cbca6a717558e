extension PocketResponse {
    /// Throws unless the response passes `validation`: `.unacceptableStatus`
    /// for a status outside `statusCodes`, `.unacceptableContentType` for a
    /// non-empty body whose media type is missing or not accepted (when
    /// `contentTypes` is nil: the request's format's types, JSON's when it has
    /// none). The error carries the head (`response`) and the body (`body`),
    /// so an API's error document is at hand. Returns the response, to chain:
    ///
    /// ```swift
    /// let issue = try await client.send(request).validate().decode(Issue.self)
    /// ```
    @discardableResult
    public func validate(_ validation: PocketValidation = PocketValidation()) throws -> PocketResponse {
        if let failure = validationFailure(validation, format: format, hasBody: !body.isEmpty) { throw failure }
        return self
    }

    /// Why the response fails `validation`, or nil: the status, then the
    /// media type when there is a body (`hasBody`; a streamed response
    /// judges it from its head). `format` gives the accepted types when
    /// `validation.contentTypes` is nil.
    func validationFailure(_ validation: PocketValidation, format: PocketContentFormat, hasBody: Bool) -> PocketError? {
        guard validation.statusCodes.contains(where: { $0.contains(status) }) else {
            return PocketError(.unacceptableStatus, "HTTP \(httpStatus) is not acceptable"
                               + " (expected \(Self.describe(validation.statusCodes)))\(bodyExcerpt)",
                               response: head, body: body)
        }
        guard hasBody else { return nil }
        let accepted = validation.contentTypes ?? format.acceptableContentTypes
        guard let type = mimeType else {
            guard PocketContentFormat.matches("", accepted) else {
                return PocketError(.unacceptableContentType,
                                   "the response has no Content-Type (expected \(accepted.joined(separator: ", ")))",
                                   response: head, body: body)
            }
            return nil
        }
        guard PocketContentFormat.matches(type, accepted) else {
            return PocketError(.unacceptableContentType,
                               "Content-Type \(type) is not acceptable (expected \(accepted.joined(separator: ", ")))",
                               response: head, body: body)
        }
        return nil
    }

    private static func describe(_ ranges: [Range<Int>]) -> String {
        ranges.map { $0.count == 1 ? String($0.lowerBound) : "\($0.lowerBound)-\($0.upperBound - 1)" }
            .joined(separator: ", ")
    }

    /// The start of a text body, for error messages.
    var bodyExcerpt: String {
        guard !body.isEmpty else { return "" }
        let limit = 200
        let text = String(decoding: body.prefix(limit), as: UTF8.self)
        return ": " + text + (body.count > limit ? "…" : "")
    }
}
