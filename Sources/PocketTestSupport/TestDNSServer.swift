#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Foundation

/// A DNS server on a loopback UDP port, for replica sets that resolve
/// their name: it answers A and AAAA queries (RFC 1035 §4.1) for the names
/// it is given, with the TTL given, from a thread of its own, and counts
/// the queries. Names and answers change at run time (`set`, `fail`). A
/// name it does not know gets NXDOMAIN. Queries are read up to 512 bytes
/// (a UDP query without EDNS); answers carry no authority or additional
/// section. Its thread holds it until `shutdown()`.
public final class TestDNSServer: @unchecked Sendable {
    // Invariant: `records`, `failures`, `counts` and `stopped` are read and
    // written only with `lock` held; `fd` and `port` are set once in init.
    private let lock = NSLock()
    private var records: [String: (a: [[UInt8]], aaaa: [[UInt8]], ttl: UInt32)] = [:]
    private var failures: [String: UInt8] = [:]
    private var counts: [String: Int] = [:]
    private var stopped = false
    private let fd: Int32
    private var thread: JoinableThread?

    /// The UDP port on `address`.
    public let port: Int
    /// The loopback address it listens on: `127.0.0.1`, or `::1`.
    public let address: String
    /// `address` and `port` as a replica set's `nameserver` takes them.
    public var nameserver: String { address.contains(":") ? "[\(address)]:\(port)" : "\(address):\(port)" }

    /// A server on 127.0.0.1, or on ::1 with `ipv6`.
    public init(ipv6: Bool = false) throws {
        let fd = socket(ipv6 ? AF_INET6 : AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { throw SocketError("socket", code: errno) }
        let bound: Int32
        if ipv6 {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_addr = in6addr_loopback
            bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
            }
        } else {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        }
        self.address = ipv6 ? "::1" : "127.0.0.1"
        guard bound == 0 else {
            let code = errno
            close(fd)
            throw SocketError("bind", code: code)
        }
        self.fd = fd
        do { port = try Sockets.localPort(of: fd) } catch {
            close(fd)
            throw error
        }
        thread = try JoinableThread { [self] in serve() }
    }

    /// Answers `name` with these addresses (numeric IPv4 for A, IPv6 for
    /// AAAA) and TTL from now on; a type without addresses gets NOERROR
    /// with no answer (the name exists, RFC 2308 NODATA).
    public func set(_ name: String, a: [String] = [], aaaa: [String] = [], ttl: UInt32) {
        let v4 = a.map { text -> [UInt8] in
            var raw = in_addr()
            precondition(inet_pton(AF_INET, text, &raw) == 1, "not an IPv4 address: \(text)")
            return withUnsafeBytes(of: &raw) { Array($0) }
        }
        let v6 = aaaa.map { text -> [UInt8] in
            var raw = in6_addr()
            precondition(inet_pton(AF_INET6, text, &raw) == 1, "not an IPv6 address: \(text)")
            return withUnsafeBytes(of: &raw) { Array($0) }
        }
        lock.withLock {
            records[Self.key(name)] = (v4, v6, ttl)
            failures[Self.key(name)] = nil
        }
    }

    /// Answers every query for `name` with this RCODE from now on (2
    /// SERVFAIL, 3 NXDOMAIN, 5 REFUSED).
    public func fail(_ name: String, rcode: UInt8) {
        lock.withLock { failures[Self.key(name)] = rcode }
    }

    /// How many queries (of any type) asked for `name` so far.
    public func queries(_ name: String) -> Int {
        lock.withLock { counts[Self.key(name)] ?? 0 }
    }

    /// Stops answering and closes the socket (idempotent).
    public func shutdown() {
        let first = lock.withLock { () -> Bool in
            defer { stopped = true }
            return !stopped
        }
        guard first else { return }
        _ = thread?.join(timeoutMilliseconds: 2000)
        close(fd)
    }

    private static func key(_ name: String) -> String {
        var key = name.lowercased()
        if key.hasSuffix(".") { key.removeLast() }
        return key
    }

    private func serve() {
        var buffer = [UInt8](repeating: 0, count: 512)
        while !lock.withLock({ stopped }) {
            guard Sockets.poll(fd, events: Int32(POLLIN), timeoutMilliseconds: 20) > 0 else { continue }
            var peer = sockaddr_storage()
            var peerLength = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let n = withUnsafeMutablePointer(to: &peer) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(fd, &buffer, buffer.count, 0, $0, &peerLength) }
            }
            guard n > 0, let reply = answer(Array(buffer[0..<n])) else { continue }
            _ = withUnsafePointer(to: &peer) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(fd, reply, reply.count, 0, $0, peerLength) }
            }
        }
    }

    /// The response to `query`, or nil for one that is not a query of one question.
    private func answer(_ query: [UInt8]) -> [UInt8]? {
        guard query.count >= 12, query[2] & 0x80 == 0, query[4] == 0, query[5] == 1 else { return nil }
        var at = 12
        var labels: [String] = []
        while at < query.count, query[at] != 0 {
            let length = Int(query[at])
            guard length < 64, at + 1 + length <= query.count else { return nil }
            labels.append(String(decoding: query[(at + 1)..<(at + 1 + length)], as: UTF8.self))
            at += 1 + length
        }
        guard at + 5 <= query.count else { return nil }
        let questionEnd = at + 5
        let type = UInt16(query[at + 1]) << 8 | UInt16(query[at + 2])
        let name = Self.key(labels.joined(separator: "."))
        let (entry, failure) = lock.withLock { () -> ((a: [[UInt8]], aaaa: [[UInt8]], ttl: UInt32)?, UInt8?) in
            counts[name, default: 0] += 1
            return (records[name], failures[name])
        }
        let rcode: UInt8 = failure ?? (entry == nil ? 3 : 0)
        let addresses = rcode != 0 ? [] : type == 1 ? entry!.a : type == 28 ? entry!.aaaa : []
        // ID, QR + the query's opcode and RD + RA, RCODE; one question, the answers.
        var reply: [UInt8] = [query[0], query[1], 0x80 | (query[2] & 0x79), 0x80 | rcode, 0, 1,
                              UInt8(addresses.count >> 8), UInt8(addresses.count & 0xFF), 0, 0, 0, 0]
        reply += query[12..<questionEnd]
        let ttl = entry?.ttl ?? 0
        for address in addresses {
            reply += [0xC0, 0x0C, UInt8(type >> 8), UInt8(type & 0xFF), 0, 1,
                      UInt8(ttl >> 24), UInt8(ttl >> 16 & 0xFF), UInt8(ttl >> 8 & 0xFF), UInt8(ttl & 0xFF),
                      0, UInt8(address.count)]
            reply += address
        }
        return reply
    }
}
