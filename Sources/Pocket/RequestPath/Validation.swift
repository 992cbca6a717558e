/// What makes a response acceptable: its status and its content type.
///
/// Opt-in. `client.send` returns any status as a response (a 404 is an
/// answer, not a transport failure; redirects, downloads and streams need
/// the raw status), so validation runs only where it is asked for:
/// `Configuration.validation` (every `send` of the client), a template's or
/// a request's `validation` (that request), or `response.validate()` after
/// the fact. A response that fails is a `PocketError` (`.unacceptableStatus`,
/// `.unacceptableContentType`) carrying the status, headers and body.
/// When none is set, `send` does no work for it.
///
/// ```swift
/// var config = PocketClient.Configuration()
/// config.validation = PocketValidation()                       // 2xx and the format's content types
/// request.validation = PocketValidation(statusCodes: [200..<300, 404..<405])
/// ```
public struct PocketValidation: Sendable, Hashable, Codable {
    /// Acceptable statuses; 2xx by default (what MTPocket calls success).
    public var statusCodes: [Range<Int>]
    /// Acceptable media types (`application/json`, `+json`, `text/*`,
    /// `*/*`); nil (the default) takes them from the request's format
    /// (`PocketContentFormat.acceptableContentTypes`, JSON when it has none). A
    /// response with an empty body passes whatever its type: there is
    /// nothing to misread.
    public var contentTypes: [String]?

    /// 2xx and the format's content types unless told otherwise.
    public init(statusCodes: [Range<Int>] = [200..<300], contentTypes: [String]? = nil) {
        self.statusCodes = statusCodes
        self.contentTypes = contentTypes
    }

    /// Statuses only: any content type (for endpoints whose type is not
    /// known or does not matter).
    public static func status(_ codes: [Range<Int>] = [200..<300]) -> PocketValidation {
        PocketValidation(statusCodes: codes, contentTypes: ["*/*"])
    }
}

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
