extension TestServer {
    /// A downloadable file of `BytePattern` bytes served with validators and
    /// byte ranges (RFC 9110 §14), for download and resume tests; route it
    /// with `routeResource(_:_:)`.
    ///
    /// The body is bytes `0..<size` of the pattern of `seed`, generated as it
    /// is sent (never held in memory), so `sha256` is what a complete
    /// download hashes to.
    public struct Resource: Sendable {
        /// The representation's length in bytes.
        public var size: Int
        /// The `BytePattern` seed of the content (default 0).
        public var seed: UInt64
        /// The `ETag` field value, quotes included (e.g. `"\"v1\""`, or
        /// `"W/\"v1\""` for a weak tag, which never satisfies `If-Range`);
        /// nil (the default): no `ETag`.
        public var etag: String?
        /// The `Last-Modified` field value, e.g. `"Sun, 06 Nov 1994 08:49:37
        /// GMT"`; nil (the default): none.
        public var lastModified: String?
        /// Answer `Range` requests with 206/416 and announce
        /// `Accept-Ranges: bytes` (default true). False: always 200, whole.
        public var honorsRange: Bool
        /// The `Content-Type` (default `application/octet-stream`).
        public var contentType: String
        /// Interrupts downloads: the next `interruptions` GET responses that
        /// carry a body (200 or 206) send only this many body bytes of that
        /// response, then close the connection (FIN, no `Connection: close`
        /// announced). Each cut decrements `interruptions`; when it reaches 0,
        /// `stopAfter` clears itself (nil). A value at or beyond a body's
        /// length sends the whole body and then closes. nil (the default):
        /// never interrupted.
        public var stopAfter: Int?
        /// How many responses `stopAfter` still cuts (default 1).
        public var interruptions: Int
        /// Waits this long before every body piece but the first (default
        /// 0), e.g. to keep a download in flight while a test acts.
        public var delayMillisecondsPerPiece: Int
        /// Bytes generated and sent at a time (default 256 KiB).
        public var pieceSize: Int

        /// A resource of `size` pattern bytes of `seed`; see each property
        /// for its default.
        public init(size: Int, seed: UInt64 = 0, etag: String? = nil, lastModified: String? = nil,
                    honorsRange: Bool = true, contentType: String = "application/octet-stream",
                    stopAfter: Int? = nil, interruptions: Int = 1,
                    delayMillisecondsPerPiece: Int = 0, pieceSize: Int = 256 * 1024) {
            precondition(size >= 0, "a resource cannot be negative")
            self.size = size
            self.seed = seed
            self.etag = etag
            self.lastModified = lastModified
            self.honorsRange = honorsRange
            self.contentType = contentType
            self.stopAfter = stopAfter
            self.interruptions = interruptions
            self.delayMillisecondsPerPiece = delayMillisecondsPerPiece
            self.pieceSize = pieceSize
        }

        /// The SHA-256 (lowercase hex) of the whole content.
        public var sha256: String {
            BytePattern.sha256(seed: seed, size: size)
        }

        /// Bytes `range` of the content.
        public func bytes(_ range: Range<Int>) -> [UInt8] {
            BytePattern.bytes(seed: seed, range: range)
        }
    }

    /// Serves `resource` at `path` (replacing an earlier route for it):
    ///
    /// * GET without `Range` (or with one that is ignored: malformed, several
    ///   ranges, another unit, or `honorsRange` false): `200` with the whole
    ///   body, `Content-Length`, `Content-Type`, `ETag` and `Last-Modified`
    ///   (those set), and `Accept-Ranges: bytes` (if `honorsRange`).
    /// * `Range: bytes=N-`, `bytes=N-M` or `bytes=-S` (last S bytes): `206`
    ///   with `Content-Range: bytes FIRST-LAST/SIZE` and those bytes (LAST
    ///   clamped to `size - 1`); a first byte at or past `size` (or `-0`):
    ///   `416` with `Content-Range: bytes */SIZE` and no body.
    /// * `If-Range` with `Range`: the range applies only if the value equals
    ///   the current `etag` (strong comparison: a `W/` tag never matches) or
    ///   `lastModified` exactly; otherwise `200` with the whole body.
    /// * HEAD: the `200` head of a full GET (ranges ignored); other methods:
    ///   `405` with `Allow: GET, HEAD`.
    ///
    /// Every request is recorded in `receivedRequests` as usual.
    public func routeResource(_ path: String, _ resource: Resource) {
        core.locked {
            core.resources[path] = resource
            core.routes[path] = Route { [weak core] request in
                core?.answerResource(at: path, request) ?? .text("Not Found\n", status: 404)
            }
        }
    }

    /// Changes the resource at `path` for the requests that follow (e.g.
    /// `server.updateResource("/f") { $0.etag = "\"v2\"" }`); no-op if no
    /// resource is routed there. `change` runs under the server's lock: it
    /// must not call the server.
    public func updateResource(_ path: String, _ change: (inout Resource) -> Void) {
        core.locked {
            guard var resource = core.resources[path] else { return }
            change(&resource)
            core.resources[path] = resource
        }
    }

    /// The resource at `path` as it is now (e.g. to read the remaining
    /// `interruptions`), or nil.
    public func resource(_ path: String) -> Resource? {
        core.locked { core.resources[path] }
    }
}
