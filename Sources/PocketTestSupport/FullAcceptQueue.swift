#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A loopback listener with backlog 0 that never accepts, its queue filled
/// by a few connects: the kernel drops further SYNs, so a client's connect
/// hangs until its own deadline (connect-timeout tests). Closed on `close()`
/// or deinit.
public final class FullAcceptQueue: @unchecked Sendable {
    // Invariant: the descriptors are only read after init and closed once (by close()).
    private var fds: [Int32] = []
    /// The listener's port on 127.0.0.1.
    public let port: Int

    public init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw SocketError("socket") }
        fds = [fd]
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) } }
        guard bound == 0, listen(fd, 0) == 0 else { throw SocketError("bind/listen 127.0.0.1:0") }
        _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) } }
        port = Int(UInt16(bigEndian: addr.sin_port))
        for _ in 0..<4 {
            let c = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            var a = addr
            _ = withUnsafePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(c, $0, len) } }
            fds.append(c)
        }
        usleep(50_000) // the handshakes of the fillers complete
    }

    /// Closes the listener and the fillers.
    public func close() {
        fds.forEach { _ = Glibc.close($0) }
        fds = []
    }

    deinit { close() }
}
