/// A response status with a name, as MTPocket's `MTPocketStatus`: compare
/// with the constants (`response.httpStatus == .notFound`), read the code
/// (`.code`) and the class (`.kind`). Any code from 100 to 999 is
/// representable; `name` is the RFC 9110 reason phrase, or "" for a code
/// it does not define.
public struct HTTPStatus: RawRepresentable, Hashable, Sendable, Codable, ExpressibleByIntegerLiteral,
    CustomStringConvertible {
    /// The numeric code, e.g. 404.
    public let code: Int
    public var rawValue: Int { code }

    public init(rawValue: Int) { code = rawValue }
    public init(_ code: Int) { self.code = code }
    public init(integerLiteral value: Int) { code = value }

    /// The class of a status (RFC 9110 §15).
    public enum Kind: Sendable, Hashable {
        case informational, success, redirection, clientError, serverError, invalid
    }

    public var kind: Kind {
        switch code {
        case 100..<200: return .informational
        case 200..<300: return .success
        case 300..<400: return .redirection
        case 400..<500: return .clientError
        case 500..<600: return .serverError
        default: return .invalid
        }
    }

    public static let `continue`: HTTPStatus = 100
    public static let switchingProtocols: HTTPStatus = 101
    public static let ok: HTTPStatus = 200
    public static let created: HTTPStatus = 201
    public static let accepted: HTTPStatus = 202
    public static let nonAuthoritativeInformation: HTTPStatus = 203
    public static let noContent: HTTPStatus = 204
    public static let resetContent: HTTPStatus = 205
    public static let partialContent: HTTPStatus = 206
    public static let multipleChoices: HTTPStatus = 300
    public static let movedPermanently: HTTPStatus = 301
    public static let found: HTTPStatus = 302
    public static let seeOther: HTTPStatus = 303
    public static let notModified: HTTPStatus = 304
    public static let temporaryRedirect: HTTPStatus = 307
    public static let permanentRedirect: HTTPStatus = 308
    public static let badRequest: HTTPStatus = 400
    public static let unauthorized: HTTPStatus = 401
    public static let paymentRequired: HTTPStatus = 402
    public static let forbidden: HTTPStatus = 403
    public static let notFound: HTTPStatus = 404
    public static let methodNotAllowed: HTTPStatus = 405
    public static let notAcceptable: HTTPStatus = 406
    public static let proxyAuthenticationRequired: HTTPStatus = 407
    public static let requestTimeout: HTTPStatus = 408
    public static let conflict: HTTPStatus = 409
    public static let gone: HTTPStatus = 410
    public static let lengthRequired: HTTPStatus = 411
    public static let preconditionFailed: HTTPStatus = 412
    public static let contentTooLarge: HTTPStatus = 413
    public static let uriTooLong: HTTPStatus = 414
    public static let unsupportedMediaType: HTTPStatus = 415
    public static let rangeNotSatisfiable: HTTPStatus = 416
    public static let expectationFailed: HTTPStatus = 417
    public static let misdirectedRequest: HTTPStatus = 421
    public static let unprocessableContent: HTTPStatus = 422
    public static let upgradeRequired: HTTPStatus = 426
    public static let tooManyRequests: HTTPStatus = 429
    public static let internalServerError: HTTPStatus = 500
    public static let notImplemented: HTTPStatus = 501
    public static let badGateway: HTTPStatus = 502
    public static let serviceUnavailable: HTTPStatus = 503
    public static let gatewayTimeout: HTTPStatus = 504
    public static let httpVersionNotSupported: HTTPStatus = 505

    /// The RFC 9110 reason phrase ("Not Found"), or "" for other codes.
    public var name: String {
        switch code {
        case 100: return "Continue"
        case 101: return "Switching Protocols"
        case 200: return "OK"
        case 201: return "Created"
        case 202: return "Accepted"
        case 203: return "Non-Authoritative Information"
        case 204: return "No Content"
        case 205: return "Reset Content"
        case 206: return "Partial Content"
        case 300: return "Multiple Choices"
        case 301: return "Moved Permanently"
        case 302: return "Found"
        case 303: return "See Other"
        case 304: return "Not Modified"
        case 307: return "Temporary Redirect"
        case 308: return "Permanent Redirect"
        case 400: return "Bad Request"
        case 401: return "Unauthorized"
        case 402: return "Payment Required"
        case 403: return "Forbidden"
        case 404: return "Not Found"
        case 405: return "Method Not Allowed"
        case 406: return "Not Acceptable"
        case 407: return "Proxy Authentication Required"
        case 408: return "Request Timeout"
        case 409: return "Conflict"
        case 410: return "Gone"
        case 411: return "Length Required"
        case 412: return "Precondition Failed"
        case 413: return "Content Too Large"
        case 414: return "URI Too Long"
        case 415: return "Unsupported Media Type"
        case 416: return "Range Not Satisfiable"
        case 417: return "Expectation Failed"
        case 421: return "Misdirected Request"
        case 422: return "Unprocessable Content"
        case 426: return "Upgrade Required"
        case 429: return "Too Many Requests"
        case 500: return "Internal Server Error"
        case 501: return "Not Implemented"
        case 502: return "Bad Gateway"
        case 503: return "Service Unavailable"
        case 504: return "Gateway Timeout"
        case 505: return "HTTP Version Not Supported"
        default: return ""
        }
    }

    public var description: String { name.isEmpty ? String(code) : "\(code) \(name)" }
}
