import Foundation

extension NginxFixture {
    /// TLS mode of the nginx fixture: `listen 127.0.0.1:PORT ssl;` with the
    /// same locations, `ssl_session_cache shared:SSL:1m; ssl_session_tickets on;`
    /// (clients can resume), and optionally client-certificate verification.
    ///
    /// ```swift
    /// let nginx = try NginxFixture(tls: .localhost())
    /// // GET https://localhost:\(nginx.port)/small, trusting TestCertificates.shared.caCert
    /// ```
    public struct TLSOptions: Sendable {
        /// PEM certificate (chain) nginx presents.
        public var certificateFile: String
        /// PEM private key of `certificateFile`.
        public var keyFile: String
        /// PEM CA for client certificates; with it nginx runs
        /// `ssl_verify_client on` (connections without a valid client
        /// certificate get nginx's 400 "No required SSL certificate was sent").
        public var clientCAFile: String?
        /// `ssl_protocols` (default TLS 1.2 and 1.3).
        public var protocols: [String]

        public init(certificateFile: String, keyFile: String, clientCAFile: String? = nil,
                    protocols: [String] = ["TLSv1.2", "TLSv1.3"]) {
            self.certificateFile = certificateFile
            self.keyFile = keyFile
            self.clientCAFile = clientCAFile
            self.protocols = protocols
        }

        /// The CA-signed `localhost` certificate of `TestCertificates.shared`;
        /// `mutualTLS` also requires a client certificate signed by the test CA.
        public static func localhost(mutualTLS: Bool = false) throws -> TLSOptions {
            let certificates = try TestCertificates.shared
            return TLSOptions(certificateFile: certificates.serverCert, keyFile: certificates.serverKey,
                              clientCAFile: mutualTLS ? certificates.caCert : nil)
        }
    }

    /// `https://HOST:PORT` + `path` for another host name (e.g. `"localhost"`,
    /// the name the test certificates are issued for).
    public func url(host: String, path: String) -> String {
        "\(tls == nil ? "http" : "https")://\(host):\(port)\(path)"
    }

    static func tlsDirectives(_ tls: TLSOptions) -> String {
        var lines = [
            "ssl_certificate \(tls.certificateFile);",
            "ssl_certificate_key \(tls.keyFile);",
            "ssl_protocols \(tls.protocols.joined(separator: " "));",
            "ssl_session_cache shared:SSL:1m;",
            "ssl_session_tickets on;",
        ]
        if let ca = tls.clientCAFile {
            lines += ["ssl_verify_client on;", "ssl_client_certificate \(ca);"]
        }
        return lines.joined(separator: "\n            ")
    }
}
