extension TestServer {
    /// One request as the server received it.
    public struct Request: Sendable {
        /// The method token, e.g. `"GET"`.
        public var method: String
        /// The request target as sent: path plus query, e.g. `"/a?b=1"`.
        public var target: String
        /// The target up to (not including) `?`.
        public var path: String
        /// The part after `?`, or nil if there is none.
        public var query: String?
        /// The protocol version token, e.g. `"HTTP/1.1"`.
        public var version: String
        /// Header fields in order received, names as sent.
        public var headers: [(String, String)]
        /// The decoded body (de-chunked if it was chunked). Empty when the
        /// server does not keep bodies (`TestServer.keepsRequestBodies`
        /// false) and for requests answered before their body.
        public var body: [UInt8]
        /// The decoded body's length in bytes, counted as it was read (set
        /// whether or not `body` was kept; 0 if `answeredBeforeBody`).
        public var bodyLength: Int
        /// The SHA-256 of the decoded body (64 lowercase hex digits), hashed
        /// as it was read (set whether or not `body` was kept; the digest of
        /// no bytes if `answeredBeforeBody`).
        public var bodySHA256: String
        /// The route answered right after the head, without reading the body
        /// (`route(_:respondsBeforeBody:_:)`).
        public var answeredBeforeBody: Bool
        /// The chunked trailer fields, if the body was chunked and had any.
        public var trailers: [(String, String)]
        /// The exact bytes of the request line and header block, including the
        /// final empty line.
        public var rawHead: [UInt8]
        /// 0-based index of the connection in accept order.
        public var connectionIndex: Int
        /// 0-based index of this request on its connection.
        public var requestIndexOnConnection: Int

        init(head: RequestHead, rawHead: [UInt8], body: ReceivedBody, answeredBeforeBody: Bool = false,
             connectionIndex: Int, requestIndex: Int) {
            method = head.method
            target = head.target
            path = head.path
            query = head.query
            version = head.version
            headers = head.headers
            self.body = body.bytes
            bodyLength = body.length
            bodySHA256 = body.digest()
            trailers = body.trailers
            self.answeredBeforeBody = answeredBeforeBody
            self.rawHead = rawHead
            self.connectionIndex = connectionIndex
            requestIndexOnConnection = requestIndex
        }

        /// The first value of the header `name` (case-insensitive), or nil.
        public func header(_ name: String) -> String? {
            let lowered = name.lowercased()
            return headers.first { $0.0.lowercased() == lowered }?.1
        }

        /// Every value of the header `name` (case-insensitive), in order.
        public func headerValues(_ name: String) -> [String] {
            let lowered = name.lowercased()
            return headers.filter { $0.0.lowercased() == lowered }.map(\.1)
        }

        /// The body decoded as UTF-8 (invalid sequences repaired).
        public var bodyText: String {
            String(decoding: body, as: UTF8.self)
        }

        /// True if the client asked to close the connection after this
        /// request (`Connection: close`, or HTTP/1.0 without `keep-alive`).
        public var wantsClose: Bool {
            let tokens = headerValues("Connection")
                .flatMap { $0.split(separator: ",") }
                .map { $0.trimmingSpaces().lowercased() }
            if tokens.contains("close") { return true }
            if version == "HTTP/1.0" { return !tokens.contains("keep-alive") }
            return false
        }
    }
}

extension StringProtocol {
    /// The string without leading/trailing spaces and horizontal tabs.
    func trimmingSpaces() -> String {
        var scalars = Substring(self).unicodeScalars[...]
        while let first = scalars.first, first == " " || first == "\t" { scalars.removeFirst() }
        while let last = scalars.last, last == " " || last == "\t" { scalars.removeLast() }
        return String(String.UnicodeScalarView(scalars))
    }
}
