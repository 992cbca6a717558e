extension TestServer.Reply {
    /// A valid `200` head (`Content-Length: 2`, body `ok`) sent one byte per
    /// `delayMilliseconds` (default one per second): never idle long, never done.
    public static func headTrickle(delayMilliseconds: Int = 1000) -> Self {
        let response = Array("HTTP/1.1 200 OK\r\nX-Slow: \(String(repeating: "s", count: 64))\r\nContent-Length: 2\r\n\r\nok".utf8)
        return .raw([.trickle(response, chunkSize: 1, delayMilliseconds: delayMilliseconds)])
    }

    /// A chunked body that never ends: `pieceSize`-byte chunks of the byte
    /// pattern, one per `delayMilliseconds`, until the client goes away (or
    /// 2^40 bytes). Memory on the server side stays one piece.
    public static func endlessChunked(pieceSize: Int = 16 << 10, delayMilliseconds: Int = 1) -> Self {
        .raw([.sendString("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"),
              .pattern(count: 1 << 40, pieceSize: pieceSize, chunked: true, delayMillisecondsPerPiece: delayMilliseconds)])
    }

    /// A head announcing `declaredLength` bytes, `sent` of them, then a TCP RST.
    public static func resetMidBody(declaredLength: Int = 1 << 20, sent: Int = 64 << 10) -> Self {
        .raw([.sendString("HTTP/1.1 200 OK\r\nContent-Length: \(declaredLength)\r\n\r\n"),
              .pattern(count: sent), .sleep(milliseconds: 20), .reset])
    }

    /// `count` interim `103 Early Hints` responses, then a final `200`.
    public static func interimFlood(count: Int) -> Self {
        let hint = "HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n"
        return .raw([.sendString(String(repeating: hint, count: count)),
                      .sendString("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")])
    }

    /// A status line, then one header field line of `line` (the caller's
    /// bytes, e.g. 10 MB of `a`, so they are allocated before any memory is
    /// measured), never finished.
    public static func hugeHeaderLine(_ line: [UInt8]) -> Self {
        .raw([.sendString("HTTP/1.1 200 OK\r\nX-Huge: "), .send(line), .sendString("\r\n\r\n")], closeConnection: true)
    }
}
