#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
internal import CHTTPEngine

extension PocketReplicaSet {
    /// A set whose replicas are the A and AAAA records of `host`: one
    /// replica per address, each sent to as `scheme://host:port` (the name
    /// kept for `Host`, TLS server name and certificate check) and
    /// connected through its address.
    ///
    /// The name is resolved from a task of the set's own, at once and then
    /// again when its records expire: DNS is asked for the A and AAAA
    /// records (the stub resolver: the nameservers, timeout and attempts of
    /// `/etc/resolv.conf`), and the list is resolved again after the
    /// shortest TTL of the answer (CNAMEs included), at least 1 second (so
    /// a TTL of 0 does not make a busy loop) and at most `refresh` (30 s by
    /// default, the client's DNS cache time).
    ///
    /// A name DNS gives no address for (no such name, no A or AAAA record,
    /// a failing or silent nameserver) is asked of the system resolver
    /// (`getaddrinfo`, so `/etc/hosts` and nsswitch apply: `localhost`
    /// works), which reports no TTL: such a list is resolved again every
    /// `refresh`. DNS is asked first, so a name both in DNS and in
    /// `/etc/hosts` takes DNS's addresses. When both fail, the last list
    /// stays, the reason is kept for `.noReplicas`, and the name is tried
    /// again after 1 s, doubling after each failure up to `refresh`.
    ///
    /// `nameserver` asks that nameserver alone instead of
    /// `/etc/resolv.conf`'s: a numeric IPv4 or IPv6 address, as
    /// `"address"` (port 53), `"a.b.c.d:port"` or `"[v6]:port"` (e.g. a
    /// service registry's DNS interface, `"127.0.0.1:8600"`). One that is
    /// not a numeric address fails each resolution with that reason. nil
    /// (resolv.conf's nameservers) by default.
    public static func dns(name: String, host: String, port: UInt16, scheme: String = "http",
                           refresh: Duration = .seconds(30), nameserver: String? = nil,
                           balancing: PocketBalancing = .powerOfTwoChoices,
                           ejection: PocketOutlierEjection? = nil) -> PocketReplicaSet {
        let set = PocketReplicaSet(name: name, balancing: balancing, ejection: ejection)
        let ceiling = max(.milliseconds(10), refresh)
        set.startDiscovery { [weak set] in
            var failures = 0
            while !Task.isCancelled {
                let result = await Self.onThreadOfItsOwn { Self.lookUp(host, nameserver: nameserver) }
                guard let set else { return }
                let wait: Duration
                switch result {
                case .success(let found):
                    failures = 0
                    set.update(found.addresses.map { PocketReplicaEndpoint(scheme: scheme, host: host, port: port, address: $0) })
                    wait = refreshInterval(ttl: found.ttl, ceiling: ceiling)
                case .failure(let problem):
                    failures += 1
                    set.discoveryFailed(problem.message)
                    wait = retryInterval(failures: failures, ceiling: ceiling)
                }
                do { try await Task.sleep(for: wait) } catch { return }
            }
        }
        return set
    }

    /// The shortest re-resolution interval, whatever the TTL.
    static let minimumRefresh: Duration = .seconds(1)

    /// Runs `work` on a thread of its own and returns what it returns. A
    /// lookup blocks for as long as the resolver waits for its servers
    /// (seconds, with resolv.conf's timeouts and attempts): on a thread of
    /// Swift's cooperative pool, of which a 2-core machine has two, it would
    /// hold back every task meanwhile.
    static func onThreadOfItsOwn<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            let job = Unmanaged.passRetained(BlockingJob { continuation.resume(returning: work()) })
            var thread = pthread_t()
            let rc = pthread_create(&thread, nil, { raw in
                Unmanaged<BlockingJob>.fromOpaque(raw!).takeRetainedValue().run()
                return nil
            }, job.toOpaque())
            if rc == 0 {
                pthread_detach(thread)
            } else {
                // No thread to be had: the lookup runs here, as it would without this.
                job.takeRetainedValue().run()
            }
        }
    }

    /// When to resolve again after a success: the answer's shortest TTL
    /// (seconds) within [`minimumRefresh`, `ceiling`]; `ceiling` when no
    /// TTL is known (the system resolver's answer). `ceiling` wins when it
    /// is below the minimum (the caller's own choice).
    static func refreshInterval(ttl: UInt32?, ceiling: Duration) -> Duration {
        guard let ttl else { return ceiling }
        return min(max(.seconds(Int64(ttl)), minimumRefresh), ceiling)
    }

    /// When to try again after `failures` failures in a row: 1 s, doubling,
    /// at most `ceiling`.
    static func retryInterval(failures: Int, ceiling: Duration) -> Duration {
        let doublings = min(max(failures - 1, 0), 16)
        return min(minimumRefresh * (1 << doublings), ceiling)
    }

    /// `host`'s addresses and the TTL they hold for (nil: from the system
    /// resolver, which gives none), or why there are none. DNS first,
    /// the system resolver when DNS gives no address.
    static func lookUp(_ host: String, nameserver: String?) -> Result<(addresses: [String], ttl: UInt32?), PocketError> {
        var server: (address: String, port: UInt16)?
        if let nameserver {
            guard let parsed = parseNameserver(nameserver) else {
                return .failure(PocketError(.dnsFailure, "resolving \(host) failed: the nameserver '\(nameserver)' is not a numeric IPv4 or IPv6 address with an optional port (a.b.c.d:port, [v6]:port)"))
            }
            server = parsed
        }
        var answer = pk_dns_answer()
        let status = server.map { server in
            server.address.withCString { pk_dns_lookup(host, $0, server.port, 0, &answer) }
        } ?? pk_dns_lookup(host, nil, 0, 0, &answer)
        if status == PK_DNS_OK {
            var addresses: [String] = []
            var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
            for i in 0..<answer.count where pk_dns_record_text(&answer, i, &text, text.count) == 0 {
                let address = String(cString: text)
                if !addresses.contains(address) { addresses.append(address) }
            }
            return .success((addresses, answer.min_ttl == UInt32.max ? nil : answer.min_ttl))
        }
        let dnsReason = String(cString: pk_dns_status_text(status))
        switch resolve(host) {
        case .success(let addresses):
            return .success((addresses, nil))
        case .failure(let problem):
            let systemReason = problem.systemError.map { String(cString: gai_strerror(Int32($0))) } ?? "no IPv4 or IPv6 address"
            return .failure(PocketError(.dnsFailure, "resolving \(host) failed: DNS: \(dnsReason); the system resolver: \(systemReason)",
                                        systemError: problem.systemError))
        }
    }

    /// "a.b.c.d" or an IPv6 address, alone or in brackets (port 53), or
    /// "a.b.c.d:port" or "[v6]:port"; numeric addresses only.
    static func parseNameserver(_ text: String) -> (address: String, port: UInt16)? {
        var v4 = in_addr(), v6 = in6_addr()
        func port(_ digits: Substring) -> UInt16? {
            guard digits.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let port = UInt16(digits), port > 0 else { return nil }
            return port
        }
        if inet_pton(AF_INET6, text, &v6) == 1 { return (text, 53) }
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return nil }
            let address = String(text[text.index(after: text.startIndex)..<close])
            guard inet_pton(AF_INET6, address, &v6) == 1 else { return nil }
            let rest = text[text.index(after: close)...]
            if rest.isEmpty { return (address, 53) }
            guard rest.first == ":", let p = port(rest.dropFirst()) else { return nil }
            return (address, p)
        }
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count <= 2 else { return nil }
        let address = String(parts[0])
        guard inet_pton(AF_INET, address, &v4) == 1 else { return nil }
        if parts.count == 1 { return (address, 53) }
        guard let p = port(parts[1]) else { return nil }
        return (address, p)
    }

    /// `host`'s numeric addresses from the system resolver (IPv6 and IPv4,
    /// as it orders them, duplicates dropped), or why there are none.
    static func resolve(_ host: String) -> Result<[String], PocketError> {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, nil, &hints, &list)
        guard rc == 0 else {
            return .failure(PocketError(.dnsFailure, "resolving \(host) failed: \(String(cString: gai_strerror(rc)))", systemError: rc))
        }
        defer { freeaddrinfo(list) }
        var addresses: [String] = []
        var node = list
        while let info = node {
            var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
            if info.pointee.ai_family == AF_INET {
                info.pointee.ai_addr.withMemoryRebound(to: sockaddr_in.self, capacity: 1) {
                    var a = $0.pointee.sin_addr
                    _ = inet_ntop(AF_INET, &a, &text, socklen_t(text.count))
                }
            } else if info.pointee.ai_family == AF_INET6 {
                info.pointee.ai_addr.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) {
                    var a = $0.pointee.sin6_addr
                    _ = inet_ntop(AF_INET6, &a, &text, socklen_t(text.count))
                }
            }
            let address = String(cString: text)
            if !address.isEmpty, !addresses.contains(address) { addresses.append(address) }
            node = info.pointee.ai_next
        }
        return addresses.isEmpty ? .failure(PocketError(.dnsFailure, "\(host) has no IPv4 or IPv6 address")) : .success(addresses)
    }
}

/// A closure handed to a thread of its own (`PocketReplicaSet.onThreadOfItsOwn`).
private final class BlockingJob {
    let run: () -> Void
    init(_ run: @escaping () -> Void) { self.run = run }
}
