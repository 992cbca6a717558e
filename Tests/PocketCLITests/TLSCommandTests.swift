import Foundation
import PocketTestSupport
import XCTest

/// --cacert, -k, --pinnedpubkey, --cert/--key against the TLS test server
/// (certificates generated at test time).
final class TLSCommandTests: XCTestCase {
    private func server(_ options: TestServer.TLSOptions) throws -> TestServer {
        let server = try TestServer(tls: options)
        server.route("/") { _ in .text("secure") }
        return server
    }

    func testTrustPinsAndInsecure() throws {
        let certs = try TestCertificates.shared
        let server = try server(.localhost())
        defer { server.shutdown() }
        let url = server.url(host: "localhost", path: "/")

        let untrusted = try PocketBinary.run([url])
        XCTAssertEqual(untrusted.status, 60, untrusted.stderrText)
        XCTAssertTrue(untrusted.stderrText.contains("tls_untrusted_certificate"), untrusted.stderrText)

        let trusted = try PocketBinary.run(["--cacert", certs.caCert, url])
        XCTAssertEqual(trusted.status, 0, trusted.stderrText)
        XCTAssertEqual(trusted.stdoutText, "secure")

        let insecure = try PocketBinary.run(["-k", url])
        XCTAssertEqual(insecure.status, 0, insecure.stderrText)
        XCTAssertEqual(insecure.stdoutText, "secure")

        let pin = "sha256//" + (try certs.spkiSHA256Base64(ofCertificate: certs.serverCert))
        let pinned = try PocketBinary.run(["--cacert", certs.caCert, "--pinnedpubkey", pin, url])
        XCTAssertEqual(pinned.status, 0, pinned.stderrText)
        let wrongPin = "sha256//" + (try certs.spkiSHA256Base64(ofCertificate: certs.clientCert))
        let mismatch = try PocketBinary.run(["--cacert", certs.caCert, "--pinnedpubkey", "\(wrongPin);\(wrongPin)", url])
        XCTAssertEqual(mismatch.status, 90, mismatch.stderrText)
        XCTAssertTrue(mismatch.stderrText.contains("tls_pin_mismatch"), mismatch.stderrText)
    }

    func testAHandshakeThatFailsIsExit35() throws {
        let certs = try TestCertificates.shared
        let server = try server(.localhost(alpn: ["h2"]))
        defer { server.shutdown() }
        let run = try PocketBinary.run(["--cacert", certs.caCert, server.url(host: "localhost", path: "/")])
        XCTAssertEqual(run.status, 35, run.stderrText)
        // OpenSSL may end the handshake itself (no_application_protocol)
        // before the engine sees the selected protocol: either code is exit 35.
        XCTAssertTrue(run.stderrText.contains("tls_alpn_mismatch") || run.stderrText.contains("tls_handshake_failed"),
                      run.stderrText)
        XCTAssertEqual(run.stderrLines.count, 1, run.stderrText)
        XCTAssertEqual(run.stdout.count, 0)
    }

    func testHostnameMismatchAndExpired() throws {
        let certs = try TestCertificates.shared
        var wrongHost = try TestServer.TLSOptions.localhost()
        wrongHost.certificateFile = certs.wrongHostCert
        wrongHost.keyFile = certs.wrongHostKey
        let server = try server(wrongHost)
        defer { server.shutdown() }
        let run = try PocketBinary.run(["--cacert", certs.caCert, server.url(host: "localhost", path: "/")])
        XCTAssertEqual(run.status, 60, run.stderrText)
        XCTAssertTrue(run.stderrText.contains("tls_hostname_mismatch"), run.stderrText)
    }

    func testClientCertificate() throws {
        let certs = try TestCertificates.shared
        let server = try server(.mutualTLS())
        defer { server.shutdown() }
        let url = server.url(host: "localhost", path: "/")
        let with = try PocketBinary.run(["--cacert", certs.caCert, "--cert", certs.clientCert, "--key", certs.clientKey, url])
        XCTAssertEqual(with.status, 0, with.stderrText)
        XCTAssertEqual(with.stdoutText, "secure")
        XCTAssertTrue(server.tlsHandshakeDetails.last?.clientCertificateVerified ?? false)
        let without = try PocketBinary.run(["--cacert", certs.caCert, url])
        XCTAssertNotEqual(without.status, 0)
        XCTAssertTrue([35, 56].contains(without.status), "a refused handshake: \(without.status) \(without.stderrText)")
        let missingKey = try PocketBinary.run(["--cacert", certs.caCert, "--cert", certs.clientCert, "--key", "/nonexistent.key", url])
        XCTAssertEqual(missingKey.status, 26, missingKey.stderrText)
    }

    func testHTTPSToAPlainHTTPPortSaysSo() throws {
        let server = try PlainHTTPAnswerer()
        defer { server.stop() }
        let run = try PocketBinary.run(["https://127.0.0.1:\(server.port)/"])
        XCTAssertEqual(run.status, 35, "curl's TLS status: \(run.stderrText)")
        XCTAssertEqual(run.stderrLines, ["pocket: 127.0.0.1 port \(server.port): the server answered the TLS handshake "
            + "in plain HTTP (is this an http:// port?) (tls_answered_by_plain_http)"])
    }
}
