#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A socket-level failure while setting up a test server or fixture.
public struct SocketError: Error, CustomStringConvertible, Sendable {
    /// What was being attempted, e.g. `"bind 127.0.0.1:0"`.
    public var operation: String
    /// The `errno` value at the time of the failure (0 if not applicable).
    public var code: Int32

    init(_ operation: String, code: Int32 = errno) {
        self.operation = operation
        self.code = code
    }

    public var description: String {
        "\(operation) failed: \(String(cString: strerror(code))) (errno \(code))"
    }
}

/// Small Glibc wrappers shared by the test server and the nginx fixture.
enum Sockets {
    /// Milliseconds on the monotonic clock.
    static func nowMilliseconds() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
    }

    /// Sleeps for `milliseconds` (no-op for values <= 0).
    static func sleep(milliseconds: Int) {
        guard milliseconds > 0 else { return }
        var request = timespec(tv_sec: milliseconds / 1000, tv_nsec: (milliseconds % 1000) * 1_000_000)
        var remaining = timespec()
        while nanosleep(&request, &remaining) == -1 && errno == EINTR {
            request = remaining
        }
    }

    /// Creates a listening TCP socket on `host` (an IPv4 or IPv6 literal) and
    /// `port` (0 picks a free port). Returns the descriptor (non-blocking,
    /// close-on-exec) and the bound port.
    static func listen(host: String, port: Int, backlog: Int32 = 128) throws -> (fd: Int32, port: Int) {
        let isIPv6 = host.contains(":")
        let family = isIPv6 ? AF_INET6 : AF_INET
        let fd = socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw SocketError("socket") }
        var ok = false
        defer { if !ok { Glibc.close(fd) } }

        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        if isIPv6 {
            setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &one, socklen_t(MemoryLayout<Int32>.size))
        }

        let bound: Int32
        if isIPv6 {
            var addr = sockaddr_in6()
            addr.sin6_family = sa_family_t(AF_INET6)
            addr.sin6_port = in_port_t(UInt16(port)).bigEndian
            guard inet_pton(AF_INET6, host, &addr.sin6_addr) == 1 else {
                throw SocketError("parse address \(host)", code: EINVAL)
            }
            bound = withUnsafePointer(to: &addr) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size))
                }
            }
        } else {
            var addr = sockaddr_in()
            addr.sin_family = sa_family_t(AF_INET)
            addr.sin_port = in_port_t(UInt16(port)).bigEndian
            guard inet_pton(AF_INET, host, &addr.sin_addr) == 1 else {
                throw SocketError("parse address \(host)", code: EINVAL)
            }
            bound = withUnsafePointer(to: &addr) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
        guard bound == 0 else { throw SocketError("bind \(host):\(port)") }
        guard Glibc.listen(fd, backlog) == 0 else { throw SocketError("listen") }
        let flags = fcntl(fd, F_GETFL)
        _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)

        let actualPort = try localPort(of: fd)
        ok = true
        return (fd, actualPort)
    }

    /// Creates a listening Unix domain socket at `path` (removing a file
    /// already there). Returns the descriptor (non-blocking, close-on-exec).
    static func listen(unixPath path: String, backlog: Int32 = 128) throws -> Int32 {
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: addr.sun_path)
        guard bytes.count < capacity else { throw SocketError("socket path \(path) is too long", code: ENAMETOOLONG) }
        withUnsafeMutableBytes(of: &addr.sun_path) { $0.copyBytes(from: bytes) }
        unlink(path)
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw SocketError("socket") }
        var ok = false
        defer { if !ok { Glibc.close(fd) } }
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0 else { throw SocketError("bind \(path)") }
        guard Glibc.listen(fd, backlog) == 0 else { throw SocketError("listen") }
        let flags = fcntl(fd, F_GETFL)
        _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
        ok = true
        return fd
    }

    /// The local port a socket is bound to.
    static func localPort(of fd: Int32) throws -> Int {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let rc = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard rc == 0 else { throw SocketError("getsockname") }
        switch Int32(storage.ss_family) {
        case AF_INET:
            return withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin_port)) }
            }
        case AF_INET6:
            return withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin6_port)) }
            }
        default:
            throw SocketError("getsockname: unexpected family", code: EAFNOSUPPORT)
        }
    }

    /// Polls one descriptor for `events` for up to `timeoutMilliseconds`.
    /// Returns the returned events (0 on timeout, `POLLERR` on failure).
    static func poll(_ fd: Int32, events: Int32, timeoutMilliseconds: Int) -> Int32 {
        var pfd = pollfd(fd: fd, events: Int16(events), revents: 0)
        let rc = Glibc.poll(&pfd, 1, Int32(timeoutMilliseconds))
        if rc < 0 { return errno == EINTR ? 0 : Int32(POLLERR) }
        return rc == 0 ? 0 : Int32(pfd.revents)
    }

    /// Sets `TCP_NODELAY` so scripted pieces leave as separate segments.
    /// Closes with a TCP RST (`SO_LINGER` {1, 0}): the peer sees ECONNRESET.
    static func closeWithReset(_ fd: Int32) {
        var option = linger(l_onoff: 1, l_linger: 0)
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &option, socklen_t(MemoryLayout<linger>.size))
        Glibc.close(fd)
    }

    /// `TCP_CORK` on or off (off sends what it held back). A closed
    /// descriptor (-1) is left alone.
    static func setCork(_ fd: Int32, _ on: Bool) {
        guard fd >= 0 else { return }
        var value: Int32 = on ? 1 : 0
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_CORK, &value, socklen_t(MemoryLayout<Int32>.size))
    }

    static func setNoDelay(_ fd: Int32) {
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    }

    /// Returns a port that was free a moment ago on 127.0.0.1 (bind to 0, read, close).
    static func freePort(host: String = "127.0.0.1") throws -> Int {
        let (fd, port) = try listen(host: host, port: 0, backlog: 1)
        Glibc.close(fd)
        return port
    }
}

extension Sockets {
    /// True if a TCP connection to `host:port` (IPv4 literal) succeeds now.
    static func canConnect(host: String, port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { Glibc.close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(port)).bigEndian
        guard inet_pton(AF_INET, host, &addr.sin_addr) == 1 else { return false }
        return withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }
}
