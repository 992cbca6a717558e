#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The one error type Pocket throws.
///
/// `code` says what went wrong; `message` says it in a sentence; `underlying`
/// keeps the cause (an `errno`, a decoding error); `response` is the head the
/// server sent when the failure came after it, and `body` its body when the
/// failure is about a complete response (validation, decoding).
///
/// ```swift
/// do { _ = try await client.send(request) }
/// catch let error as PocketError where error.code == .connectTimeout { ... }
/// ```
public struct PocketError: Error, Sendable, CustomStringConvertible {
    /// An extensible error code: new codes are added as static constants, so a
    /// `switch` over codes needs a `default` and never breaks when one is added.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// A stable snake_case name, e.g. `"connect_timeout"`.
        public let name: String
        /// The code named `name`: one of the constants below, or a name they do not
        /// have yet (codes compare by name).
        public init(_ name: String) { self.name = name }
        /// The code's name, e.g. `connect_timeout`.
        public var description: String { name }

        // Request building (Swift layer)
        /// The URL cannot be sent: it does not parse, or it has no host.
        public static let invalidURL = Code("invalid_url")
        /// The URL's scheme is neither `http` nor `https`.
        public static let unsupportedScheme = Code("unsupported_scheme")
        /// A failure with no code of its own (an engine code this version does not know
        /// maps to `Code(name)` instead).
        public static let unknown = Code("unknown")

        // Engine codes, one per entry of the engine's error table, by the
        // engine's own names (`pk_error_name`): a code the engine reports
        // is `Code(name)`, so these constants only give the names a symbol.
        /// The engine could not allocate memory.
        public static let outOfMemory = Code("out_of_memory")
        /// The engine refused an argument (e.g. an unknown TLS setting); a Pocket bug
        /// if it ever reaches you.
        public static let invalidArgument = Code("invalid_argument")
        /// The request method is empty or not an HTTP token; nothing was sent.
        public static let invalidMethod = Code("invalid_method")
        /// The request target is empty or holds CR, LF, NUL, a space or a control byte;
        /// nothing was sent.
        public static let invalidTarget = Code("invalid_target")
        /// A request header name is empty or not an HTTP token; nothing was sent.
        public static let invalidHeaderName = Code("invalid_header_name")
        /// A request header value holds CR, LF, NUL or another control byte (no header
        /// injection); nothing was sent.
        public static let invalidHeaderValue = Code("invalid_header_value")
        /// The host is empty, too long or holds bytes a host cannot have; nothing was
        /// sent.
        public static let invalidHost = Code("invalid_host")
        /// The request head (request line and fields) exceeds the engine's limit;
        /// nothing was sent.
        public static let requestHeadTooLarge = Code("request_head_too_large")
        /// The client was shut down before or while the request ran.
        public static let shutdown = Code("shutdown")
        /// The request was cancelled: its task was cancelled, a stream's reader went
        /// away, or `cancel()` was called. Its connection is closed, never reused.
        public static let cancelled = Code("cancelled")
        /// The host name did not resolve; `systemError` is the `getaddrinfo` code.
        public static let dnsFailure = Code("dns_failure")
        /// The server refused the connection (nothing listens on the port).
        public static let connectionRefused = Code("connection_refused")
        /// The network of the server's address cannot be reached from this host.
        public static let networkUnreachable = Code("network_unreachable")
        /// The server's host cannot be reached.
        public static let hostUnreachable = Code("host_unreachable")
        /// Connecting failed for another reason; `systemError` is the `errno`.
        public static let connectFailed = Code("connect_failed")
        /// No connection within the connect timeout (`PocketTimeouts.connect`), every
        /// address tried.
        public static let connectTimeout = Code("connect_timeout")
        /// Nothing arrived for longer than the idle-read timeout
        /// (`PocketTimeouts.read`).
        public static let readTimeout = Code("read_timeout")
        /// The request did not finish within its total timeout
        /// (`PocketTimeouts.total`), or the retry policy's deadline passed.
        public static let totalTimeout = Code("total_timeout")
        /// The task's deadline passed (`PocketDeadline`, or one a middleware
        /// set in `PocketMiddlewareContext.deadline`): every attempt, hedge,
        /// backoff wait and redirect hop of the request shares it.
        public static let deadlineExceeded = Code("deadline_exceeded")
        /// The server reset the connection (TCP RST).
        public static let connectionReset = Code("connection_reset")
        /// The server closed the connection before sending any response (a reused
        /// connection that fails so is retried once on a new one, when the request may
        /// be sent again).
        public static let closedBeforeResponse = Code("closed_before_response")
        /// Writing the request to the socket failed; `systemError` is the `errno`.
        public static let writeFailed = Code("write_failed")
        /// Reading the response from the socket failed; `systemError` is the `errno`.
        public static let readFailed = Code("read_failed")
        /// A socket could not be created (e.g. out of file descriptors).
        public static let socketFailed = Code("socket_failed")
        /// The response head exceeds `Limits.maxHeadBytes`.
        public static let responseHeadTooLarge = Code("response_head_too_large")
        /// The response has more header fields than `Limits.maxHeaderFields`.
        public static let tooManyHeaders = Code("too_many_headers")
        /// The response's status line is malformed.
        public static let badStatusLine = Code("bad_status_line")
        /// The response is neither HTTP/1.0 nor HTTP/1.1.
        public static let unsupportedVersion = Code("unsupported_version")
        /// A response header field is malformed (no colon, a space before it, a bad
        /// byte).
        public static let badHeader = Code("bad_header")
        /// `Content-Length` is not a plain decimal number, or it overflows.
        public static let badContentLength = Code("bad_content_length")
        /// The response has `Content-Length` fields with different values.
        public static let conflictingContentLength = Code("conflicting_content_length")
        /// The response has both `Transfer-Encoding` and `Content-Length`, which RFC
        /// 9112 §6.3 has a client treat as an error (a sign of request smuggling).
        public static let transferEncodingWithContentLength = Code("transfer_encoding_with_content_length")
        /// The response's `Transfer-Encoding` is not `chunked`.
        public static let unsupportedTransferEncoding = Code("unsupported_transfer_encoding")
        /// The chunked body is malformed.
        public static let badChunk = Code("bad_chunk")
        /// A chunk size has more hex digits than `Limits.maxChunkSizeDigits`.
        public static let chunkSizeTooLong = Code("chunk_size_too_long")
        /// A chunk extension exceeds the engine's limit.
        public static let chunkExtensionTooLarge = Code("chunk_extension_too_large")
        /// The chunked body's trailer fields exceed `Limits.maxTrailerBytes`.
        public static let trailersTooLarge = Code("trailers_too_large")
        /// More 1xx interim responses than `Limits.maxInterimResponses` came before
        /// the final one.
        public static let tooManyInterimResponses = Code("too_many_interim_responses")
        /// The server switched protocols (101) though the request did not ask it to.
        public static let unexpectedUpgrade = Code("unexpected_upgrade")
        /// The connection closed before the response body was complete (its
        /// `Content-Length` or last chunk): never a silent short body.
        public static let truncatedBody = Code("truncated_body")
        /// The connection closed in the middle of the response head.
        public static let truncatedHead = Code("truncated_head")
        /// The response body exceeds `Limits.maxBodyBytes`, or the limit of
        /// `collect(upTo:)`.
        public static let bodyTooLarge = Code("body_too_large")
        /// The TLS settings could not be loaded: a CA file or directory, a certificate,
        /// a key or a cipher list.
        public static let tlsConfiguration = Code("tls_configuration")
        /// The TLS handshake failed for a reason without a code of its own.
        public static let tlsHandshakeFailed = Code("tls_handshake_failed")
        /// The server's certificate does not chain to a trusted CA; `systemError` is
        /// OpenSSL's verify code.
        public static let tlsUntrustedCertificate = Code("tls_untrusted_certificate")
        /// The server's certificate does not name the host of the URL.
        public static let tlsHostnameMismatch = Code("tls_hostname_mismatch")
        /// The server's certificate has expired.
        public static let tlsCertificateExpired = Code("tls_certificate_expired")
        /// The server's certificate is not valid yet.
        public static let tlsCertificateNotYetValid = Code("tls_certificate_not_yet_valid")
        /// The server's public key matches none of `PocketTLSConfiguration.pinnedPublicKeys`.
        public static let tlsPinMismatch = Code("tls_pin_mismatch")
        /// The server supports no TLS version in common with the client
        /// (`minimumVersion`).
        public static let tlsProtocolVersion = Code("tls_protocol_version")
        /// The server selected an application protocol other than `http/1.1`.
        public static let tlsAlpnMismatch = Code("tls_alpn_mismatch")
        /// The server answered the TLS handshake with plain HTTP (an
        /// `https://` URL for a port that speaks `http://`).
        public static let tlsAnsweredByPlainHTTP = Code("tls_answered_by_plain_http")
        /// The TLS connection ended with a fatal alert after its handshake: the
        /// server sent one (e.g. `bad_record_mac`: it could not decrypt the
        /// request), or Pocket sent one for a record of the server's it could not
        /// accept. The message names the alert; `systemError` is OpenSSL's reason
        /// code. Like `connectionReset`, a reused connection that fails so before
        /// any response byte is retried once on a new one, when the request may be
        /// sent again.
        public static let tlsAlert = Code("tls_alert")
        /// The compressed (gzip or deflate) body is corrupt.
        public static let badContentEncoding = Code("bad_content_encoding")
        /// The compressed body ended before its end marker.
        public static let truncatedContentEncoding = Code("truncated_content_encoding")
        /// The compressed body expands past `Limits.maxDecompressionRatio`: a
        /// decompression bomb.
        public static let decompressionBomb = Code("decompression_bomb")
        /// The decompressed body exceeds its size limit (`Limits.maxDecodedBytes`).
        public static let decodedBodyTooLarge = Code("decoded_body_too_large")
        /// The response stacks more than two content codings.
        public static let tooManyContentEncodings = Code("too_many_content_encodings")
        /// Writing the response body to its file (a download) failed; `systemError` is
        /// the `errno`.
        public static let fileWriteFailed = Code("file_write_failed")
        /// The request body's file could not be opened or read, or it ended early.
        public static let fileReadFailed = Code("file_read_failed")
        /// A streamed request body sent more or fewer bytes than its declared length.
        public static let requestBodyLengthMismatch = Code("request_body_length_mismatch")
        /// An engine thread (event loop or resolver) could not be started;
        /// `systemError` is `pthread_create`'s answer.
        public static let threadFailed = Code("thread_failed")
        /// The Unix domain socket's file does not exist (the message names the path).
        public static let unixSocketNotFound = Code("unix_socket_not_found")
        /// Nothing accepts connections on the Unix domain socket, or the file
        /// is not a socket (the message names the path).
        public static let unixSocketRefused = Code("unix_socket_refused")
        /// No permission to connect to the Unix domain socket (the message names the path).
        public static let unixSocketPermissionDenied = Code("unix_socket_permission_denied")
        /// The Unix domain socket path is longer than the 107 bytes a socket address holds.
        public static let unixSocketPathTooLong = Code("unix_socket_path_too_long")

        /// A `PocketAddressOverride` that is not `host:port:address[,address]`
        /// with numeric addresses.
        public static let invalidAddressOverride = Code("invalid_address_override")

        /// The proxy could not be reached (refused, unreachable, its name did
        /// not resolve); the message names it, `underlying` is the cause.
        public static let proxyUnreachable = Code("proxy_unreachable")
        /// The proxy answered 407: credentials missing or refused (the message names it).
        public static let proxyAuthenticationRequired = Code("proxy_authentication_required")
        /// The proxy answered CONNECT with another non-2xx status (in the
        /// message and `systemError`).
        public static let proxyConnectFailed = Code("proxy_connect_failed")
        /// The proxy closed the connection before the tunnel was up.
        public static let proxyTunnelClosed = Code("proxy_tunnel_closed")
        /// The proxy's answer to CONNECT is not HTTP, or bytes followed it.
        public static let proxyBadResponse = Code("proxy_bad_response")
        /// `Configuration.ioBackend` is `.ioUring` but the kernel refuses io_uring
        /// (the `kernel.io_uring_disabled` sysctl, a seccomp filter such as
        /// Docker's default, or a kernel older than 5.6); thrown by the client's
        /// `init`. `.automatic` falls back to epoll instead.
        public static let ioUringUnavailable = Code("io_uring_unavailable")
        /// No descriptor for a socket (`EMFILE`: the process's `RLIMIT_NOFILE`; `ENFILE`: the
        /// system's), and no connection of this client open to free one; `systemError` is the
        /// `errno`. While a connection is open, a request waits for one instead.
        public static let tooManyOpenFiles = Code("too_many_open_files")
        /// A proxy setting (configuration, request or environment variable)
        /// that is not an `http://` proxy URL.
        public static let invalidProxy = Code("invalid_proxy")

        // Streaming bodies and downloads (Swift layer)
        /// The request body's `AsyncSequence` threw; `underlying` is its error.
        public static let requestBodyStreamFailed = Code("request_body_stream_failed")
        /// A resumed download got 416: the saved offset is past the resource's end.
        public static let rangeNotSatisfiable = Code("range_not_satisfiable")
        /// A resumed download got 206 for a resource that changed since (its
        /// ETag or Last-Modified differs from the resume data's).
        public static let resumeValidatorMismatch = Code("resume_validator_mismatch")
        /// A 206 whose `Content-Range` is missing, malformed, or starts
        /// elsewhere than the requested offset.
        public static let badContentRange = Code("bad_content_range")
        /// A download's destination or temporary file could not be created or renamed.
        public static let fileSystem = Code("file_system")
        /// A response's text could not be decoded in its declared charset.
        public static let unsupportedCharset = Code("unsupported_charset")
    }

    /// What went wrong, as a stable code to match on.
    public var code: Code
    /// What went wrong, in one sentence naming the host, file or limit involved; for
    /// people, not for matching.
    public var message: String
    /// The underlying cause, e.g. `POSIXErrorCode` for socket failures.
    public var underlying: (any Error & Sendable)?
    /// The system `errno` (or `getaddrinfo` code for `.dnsFailure`), when one applies.
    public var systemError: Int32?
    /// The response head, when the server answered before the failure.
    public var response: PocketResponseHead?
    /// The body had started to reach the caller when this error ended the
    /// request (a download's bytes in its file): the request path does not
    /// retry it.
    var bodyDelivered = false
    /// The request would have been retried, but the client's retry budget
    /// (`PocketRetryBudget`) was spent: this is the failure as it was.
    public var retryBudgetSpent = false
    /// The response body, for errors raised on a complete response
    /// (`.unacceptableStatus`, `.unacceptableContentType`, `.decodingFailed`);
    /// nil otherwise.
    public var body: Data? {
        get { bodyBox?.data }
        set { bodyBox = newValue.map(BodyBox.init) }
    }

    /// `body`, in a box: `Data` is a type of a resilient library, whose
    /// layout is known only at run time, so a `Data?` field would make every
    /// copy and destroy of an error (and of an optional error, on every
    /// request's path) a call through its value witnesses; a reference is
    /// a retain.
    private var bodyBox: BodyBox?

    private final class BodyBox: Sendable {
        let data: Data
        init(_ data: Data) { self.data = data }
    }

    /// An error with `code` and `message`, and whatever of the cause, the `errno`, the
    /// response head and its body applies (nil by default), e.g. for a middleware or a
    /// `PocketTransport` that fails a request as Pocket would.
    public init(_ code: Code, _ message: String, underlying: (any Error & Sendable)? = nil,
                systemError: Int32? = nil, response: PocketResponseHead? = nil, body: Data? = nil) {
        self.code = code
        self.message = message
        self.underlying = underlying
        self.systemError = systemError
        self.response = response
        self.bodyBox = body.map(BodyBox.init)
    }

    /// `code: message`, plus the status when the server had answered, e.g.
    /// `truncated_body: … (after HTTP 200)`.
    public var description: String {
        var s = "\(code.name): \(message)"
        if let response { s += " (after HTTP \(response.status))" }
        return s
    }

    /// True for `.cancelled`.
    public var isCancellation: Bool { code == .cancelled }

    /// True for the timeout codes, the task deadline's included.
    public var isTimeout: Bool {
        code == .connectTimeout || code == .readTimeout || code == .totalTimeout || code == .deadlineExceeded
    }
}

extension PocketError.Code {
    // Building requests (paths, parameters, bodies, templates)

    /// A path template is malformed (an unclosed `{`, an empty `{}`, more
    /// identifiers than `:placeholders`, a dictionary as a path value).
    public static let invalidPathTemplate = PocketError.Code("invalid_path_template")
    /// A `{name}` placeholder has no value (missing or `.null`).
    public static let missingPathParameter = PocketError.Code("missing_path_parameter")
    /// Credentials an `Authorization` scheme cannot carry (a `:` in a Basic
    /// username, an invalid Bearer token, CR/LF).
    public static let invalidCredentials = PocketError.Code("invalid_credentials")
    /// A body could not be encoded (`PocketRequestBody.json`); `underlying` is the `EncodingError`.
    public static let encodingFailed = PocketError.Code("encoding_failed")
    /// No template is registered under the name asked for.
    public static let unknownTemplate = PocketError.Code("unknown_template")

    // Validating and decoding responses

    /// The status is not one `PocketValidation.statusCodes` accepts; the error
    /// carries the head (`response`) and the body (`body`).
    public static let unacceptableStatus = PocketError.Code("unacceptable_status")
    /// The `Content-Type` is missing or not one validation accepts; carries head and body.
    public static let unacceptableContentType = PocketError.Code("unacceptable_content_type")
    /// The body does not decode as the type asked for; the message names the
    /// JSON path (`root.issues[1].category`), `underlying` is the `DecodingError`.
    public static let decodingFailed = PocketError.Code("decoding_failed")
}

extension PocketError.Code {
    /// The request would be sent again — a retry (the policy's or a
    /// middleware's), a redirect that keeps the body, or the engine's one
    /// resend after a reused connection failed — but its body is one-shot (a
    /// stream, or a multipart form with a stream part) and was already
    /// consumed: it is never sent twice. The message says which of these it
    /// was; `underlying` is the failed attempt's error and `response` its
    /// head, when there was one.
    public static let bodyNotReplayable = PocketError.Code("body_not_replayable")
    /// A middleware asked for another attempt past the retry policy's
    /// `maxAttempts` (3 without a policy): the one cap on attempts, a guard
    /// against retry loops.
    public static let tooManyAttempts = PocketError.Code("too_many_attempts")
}

extension PocketError.Code {
    // Redirects (Swift layer); each error carries the 3xx head as `response`.
    /// More redirects than `PocketRedirectPolicy.maxHops`.
    public static let tooManyRedirects = PocketError.Code("too_many_redirects")
    /// A redirect leads back to a method and URL already requested in the chain.
    public static let redirectLoop = PocketError.Code("redirect_loop")
    /// A redirect from `https` to `http`, refused unless `allowsInsecureDowngrade`.
    public static let insecureRedirect = PocketError.Code("insecure_redirect")
    /// A `Location` that is not a URL, or not an `http`/`https` one.
    public static let badRedirectLocation = PocketError.Code("bad_redirect_location")
    /// A redirect that would move the request onto another transport: from
    /// `http`/`https` into a Unix socket (`http+unix`), or into a different
    /// socket. Never followed, whatever the policy.
    public static let forbiddenRedirect = PocketError.Code("forbidden_redirect")
}

extension PocketError.Code {
    /// A `PocketStubTransport` has no canned response for the request's method and path.
    public static let stubNotFound = PocketError.Code("stub_not_found")
    /// A `PocketTokenRefreshMiddleware`'s refresh closure threw; `underlying` is its error.
    public static let tokenRefreshFailed = PocketError.Code("token_refresh_failed")
    /// A token refresh would start while one is being made by the same task
    /// (the refresh request itself was rejected): a refresh loop, stopped.
    public static let tokenRefreshLoop = PocketError.Code("token_refresh_loop")
}

extension PocketError.Code {
    /// A `PocketMultipartForm` cannot be encoded: a part header with CR, LF or NUL
    /// or a name that is not a token, a custom boundary that is malformed or
    /// occurs in an in-memory part. Nothing was sent.
    public static let invalidMultipartForm = PocketError.Code("invalid_multipart_form")
}

extension PocketError.Code {
    /// A `PocketRequestQueue` with `maxPending` set already holds that many
    /// pending requests; this one was not queued.
    public static let queueFull = PocketError.Code("queue_full")
}

extension PocketError.Code {
    // Pipes (Swift layer)
    /// `remove` or `read(id:)` of a record without an id (see `PocketPipeConfiguration.recordIDKey`).
    public static let missingRecordID = PocketError.Code("missing_record_id")
    /// A page's next (or previous) link leads to a page already read in this sequence.
    public static let pagingLoop = PocketError.Code("paging_loop")
}

extension PocketError.Code {
    // Schemas, JSON and mapping (Schema/)

    /// A body is not JSON; the message gives line and column.
    public static let malformedJSON = PocketError.Code("malformed_json")
    /// JSON nests deeper than the limit (`PocketJSONParser.defaultMaxDepth`, 128):
    /// a body when parsed, a tree built in code when validated or written.
    public static let jsonNestingTooDeep = PocketError.Code("json_nesting_too_deep")
    /// A JSON value does not match its schema: a required key is missing or
    /// a value has the wrong type. `underlying` is the `PocketSchemaViolation`.
    public static let schemaValidationFailed = PocketError.Code("schema_validation_failed")
    /// A value transformer could not transform a value (e.g. a date that
    /// does not parse). `underlying` is the `PocketSchemaViolation`.
    public static let schemaTransformFailed = PocketError.Code("schema_transform_failed")
    /// A schema names a tag no transformer or mapper is registered for.
    public static let schemaUnknownTag = PocketError.Code("schema_unknown_tag")
    /// An object mapper threw, or a value has no JSON form (a model with no
    /// mapper back to JSON, a non-finite number).
    public static let schemaMappingFailed = PocketError.Code("schema_mapping_failed")
    /// A schema file is not where its name says (`resources` unset, or no such file).
    public static let schemaNotFound = PocketError.Code("schema_not_found")
    /// A schema is not a valid JSON sample.
    public static let invalidSchema = PocketError.Code("invalid_schema")
    /// An error parser found an error in the response (an error status's
    /// body, or a 2xx it declared an error, e.g. `{"success": false}`);
    /// `underlying` is the parser's typed error. A bad status no parser
    /// typed is `.unacceptableStatus`.
    public static let errorResponse = PocketError.Code("error_response")
}

/// Where and why a JSON value failed its schema; the `underlying` of
/// `.schemaValidationFailed` and `.schemaTransformFailed` errors.
public struct PocketSchemaViolation: Error, Sendable, Hashable {
    /// The sentence TyphoonRestClient users know, e.g.
    /// `Can't find value for key 'category' in 'root.issues[1]' dictionary`.
    public var reason: String
    /// The failing value's place (for a missing key: the key's place).
    public var path: PocketSchemaPath
    /// The body pretty-printed around the failing place, that line marked with `>`.
    public var excerpt: String
}
