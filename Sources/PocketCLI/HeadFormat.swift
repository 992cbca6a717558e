import Pocket
import PocketBenchKit

/// How heads are shown: `-i`/`-D` write the response head as received (status
/// line, fields in order, CRLF line ends, a blank line); `-v` writes both heads
/// on stderr, request lines after `> `, response lines after `< `, as curl does.
enum HeadFormat {
    /// `HTTP/1.1 200 OK\r\nName: value\r\n...\r\n`.
    static func response(minorVersion: Int, status: Int, reason: String, headers: PocketHeaders) -> String {
        var s = "HTTP/1.\(minorVersion) \(status)\(reason.isEmpty ? "" : " " + reason)\r\n"
        for field in headers { s += "\(field.name): \(field.value)\r\n" }
        return s + "\r\n"
    }

    /// The response head as `-v` shows it.
    static func verboseResponse(minorVersion: Int, status: Int, reason: String, headers: PocketHeaders) -> String {
        var s = "< HTTP/1.\(minorVersion) \(status)\(reason.isEmpty ? "" : " " + reason)\n"
        for field in headers { s += "< \(field.name): \(field.value)\n" }
        return s + "<\n"
    }

    /// The request head as `-v` shows it: the request line, `Host`, the
    /// request's fields, then the client defaults it does not override and
    /// the framing field of its body (the engine writes the same; a
    /// download asks for `identity` so it can resume).
    static func verboseRequest(_ request: PocketRequest, defaults: PocketHeaders, compressed: Bool, download: Bool) -> String {
        let url = request.url
        var target = url.path(percentEncoded: true)
        if target.isEmpty { target = "/" }
        if let q = url.query(percentEncoded: true) { target += "?" + q }
        var s = "> \(request.method.rawValue) \(target) HTTP/1.1\n"
        if !request.headers.contains("Host"), let host = url.host() {
            let defaultPort = url.scheme == "https" ? 443 : 80
            let port = url.port.map { $0 == defaultPort ? "" : ":\($0)" } ?? ""
            s += "> Host: \(host.contains(":") ? "[\(host)]" : host)\(port)\n"
        }
        for field in request.headers { s += "> \(field.name): \(field.value)\n" }
        for field in defaults where !request.headers.contains(field.name) { s += "> \(field.name): \(field.value)\n" }
        if !request.headers.contains("Accept-Encoding") && (compressed || download) {
            s += "> Accept-Encoding: \(download ? "identity" : "gzip, deflate")\n"
        }
        if let body = request.body, !request.headers.contains("Content-Length") {
            s += body.length.map { "> Content-Length: \($0)\n" } ?? (body.isReplayable ? "" : "> Transfer-Encoding: chunked\n")
        }
        return s + ">\n"
    }

    /// The `-v` line of a new client: how its engine writes to sockets.
    static func verboseBackend(_ backend: PocketIOBackend) -> String {
        switch backend {
        case .ioUring: "* I/O: io_uring (a loop pass's request writes share one system call)\n"
        default: "* I/O: epoll (one send per write)\n"
        }
    }

    /// One `-v` line with the timings of a finished request.
    static func verboseTimings(_ t: PocketTimings) -> String {
        func ms(_ d: Duration) -> String {
            let (s, atto) = d.components
            return fixedPoint(Double(s) * 1e3 + Double(atto) / 1e15, 3)
        }
        var s = "* timings: dns \(ms(t.dns)) ms, connect \(ms(t.connect)) ms"
        if t.tls > .zero { s += ", tls \(ms(t.tls)) ms\(t.tlsResumed ? " (resumed)" : "")" }
        s += ", first byte \(ms(t.firstByte)) ms, total \(ms(t.total)) ms"
        s += t.reusedConnection ? ", reused connection" : ", new connection"
        return s + "; sent \(t.bytesSent) B, received \(t.bytesReceived) B\n"
    }
}
