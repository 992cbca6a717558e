import Foundation

/// Throwaway PKI for TLS tests, generated once per test process with the
/// `openssl` CLI into a fresh temporary directory (nothing is committed).
/// All keys are EC P-256; all files are PEM.
///
/// - `caCert`: the test CA (self-signed, `CA:true`); trust only this.
/// - `serverCert`/`serverKey`: `localhost`, SANs `DNS:localhost, IP:127.0.0.1,
///   IP:::1`, signed by the CA, valid now.
/// - `expiredCert`/`expiredKey`: same SANs, signed by the CA, valid only
///   2020-01-01 to 2020-01-02.
/// - `wrongHostCert`/`wrongHostKey`: `DNS:other.example` only, signed by the CA.
/// - `selfSignedCert`/`selfSignedKey`: `localhost` SANs, self-signed (not the CA).
/// - `clientCert`/`clientKey`: `CN=pocket-client`, `extendedKeyUsage=clientAuth`,
///   signed by the CA.
///
/// ```swift
/// let certificates = try TestCertificates.shared
/// let server = try TestServer(tls: .init(certificateFile: certificates.serverCert,
///                                        keyFile: certificates.serverKey))
/// ```
public final class TestCertificates: Sendable {
    /// The directory holding every file.
    public let directory: URL
    public let caCert: String
    public let caKey: String
    public let serverCert: String
    public let serverKey: String
    public let expiredCert: String
    public let expiredKey: String
    public let wrongHostCert: String
    public let wrongHostKey: String
    public let selfSignedCert: String
    public let selfSignedKey: String
    public let clientCert: String
    public let clientKey: String

    /// An `openssl` invocation that failed.
    public struct GenerationError: Error, CustomStringConvertible {
        public var description: String
    }

    private static let lock = NSLock()
    nonisolated(unsafe) private static var cached: Result<TestCertificates, Error>?

    /// The process-wide set, generated on first use (thread-safe; a failure
    /// is remembered and rethrown).
    public static var shared: TestCertificates {
        get throws {
            try lock.withLock {
                if let cached { return try cached.get() }
                let result = Result { try TestCertificates() }
                cached = result
                return try result.get()
            }
        }
    }

    /// The `openssl` executable used.
    public static var opensslPath: String? {
        let candidates = ["/usr/bin/openssl", "/usr/local/bin/openssl"]
            + (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map { "\($0)/openssl" }
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Generates a fresh set into a new temporary directory (prefer `shared`).
    public init() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pocket-certs-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        self.directory = directory
        func path(_ name: String) -> String { directory.appendingPathComponent(name).path }
        caCert = path("ca.pem"); caKey = path("ca.key")
        serverCert = path("server.pem"); serverKey = path("server.key")
        expiredCert = path("expired.pem"); expiredKey = path("expired.key")
        wrongHostCert = path("wronghost.pem"); wrongHostKey = path("wronghost.key")
        selfSignedCert = path("selfsigned.pem"); selfSignedKey = path("selfsigned.key")
        clientCert = path("client.pem"); clientKey = path("client.key")
        try generate()
    }

    private static let localhostSANs = "DNS:localhost,IP:127.0.0.1,IP:::1"

    private func generate() throws {
        let d = directory.path
        // Extension sections for every certificate, and a minimal `openssl ca`
        // setup (for the expired certificate's explicit dates).
        let config = """
        [ req ]
        distinguished_name = dn
        prompt = no
        [ dn ]
        CN = unused
        [ ca_ext ]
        basicConstraints = critical, CA:true
        keyUsage = critical, keyCertSign, cRLSign
        subjectKeyIdentifier = hash
        [ server_ext ]
        basicConstraints = critical, CA:false
        keyUsage = critical, digitalSignature
        extendedKeyUsage = serverAuth
        subjectAltName = \(Self.localhostSANs)
        subjectKeyIdentifier = hash
        authorityKeyIdentifier = keyid
        [ self_ext ]
        basicConstraints = critical, CA:false
        keyUsage = critical, digitalSignature
        extendedKeyUsage = serverAuth
        subjectAltName = \(Self.localhostSANs)
        [ wronghost_ext ]
        basicConstraints = critical, CA:false
        keyUsage = critical, digitalSignature
        extendedKeyUsage = serverAuth
        subjectAltName = DNS:other.example
        authorityKeyIdentifier = keyid
        [ client_ext ]
        basicConstraints = critical, CA:false
        keyUsage = critical, digitalSignature
        extendedKeyUsage = clientAuth
        authorityKeyIdentifier = keyid
        [ ca ]
        default_ca = test_ca
        [ test_ca ]
        database = \(d)/index.txt
        new_certs_dir = \(d)/issued
        serial = \(d)/serial
        certificate = \(caCert)
        private_key = \(caKey)
        default_md = sha256
        policy = any_policy
        unique_subject = no
        copy_extensions = none
        [ any_policy ]
        commonName = supplied

        """
        let configPath = directory.appendingPathComponent("openssl.cnf").path
        try config.write(toFile: configPath, atomically: true, encoding: .utf8)
        try Data().write(to: directory.appendingPathComponent("index.txt"))
        try "1000\n".write(toFile: "\(d)/serial", atomically: true, encoding: .utf8)
        try FileManager.default.createDirectory(atPath: "\(d)/issued", withIntermediateDirectories: true)

        func key(_ path: String) throws {
            try run(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", path])
        }
        func csr(key: String, subject: String, out: String) throws {
            try run(["req", "-new", "-config", configPath, "-key", key, "-subj", subject, "-out", out])
        }
        func sign(csr: String, extensions: String, out: String) throws {
            try run(["x509", "-req", "-in", csr, "-CA", caCert, "-CAkey", caKey, "-set_serial", "0x\(randomSerial())",
                     "-days", "3650", "-sha256", "-extfile", configPath, "-extensions", extensions, "-out", out])
        }

        // CA.
        try key(caKey)
        try run(["req", "-new", "-x509", "-config", configPath, "-key", caKey, "-subj", "/CN=Pocket Test CA",
                 "-days", "3650", "-sha256", "-extensions", "ca_ext", "-out", caCert])
        // Server (localhost).
        try key(serverKey)
        try csr(key: serverKey, subject: "/CN=localhost", out: "\(d)/server.csr")
        try sign(csr: "\(d)/server.csr", extensions: "server_ext", out: serverCert)
        // Expired (explicit past dates need `openssl ca`).
        try key(expiredKey)
        try csr(key: expiredKey, subject: "/CN=localhost", out: "\(d)/expired.csr")
        try run(["ca", "-batch", "-config", configPath, "-notext", "-startdate", "20200101000000Z",
                 "-enddate", "20200102000000Z", "-extensions", "server_ext", "-extfile", configPath,
                 "-in", "\(d)/expired.csr", "-out", expiredCert])
        // Another host.
        try key(wrongHostKey)
        try csr(key: wrongHostKey, subject: "/CN=other.example", out: "\(d)/wronghost.csr")
        try sign(csr: "\(d)/wronghost.csr", extensions: "wronghost_ext", out: wrongHostCert)
        // Self-signed localhost.
        try key(selfSignedKey)
        try run(["req", "-new", "-x509", "-config", configPath, "-key", selfSignedKey, "-subj", "/CN=localhost",
                 "-days", "3650", "-sha256", "-extensions", "self_ext", "-out", selfSignedCert])
        // Client.
        try key(clientKey)
        try csr(key: clientKey, subject: "/CN=pocket-client", out: "\(d)/client.csr")
        try sign(csr: "\(d)/client.csr", extensions: "client_ext", out: clientCert)
    }

    private func randomSerial() -> String {
        (0..<8).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
    }

    @discardableResult
    private func run(_ arguments: [String], input: Data? = nil) throws -> Data {
        try Self.openssl(arguments, input: input)
    }

    /// Runs `openssl ARGUMENTS` (stdin from `input`); returns stdout or throws
    /// with stderr on a non-zero exit.
    @discardableResult
    static func openssl(_ arguments: [String], input: Data? = nil) throws -> Data {
        guard let executable = opensslPath else {
            throw GenerationError(description: "the openssl CLI is not installed")
        }
        // A clean signal mask, output through files (ChildProcess.run).
        let (result, timedOut) = try ChildProcess.run(executable, arguments, input: input, timeout: 60)
        guard result.status == 0, !timedOut else {
            throw GenerationError(description: "openssl \(arguments.joined(separator: " ")) "
                + (timedOut ? "timed out" : "exited with \(result.status)") + ": \(result.stderrText)")
        }
        return result.stdout
    }

    /// A new directory under this one holding a copy of each of `certificates`
    /// and the hash links `openssl rehash` makes for them: a CA directory
    /// OpenSSL searches by subject hash (SSL_CERT_DIR, `--capath`).
    public func hashedDirectory(of certificates: [String]) throws -> String {
        let hashed = directory.appendingPathComponent("hashed-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: hashed, withIntermediateDirectories: false)
        for (i, certificate) in certificates.enumerated() {
            try FileManager.default.copyItem(atPath: certificate,
                                             toPath: hashed.appendingPathComponent("ca-\(i).pem").path)
        }
        try Self.openssl(["rehash", hashed.path])
        return hashed.path
    }

    /// The base64 SHA-256 of `certificate`'s DER SubjectPublicKeyInfo: the
    /// pin curl takes as `--pinnedpubkey sha256//PIN`.
    public static func spkiSHA256Base64(ofCertificate certificate: String) throws -> String {
        let publicKey = try openssl(["x509", "-in", certificate, "-pubkey", "-noout"])
        let der = try openssl(["pkey", "-pubin", "-outform", "der"], input: publicKey)
        let digest = try openssl(["dgst", "-sha256", "-binary"], input: der)
        guard digest.count == 32 else {
            throw GenerationError(description: "unexpected SHA-256 length \(digest.count)")
        }
        return digest.base64EncodedString()
    }

    /// Instance spelling of `TestCertificates.spkiSHA256Base64(ofCertificate:)`.
    public func spkiSHA256Base64(ofCertificate certificate: String) throws -> String {
        try Self.spkiSHA256Base64(ofCertificate: certificate)
    }
}
