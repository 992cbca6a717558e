internal import CHTTPEngine
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// What the engine is built with, for a `--version` line or a service's
/// diagnostics: the libraries are linked, so these are the versions in use.
public enum PocketEngineInfo {
    /// The TLS library, e.g. `OpenSSL 3.0.15 3 Sep 2024`.
    public static var tlsLibrary: String { String(cString: pk_tls_library_version()) }
    /// zlib's version (gzip and deflate bodies), e.g. `1.2.13`.
    public static var zlibVersion: String { String(cString: pk_zlib_version()) }
    /// libdeflate's version (small whole gzip bodies in one call), e.g. `1.14`.
    public static var libdeflateVersion: String { String(cString: pk_libdeflate_version()) }
    /// The protocols the engine speaks.
    public static let protocols = ["http", "https"]
    /// What the build can do, as curl's `--version` lists its own (curl's
    /// names where curl has one): DNS off the loop thread (`AsynchDNS`),
    /// `gzip` and `deflate` bodies (zlib: `libz`; libdeflate), `HTTP-proxy`
    /// (forwarding and CONNECT tunnels), `IPv6` (happy eyeballs), the
    /// `io_uring` backend (used where the kernel allows it), `Largefile`,
    /// an RFC 6265 store (`cookies`) with public suffixes (`PSL`), resumed
    /// downloads (`Range`), `TLS` (OpenSSL), `threadsafe` clients and
    /// `UnixSockets`.
    public static let features = ["AsynchDNS", "cookies", "deflate", "gzip", "HTTP/1.1", "HTTP-proxy", "IPv6",
                                  "io_uring", "keep-alive", "Largefile", "libdeflate", "libz", "PSL", "Range",
                                  "threadsafe", "TLS", "UnixSockets"]
}

/// How a client's engine writes to its sockets (`Configuration.ioBackend`).
///
/// Both backends wait for readiness with epoll and read with `recv(2)`;
/// they differ in how a loop pass's writes reach the kernel. On epoll each
/// request is its own `send(2)`. On io_uring the pass's request writes on
/// plain connections (requests whose head is all there is to send: GET,
/// HEAD, DELETE without a body, ...) are queued on a ring and submitted
/// together with one `io_uring_enter(2)` before the loop waits: under load
/// one system call carries dozens of requests (docs/ENGINE.md, "I/O
/// backends"). TLS, request bodies, reads, timers and the pool are the same
/// code on both.
public enum PocketIOBackend: String, Sendable, Hashable, CaseIterable {
    /// io_uring when the kernel allows it, else epoll, silently: io_uring is
    /// refused by the `kernel.io_uring_disabled` sysctl, by seccomp filters
    /// such as Docker's default profile, and by kernels before 5.6.
    case automatic = "auto"
    /// epoll alone: one `send(2)` per write.
    case epoll
    /// io_uring, or the client's `init` throws `.ioUringUnavailable`.
    case ioUring = "io_uring"

    /// `POCKET_IO_BACKEND` when it names a backend (`auto`, `epoll`,
    /// `io_uring`), else `.automatic`.
    public static var fromEnvironment: PocketIOBackend {
        guard let value = getenv("POCKET_IO_BACKEND") else { return .automatic }
        return PocketIOBackend(rawValue: String(cString: value)) ?? .automatic
    }

    var engineValue: Int32 {
        switch self {
        case .automatic: Int32(PK_IO_AUTO.rawValue)
        case .epoll: Int32(PK_IO_EPOLL.rawValue)
        case .ioUring: Int32(PK_IO_URING.rawValue)
        }
    }
}
