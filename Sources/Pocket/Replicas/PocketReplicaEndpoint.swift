#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// One replica of a `PocketReplicaSet`: where a request for the set is sent.
///
/// A request routed to it keeps its path and query and takes the replica's
/// scheme, host and port: the `Host` field, TLS server name and certificate
/// check are the replica's `host`, and its connections are pooled under that
/// origin (each replica has its own pool). With `address`, the connection
/// goes to that numeric address while `host` stays the name the server
/// knows (replicas found in DNS: one endpoint per address, the name kept).
public struct PocketReplicaEndpoint: Sendable, Hashable, CustomStringConvertible {
    /// `http` or `https`.
    public var scheme: String
    /// The host name or IP address written in the URL (and `Host`).
    public var host: String
    /// The TCP port.
    public var port: UInt16
    /// A numeric IPv4 or IPv6 address to connect to instead of resolving
    /// `host`, or nil (resolve it).
    public var address: String?

    /// A replica at `scheme://host:port`, connected through `address` when given.
    public init(scheme: String = "http", host: String, port: UInt16, address: String? = nil) {
        self.scheme = scheme.lowercased()
        self.host = host
        self.port = port
        self.address = address
    }

    /// The replica at a URL's scheme, host and port (its path is ignored).
    /// Throws `.invalidURL` for a URL without an `http`/`https` scheme or a host.
    public init(_ url: URL) throws(PocketError) {
        guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
              let host = url.host(percentEncoded: false), !host.isEmpty else {
            throw PocketError(.invalidURL, "a replica needs an http or https URL with a host: \(url.absoluteString)")
        }
        let port = url.port.flatMap { UInt16(exactly: $0) } ?? (scheme == "https" ? 443 : 80)
        self.init(scheme: scheme, host: host, port: port)
    }

    /// `scheme://host:port`, with the address in brackets after it when one is set.
    public var description: String {
        "\(origin)\(address.map { " [\($0)]" } ?? "")"
    }

    /// `scheme://host:port` (an IPv6 literal in brackets).
    var origin: String {
        let shown = host.contains(":") ? "[\(host)]" : host
        return "\(scheme)://\(shown):\(port)"
    }

    /// `request`'s URL moved to this replica: the path and query kept,
    /// scheme, host and port replaced. Nil when the result does not parse.
    func url(for target: Target) -> URL? {
        URL(string: origin + target.pathAndQuery)
    }
}
