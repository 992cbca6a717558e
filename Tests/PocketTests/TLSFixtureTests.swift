import Foundation
import PocketTestSupport
import XCTest

/// Tests of the TLS test fixtures (generated certificates, `TestServer` with
/// TLS, nginx with TLS) using the `curl` and `openssl` CLIs as clients, so
/// fixture bugs are never mistaken for Pocket bugs.
final class TLSFixtureTests: XCTestCase {
    private var certificates: TestCertificates!

    override func setUpWithError() throws {
        try requireTool(FileManager.default.isExecutableFile(atPath: "/usr/bin/curl"), "curl is not installed (scripts/setup.sh installs it)")
        try requireTool(TestCertificates.opensslPath != nil, "the openssl CLI is not installed (scripts/setup.sh installs it)")
        certificates = try TestCertificates.shared
    }

    // MARK: Certificates

    func testGeneratedCertificatesVerifyAsDesigned() throws {
        let ca = certificates.caCert
        XCTAssertEqual(try openssl(["verify", "-CAfile", ca, certificates.serverCert]).status, 0)
        XCTAssertEqual(try openssl(["verify", "-CAfile", ca, certificates.wrongHostCert]).status, 0)
        XCTAssertEqual(try openssl(["verify", "-CAfile", ca, "-purpose", "sslclient", certificates.clientCert]).status, 0)
        let expired = try openssl(["verify", "-CAfile", ca, certificates.expiredCert])
        XCTAssertNotEqual(expired.status, 0)
        XCTAssertTrue(expired.output.contains("certificate has expired"), expired.output)
        XCTAssertNotEqual(try openssl(["verify", "-CAfile", ca, certificates.selfSignedCert]).status, 0)

        let server = try openssl(["x509", "-in", certificates.serverCert, "-noout", "-ext", "subjectAltName"]).output
        XCTAssertTrue(server.contains("DNS:localhost, IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1"), server)
        let other = try openssl(["x509", "-in", certificates.wrongHostCert, "-noout", "-ext", "subjectAltName"]).output
        XCTAssertTrue(other.contains("DNS:other.example"), other)
        let client = try openssl(["x509", "-in", certificates.clientCert, "-noout", "-subject", "-ext", "extendedKeyUsage"]).output
        XCTAssertTrue(client.contains("CN = pocket-client"), client)
        XCTAssertTrue(client.contains("TLS Web Client Authentication"), client)
        let caText = try openssl(["x509", "-in", ca, "-noout", "-ext", "basicConstraints"]).output
        XCTAssertTrue(caText.contains("CA:TRUE"), caText)
        XCTAssertTrue(try TestCertificates.shared === certificates, "shared is generated once")
    }

    // MARK: TestServer over TLS

    func testTestServerServesHTTPSToCurl() throws {
        let server = try TestServer(tls: .localhost())
        defer { server.shutdown() }
        server.route("/hello") { _ in .text("hello over tls") }
        XCTAssertTrue(server.baseURL.hasPrefix("https://127.0.0.1:"))

        for url in [server.url(host: "localhost", path: "/hello"), server.url("/hello")] {
            let result = try curl(["--cacert", certificates.caCert, url])
            XCTAssertEqual(result.status, 0, result.error)
            XCTAssertEqual(result.output, "hello over tls")
        }
        XCTAssertEqual(server.tlsHandshakes, 2)
        XCTAssertEqual(server.resumedHandshakes, 0, "separate curl processes share no session")
        XCTAssertEqual(server.requestCount, 2)
        XCTAssertEqual(server.failedTLSHandshakes, [])
    }

    func testKeepAliveResumptionLargeBodyAndResetOverTLS() throws {
        let server = try TestServer(tls: .localhost())
        defer { server.shutdown() }
        let large = (0..<(3 * 1024 * 1024 + 17)).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 12) }
        server.route("/a") { _ in .text("A") }
        server.route("/large") { _ in .response(body: large) }
        server.route("/reset") { _ in .reset }

        // Two requests on one kept-alive TLS connection.
        var result = try curl(["--cacert", certificates.caCert, server.url(host: "localhost", path: "/a"),
                               server.url(host: "localhost", path: "/a")])
        XCTAssertEqual(result.status, 0, result.error)
        XCTAssertEqual(result.output, "AA")
        XCTAssertEqual(server.acceptedConnections, 1)
        XCTAssertEqual(server.requestCount, 2)

        // Two connections in one curl process: the second resumes the session.
        server.resetStatistics()
        result = try curl(["--cacert", certificates.caCert, "-H", "Connection: close",
                           server.url(host: "localhost", path: "/a"), server.url(host: "localhost", path: "/a")])
        XCTAssertEqual(result.status, 0, result.error)
        XCTAssertEqual(server.acceptedConnections, 2)
        XCTAssertEqual(server.tlsHandshakes, 2)
        XCTAssertEqual(server.resumedHandshakes, 1, "\(server.tlsHandshakeDetails)")

        // A large body arrives intact (partial TLS writes).
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("pocket-tls-large-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: file) }
        result = try curl(["--cacert", certificates.caCert, "-o", file.path, server.url(host: "localhost", path: "/large")])
        XCTAssertEqual(result.status, 0, result.error)
        XCTAssertTrue(try Data(contentsOf: file) == Data(large))

        // A scripted reset reaches the client as a TCP reset (curl 56: recv failure).
        result = try curl(["--cacert", certificates.caCert, server.url(host: "localhost", path: "/reset")])
        XCTAssertEqual(result.status, 56, result.error)
        XCTAssertTrue(result.error.contains("reset by peer"), result.error)
    }

    func testIdleTLSConnectionIsClosedByCloseIdleConnections() throws {
        let server = try TestServer(tls: .localhost())
        defer { server.shutdown() }
        // s_client stays connected while its stdin is open, and exits when the server closes.
        let stdin = Pipe()
        let process = try ChildProcess(try XCTUnwrap(TestCertificates.opensslPath),
                                       ["s_client", "-quiet", "-connect", "127.0.0.1:\(server.port)", "-CAfile", certificates.caCert],
                                       stdin: .descriptor(stdin.fileHandleForReading.fileDescriptor))
        try? stdin.fileHandleForReading.close() // the child has its copy
        defer {
            try? stdin.fileHandleForWriting.close()
            process.terminate()
        }
        XCTAssertTrue(server.waitUntil(timeout: 5) { $0.tlsHandshakes == 1 })
        XCTAssertEqual(server.openConnections, 1)
        XCTAssertEqual(server.closeIdleConnections(), 1)
        XCTAssertEqual(server.openConnections, 0)
        let deadline = Date(timeIntervalSinceNow: 5)
        while process.isRunning && Date() < deadline { usleep(10_000) }
        XCTAssertFalse(process.isRunning, "s_client saw the server close")
    }

    func testCurlRejectsSelfSignedExpiredAndWrongHostServers() throws {
        let cases: [(String, String, String)] = [
            ("self-signed", certificates.selfSignedCert, certificates.selfSignedKey),
            ("expired", certificates.expiredCert, certificates.expiredKey),
            ("wrong host", certificates.wrongHostCert, certificates.wrongHostKey),
        ]
        for (name, cert, key) in cases {
            let server = try TestServer(tls: .init(certificateFile: cert, keyFile: key))
            defer { server.shutdown() }
            server.route("/x") { _ in .text("x") }
            let result = try curl(["--cacert", certificates.caCert, server.url(host: "localhost", path: "/x")])
            XCTAssertEqual(result.status, 60, "\(name): \(result.error)")
            XCTAssertEqual(server.requestCount, 0, name)
            if name != "wrong host" { // curl checks the host name after its handshake completed
                XCTAssertTrue(server.waitUntil { $0.failedTLSHandshakes.count == 1 }, "\(name): \(server.failedTLSHandshakes)")
            }
        }
        // The same wrong-host certificate is fine for the name it was issued to.
        let server = try TestServer(tls: .init(certificateFile: certificates.wrongHostCert, keyFile: certificates.wrongHostKey))
        defer { server.shutdown() }
        server.route("/x") { _ in .text("x") }
        let result = try curl(["--cacert", certificates.caCert, "--resolve", "other.example:\(server.port):127.0.0.1",
                               "https://other.example:\(server.port)/x"])
        XCTAssertEqual(result.status, 0, result.error)
    }

    func testMutualTLSRequiresTheClientCertificate() throws {
        let server = try TestServer(tls: .mutualTLS())
        defer { server.shutdown() }
        server.route("/x") { _ in .text("x") }
        let url = server.url(host: "localhost", path: "/x")

        let without = try curl(["--cacert", certificates.caCert, url])
        XCTAssertNotEqual(without.status, 0, "no client certificate must fail")
        XCTAssertTrue([35, 55, 56].contains(without.status), "\(without.status): \(without.error)")
        XCTAssertEqual(server.requestCount, 0)
        XCTAssertTrue(server.waitUntil { !$0.failedTLSHandshakes.isEmpty })

        let with = try curl(["--cacert", certificates.caCert, "--cert", certificates.clientCert, "--key", certificates.clientKey, url])
        XCTAssertEqual(with.status, 0, with.error)
        XCTAssertEqual(with.output, "x")
        XCTAssertEqual(server.tlsHandshakeDetails.last?.clientCertificateVerified, true)

        // A client certificate from outside the CA is rejected too.
        let foreign = try curl(["--cacert", certificates.caCert, "--cert", certificates.selfSignedCert,
                                "--key", certificates.selfSignedKey, url])
        XCTAssertNotEqual(foreign.status, 0)
        XCTAssertEqual(server.requestCount, 1)
    }

    func testPinnedPublicKeyMatchesCurl() throws {
        let server = try TestServer(tls: .localhost())
        defer { server.shutdown() }
        server.route("/x") { _ in .text("x") }
        let pin = try TestCertificates.spkiSHA256Base64(ofCertificate: certificates.serverCert)
        XCTAssertEqual(Data(base64Encoded: pin)?.count, 32)
        let url = server.url(host: "localhost", path: "/x")

        let good = try curl(["--cacert", certificates.caCert, "--pinnedpubkey", "sha256//\(pin)", url])
        XCTAssertEqual(good.status, 0, good.error)
        let otherPin = try TestCertificates.spkiSHA256Base64(ofCertificate: certificates.selfSignedCert)
        XCTAssertNotEqual(otherPin, pin)
        let bad = try curl(["--cacert", certificates.caCert, "--pinnedpubkey", "sha256//\(otherPin)", url])
        XCTAssertEqual(bad.status, 90, bad.error)
    }

    func testALPNSelectionIsVisible() throws {
        let http11 = try TestServer(tls: .localhost(alpn: ["http/1.1"]))
        defer { http11.shutdown() }
        http11.route("/x") { _ in .text("x") }
        let verbose = try curl(["-v", "--http1.1", "--cacert", certificates.caCert, http11.url(host: "localhost", path: "/x")])
        XCTAssertEqual(verbose.status, 0, verbose.error)
        XCTAssertTrue(verbose.error.contains("ALPN: server accepted http/1.1"), verbose.error)
        XCTAssertEqual(http11.tlsHandshakeDetails.first?.alpn, "http/1.1")

        // Forced to h2: a client offering h2 gets it; a client offering only
        // http/1.1 gets h2 anyway, which OpenSSL clients reject in the handshake.
        let h2 = try TestServer(tls: .localhost(alpn: ["h2"]))
        defer { h2.shutdown() }
        let offered = try sClient(port: h2.port, extra: ["-alpn", "h2,http/1.1"])
        XCTAssertTrue(offered.output.contains("ALPN protocol: h2"), offered.output)
        let mismatch = try curl(["-v", "--http1.1", "--cacert", certificates.caCert, h2.url(host: "localhost", path: "/x")])
        XCTAssertEqual(mismatch.status, 35, mismatch.error)
        XCTAssertEqual(h2.requestCount, 0)

        // No ALPN configured: no answer.
        let none = try TestServer(tls: .localhost())
        defer { none.shutdown() }
        let quiet = try sClient(port: none.port, extra: ["-alpn", "http/1.1"])
        XCTAssertTrue(quiet.output.contains("No ALPN negotiated"), quiet.output)
    }

    func testVersionBounds() throws {
        let certs = certificates!
        let server = try TestServer(tls: .init(certificateFile: certs.serverCert, keyFile: certs.serverKey, maxVersion: .tls1_2))
        defer { server.shutdown() }
        server.route("/x") { _ in .text("x") }
        let ok = try curl(["--cacert", certs.caCert, server.url(host: "localhost", path: "/x")])
        XCTAssertEqual(ok.status, 0, ok.error)
        XCTAssertEqual(server.tlsHandshakeDetails.first?.version, "TLSv1.2")
        let tooNew = try curl(["--tlsv1.3", "--cacert", certs.caCert, server.url(host: "localhost", path: "/x")])
        XCTAssertEqual(tooNew.status, 35, tooNew.error)

        let only13 = try TestServer(tls: .init(certificateFile: certs.serverCert, keyFile: certs.serverKey, minVersion: .tls1_3))
        defer { only13.shutdown() }
        let tooOld = try curl(["--tls-max", "1.2", "--cacert", certs.caCert, only13.url(host: "localhost", path: "/x")])
        XCTAssertEqual(tooOld.status, 35, tooOld.error)
    }

    func testBadTLSOptionsThrowClearly() {
        XCTAssertThrowsError(try TestServer(tls: .init(certificateFile: "/nonexistent.pem", keyFile: "/nonexistent.key"))) { error in
            XCTAssertTrue("\(error)".contains("/nonexistent.pem"), "\(error)")
        }
        XCTAssertThrowsError(try TestServer(tls: .init(certificateFile: certificates.serverCert, keyFile: certificates.clientKey))) { error in
            XCTAssertTrue("\(error)".contains("client.key") && "\(error)".contains("mismatch"), "\(error)")
        }
    }

    // MARK: nginx over TLS

    func testNginxServesHTTPSAndResumesSessions() throws {
        try requireTool(NginxFixture.isAvailable, "nginx is not installed (apt-get install nginx-light)")
        let nginx = try NginxFixture(tls: .localhost())
        defer { nginx.stop() }
        XCTAssertTrue(nginx.baseURL.hasPrefix("https://127.0.0.1:"))
        let result = try curl(["--cacert", certificates.caCert, nginx.url(host: "localhost", path: "/small")])
        XCTAssertEqual(result.status, 0, result.error + nginx.errorLog)
        XCTAssertEqual(result.output, "Hello, World!")

        let plainHTTP = try curl(["http://127.0.0.1:\(nginx.port)/small", "-w", "%{http_code}", "-o", "/dev/null"])
        XCTAssertEqual(plainHTTP.output, "400", "plain HTTP to the TLS port")

        let session = FileManager.default.temporaryDirectory.appendingPathComponent("pocket-tls-session-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: session) }
        // A full request lets s_client receive the TLS 1.3 ticket before nginx closes.
        let request = "GET /small HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
        let first = try sClient(port: nginx.port, extra: ["-ign_eof", "-sess_out", session], input: request)
        XCTAssertTrue(first.output.contains("Verify return code: 0 (ok)"), first.output)
        XCTAssertTrue(first.output.contains("Hello, World!"), first.output)
        let second = try sClient(port: nginx.port, extra: ["-ign_eof", "-sess_in", session], input: request)
        XCTAssertTrue(second.output.contains("Reused, TLSv1.3"), second.output)
    }

    func testNginxMutualTLS() throws {
        try requireTool(NginxFixture.isAvailable, "nginx is not installed (apt-get install nginx-light)")
        let nginx = try NginxFixture(tls: .localhost(mutualTLS: true))
        defer { nginx.stop() }
        let url = nginx.url(host: "localhost", path: "/small")
        let without = try curl(["--cacert", certificates.caCert, "-w", "%{http_code}", "-o", "/dev/null", url])
        XCTAssertEqual(without.status, 0, without.error)
        XCTAssertEqual(without.output, "400", "nginx answers 400 (no required SSL certificate)")
        let with = try curl(["--cacert", certificates.caCert, "--cert", certificates.clientCert, "--key", certificates.clientKey, url])
        XCTAssertEqual(with.status, 0, with.error + nginx.errorLog)
        XCTAssertEqual(with.output, "Hello, World!")
    }

    // MARK: Helpers

    private struct Outcome {
        var status: Int32
        var output: String
        var error: String
    }

    private func curl(_ arguments: [String]) throws -> Outcome {
        try run("/usr/bin/curl", ["-sS", "--max-time", "20"] + arguments)
    }

    private func openssl(_ arguments: [String], input: String? = nil) throws -> Outcome {
        var outcome = try run(try XCTUnwrap(TestCertificates.opensslPath), arguments, input: input)
        outcome.output += outcome.error
        return outcome
    }

    /// `openssl s_client` to localhost:port (verifying with the test CA),
    /// sending nothing; output and errors combined.
    private func sClient(port: Int, extra: [String], input: String? = nil) throws -> Outcome {
        try openssl(["s_client", "-connect", "127.0.0.1:\(port)", "-servername", "localhost",
                     "-CAfile", certificates.caCert, "-verify_hostname", "localhost"] + extra, input: input)
    }

    private func run(_ executable: String, _ arguments: [String], input: String? = nil) throws -> Outcome {
        let (result, _) = try ChildProcess.run(executable, arguments, input: input.map { Data($0.utf8) }, timeout: 60)
        return Outcome(status: result.status, output: result.stdoutText, error: result.stderrText)
    }
}
