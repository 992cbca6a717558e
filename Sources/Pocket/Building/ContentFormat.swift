/// The format of a request's body and of the response it asks for, as
/// MTPocket's `format`: it writes `Accept` (and `Content-Type` when the
/// request has a body), names the content types validation accepts, and
/// tells `PocketResponse.decode` how to read the body.
///
/// JSON is the default everywhere (`Configuration.format`), as in MTPocket
/// and TyphoonRestClient: it is what REST services speak.
///
/// ```swift
/// let request = try client.request(.post, "login", body: .form(["user": "ada"]), format: .form)
/// ```
public struct PocketContentFormat: Sendable, Hashable, Codable, CustomStringConvertible {
    /// How `PocketResponse.decode` reads a body of this format.
    public enum Decoding: String, Sendable, Hashable, Codable {
        /// `JSONDecoder`.
        case json
        /// Only `String` (the charset-aware text) and `Data` can be decoded.
        case text
        /// Only `Data` (and `String`) can be decoded.
        case binary
    }

    /// `Content-Type` for a request body, e.g. `application/json`.
    public var contentType: String
    /// The `Accept` header, e.g. `application/json`.
    public var accept: String
    /// Media types a response may have to pass validation when
    /// `PocketValidation.contentTypes` is nil: exact types (`application/json`),
    /// structured suffixes (`+json`) or wildcards (`text/*`, `*/*`).
    public var acceptableContentTypes: [String]
    /// How the body decodes.
    public var decoding: Decoding

    /// A format of your own, e.g. `application/vnd.api+json` with `+json` accepted.
    public init(contentType: String, accept: String, acceptableContentTypes: [String], decoding: Decoding) {
        self.contentType = contentType
        self.accept = accept
        self.acceptableContentTypes = acceptableContentTypes
        self.decoding = decoding
    }

    /// `application/json` both ways; `application/*+json` (RFC 6839) also
    /// accepted, so `application/problem+json` error bodies validate and decode.
    public static let json = PocketContentFormat(contentType: "application/json", accept: "application/json",
                                           acceptableContentTypes: ["application/json", "+json"], decoding: .json)
    /// An `application/x-www-form-urlencoded` body (`PocketRequestBody.form`);
    /// the response may be anything (`Accept: */*`), decoded as JSON when it is JSON.
    public static let form = PocketContentFormat(contentType: "application/x-www-form-urlencoded", accept: "*/*",
                                           acceptableContentTypes: ["*/*"], decoding: .json)
    /// `text/plain; charset=utf-8` both ways; any `text/*` response is accepted.
    public static let text = PocketContentFormat(contentType: "text/plain; charset=utf-8", accept: "text/plain",
                                           acceptableContentTypes: ["text/*"], decoding: .text)
    /// `application/xml`; `text/xml` and `+xml` types accepted. Decodes as text
    /// (Pocket has no XML mapper).
    public static let xml = PocketContentFormat(contentType: "application/xml", accept: "application/xml",
                                          acceptableContentTypes: ["application/xml", "text/xml", "+xml"], decoding: .text)
    /// Raw bytes: `application/octet-stream` out, any type accepted back.
    public static let binary = PocketContentFormat(contentType: "application/octet-stream", accept: "*/*",
                                             acceptableContentTypes: ["*/*"], decoding: .binary)

    /// The request content type.
    public var description: String { contentType }

    /// True when `mediaType` (lowercased, without parameters) is one of `patterns`.
    static func matches(_ mediaType: String, _ patterns: [String]) -> Bool {
        patterns.contains { raw in
            let pattern = raw.lowercased()
            if pattern == "*/*" || pattern == mediaType { return true }
            if pattern.hasPrefix("+") { return mediaType.hasSuffix(pattern) }
            if pattern.hasSuffix("/*") { return mediaType.hasPrefix(pattern.dropLast()) }
            return false
        }
    }
}
