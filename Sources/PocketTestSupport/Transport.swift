#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Foundation

/// Outcome of one bounded receive.
enum ReceiveResult {
    /// Some bytes arrived (never empty).
    case data([UInt8])
    /// Nothing arrived within the timeout; the connection is still open.
    case timedOut
    /// The peer closed its side (or the transport was interrupted).
    case closed
    /// The connection failed (e.g. `ECONNRESET`).
    case failed(Int32)
}

/// The byte stream under one server connection. Today only plain TCP; a TLS
/// transport can be added later by implementing this protocol (its `receive`
/// returns decrypted bytes, `hasPendingInput` also counts buffered records).
///
/// Threading: one connection thread calls everything except `interrupt()` and
/// `hasPendingInput`, which other threads may call at any time.
protocol Transport: AnyObject, Sendable {
    /// Waits up to `timeoutMilliseconds` for bytes and returns at most `maxCount`.
    func receive(maxCount: Int, timeoutMilliseconds: Int) -> ReceiveResult
    /// Waits up to `timeoutMilliseconds` until the transport is readable
    /// (data, EOF or error) without consuming anything. Returns true if so.
    func waitReadable(timeoutMilliseconds: Int) -> Bool
    /// Waits up to `timeoutMilliseconds` without reading; returns true if the
    /// peer closed or reset the connection meanwhile (or it was interrupted).
    func waitForPeerClose(timeoutMilliseconds: Int) -> Bool
    /// Sends some of `bytes`, waiting up to `timeoutMilliseconds` for room.
    /// Returns the number sent (0 on timeout) or nil if the connection failed.
    func send(_ bytes: ArraySlice<UInt8>, timeoutMilliseconds: Int) -> Int?
    /// True if bytes have arrived that were not received yet.
    var hasPendingInput: Bool { get }
    /// Holds back partial segments (`TCP_CORK`) until uncorked, when what
    /// was written meanwhile leaves together.
    func cork(_ on: Bool)
    /// Over TLS 1.2 or older: sends a HelloRequest (the server asks to
    /// renegotiate) without waiting for the answer. False over plain TCP or
    /// TLS 1.3, or if it could not be sent.
    func requestRenegotiation() -> Bool
    /// Over TLS, between records: flips one bit of the next record the
    /// client sends as it is read, so OpenSSL fails to decrypt it, answers
    /// with a fatal `bad_record_mac` alert and the connection ends at that
    /// read. False over plain TCP, or if OpenSSL still holds unread bytes.
    func corruptNextRecord() -> Bool
    /// Half-closes: sends FIN, keeps reading possible.
    func shutdownWrite()
    /// Closes the connection (idempotent).
    func close()
    /// Closes without the TLS close_notify (a bare FIN); plain TCP: `close()`.
    func closeWithoutNotify()
    /// Aborts the connection with a TCP RST (`SO_LINGER` {1, 0}, then close).
    func reset()
    /// Wakes the connection thread from any wait by shutting the socket down
    /// in both directions (the peer sees FIN). Safe from any thread.
    func interrupt()
}

/// Plain TCP over a blocking socket; every wait is a bounded `poll`.
final class PlainTransport: Transport, @unchecked Sendable {
    // Invariant: `fd` is written only by the owning connection thread (in
    // `close`/`reset`) and only while holding `lock`; other threads read it
    // only while holding `lock`, so they never act on a closed/reused number.
    private let lock = NSLock()
    private var fd: Int32

    init(fd: Int32) {
        self.fd = fd
    }

    deinit {
        if fd >= 0 { Glibc.close(fd) }
    }

    func waitReadable(timeoutMilliseconds: Int) -> Bool {
        let fd = self.fd
        guard fd >= 0 else { return true }
        return Sockets.poll(fd, events: Int32(POLLIN), timeoutMilliseconds: timeoutMilliseconds) != 0
    }

    func waitForPeerClose(timeoutMilliseconds: Int) -> Bool {
        let fd = self.fd
        guard fd >= 0 else { return true }
        // POLLRDHUP (0x2000, a GNU extension Swift does not import) reports the
        // peer's FIN without consuming data; POLLHUP/POLLERR are always reported.
        let rdhup: Int32 = 0x2000
        let events = Sockets.poll(fd, events: rdhup, timeoutMilliseconds: timeoutMilliseconds)
        return events & (rdhup | Int32(POLLHUP) | Int32(POLLERR)) != 0
    }

    func receive(maxCount: Int, timeoutMilliseconds: Int) -> ReceiveResult {
        let fd = self.fd
        guard fd >= 0 else { return .closed }
        if Sockets.poll(fd, events: Int32(POLLIN), timeoutMilliseconds: timeoutMilliseconds) == 0 {
            return .timedOut
        }
        var buffer = [UInt8](repeating: 0, count: maxCount)
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, maxCount, Int32(MSG_DONTWAIT)) }
        if n > 0 { return .data(Array(buffer[0..<n])) }
        if n == 0 { return .closed }
        let err = errno
        if err == EAGAIN || err == EWOULDBLOCK || err == EINTR { return .timedOut }
        return .failed(err)
    }

    func send(_ bytes: ArraySlice<UInt8>, timeoutMilliseconds: Int) -> Int? {
        let fd = self.fd
        guard fd >= 0 else { return nil }
        if bytes.isEmpty { return 0 }
        let ready = Sockets.poll(fd, events: Int32(POLLOUT), timeoutMilliseconds: timeoutMilliseconds)
        if ready == 0 { return 0 }
        let n = bytes.withUnsafeBytes {
            Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
        }
        if n >= 0 { return n }
        let err = errno
        if err == EAGAIN || err == EWOULDBLOCK || err == EINTR { return 0 }
        return nil
    }

    var hasPendingInput: Bool {
        lock.lock()
        defer { lock.unlock() }
        guard fd >= 0 else { return false }
        var count: Int32 = 0
        return ioctl(fd, UInt(FIONREAD), &count) == 0 && count > 0
    }

    func shutdownWrite() {
        let fd = self.fd
        if fd >= 0 { Glibc.shutdown(fd, Int32(SHUT_WR)) }
    }

    func cork(_ on: Bool) { Sockets.setCork(fd, on) }

    func requestRenegotiation() -> Bool { false }

    func corruptNextRecord() -> Bool { false }

    func closeWithoutNotify() { close() }

    func close() {
        lock.lock()
        defer { lock.unlock() }
        if fd >= 0 {
            Glibc.close(fd)
            fd = -1
        }
    }

    func reset() {
        lock.lock()
        defer { lock.unlock() }
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
