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
/// config.validation = Validation()                       // 2xx and the format's content types
/// request.validation = Validation(statusCodes: [200..<300, 404..<405])
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
