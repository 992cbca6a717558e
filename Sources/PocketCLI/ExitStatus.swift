import Pocket

/// `pocket`'s exit statuses: one per error class, curl's number where curl
/// has one for that class, so scripts written for curl keep working.
/// README.md documents the table; `ExitStatus.for(_:)` is the one place a
/// `PocketError.Code` becomes a status.
struct ExitStatus: Sendable, Equatable {
    let code: Int32
    /// The class, as the README's table names it.
    let name: String

    static let success = ExitStatus(code: 0, name: "success")
    static let other = ExitStatus(code: 1, name: "other error")
    static let url = ExitStatus(code: 3, name: "malformed or unsupported URL")
    static let proxyResolve = ExitStatus(code: 5, name: "proxy: invalid or its name not resolved")
    static let dns = ExitStatus(code: 6, name: "DNS: host not resolved")
    static let connect = ExitStatus(code: 7, name: "connect failed")
    static let protocolError = ExitStatus(code: 8, name: "protocol/framing: malformed or truncated response")
    static let partialFile = ExitStatus(code: 18, name: "partial file: the body ended before its announced end")
    static let httpError = ExitStatus(code: 22, name: "HTTP status >= 400 with -f")
    static let localWrite = ExitStatus(code: 23, name: "local file: cannot write")
    static let localRead = ExitStatus(code: 26, name: "local file: cannot read")
    static let timeout = ExitStatus(code: 28, name: "timeout")
    static let range = ExitStatus(code: 33, name: "resume: range not satisfiable or resource changed")
    static let tls = ExitStatus(code: 35, name: "TLS handshake or configuration")
    static let invalidRequest = ExitStatus(code: 43, name: "invalid request (method, header, body)")
    static let emptyReply = ExitStatus(code: 52, name: "empty reply: the server closed the connection without answering")
    static let connectionLost = ExitStatus(code: 56, name: "connection lost (reset, read or write failed, a fatal TLS alert), or the proxy refused or broke the tunnel")
    static let tlsCertificate = ExitStatus(code: 60, name: "TLS certificate not trusted, expired or for another host")
    static let tooLarge = ExitStatus(code: 63, name: "too large: a response limit was exceeded")
    static let redirects = ExitStatus(code: 47, name: "redirects: too many, a loop, an https->http downgrade or a bad Location (-L)")
    static let tlsPin = ExitStatus(code: 90, name: "TLS public key does not match --pinnedpubkey")
    static let usage = ExitStatus(code: 64, name: "usage: bad command-line arguments")
    static let interrupted = ExitStatus(code: 130, name: "interrupted (Ctrl-C); an -o download keeps its partial file for -C -")

    /// Every status, for the help text and the README table.
    static let all: [ExitStatus] = [success, other, url, proxyResolve, dns, connect, protocolError, partialFile, httpError, localWrite, localRead,
                                    timeout, range, tls, invalidRequest, redirects, emptyReply, connectionLost, tlsCertificate,
                                    tooLarge, tlsPin, usage, interrupted]

    /// The one table from error codes to statuses; a code not listed is `other` (1).
    static let table: [PocketError.Code: ExitStatus] = [
        .invalidURL: url, .unsupportedScheme: url, .invalidHost: url,
        .dnsFailure: dns,
        .connectionRefused: connect, .networkUnreachable: connect, .hostUnreachable: connect,
        .connectFailed: connect, .socketFailed: connect,
        .connectTimeout: timeout, .readTimeout: timeout, .totalTimeout: timeout, .deadlineExceeded: timeout,
        .connectionReset: connectionLost, .writeFailed: connectionLost, .readFailed: connectionLost,
        .tlsAlert: connectionLost, // as curl exits when SSL_read fails after the handshake
        .closedBeforeResponse: emptyReply, .badStatusLine: protocolError, .unsupportedVersion: protocolError,
        .badHeader: protocolError, .badContentLength: protocolError, .conflictingContentLength: protocolError,
        .transferEncodingWithContentLength: protocolError, .unsupportedTransferEncoding: protocolError,
        .badChunk: protocolError, .unexpectedUpgrade: protocolError, .truncatedBody: partialFile,
        .truncatedHead: protocolError, .badContentEncoding: protocolError, .truncatedContentEncoding: protocolError,
        .tooManyContentEncodings: protocolError,
        .responseHeadTooLarge: tooLarge, .tooManyHeaders: tooLarge, .chunkSizeTooLong: tooLarge,
        .chunkExtensionTooLarge: tooLarge, .trailersTooLarge: tooLarge, .tooManyInterimResponses: tooLarge,
        .bodyTooLarge: tooLarge, .decompressionBomb: tooLarge, .decodedBodyTooLarge: tooLarge,
        .tlsConfiguration: tls, .tlsHandshakeFailed: tls, .tlsProtocolVersion: tls, .tlsAlpnMismatch: tls,
        .tlsAnsweredByPlainHTTP: tls,
        .tlsUntrustedCertificate: tlsCertificate, .tlsHostnameMismatch: tlsCertificate,
        .tlsCertificateExpired: tlsCertificate, .tlsCertificateNotYetValid: tlsCertificate,
        .tlsPinMismatch: tlsPin,
        .invalidMethod: invalidRequest, .invalidTarget: invalidRequest, .invalidHeaderName: invalidRequest,
        .invalidHeaderValue: invalidRequest, .requestHeadTooLarge: invalidRequest, .invalidArgument: invalidRequest,
        .requestBodyLengthMismatch: invalidRequest, .requestBodyStreamFailed: invalidRequest,
        .fileWriteFailed: localWrite, .fileSystem: localWrite,
        .fileReadFailed: localRead,
        .rangeNotSatisfiable: range, .resumeValidatorMismatch: range, .badContentRange: range,
        .tooManyRedirects: redirects, .redirectLoop: redirects, .insecureRedirect: redirects,
        .badRedirectLocation: redirects, .forbiddenRedirect: redirects, .bodyNotReplayable: invalidRequest, .invalidMultipartForm: invalidRequest,
        // Network reach: as curl exits for --unix-socket, -x and CONNECT.
        .unixSocketNotFound: connect, .unixSocketRefused: connect, .unixSocketPermissionDenied: connect,
        .unixSocketPathTooLong: connect, .proxyUnreachable: connect, .invalidProxy: proxyResolve,
        .proxyAuthenticationRequired: connectionLost, .proxyConnectFailed: connectionLost,
        .proxyTunnelClosed: connectionLost, .proxyBadResponse: connectionLost,
    ]

    static func `for`(_ code: PocketError.Code) -> ExitStatus { table[code] ?? other }
}

/// What ends a `pocket` run early: a status and the one line for stderr.
struct CLIFailure: Error {
    let status: ExitStatus
    let message: String

    init(_ status: ExitStatus, _ message: String) {
        self.status = status
        self.message = message
    }

    /// A library error: its class's status; the message names the code.
    init(_ error: PocketError) {
        self.init(ExitStatus.for(error.code), "\(error.message) (\(error.code.name))")
    }
}
