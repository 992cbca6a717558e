extension TestServer {
    /// One scripted action on the raw connection.
    public enum RawStep: Sendable {
        /// Writes these bytes (all of them, as one `send` sequence).
        case send([UInt8])
        /// Writes the UTF-8 bytes of this string (write `\r\n` yourself).
        case sendString(String)
        /// Writes each string with a write of its own (over TLS, a record of
        /// its own) while the socket is corked (`TCP_CORK`), so that they
        /// leave in one segment and reach the client together.
        case sendTogether([String])
        /// Waits, sending nothing.
        case sleep(milliseconds: Int)
        /// Sends `bytes` in pieces of `chunkSize` with `delayMilliseconds`
        /// between pieces (TCP_NODELAY is on, so pieces leave separately).
        case trickle([UInt8], chunkSize: Int, delayMilliseconds: Int)
        /// Keeps the connection open without sending or reading anything for
        /// this long (the client's writes pile up in the kernel buffers).
        case stall(milliseconds: Int)
        /// Half-closes (FIN), drains briefly whatever the client still sends,
        /// then closes. Ends the script and the connection.
        case close
        /// Over TLS: closes with a bare FIN and no close_notify (over plain
        /// TCP the same as `.close`). Ends the script and the connection.
        case closeWithoutTLSNotify
        /// Over TLS 1.2 or older: asks the client to renegotiate (a
        /// HelloRequest) and goes on at once. The next read takes the
        /// client's answer: a ClientHello (counted in
        /// `TestServer.tlsRenegotiations`), or a `no_renegotiation` alert,
        /// on which OpenSSL ends the connection with a fatal alert. Ends
        /// the script over plain TCP or TLS 1.3.
        case requestTLSRenegotiation
        /// Over TLS: the next record the client sends (the next request on
        /// this connection) gets one bit flipped as it is read, so OpenSSL
        /// fails to decrypt it, sends a fatal `bad_record_mac` alert and the
        /// connection ends, as a server does on a corrupted record. Ends the
        /// script over plain TCP.
        case corruptNextTLSRecord
        /// Aborts with a TCP RST (`SO_LINGER` {1, 0} then close): the client
        /// sees `ECONNRESET`. Ends the script and the connection.
        case reset
        /// Sends bytes `offset..<offset + count` of `BytePattern`'s stream of
        /// `seed`, generated into one reused buffer of `pieceSize` bytes
        /// (default 256 KiB) and sent a piece at a time, so memory stays
        /// O(`pieceSize`) for any `count`. With `chunked`, each piece goes out
        /// as one chunk (`SIZE\r\n…\r\n`; no last chunk: send `"0\r\n\r\n"`
        /// yourself). `delayMillisecondsPerPiece` (default 0) waits before
        /// every piece but the first (cut short if the client closes).
        case pattern(seed: UInt64 = 0, offset: Int = 0, count: Int, pieceSize: Int = 256 * 1024,
                     chunked: Bool = false, delayMillisecondsPerPiece: Int = 0)
    }

    /// What a handler answers with. Build one with the static helpers:
    /// `.response(...)`, `.text(...)`, `.chunked(...)`, `.generated(...)`,
    /// `.raw(...)`, `.closeMidBody(...)`, `.reset`, `.stall(...)`, `.close`.
    public struct Reply: Sendable {
        enum Kind: Sendable {
            case response(status: Int, headers: [(String, String)], body: [UInt8])
            case chunked(status: Int, headers: [(String, String)], chunks: [[UInt8]], trailers: [(String, String)])
            case generated(status: Int, headers: [(String, String)], body: GeneratedBody)
            case raw([RawStep])
        }

        var kind: Kind
        /// For `.response`/`.chunked`: announce `Connection: close` and close
        /// after the reply. For `.raw`: close after the script.
        public var closeConnection: Bool

        init(_ kind: Kind, closeConnection: Bool = false) {
            self.kind = kind
            self.closeConnection = closeConnection
        }

        /// A complete response. `Content-Length` is added unless `headers`
        /// already has `Content-Length` or `Transfer-Encoding` (or the status
        /// has no body). The body is omitted on the wire for HEAD requests and
        /// 1xx/204/304 statuses. With `closeConnection`, `Connection: close`
        /// is added (unless a `Connection` header is given) and the connection
        /// is closed after the response.
        public static func response(
            status: Int = 200,
            headers: [(String, String)] = [],
            body: [UInt8] = [],
            closeConnection: Bool = false
        ) -> Reply {
            Reply(.response(status: status, headers: headers, body: body), closeConnection: closeConnection)
        }

        /// A `text/plain; charset=utf-8` response with this UTF-8 body.
        public static func text(
            _ text: String,
            status: Int = 200,
            headers: [(String, String)] = [],
            closeConnection: Bool = false
        ) -> Reply {
            var all = headers
            if !all.contains(where: { $0.0.lowercased() == "content-type" }) {
                all.append(("Content-Type", "text/plain; charset=utf-8"))
            }
            return .response(status: status, headers: all, body: Array(text.utf8), closeConnection: closeConnection)
        }

        /// A `Transfer-Encoding: chunked` response: one chunk per element
        /// (empty elements are skipped, since an empty chunk would end the
        /// body), then the last chunk and `trailers`.
        public static func chunked(
            status: Int = 200,
            headers: [(String, String)] = [],
            chunks: [[UInt8]],
            trailers: [(String, String)] = [],
            closeConnection: Bool = false
        ) -> Reply {
            Reply(.chunked(status: status, headers: headers, chunks: chunks, trailers: trailers),
                  closeConnection: closeConnection)
        }

        /// Runs a script of raw steps instead of a generated response. If the
        /// script neither closes nor resets, the connection goes on serving
        /// requests (keep-alive) unless `closeConnection` is set.
        public static func raw(_ steps: [RawStep], closeConnection: Bool = false) -> Reply {
            Reply(.raw(steps), closeConnection: closeConnection)
        }

        /// Sends a head declaring `Content-Length: declaredLength`, then only
        /// `sentPrefix` (shorter than declared), then closes (FIN).
        public static func closeMidBody(
            status: Int = 200,
            headers: [(String, String)] = [],
            declaredLength: Int,
            sentPrefix: [UInt8]
        ) -> Reply {
            var head = "HTTP/1.1 \(status) \(TestServer.reasonPhrase(status))\r\n"
            for (name, value) in headers { head += "\(name): \(value)\r\n" }
            head += "Content-Length: \(declaredLength)\r\n\r\n"
            return .raw([.sendString(head), .send(sentPrefix), .close])
        }

        /// Resets the connection (TCP RST) without sending anything.
        public static var reset: Reply { .raw([.reset]) }

        /// Closes the connection (FIN) without sending anything.
        public static var close: Reply { .raw([.close]) }

        /// Sends nothing for `milliseconds` (default 60 s, cut short by
        /// `shutdown()`), then closes the connection.
        public static func stall(milliseconds: Int = 60_000) -> Reply {
            .raw([.stall(milliseconds: milliseconds), .close])
        }

        /// The same reply, closing the connection afterwards.
        public func closingConnection() -> Reply {
            var copy = self
            copy.closeConnection = true
            return copy
        }
    }

    /// The standard reason phrase for `status`, or `"Status"` if unknown.
    static func reasonPhrase(_ status: Int) -> String {
        switch status {
        case 100: return "Continue"
        case 101: return "Switching Protocols"
        case 200: return "OK"
        case 201: return "Created"
        case 202: return "Accepted"
        case 204: return "No Content"
        case 206: return "Partial Content"
        case 301: return "Moved Permanently"
        case 302: return "Found"
        case 303: return "See Other"
        case 304: return "Not Modified"
        case 307: return "Temporary Redirect"
        case 308: return "Permanent Redirect"
        case 400: return "Bad Request"
        case 401: return "Unauthorized"
        case 403: return "Forbidden"
        case 404: return "Not Found"
        case 405: return "Method Not Allowed"
        case 408: return "Request Timeout"
        case 411: return "Length Required"
        case 413: return "Content Too Large"
        case 416: return "Range Not Satisfiable"
        case 429: return "Too Many Requests"
        case 431: return "Request Header Fields Too Large"
        case 500: return "Internal Server Error"
        case 501: return "Not Implemented"
        case 502: return "Bad Gateway"
        case 503: return "Service Unavailable"
        case 504: return "Gateway Timeout"
        default: return "Status"
        }
    }
}

extension TestServer.Reply {
    /// The reply turned into steps for a request with `method`. `forceClose`
    /// (client asked for close, or the per-connection cap was reached) makes a
    /// generated response announce and perform the close.
    func steps(method: String, forceClose: Bool) -> [TestServer.RawStep] {
        let close = closeConnection || forceClose
        switch kind {
        case let .raw(steps):
            return close ? steps + [.close] : steps
        case let .response(status, headers, body):
            let bodyAllowed = Self.statusHasBody(status)
            var all = headers
            if bodyAllowed && !Self.has(all, "content-length") && !Self.has(all, "transfer-encoding") {
                all.append(("Content-Length", String(body.count)))
            }
            return Self.finish(status: status, headers: all, close: close,
                               payload: bodyAllowed && method != "HEAD" ? body : [])
        case let .generated(status, headers, body):
            return Self.generatedSteps(status: status, headers: headers, body: body, method: method, close: close)
        case let .chunked(status, headers, chunks, trailers):
            var all = headers
            if !Self.has(all, "transfer-encoding") { all.append(("Transfer-Encoding", "chunked")) }
            var payload: [UInt8] = []
            if Self.statusHasBody(status) && method != "HEAD" {
                for chunk in chunks where !chunk.isEmpty {
                    payload += Array(String(chunk.count, radix: 16).utf8) + [13, 10] + chunk + [13, 10]
                }
                payload += Array("0\r\n".utf8)
                for (name, value) in trailers { payload += Array("\(name): \(value)\r\n".utf8) }
                payload += [13, 10]
            }
            return Self.finish(status: status, headers: all, close: close, payload: payload)
        }
    }

    static func finish(status: Int, headers: [(String, String)], close: Bool, payload: [UInt8],
                       then body: [TestServer.RawStep] = []) -> [TestServer.RawStep] {
        var all = headers
        if close && !has(all, "connection") { all.append(("Connection", "close")) }
        var head = "HTTP/1.1 \(status) \(TestServer.reasonPhrase(status))\r\n"
        for (name, value) in all { head += "\(name): \(value)\r\n" }
        head += "\r\n"
        var steps: [TestServer.RawStep] = [.send(Array(head.utf8) + payload)] + body
        if close { steps.append(.close) } // after a `.close` in `body`: never reached
        return steps
    }

    static func has(_ headers: [(String, String)], _ lowercasedName: String) -> Bool {
        headers.contains { $0.0.lowercased() == lowercasedName }
    }

    static func statusHasBody(_ status: Int) -> Bool {
        !(100..<200).contains(status) && status != 204 && status != 304
    }
}
