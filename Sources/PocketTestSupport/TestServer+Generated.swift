extension TestServer.Reply {
    /// A body of `BytePattern` bytes that is generated while it is sent,
    /// never held in memory (see `generated(size:...)`).
    struct GeneratedBody: Sendable {
        var seed: UInt64
        /// The pattern bytes sent: offsets `range` of the stream of `seed`.
        var range: Range<Int>
        var chunked: Bool
        var pieceSize: Int
        var delayMillisecondsPerPiece: Int
        /// Send only this many body bytes, then close (FIN): an interrupted
        /// response. nil: the whole body.
        var cutAfter: Int?
    }

    /// A response whose body is bytes `0..<size` of `BytePattern`'s stream of
    /// `seed` (default 0), generated piece by piece as it is sent: server
    /// memory stays O(`pieceSize`) (default 256 KiB) for any size, over plain
    /// TCP and TLS alike, and `BytePattern.sha256(seed:size:)` is the digest a
    /// client must see.
    ///
    /// The head carries `status` (default 200), `headers` (default none),
    /// then `Content-Length: size`, or with `chunked` (default false)
    /// `Transfer-Encoding: chunked` and one chunk per piece plus the last
    /// chunk. `delayMillisecondsPerPiece` (default 0) waits before every piece
    /// but the first. HEAD requests get the head only. With `closeConnection`
    /// (default false) the head announces `Connection: close` and the
    /// connection closes after the body. Sends wait in bounded
    /// slices: a client that stops reading holds the connection's thread
    /// without spinning until it reads, closes, or the server shuts down.
    public static func generated(
        size: Int,
        seed: UInt64 = 0,
        status: Int = 200,
        headers: [(String, String)] = [],
        chunked: Bool = false,
        pieceSize: Int = 256 * 1024,
        delayMillisecondsPerPiece: Int = 0,
        closeConnection: Bool = false
    ) -> TestServer.Reply {
        precondition(size >= 0, "a generated body cannot be negative")
        let body = GeneratedBody(seed: seed, range: 0..<size, chunked: chunked, pieceSize: pieceSize,
                                 delayMillisecondsPerPiece: delayMillisecondsPerPiece, cutAfter: nil)
        return TestServer.Reply(.generated(status: status, headers: headers, body: body), closeConnection: closeConnection)
    }

    /// The steps of a `.generated` reply (see `steps(method:forceClose:)`).
    static func generatedSteps(status: Int, headers: [(String, String)], body: GeneratedBody,
                               method: String, close: Bool) -> [TestServer.RawStep] {
        var all = headers
        if body.chunked {
            if !has(all, "transfer-encoding") { all.append(("Transfer-Encoding", "chunked")) }
        } else if !has(all, "content-length") {
            all.append(("Content-Length", String(body.range.count)))
        }
        guard statusHasBody(status) && method != "HEAD" else {
            return finish(status: status, headers: all, close: close, payload: [])
        }
        let sent = min(body.range.count, body.cutAfter ?? body.range.count)
        var steps: [TestServer.RawStep] = [
            .pattern(seed: body.seed, offset: body.range.lowerBound, count: sent, pieceSize: body.pieceSize,
                     chunked: body.chunked, delayMillisecondsPerPiece: body.delayMillisecondsPerPiece),
        ]
        if body.cutAfter != nil {
            steps.append(.close)
        } else if body.chunked {
            steps.append(.sendString("0\r\n\r\n"))
        }
        return finish(status: status, headers: all, close: close, payload: [], then: steps)
    }
}
