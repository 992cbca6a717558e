/// TLS settings of a client. Verification is on by default against the
/// system trust store; every relaxation is explicit.
public struct PocketTLSConfiguration: Sendable, Hashable, Codable {
    /// A PEM file of trusted CA certificates, replacing the system store. Default nil.
    public var caFile: String?
    /// A hashed directory of CA certificates (`c_rehash`), replacing the system store. Default nil.
    public var caDirectory: String?
    /// The client certificate chain (PEM) for mutual TLS. Default nil.
    public var certificateChainFile: String?
    /// The client certificate's private key (PEM); nil: it is in `certificateChainFile`.
    public var privateKeyFile: String?
    /// SHA-256 pins of the server's public key, as curl writes them:
    /// `"sha256//<base64>"` (several allowed; one must match). Default none.
    public var pinnedPublicKeys: [String] = []
    /// The lowest protocol accepted: TLS 1.2 by default (TLS 1.0/1.1 are
    /// deprecated by RFC 8996).
    public var minimumVersion: Version = .tls12
    /// OpenSSL cipher list for TLS 1.2 (`"ECDHE+AESGCM"`); nil: OpenSSL's defaults.
    public var ciphers: String?
    /// Turns every certificate check off. For development against servers
    /// with throwaway certificates only: anyone on the path can read and
    /// change the traffic. Logs a warning once per process. Default false.
    public var insecureSkipVerification = false

    public enum Version: Sendable, Hashable, Codable {
        case tls12, tls13
    }

    public init() {}
}
