#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import CPocketTestTLS
import Foundation

extension TestServer {
    /// How a `TestServer` speaks TLS (see `init(host:port:tls:)`).
    public struct TLSOptions: Sendable {
        /// A protocol version bound.
        public enum Version: Sendable, Equatable {
            /// TLS 1.0 and 1.1 (as a `maxVersion`, the server runs at
            /// OpenSSL's security level 0, which they need).
            case tls1_0, tls1_1, tls1_2, tls1_3

            var wireValue: Int32 {
                switch self {
                case .tls1_0: 0x0301
                case .tls1_1: 0x0302
                case .tls1_2: 0x0303
                case .tls1_3: 0x0304
                }
            }
        }

        /// PEM certificate (chain) the server presents.
        public var certificateFile: String
        /// PEM private key of `certificateFile`.
        public var keyFile: String
        /// PEM CA used to verify client certificates; nil: none requested.
        public var clientCAFile: String?
        /// With `clientCAFile`: handshakes without a client certificate fail
        /// (false: a certificate is requested but optional).
        public var requireClientCertificate: Bool
        /// Protocols the server may select, in preference order; nil: no ALPN
        /// in answers. The server selects its first protocol the client
        /// offered; if the client offered ALPN but none of these, the server
        /// still answers with `alpn[0]` (a deliberate mismatch, e.g. `["h2"]`).
        public var alpn: [String]?
        /// Lowest/highest version accepted (nil: OpenSSL's defaults).
        public var minVersion: Version?
        public var maxVersion: Version?
        /// Issue session tickets so clients can resume (default true).
        public var sessionTickets: Bool

        public init(certificateFile: String, keyFile: String,
                    clientCAFile: String? = nil, requireClientCertificate: Bool = false,
                    alpn: [String]? = nil, minVersion: Version? = nil, maxVersion: Version? = nil,
                    sessionTickets: Bool = true) {
            self.certificateFile = certificateFile
            self.keyFile = keyFile
            self.clientCAFile = clientCAFile
            self.requireClientCertificate = requireClientCertificate
            self.alpn = alpn
            self.minVersion = minVersion
            self.maxVersion = maxVersion
            self.sessionTickets = sessionTickets
        }

        /// The CA-signed `localhost` certificate of `TestCertificates.shared`
        /// (generates the certificates on first use).
        public static func localhost(alpn: [String]? = nil) throws -> TLSOptions {
            let certificates = try TestCertificates.shared
            return TLSOptions(certificateFile: certificates.serverCert, keyFile: certificates.serverKey, alpn: alpn)
        }

        /// Like `localhost()`, but requires a client certificate signed by the test CA.
        public static func mutualTLS(requireClientCertificate: Bool = true) throws -> TLSOptions {
            let certificates = try TestCertificates.shared
            return TLSOptions(certificateFile: certificates.serverCert, keyFile: certificates.serverKey,
                              clientCAFile: certificates.caCert, requireClientCertificate: requireClientCertificate)
        }
    }

    /// One completed server-side TLS handshake.
    public struct TLSHandshake: Sendable, Equatable {
        /// The session was resumed (ticket or session id).
        public var resumed: Bool
        /// Negotiated version, e.g. `"TLSv1.3"`.
        public var version: String
        /// The ALPN protocol the server answered, nil if none.
        public var alpn: String?
        /// The client presented a certificate that verified against `clientCAFile`.
        public var clientCertificateVerified: Bool
        /// The SNI host name the client sent, nil if none.
        public var serverName: String? = nil
    }

    /// Why a TLS server could not be set up.
    public struct TLSSetupError: Error, CustomStringConvertible {
        public var description: String
    }
}

/// An OpenSSL server context (`SSL_CTX`) shared by one server's connections.
final class TLSContext: @unchecked Sendable {
    // Invariant: `pointer` is immutable and freed only by deinit; OpenSSL
    // allows sharing an SSL_CTX between threads that create SSL objects.
    let pointer: OpaquePointer

    init(_ options: TestServer.TLSOptions) throws {
        var error = [CChar](repeating: 0, count: 1024)
        let alpn = options.alpn?.joined(separator: ",")
        let made: OpaquePointer? = options.certificateFile.withCString { cert in
            options.keyFile.withCString { key in
                withOptionalCString(options.clientCAFile) { ca in
                    withOptionalCString(alpn) { alpn in
                        var raw = pktt_ctx_options(
                            certificate_file: cert, key_file: key, client_ca_file: ca,
                            require_client_certificate: options.requireClientCertificate ? 1 : 0,
                            alpn: alpn,
                            min_version: options.minVersion?.wireValue ?? 0,
                            max_version: options.maxVersion?.wireValue ?? 0,
                            session_tickets: options.sessionTickets ? 1 : 0)
                        return pktt_ctx_new(&raw, &error, error.count)
                    }
                }
            }
        }
        guard let made else {
            throw TestServer.TLSSetupError(description: string(fromBuffer: error))
        }
        pointer = made
    }

    deinit {
        pktt_ctx_free(pointer)
    }
}

/// The NUL-terminated text in `buffer`.
private func string(fromBuffer buffer: [CChar]) -> String {
    String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

private func withOptionalCString<T>(_ string: String?, _ body: (UnsafePointer<CChar>?) -> T) -> T {
    guard let string else { return body(nil) }
    return string.withCString { body($0) }
}

/// TLS over a (non-blocking) socket via `CPocketTestTLS`. The handshake runs
/// lazily on the connection thread, in bounded slices, on the first
/// `waitReadable`/`receive`/`send`; `events` hears how it ended.
final class TLSTransport: Transport, @unchecked Sendable {
    enum HandshakeOutcome {
        case completed(TestServer.TLSHandshake)
        case failed(String)
    }

    private enum State { case handshaking, established, failed }

    // Invariant: `fd` and `connection` are written only by the owning
    // connection thread (in `close`/`reset`) while holding `lock`; other
    // threads read them only under `lock`. `state` is touched only by the
    // connection thread. `buffered` (plaintext inside OpenSSL) is under `lock`.
    private let lock = NSLock()
    private var fd: Int32
    private var connection: OpaquePointer?
    private var state = State.handshaking
    private var closeNotifySent = false
    private var buffered = 0
    private let context: TLSContext
    private let events: @Sendable (HandshakeOutcome) -> Void

    init(fd: Int32, context: TLSContext, events: @escaping @Sendable (HandshakeOutcome) -> Void) {
        self.fd = fd
        self.context = context
        self.events = events
        var error = [CChar](repeating: 0, count: 512)
        connection = pktt_conn_new(context.pointer, fd, &error, error.count)
        if connection == nil {
            state = .failed
            events(.failed(string(fromBuffer: error)))
        }
    }

    deinit {
        if let connection { pktt_conn_free(connection) }
        if fd >= 0 { Glibc.close(fd) }
    }

    private enum Step { case ready(OpaquePointer), pending, failed }

    /// Advances the handshake for up to `timeoutMilliseconds`.
    private func handshake(timeoutMilliseconds: Int) -> Step {
        guard let connection, fd >= 0 else { return .failed }
        switch state {
        case .established: return .ready(connection)
        case .failed: return .failed
        case .handshaking: break
        }
        var error = [CChar](repeating: 0, count: 512)
        let result = pktt_handshake(connection, Int32(clamping: timeoutMilliseconds), &error, error.count)
        if result == PKTT_TIMEOUT { return .pending }
        if result != PKTT_OK {
            state = .failed
            events(.failed(string(fromBuffer: error)))
            return .failed
        }
        state = .established
        var alpn = [CChar](repeating: 0, count: 256)
        pktt_selected_alpn(connection, &alpn, alpn.count)
        let selected = string(fromBuffer: alpn)
        events(.completed(TestServer.TLSHandshake(
            resumed: pktt_session_reused(connection) != 0,
            version: String(cString: pktt_version(connection)),
            alpn: selected.isEmpty ? nil : selected,
            clientCertificateVerified: pktt_peer_certificate_verified(connection) != 0,
            serverName: pktt_server_name(connection).map { String(cString: $0) })))
        return .ready(connection)
    }

    func waitReadable(timeoutMilliseconds: Int) -> Bool {
        let deadline = Sockets.nowMilliseconds() + Int64(timeoutMilliseconds)
        switch handshake(timeoutMilliseconds: timeoutMilliseconds) {
        case .failed: return true
        case .pending: return false
        case let .ready(connection):
            if pktt_pending(connection) > 0 { return true }
            let left = Int(max(0, deadline - Sockets.nowMilliseconds()))
            return Sockets.poll(fd, events: Int32(POLLIN), timeoutMilliseconds: left) != 0
        }
    }

    func waitForPeerClose(timeoutMilliseconds: Int) -> Bool {
        let fd = self.fd
        guard fd >= 0 else { return true }
        let rdhup: Int32 = 0x2000 // POLLRDHUP
        let events = Sockets.poll(fd, events: rdhup, timeoutMilliseconds: timeoutMilliseconds)
        return events & (rdhup | Int32(POLLHUP) | Int32(POLLERR)) != 0
    }

    func receive(maxCount: Int, timeoutMilliseconds: Int) -> ReceiveResult {
        let deadline = Sockets.nowMilliseconds() + Int64(timeoutMilliseconds)
        let connection: OpaquePointer
        switch handshake(timeoutMilliseconds: timeoutMilliseconds) {
        case .failed: return .closed
        case .pending: return .timedOut
        case let .ready(ready): connection = ready
        }
        let left = Int32(clamping: max(0, deadline - Sockets.nowMilliseconds()))
        var buffer = [UInt8](repeating: 0, count: max(1, maxCount))
        var systemError: Int32 = 0
        var error = [CChar](repeating: 0, count: 512)
        let n = buffer.withUnsafeMutableBytes {
            pktt_read(connection, $0.baseAddress, $0.count, left, &systemError, &error, error.count)
        }
        let pending = Int(pktt_pending(connection))
        lock.withLock { buffered = pending }
        if n > 0 { return .data(Array(buffer[0..<n])) }
        if n == PKTT_TIMEOUT { return .timedOut }
        if n == PKTT_EOF { return .closed }
        return systemError != 0 ? .failed(systemError) : .failed(EPROTO)
    }

    func send(_ bytes: ArraySlice<UInt8>, timeoutMilliseconds: Int) -> Int? {
        if bytes.isEmpty { return 0 }
        let deadline = Sockets.nowMilliseconds() + Int64(timeoutMilliseconds)
        let connection: OpaquePointer
        switch handshake(timeoutMilliseconds: timeoutMilliseconds) {
        case .failed: return nil
        case .pending: return 0
        case let .ready(ready): connection = ready
        }
        let left = Int32(clamping: max(0, deadline - Sockets.nowMilliseconds()))
        var error = [CChar](repeating: 0, count: 512)
        let n = bytes.withUnsafeBytes { pktt_write(connection, $0.baseAddress, $0.count, left, &error, error.count) }
        if n > 0 { return n }
        if n == PKTT_TIMEOUT { return 0 }
        return nil
    }

    var hasPendingInput: Bool {
        lock.lock()
        defer { lock.unlock() }
        guard fd >= 0 else { return false }
        if buffered > 0 { return true }
        var count: Int32 = 0
        return ioctl(fd, UInt(FIONREAD), &count) == 0 && count > 0
    }

    func cork(_ on: Bool) { Sockets.setCork(fd, on) }

    func requestRenegotiation() -> Bool {
        guard state == .established, let connection else { return false }
        var error = [CChar](repeating: 0, count: 512)
        return pktt_request_renegotiation(connection, &error, error.count) == PKTT_OK
    }

    func corruptNextRecord() -> Bool {
        guard state == .established, let connection else { return false }
        return pktt_corrupt_next_record(connection) == PKTT_OK
    }

    func shutdownWrite() {
        let fd = self.fd
        guard fd >= 0 else { return }
        sendCloseNotifyOnce()
        Glibc.shutdown(fd, Int32(SHUT_WR))
    }

    private func sendCloseNotifyOnce() {
        guard state == .established, !closeNotifySent, let connection else { return }
        closeNotifySent = true
        pktt_send_close_notify(connection)
    }

    /// A bare TCP FIN: what a truncation attack looks like (RFC 9112 §9.8).
    func closeWithoutNotify() {
        lock.lock()
        closeNotifySent = true
        lock.unlock()
        close()
    }

    func close() {
        lock.lock()
        defer { lock.unlock() }
        if let connection {
            sendCloseNotifyOnce()
            pktt_conn_free(connection)
            self.connection = nil
        }
        if fd >= 0 {
            Glibc.close(fd)
            fd = -1
        }
    }

    /// TCP RST under TLS: no close_notify, `SO_LINGER` {1, 0}, close.
    func reset() {
        lock.lock()
        defer { lock.unlock() }
        if let connection {
            pktt_conn_free(connection)
            self.connection = nil
        }
        guard fd >= 0 else { return }
        Sockets.closeWithReset(fd)
        fd = -1
    }

    func interrupt() {
        lock.lock()
        defer { lock.unlock() }
        if fd >= 0 { Glibc.shutdown(fd, Int32(SHUT_RDWR)) }
    }
}
