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

extension PocketReplicaSet {
    /// A set whose replicas are the A and AAAA records of `host`: one
    /// replica per address, each sent to as `scheme://host:port` (the name
    /// kept for `Host`, TLS server name and certificate check) and
    /// connected through its address.
    ///
    /// The name is resolved with the system resolver (`getaddrinfo`, so
    /// `/etc/hosts` and nsswitch apply) from a task of the set's own, at
    /// once and then every `refresh` (30 s by default, the client's DNS
    /// cache time). `getaddrinfo` does not report the records' TTL, so the
    /// list is refreshed on this interval, not by TTL: set it to the TTL
    /// your records have. A failed resolution keeps the last list.
    public static func dns(name: String, host: String, port: UInt16, scheme: String = "http",
                           refresh: Duration = .seconds(30), balancing: PocketBalancing = .powerOfTwoChoices,
                           ejection: PocketOutlierEjection? = nil) -> PocketReplicaSet {
        let set = PocketReplicaSet(name: name, balancing: balancing, ejection: ejection)
        let interval = max(.milliseconds(10), refresh)
        set.startDiscovery { [weak set] in
            while !Task.isCancelled {
                let result = Self.resolve(host)
                guard let set else { return }
                switch result {
                case .success(let addresses):
                    set.update(addresses.map { PocketReplicaEndpoint(scheme: scheme, host: host, port: port, address: $0) })
                case .failure(let problem):
                    set.discoveryFailed(problem.message)
                }
                do { try await Task.sleep(for: interval) } catch { return }
            }
        }
        return set
    }

    /// `host`'s numeric addresses (IPv6 and IPv4, as the resolver orders
    /// them, duplicates dropped), or why there are none.
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
