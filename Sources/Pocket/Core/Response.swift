#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
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
    public var status: Int
    public var reason: String
    public var headers: PocketHeaders
}

/// Per-request timings, like curl's `-w` variables.
public struct PocketTimings: Sendable, Hashable {
    /// Name resolution; zero for numeric hosts, cache hits and reused connections.
    public var dns: Duration = .zero
    /// TCP connect; zero on a reused connection.
    public var connect: Duration = .zero
    /// TLS handshake; zero for plain HTTP and reused connections.
    public var tls: Duration = .zero
    /// From `send` to the first response byte.
    public var firstByte: Duration = .zero
    /// From `send` to the last body byte.
    public var total: Duration = .zero
    /// Bytes written to and read from the socket for this request.
    public var bytesSent: Int = 0
    public var bytesReceived: Int = 0
    /// Bytes on the socket: equal to the above for plain HTTP; over TLS they
    /// include the record overhead and, on a new connection, the handshake.
    public var wireBytesSent: Int = 0
    public var wireBytesReceived: Int = 0
    /// The request ran on a pooled keep-alive connection.
    public var reusedConnection = false
    /// The request's new TLS connection resumed an earlier session (no full handshake).
    public var tlsResumed = false
    /// The request was sent a second time after a reused connection failed
    /// before any response byte (idempotent methods only).
    public var retried = false

    public init() {}
}
