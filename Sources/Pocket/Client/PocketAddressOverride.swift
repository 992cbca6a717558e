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

/// Addresses to connect to for one host and port instead of resolving the
/// host (curl's `--resolve host:port:addr[,addr]`): for a service whose name
/// does not resolve where the client runs, a canary, or a test.
///
/// ```swift
/// var config = PocketClient.Configuration()
/// config.addressOverrides = [try PocketAddressOverride("api.example.com:443:10.0.0.7,[fd00::7]")]
/// ```
///
/// The URL keeps its name for everything else: the `Host` field, TLS SNI
/// and certificate verification. Several addresses race as resolved ones do
/// (happy eyeballs, `Configuration.connectionAttemptDelay`), and connections
/// are pooled per address list.
public struct PocketAddressOverride: Sendable, Hashable {
    /// The host name it applies to (compared without case).
    public let host: String
    /// The port it applies to.
    public let port: UInt16
    /// Numeric IPv4 and IPv6 addresses (IPv6 without brackets), in order.
    public let addresses: [String]
    /// `addresses` as the engine takes them ("a,b").
    let list: String

    /// Throws `.invalidAddressOverride` for an empty host or list, more than
    /// 8 addresses, or one that is not a numeric IPv4 or IPv6 address.
    public init(host: String, port: UInt16, addresses: [String]) throws(PocketError) {
        let trimmed = addresses.map { $0.hasPrefix("[") && $0.hasSuffix("]") ? String($0.dropFirst().dropLast()) : $0 }
        guard !host.isEmpty, !trimmed.isEmpty, trimmed.count <= 8 else {
            throw PocketError(.invalidAddressOverride, "an address override needs a host and 1 to 8 addresses (\(host):\(port): \(addresses.count))")
        }
        for address in trimmed where !Self.isNumeric(address) {
            throw PocketError(.invalidAddressOverride, "'\(address)' in the override of \(host):\(port) is not a numeric IPv4 or IPv6 address")
        }
        self.host = host.lowercased()
        self.port = port
        self.addresses = trimmed
        self.list = trimmed.joined(separator: ",")
    }

    /// Parses curl's `--resolve` syntax, `host:port:addr[,addr]...` (IPv6
    /// addresses may be bracketed). Throws `.invalidAddressOverride`.
    public init(_ curl: String) throws(PocketError) {
        let parts = curl.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3, let port = UInt16(parts[1]), port > 0 else {
            throw PocketError(.invalidAddressOverride, "not host:port:address[,address]: '\(curl)'")
        }
        try self.init(host: String(parts[0]), port: port, addresses: parts[2].split(separator: ",").map(String.init))
    }

    static func isNumeric(_ address: String) -> Bool {
        var v4 = in_addr(), v6 = in6_addr()
        return inet_pton(AF_INET, address, &v4) == 1 || inet_pton(AF_INET6, address, &v6) == 1
    }

    /// The list for `host` and `port` among `overrides`, or nil. Callers
    /// skip it when there are no overrides (the common case).
    static func list(host: String, port: UInt16, in overrides: [PocketAddressOverride]) -> String? {
        let host = host.lowercased()
        return overrides.first { $0.port == port && $0.host == host }?.list
    }
}
