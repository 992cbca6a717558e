import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A loopback port that answers whatever arrives first (a TLS ClientHello
/// too) with `HTTP/1.1 400 Bad Request` and closes, as nginx or any plain
/// HTTP server does; the test server waits for a whole request head instead.
/// Serves at most `connections` connections, then stops; `stop()` ends it
/// early.
public final class PlainHTTPAnswerer: @unchecked Sendable {
    // Immutable after init; the thread owns the accepted sockets.
    public let port: Int
    private let fd: Int32
    private let thread: Thread

    public init(connections: Int = 4) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw CocoaError(.fileWriteUnknown) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 8) == 0 else { close(fd); throw CocoaError(.fileWriteUnknown) }
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) }
        }
        port = Int(UInt16(bigEndian: addr.sin_port))
        self.fd = fd
        let listener = fd
        thread = Thread {
            let answer = Array("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".utf8)
            for _ in 0..<connections {
                let client = accept(listener, nil, nil)
                guard client >= 0 else { return }
                var buf = [UInt8](repeating: 0, count: 4096)
                _ = recv(client, &buf, buf.count, 0)
                _ = send(client, answer, answer.count, Int32(MSG_NOSIGNAL))
                close(client)
            }
        }
        thread.start()
    }

    /// Stops accepting (a blocked accept returns).
    public func stop() {
        shutdown(fd, Int32(SHUT_RDWR))
        close(fd)
    }
}
