#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A complete response: status, header fields, body and timings.
public struct PocketResponse: Sendable {
    /// The status code, e.g. 200.
    public var status: Int
    /// The reason phrase as sent (may be empty).
    public var reason: String
    /// 0 for HTTP/1.0, 1 for HTTP/1.1.
    public var httpMinorVersion: Int
    /// Header fields in the order received.
    public var headers: PocketHeaders
    /// The body bytes, after de-chunking. Empty for HEAD, 204 and 304.
    public var body: Data
    /// The URL this response came from: the request's, or where its
    /// redirects led. Nil only for a response built by hand.
    public var url: URL?
    /// The redirects followed to get here, in order; empty for none (then
    /// `timings` are the last hop's).
    public var redirects: [PocketRedirectHop] = []
    /// Where the time went.
    public var timings: PocketTimings
    /// The request that was sent (set by `client.send`), for debugging and
    /// for validation and decoding, which read its format; nil for a
    /// response made by hand.
    public var request: PocketRequest?
    /// The body as the request's `schema` made it (validated, transformed,
    /// mapped: models and dates as `.mapped`), set by `client.send`; nil
    /// when the request had no schema. `decode` reads it instead of the bytes.
    public var schemaResult: PocketJSONValue?
    /// True when the response came from the client's cache
    /// (`PocketRequestHandling.cache`), with or without revalidation.
    public var fromCache = false
    /// True when a stored response was revalidated (a 304) before being returned.
    public var revalidated = false
    /// The sent request's `metadata` (`request?.metadata`).
    public var metadata: (any Sendable)? { request?.metadata }

    /// A response made by hand (for a `PocketTransport`, a stub or a test): HTTP/1.1,
    /// no fields, an empty body and zero timings unless given.
    public init(status: Int, reason: String = "", httpMinorVersion: Int = 1, headers: PocketHeaders = [:],
                body: Data = Data(), timings: PocketTimings = PocketTimings(), request: PocketRequest? = nil) {
        self.status = status
        self.reason = reason
        self.httpMinorVersion = httpMinorVersion
        self.headers = headers
        self.body = body
        self.timings = timings
        self.request = request
    }

    /// The body as text in the charset its `Content-Type` names (UTF-8 when
    /// it names none, as RFC 8259 and most APIs assume). Invalid bytes, and
    /// a charset Pocket does not know, decode as UTF-8 with U+FFFD; use
    /// `decodedText()` to get an error instead.
    public var text: String { (try? decodedText()) ?? String(decoding: body, as: UTF8.self) }

    /// The `charset` parameter of `Content-Type`, lowercased, or nil.
    public var charset: String? { TextCharset.parameter(of: headers["Content-Type"]) }

    /// The body as text in its declared charset (UTF-8 when none): utf-8,
    /// us-ascii, iso-8859-1 (latin1), windows-1252, utf-16 (BOM, else big
    /// endian), utf-16le, utf-16be. Throws `.unsupportedCharset` for another
    /// charset or bytes invalid in this one.
    public func decodedText() throws -> String {
        try TextCharset.decode(body, charset: charset)
    }

    /// True for 2xx.
    public var isSuccess: Bool { (200..<300).contains(status) }
}

/// The head of a response, kept with errors raised after the server answered.
public struct PocketResponseHead: Sendable, Hashable {
    /// The status code, e.g. 200.
    public var status: Int
    /// The reason phrase as sent (may be empty).
    public var reason: String
    /// Header fields in the order received.
    public var headers: PocketHeaders
}

/// Per-request timings, like curl's `-w` variables.
public struct PocketTimings: Sendable, Hashable {
    // Nanoseconds, stored as Int64 (a `Duration` takes 16 bytes): every
    // response carries these, and is copied on its way to the caller.
    // The package's middleware read them as they are: a `Duration` made
    // and turned back into nanoseconds costs two 128-bit multiplications.
    package private(set) var dnsNanos: Int64 = 0
    package private(set) var connectNanos: Int64 = 0
    package private(set) var tlsNanos: Int64 = 0
    package private(set) var firstByteNanos: Int64 = 0
    package private(set) var totalNanos: Int64 = 0
    private var tunnelNanos: Int64 = 0

    /// Name resolution; zero for numeric hosts, cache hits and reused connections.
    public var dns: Duration {
        get { .nanoseconds(dnsNanos) }
        set { dnsNanos = Self.nanos(newValue) }
    }
    /// TCP connect, the whole happy-eyeballs race (first attempt to the
    /// winner); zero on a reused connection.
    public var connect: Duration {
        get { .nanoseconds(connectNanos) }
        set { connectNanos = Self.nanos(newValue) }
    }
    /// TLS handshake; zero for plain HTTP and reused connections.
    public var tls: Duration {
        get { .nanoseconds(tlsNanos) }
        set { tlsNanos = Self.nanos(newValue) }
    }
    /// The CONNECT exchange with a proxy (request sent to its 2xx read);
    /// zero without a proxy tunnel and on a reused connection.
    public var tunnel: Duration {
        get { .nanoseconds(tunnelNanos) }
        set { tunnelNanos = Self.nanos(newValue) }
    }
    /// From `send` to the first response byte.
    public var firstByte: Duration {
        get { .nanoseconds(firstByteNanos) }
        set { firstByteNanos = Self.nanos(newValue) }
    }
    /// From `send` to the last body byte.
    public var total: Duration {
        get { .nanoseconds(totalNanos) }
        set { totalNanos = Self.nanos(newValue) }
    }
    /// Bytes written to and read from the socket for this request.
    public var bytesSent: Int = 0
    /// Response bytes read for this request (head and body as framed, after TLS).
    public var bytesReceived: Int = 0
    /// Bytes on the socket: equal to the above for plain HTTP; over TLS they
    /// include the record overhead and, on a new connection, the handshake.
    public var wireBytesSent: Int = 0
    /// Bytes read from the socket, TLS records (and a new connection's handshake) included.
    public var wireBytesReceived: Int = 0
    /// The request ran on a pooled keep-alive connection.
    public var reusedConnection = false
    /// The request's new TLS connection resumed an earlier session (no full handshake).
    public var tlsResumed = false
    /// The request was sent a second time after a reused connection failed
    /// before any response byte (idempotent methods only).
    public var retried = false
    /// Connection attempts the happy-eyeballs race opened: 1 when the first
    /// address connected, more when it was slow or failed; 0 on a reused
    /// connection.
    public var connectAttempts: Int {
        get { Int(attempts) }
        set { attempts = UInt8(clamping: newValue) }
    }
    private var attempts: UInt8 = 0
    /// The connection's far end, as curl's `remote_ip`/`remote_port`: the
    /// address it connected to (`127.0.0.1`, `::1`), nil when the request
    /// never had a connection.
    public var remoteAddress: String? {
        switch remoteFamily {
        case 4:
            // At most 15 bytes: a small string, written in place (no array, no join).
            return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 15) { text in
                var n = 0
                for i in 0..<4 {
                    if i > 0 { text[n] = UInt8(ascii: "."); n += 1 }
                    let octet = UInt8(truncatingIfNeeded: remoteHigh >> (56 - 8 * i))
                    if octet >= 100 { text[n] = UInt8(ascii: "0") + octet / 100; n += 1 }
                    if octet >= 10 { text[n] = UInt8(ascii: "0") + octet / 10 % 10; n += 1 }
                    text[n] = UInt8(ascii: "0") + octet % 10; n += 1
                }
                return String(decoding: UnsafeBufferPointer(rebasing: text[..<n]), as: UTF8.self)
            }
        case 6:
            let groups = (0..<8).map { i -> UInt16 in
                let word = i < 4 ? remoteHigh : remoteLow
                return UInt16(truncatingIfNeeded: word >> (48 - 16 * (i % 4)))
            }
            return Self.ipv6Text(groups)
        default: return nil
        }
    }
    /// The port connected to; 0 without a connection.
    public var remotePort: Int { Int(remotePortBits) }
    /// The connection's local port (curl's `local_port`); 0 without a connection.
    public var localPort: Int { Int(localPortBits) }
    // The address as two big-endian words (IPv4 in the high 32 bits of the
    // first): no String per response.
    private var remoteHigh: UInt64 = 0
    private var remoteLow: UInt64 = 0
    private var remotePortBits: UInt16 = 0
    private var localPortBits: UInt16 = 0
    private var remoteFamily: UInt8 = 0

    /// Records the connection: `family` 4 or 6, `address` its 4 or 16
    /// bytes in network order (read in place: nothing is allocated).
    mutating func setConnection(family: UInt8, address: UnsafeRawBufferPointer, remotePort: UInt16, localPort: UInt16) {
        let n = min(address.count, family == 4 ? 4 : 16)
        var high: UInt64 = 0, low: UInt64 = 0
        for i in 0..<min(n, 8) { high = high << 8 | UInt64(address[i]) }
        high <<= 8 * UInt64(8 - min(n, 8))
        if n > 8 { for i in 8..<n { low = low << 8 | UInt64(address[i]) } }
        remoteFamily = family
        remoteHigh = high
        remoteLow = low
        remotePortBits = remotePort
        localPortBits = localPort
    }

    /// RFC 5952 text: lowercase hex, the longest run of two or more zero groups as `::`.
    static func ipv6Text(_ groups: [UInt16]) -> String {
        var best = (start: -1, count: 0), run = (start: -1, count: 0)
        for (i, g) in groups.enumerated() {
            if g == 0 {
                run = run.start < 0 ? (i, 1) : (run.start, run.count + 1)
                if run.count > best.count { best = run }
            } else {
                run = (-1, 0)
            }
        }
        let hex = groups.map { String($0, radix: 16) }
        guard best.count >= 2 else { return hex.joined(separator: ":") }
        let head = hex[..<best.start].joined(separator: ":")
        let tail = hex[(best.start + best.count)...].joined(separator: ":")
        return head + "::" + tail
    }

    /// All zero: no phase timed, no bytes counted.
    public init() {}

    mutating func setNanos(dns: Int64, connect: Int64, tls: Int64, firstByte: Int64, total: Int64) {
        dnsNanos = dns
        connectNanos = connect
        tlsNanos = tls
        firstByteNanos = firstByte
        totalNanos = total
    }

    /// Whole nanoseconds of `d` (saturating: ±292 years).
    static func nanos(_ d: Duration) -> Int64 {
        let (seconds, attoseconds) = d.components
        let (product, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return seconds < 0 ? .min : .max }
        return product.addingReportingOverflow(attoseconds / 1_000_000_000).overflow ? .max : product + attoseconds / 1_000_000_000
    }
}

/// MTPocket's response object, in Swift: the details around status and body.
extension PocketResponse {
    /// The status with a name (`.ok`, `.notFound`, …); `status` is its code.
    public var httpStatus: PocketStatus { PocketStatus(status) }

    /// The media type of `Content-Type`, lowercased, without parameters
    /// (`application/json`), or nil when the server sent none.
    public var mimeType: String? {
        guard let value = headers["Content-Type"] else { return nil }
        let type = TextCharset.trimmed(value.split(separator: ";", maxSplits: 1).first ?? "")
        return type.isEmpty ? nil : type.lowercased()
    }

    /// The length the server announced (`Content-Length`), or nil for none
    /// (chunked, close-delimited) or an unparsable value. For a decoded
    /// (gzip) body it is the encoded length, not `body.count`.
    public var expectedContentLength: Int? { expectedContentLength(header: "Content-Length") }

    /// The integer value of another header naming the length, as MTPocket's
    /// `contentLengthHeader` (`X-Stream-Length`, …), or nil.
    public func expectedContentLength(header name: String) -> Int? {
        guard let value = headers[name].map({ TextCharset.trimmed($0[...]) }), let n = Int(value), n >= 0 else { return nil }
        return n
    }

    /// The body bytes (MTPocket's `data`): the same as `body`.
    public var data: Data { body }

    /// The format the request was built with (JSON when it had none): what
    /// `decode` and validation expect.
    public var format: PocketContentFormat { request?.format ?? .json }

    /// The sent request's body bytes, or nil when it had none or it was a
    /// file or stream (not kept in memory).
    public var requestData: Data? { request?.body?.data }

    /// The sent request's body as UTF-8 text (invalid bytes as U+FFFD), for
    /// debugging; nil as for `requestData`.
    public var requestText: String? { requestData.map { String(decoding: $0, as: UTF8.self) } }

    /// The head: status, reason and headers.
    public var head: PocketResponseHead { PocketResponseHead(status: status, reason: reason, headers: headers) }
}

/// A response status with a name, as MTPocket's `MTPocketStatus`: compare
/// with the constants (`response.httpStatus == .notFound`), read the code
/// (`.code`) and the class (`.kind`). Any code from 100 to 999 is
/// representable; `name` is the RFC 9110 reason phrase, or "" for a code
/// it does not define.
public struct PocketStatus: RawRepresentable, Hashable, Sendable, Codable, ExpressibleByIntegerLiteral,
    CustomStringConvertible {
    /// The numeric code, e.g. 404.
    public let code: Int
    /// The code, for `RawRepresentable`.
    public var rawValue: Int { code }

    /// The status of `rawValue`.
    public init(rawValue: Int) { code = rawValue }
    /// The status of `code`.
    public init(_ code: Int) { self.code = code }
    /// A status literal: `let s: PocketStatus = 404`.
    public init(integerLiteral value: Int) { code = value }

    /// The class of a status (RFC 9110 §15).
    public enum Kind: Sendable, Hashable {
        /// 1xx, 2xx, 3xx, 4xx and 5xx, in that order; `invalid` for any other code.
        case informational, success, redirection, clientError, serverError, invalid
    }

    /// The class of the code (`.invalid` outside 100–599).
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

    /// 100 Continue.
    public static let `continue`: PocketStatus = 100
    /// 101 Switching Protocols.
    public static let switchingProtocols: PocketStatus = 101
    /// 200 OK.
    public static let ok: PocketStatus = 200
    /// 201 Created.
    public static let created: PocketStatus = 201
    /// 202 Accepted.
    public static let accepted: PocketStatus = 202
    /// 203 Non-Authoritative Information.
    public static let nonAuthoritativeInformation: PocketStatus = 203
    /// 204 No Content.
    public static let noContent: PocketStatus = 204
    /// 205 Reset Content.
    public static let resetContent: PocketStatus = 205
    /// 206 Partial Content.
    public static let partialContent: PocketStatus = 206
    /// 300 Multiple Choices.
    public static let multipleChoices: PocketStatus = 300
    /// 301 Moved Permanently.
    public static let movedPermanently: PocketStatus = 301
    /// 302 Found.
    public static let found: PocketStatus = 302
    /// 303 See Other.
    public static let seeOther: PocketStatus = 303
    /// 304 Not Modified.
    public static let notModified: PocketStatus = 304
    /// 307 Temporary Redirect.
    public static let temporaryRedirect: PocketStatus = 307
    /// 308 Permanent Redirect.
    public static let permanentRedirect: PocketStatus = 308
    /// 400 Bad Request.
    public static let badRequest: PocketStatus = 400
    /// 401 Unauthorized.
    public static let unauthorized: PocketStatus = 401
    /// 402 Payment Required.
    public static let paymentRequired: PocketStatus = 402
    /// 403 Forbidden.
    public static let forbidden: PocketStatus = 403
    /// 404 Not Found.
    public static let notFound: PocketStatus = 404
    /// 405 Method Not Allowed.
    public static let methodNotAllowed: PocketStatus = 405
    /// 406 Not Acceptable.
    public static let notAcceptable: PocketStatus = 406
    /// 407 Proxy Authentication Required.
    public static let proxyAuthenticationRequired: PocketStatus = 407
    /// 408 Request Timeout.
    public static let requestTimeout: PocketStatus = 408
    /// 409 Conflict.
    public static let conflict: PocketStatus = 409
    /// 410 Gone.
    public static let gone: PocketStatus = 410
    /// 411 Length Required.
    public static let lengthRequired: PocketStatus = 411
    /// 412 Precondition Failed.
    public static let preconditionFailed: PocketStatus = 412
    /// 413 Content Too Large.
    public static let contentTooLarge: PocketStatus = 413
    /// 414 URI Too Long.
    public static let uriTooLong: PocketStatus = 414
    /// 415 Unsupported Media Type.
    public static let unsupportedMediaType: PocketStatus = 415
    /// 416 Range Not Satisfiable.
    public static let rangeNotSatisfiable: PocketStatus = 416
    /// 417 Expectation Failed.
    public static let expectationFailed: PocketStatus = 417
    /// 421 Misdirected Request.
    public static let misdirectedRequest: PocketStatus = 421
    /// 422 Unprocessable Content.
    public static let unprocessableContent: PocketStatus = 422
    /// 426 Upgrade Required.
    public static let upgradeRequired: PocketStatus = 426
    /// 429 Too Many Requests.
    public static let tooManyRequests: PocketStatus = 429
    /// 500 Internal Server Error.
    public static let internalServerError: PocketStatus = 500
    /// 501 Not Implemented.
    public static let notImplemented: PocketStatus = 501
    /// 502 Bad Gateway.
    public static let badGateway: PocketStatus = 502
    /// 503 Service Unavailable.
    public static let serviceUnavailable: PocketStatus = 503
    /// 504 Gateway Timeout.
    public static let gatewayTimeout: PocketStatus = 504
    /// 505 HTTP Version Not Supported.
    public static let httpVersionNotSupported: PocketStatus = 505

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

    /// `"404 Not Found"`, or the bare code for an unnamed one.
    public var description: String { name.isEmpty ? String(code) : "\(code) \(name)" }
}
