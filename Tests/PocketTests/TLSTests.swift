import Foundation
import XCTest
@testable import Pocket
import PocketTestSupport

/// Pocket's TLS through real handshakes: the in-process TLS test server and
/// nginx, with certificates generated at test time (TestCertificates).
final class TLSTests: XCTestCase {
    private func certs() throws -> TestCertificates { try TestCertificates.shared }

    private func client(_ configure: (inout PocketClient.Configuration) -> Void = { _ in }) throws -> PocketClient {
        let ca = try certs().caCert
        return try makeClient {
            $0.tls.caFile = ca
            configure(&$0)
        }
    }

    private func server(cert: String, key: String, _ configure: (inout TestServer.TLSOptions) -> Void = { _ in }) throws -> TestServer {
        var options = try TestServer.TLSOptions.localhost()
        options.certificateFile = cert
        options.keyFile = key
        configure(&options)
        let server = try TestServer(tls: options)
        server.route("/") { _ in .text("secure") }
        return server
    }

    func testHTTPSWithKeepAliveOverNameAndIP() async throws {
        let c = try certs()
        let server = try server(cert: c.serverCert, key: c.serverKey)
        defer { server.shutdown() }
        let client = try client()
        for _ in 0..<5 {
            let r = try await client.send(PocketRequest(url: URL(string: server.url(host: "localhost", path: "/"))!))
            XCTAssertEqual(r.text, "secure")
        }
        XCTAssertEqual(server.tlsHandshakes, 1, "five requests, one handshake")
        // Wire bytes are counted in the BIO: records cost more than their
        // payload, and the first request on a connection pays the handshake.
        let first = try await client.send(PocketRequest(url: URL(string: server.url(host: "localhost", path: "/"))!))
        XCTAssertGreaterThan(first.timings.wireBytesReceived, first.timings.bytesReceived)
        XCTAssertGreaterThan(first.timings.wireBytesSent, first.timings.bytesSent)
        let byIP = try await client.send(PocketRequest(url: URL(string: server.url(host: "127.0.0.1", path: "/"))!))
        XCTAssertEqual(byIP.text, "secure", "an IP literal is checked against the IP SANs")
        XCTAssertGreaterThan(byIP.timings.tls, .zero)
        // SNI carries DNS names only: the name went, the IP literal did not.
        let names = server.tlsHandshakeDetails.map(\.serverName)
        XCTAssertEqual(names, ["localhost", nil])
        XCTAssertGreaterThan(byIP.timings.wireBytesReceived, first.timings.wireBytesReceived + 300,
                             "a new connection's first request carries the handshake")
    }

    func testEachVerificationFailureHasItsOwnCode() async throws {
        let c = try certs()
        let cases: [(String, String, PocketError.Code)] = [
            (c.selfSignedCert, c.selfSignedKey, .tlsUntrustedCertificate),
            (c.expiredCert, c.expiredKey, .tlsCertificateExpired),
            (c.wrongHostCert, c.wrongHostKey, .tlsHostnameMismatch),
        ]
        for (cert, key, code) in cases {
            let server = try server(cert: cert, key: key)
            defer { server.shutdown() }
            let client = try client()
            let error = await assertPocketError(code) {
                try await client.send(PocketRequest(url: URL(string: server.url(host: "localhost", path: "/"))!))
            }
            XCTAssertNotNil(error?.systemError, "OpenSSL's verify code is kept")
            XCTAssertEqual(server.requestCount, 0, "no request is sent over an unverified connection")
        }
    }

    func testSystemStoreDoesNotTrustTheTestCA() async throws {
        let c = try certs()
        let server = try server(cert: c.serverCert, key: c.serverKey)
        defer { server.shutdown() }
        let client = try makeClient()
        let error = await assertPocketError(.tlsUntrustedCertificate) {
            try await client.send(PocketRequest(url: URL(string: server.url(host: "localhost", path: "/"))!))
        }
        XCTAssertTrue(error?.message.contains("issuer") ?? false, error?.message ?? "")
    }

    /// Runs `body` with the environment's `variables` set (nil: unset), then
    /// restores them. The system store reads SSL_CERT_FILE and SSL_CERT_DIR
    /// at a context's first connection.
    private func withEnvironment<T>(_ variables: [String: String?], _ body: () async throws -> T) async rethrows -> T {
        let environment = ProcessInfo.processInfo.environment
        func apply(_ name: String, _ value: String?) {
            if let value { setenv(name, value, 1) } else { unsetenv(name) }
        }
        for (name, value) in variables { apply(name, value) }
        defer { for name in variables.keys { apply(name, environment[name]) } }
        return try await body()
    }

    func testTheSystemStoreSearchesAHashedSSLCertDir() async throws {
        let c = try certs()
        let server = try server(cert: c.serverCert, key: c.serverKey)
        defer { server.shutdown() }
        let directory = try c.hashedDirectory(of: [c.caCert])
        // No SSL_CERT_FILE: the bundle is skipped for the hashed directories.
        let r = try await withEnvironment(["SSL_CERT_DIR": directory, "SSL_CERT_FILE": nil]) {
            // The store is loaded at a context's first connection.
            try await makeClient().send(PocketRequest(url: URL(string: server.url(host: "localhost", path: "/"))!))
        }
        XCTAssertEqual(r.text, "secure", "the test CA is found by its hash link in SSL_CERT_DIR")
    }

    func testAHashedSSLCertDirWithoutTheIssuerStillFailsVerification() async throws {
        let c = try certs()
        let server = try server(cert: c.serverCert, key: c.serverKey)
        defer { server.shutdown() }
        // A CA directory that holds another certificate, not the server's issuer.
        let directory = try c.hashedDirectory(of: [c.selfSignedCert])
        let error = await withEnvironment(["SSL_CERT_DIR": directory, "SSL_CERT_FILE": nil]) {
            await assertPocketError(.tlsUntrustedCertificate) {
                try await makeClient().send(PocketRequest(url: URL(string: server.url(host: "localhost", path: "/"))!))
            }
        }
        XCTAssertEqual(server.requestCount, 0, "no request is sent over an unverified connection")
        XCTAssertTrue(error?.message.contains("issuer") ?? false, error?.message ?? "")
    }

    func testSSLCertFileIsStillReadWhenSet() async throws {
        let c = try certs()
        let server = try server(cert: c.serverCert, key: c.serverKey)
        defer { server.shutdown() }
        let empty = try c.hashedDirectory(of: [])
        let r = try await withEnvironment(["SSL_CERT_DIR": empty, "SSL_CERT_FILE": c.caCert]) {
            try await makeClient().send(PocketRequest(url: URL(string: server.url(host: "localhost", path: "/"))!))
        }
        XCTAssertEqual(r.text, "secure", "the test CA comes from SSL_CERT_FILE")
    }

    func testInsecureModeAcceptsASelfSignedCertificate() async throws {
        let c = try certs()
        let server = try server(cert: c.selfSignedCert, key: c.selfSignedKey)
        defer { server.shutdown() }
        let client = try makeClient { $0.tls.insecureSkipVerification = true }
        let r = try await client.send(PocketRequest(url: URL(string: server.url(host: "localhost", path: "/"))!))
        XCTAssertEqual(r.text, "secure")
    }

    func testPinningPassAndFail() async throws {
        let c = try certs()
        let server = try server(cert: c.serverCert, key: c.serverKey)
        defer { server.shutdown() }
        let pin = "sha256//" + (try TestCertificates.spkiSHA256Base64(ofCertificate: c.serverCert))
        let good = try client { $0.tls.pinnedPublicKeys = ["sha256//AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", pin] }
        let r = try await good.send(PocketRequest(url: URL(string: server.url(host: "localhost", path: "/"))!))
        XCTAssertEqual(r.text, "secure")
        let bad = try client { $0.tls.pinnedPublicKeys = ["sha256//AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="] }
        await assertPocketError(.tlsPinMismatch) {
            try await bad.send(PocketRequest(url: URL(string: server.url(host: "localhost", path: "/"))!))
        }
        XCTAssertThrowsError(try client { $0.tls.pinnedPublicKeys = ["md5//xyz"] }) { error in
            XCTAssertEqual((error as? PocketError)?.code, .tlsConfiguration)
        }
    }

    func testMutualTLSAcceptedAndRejected() async throws {
        let c = try certs()
        let server = try TestServer(tls: try .mutualTLS(requireClientCertificate: true))
        defer { server.shutdown() }
        server.route("/") { _ in .text("hello client") }
        let withCert = try client {
            $0.tls.certificateChainFile = c.clientCert
            $0.tls.privateKeyFile = c.clientKey
        }
        let r = try await withCert.send(PocketRequest(url: URL(string: server.url(host: "localhost", path: "/"))!))
        XCTAssertEqual(r.text, "hello client")
        let without = try client()
        do {
            _ = try await without.send(PocketRequest(url: URL(string: server.url(host: "localhost", path: "/"))!))
            XCTFail("a server requiring a client certificate must refuse")
        } catch let error as PocketError {
            // TLS 1.3 reports the refusal after the client's handshake finished:
            // as the server's alert (certificate_required), a reset or a close.
            XCTAssertTrue([.tlsAlert, .connectionReset, .closedBeforeResponse].contains(error.code), "\(error)")
            if error.code == .tlsAlert {
                XCTAssertTrue(error.message.contains("the server sent: tlsv13 alert certificate required"), "\(error)")
            }
        }
        XCTAssertEqual(server.requestCount, 1)
    }

    func testALPNOtherThanHTTP11IsAnError() async throws {
        let c = try certs()
        let server = try server(cert: c.serverCert, key: c.serverKey) { $0.alpn = ["h2"] }
        defer { server.shutdown() }
        let client = try client()
        do {
            _ = try await client.send(PocketRequest(url: URL(string: server.url(host: "localhost", path: "/"))!))
            XCTFail("h2 selected")
        } catch let error as PocketError {
            // OpenSSL itself rejects a protocol the client never offered.
            XCTAssertTrue([.tlsAlpnMismatch, .tlsHandshakeFailed].contains(error.code), "\(error)")
        }
    }

    func testAPlainHTTPAnswerToTheHandshakeHasItsOwnCode() async throws {
        let plain = try PlainHTTPAnswerer(connections: 1)
        defer { plain.stop() }
        let client = try client()
        do {
            _ = try await client.send(PocketRequest(url: URL(string: "https://127.0.0.1:\(plain.port)/")!))
            XCTFail("a plain HTTP answer is no TLS handshake")
        } catch let e as PocketError {
            XCTAssertEqual(e.code, .tlsAnsweredByPlainHTTP, "\(e)")
        }
    }

    func testProtocolVersionMismatch() async throws {
        let c = try certs()
        let server = try server(cert: c.serverCert, key: c.serverKey) { $0.maxVersion = .tls1_2 }
        defer { server.shutdown() }
        let client = try client { $0.tls.minimumVersion = .tls13 }
        await assertPocketError(.tlsProtocolVersion) {
            try await client.send(PocketRequest(url: URL(string: server.url(host: "localhost", path: "/"))!))
        }
    }

    func testAServerLimitedToTLS11OrOlderIsRefused() async throws {
        let c = try certs()
        for version in [TestServer.TLSOptions.Version.tls1_1, .tls1_0] {
            let server = try server(cert: c.serverCert, key: c.serverKey) {
                $0.minVersion = version
                $0.maxVersion = version
            }
            defer { server.shutdown() }
            let client = try client()
            await assertPocketError(.tlsProtocolVersion) {
                try await client.send(PocketRequest(url: URL(string: server.url(host: "localhost", path: "/"))!))
            }
            XCTAssertEqual(server.tlsHandshakes, 0, "no \(version) handshake completes")
            XCTAssertEqual(server.requestCount, 0)
        }
        // The same server allowed TLS 1.2 is reached: the refusal is the version's.
        let server = try server(cert: c.serverCert, key: c.serverKey) {
            $0.minVersion = .tls1_0
            $0.maxVersion = .tls1_2
        }
        defer { server.shutdown() }
        let r = try await client().send(PocketRequest(url: URL(string: server.url(host: "localhost", path: "/"))!))
        XCTAssertEqual(r.text, "secure")
        XCTAssertEqual(server.tlsHandshakeDetails.map(\.version), ["TLSv1.2"])
    }

    func testAServerCannotRenegotiate() async throws {
        let c = try certs()
        let server = try server(cert: c.serverCert, key: c.serverKey) { $0.maxVersion = .tls1_2 }
        defer { server.shutdown() }
        // A HelloRequest, then the answer: a client that agrees sends a
        // ClientHello, which the server reads before the next request on
        // the connection; one that refuses sends a no_renegotiation alert,
        // on which OpenSSL's server ends the connection.
        server.route("/renegotiate") { _ in
            .raw([.requestTLSRenegotiation, .sendString("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")])
        }
        let client = try client { $0.timeouts.total = .seconds(5) }
        let first = try await client.send(PocketRequest(url: URL(string: server.url(host: "localhost", path: "/renegotiate"))!))
        XCTAssertEqual(first.text, "ok", "the answer after the refused request arrives")
        // The server reads the client's answer while it waits for the next
        // request: a ClientHello (agreed), or the alert, on which it closes.
        let deadline = Date().addingTimeInterval(10)
        while server.tlsRenegotiations == 0 && server.openConnections > 0 && Date() < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        XCTAssertEqual(server.tlsRenegotiations, 0, "no ClientHello after the first handshake")
        XCTAssertEqual(server.openConnections, 0, "the refusal ended the connection")
    }

    func testSessionsAreResumedOnNewConnections() async throws {
        let c = try certs()
        let server = try server(cert: c.serverCert, key: c.serverKey)
        defer { server.shutdown() }
        server.route("/bye") { _ in .text("bye", closeConnection: true) }
        let client = try client()
        let first = try await client.send(PocketRequest(url: URL(string: server.url(host: "localhost", path: "/bye"))!))
        XCTAssertFalse(first.timings.tlsResumed)
        var resumed = 0
        for _ in 0..<5 {
            let r = try await client.send(PocketRequest(url: URL(string: server.url(host: "localhost", path: "/bye"))!))
            XCTAssertFalse(r.timings.reusedConnection)
            if r.timings.tlsResumed { resumed += 1 }
        }
        XCTAssertEqual(resumed, 5, "every new connection resumed")
        XCTAssertEqual(server.resumedHandshakes, 5)
    }

    func testCloseDelimitedBodyNeedsCloseNotify() async throws {
        let c = try certs()
        let server = try server(cert: c.serverCert, key: c.serverKey)
        defer { server.shutdown() }
        // .close sends close_notify, then FIN: a complete close-delimited body.
        server.route("/clean") { _ in .raw([.sendString("HTTP/1.1 200 OK\r\n\r\nall of it"), .close]) }
        // A bare FIN without close_notify: the body may have been cut, so it is an error.
        server.route("/cut") { _ in .raw([.sendString("HTTP/1.1 200 OK\r\n\r\npart"), .sleep(milliseconds: 20), .closeWithoutTLSNotify]) }
        // A framed body that was already complete is fine without close_notify.
        server.route("/framed") { _ in .raw([.sendString("HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nfull"), .closeWithoutTLSNotify]) }
        let client = try client()
        let ok = try await client.send(PocketRequest(url: URL(string: server.url(host: "localhost", path: "/clean"))!))
        XCTAssertEqual(ok.text, "all of it")
        do {
            _ = try await client.send(PocketRequest(url: URL(string: server.url(host: "localhost", path: "/cut"))!))
            XCTFail("a cut close-delimited body must fail")
        } catch let error as PocketError {
            XCTAssertEqual(error.code, .truncatedBody, "\(error)")
        }
        let framed = try await client.send(PocketRequest(url: URL(string: server.url(host: "localhost", path: "/framed"))!))
        XCTAssertEqual(framed.text, "full")
    }

    /// The FIN often lands with the body's last record: the read that takes
    /// the record is short (the socket looks drained), and edge-triggered
    /// readiness reports the FIN no more. The cut must still be seen at once,
    /// on both I/O backends, every time.
    func testABareFINWithTheLastRecordFailsAtOnceOnEveryBackend() async throws {
        let c = try certs()
        let server = try server(cert: c.serverCert, key: c.serverKey)
        defer { server.shutdown() }
        server.route("/cut") { _ in .raw([.sendString("HTTP/1.1 200 OK\r\n\r\npart of the body"), .closeWithoutTLSNotify]) }
        let url = URL(string: server.url(host: "localhost", path: "/cut"))!
        for backend in [PocketIOBackend.epoll, .ioUring] {
            let client: PocketClient
            do {
                client = try self.client {
                    $0.ioBackend = backend
                    $0.timeouts.total = .seconds(3) // a hang shows as total_timeout, not as a stuck test
                }
            } catch let error as PocketError where error.code == .ioUringUnavailable {
                continue
            }
            for run in 1...30 {
                let started = ContinuousClock.now
                do {
                    _ = try await client.send(PocketRequest(url: url))
                    XCTFail("\(backend) run \(run): a close-delimited body cut by a bare FIN must fail")
                } catch let error as PocketError {
                    XCTAssertEqual(error.code, .truncatedBody, "\(backend) run \(run): \(error)")
                }
                XCTAssertLessThan(ContinuousClock.now - started, .seconds(1), "\(backend) run \(run)")
            }
            try await client.shutdown()
        }
    }

    /// A server may end a kept-alive TLS connection with a fatal alert rather
    /// than a close: here it cannot decrypt the next request's record and
    /// answers `bad_record_mac`. Nothing of a response came, so an idempotent
    /// request goes once more on a new connection; a POST fails with the
    /// alert's own code, never "TLS handshake failed". TLS 1.3 and 1.2, on
    /// both I/O backends.
    func testAFatalAlertOnAReusedConnectionIsRetriedOnceForIdempotentMethods() async throws {
        let c = try certs()
        for version in [TestServer.TLSOptions.Version.tls1_3, .tls1_2] {
            for backend in [PocketIOBackend.epoll, .ioUring] {
                let server = try server(cert: c.serverCert, key: c.serverKey) { $0.maxVersion = version }
                defer { server.shutdown() }
                // The answer to /arm leaves its connection set to corrupt the
                // next request's record as the server reads it.
                server.route("/arm") { _ in
                    .raw([.corruptNextTLSRecord, .sendString("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")])
                }
                let client: PocketClient
                do {
                    client = try self.client {
                        $0.ioBackend = backend
                        $0.timeouts.total = .seconds(5)
                    }
                } catch let error as PocketError where error.code == .ioUringUnavailable {
                    continue
                }
                let label = "\(version) \(backend)"
                let arm = URL(string: server.url(host: "localhost", path: "/arm"))!
                let plain = URL(string: server.url(host: "localhost", path: "/"))!
                let first = try await client.send(PocketRequest(url: arm))
                XCTAssertEqual(first.text, "ok", label)
                let retriedBefore = client.engine.stats.requests_retried
                let second = try await client.send(PocketRequest(url: plain))
                XCTAssertEqual(second.status, 200, label)
                XCTAssertEqual(second.text, "secure", label)
                XCTAssertTrue(second.timings.retried, label)
                XCTAssertFalse(second.timings.reusedConnection, label)
                XCTAssertEqual(server.acceptedConnections, 2, label)
                XCTAssertEqual(client.engine.stats.requests_retried, retriedBefore + 1, label)

                // POST is not idempotent: the same situation is the alert's error.
                _ = try await client.send(PocketRequest(url: arm))
                let error = await assertPocketError(.tlsAlert) {
                    try await client.send(PocketRequest(method: .post, url: plain, body: .bytes(Data("x".utf8))))
                }
                XCTAssertTrue(error?.message.contains("the server sent: bad record mac") == true,
                              "\(label): \(error.map(String.init(describing:)) ?? "")")
                XCTAssertEqual(server.acceptedConnections, 2, "\(label): the POST is not sent again")
                XCTAssertEqual(client.engine.stats.requests_retried, retriedBefore + 1, label)
                try await client.shutdown()
            }
        }
    }

    func testPeerResetDuringALargeTLSUploadIsAnErrorNotACrash() async throws {
        let c = try certs()
        let server = try server(cert: c.serverCert, key: c.serverKey)
        defer { server.shutdown() }
        server.route("/upload") { _ in .reset }
        let client = try client()
        let body = Data(repeating: 7, count: 8 << 20)
        do {
            _ = try await client.send(PocketRequest(method: .put, url: URL(string: server.url(host: "localhost", path: "/upload"))!, body: .bytes(body)))
        } catch let error as PocketError {
            XCTAssertTrue([.connectionReset, .writeFailed, .closedBeforeResponse, .readFailed].contains(error.code), "\(error)")
        }
        // Still alive, and the client still works.
        let r = try await client.send(PocketRequest(url: URL(string: server.url(host: "localhost", path: "/"))!))
        XCTAssertEqual(r.text, "secure")
    }

    func testNginxOverTLS() async throws {
        let nginx = try NginxFixture(tls: try .localhost())
        defer { nginx.stop() }
        let client = try client()
        let small = try await client.send(PocketRequest(url: URL(string: nginx.url(host: "localhost", path: "/small"))!))
        XCTAssertEqual(Array(small.body), NginxFixture.smallBody)
        let large = try await client.send(PocketRequest(url: URL(string: nginx.url(host: "localhost", path: "/large"))!))
        XCTAssertTrue(Array(large.body) == NginxFixture.largeBody)
        XCTAssertTrue(large.timings.reusedConnection)
        let chunked = try await client.send(PocketRequest(url: URL(string: nginx.url(host: "localhost", path: "/chunked.shtml"))!))
        XCTAssertEqual(Array(chunked.body), NginxFixture.chunkedBody)
    }

    func testPerRequestTLSSettingsNeverShareAPooledConnection() async throws {
        let c = try certs()
        let server = try server(cert: c.serverCert, key: c.serverKey)
        defer { server.shutdown() }
        // The client trusts only the system store; requests bring the test CA.
        let client = try makeClient()
        let u = URL(string: server.url(host: "localhost", path: "/"))!
        var trusting = PocketTLSConfiguration()
        trusting.caFile = c.caCert
        var request = PocketRequest(url: u)
        request.tls = trusting
        for _ in 0..<3 {
            let r = try await client.send(request)
            XCTAssertEqual(r.text, "secure")
        }
        XCTAssertEqual(server.tlsHandshakes, 1, "same settings, one pooled connection")
        // Other settings (a pin on top) get a connection of their own...
        var pinned = trusting
        pinned.pinnedPublicKeys = ["sha256//" + (try TestCertificates.spkiSHA256Base64(ofCertificate: c.serverCert))]
        var other = PocketRequest(url: u)
        other.tls = pinned
        let r2 = try await client.send(other)
        XCTAssertFalse(r2.timings.reusedConnection)
        XCTAssertEqual(server.tlsHandshakes, 2)
        // ...and the client's own settings never ride on either.
        await assertPocketError(.tlsUntrustedCertificate) { try await client.send(PocketRequest(url: u)) }
        // Codable: the settings travel with an archived request.
        let decoded = try JSONDecoder().decode(PocketRequest.self, from: JSONEncoder().encode(other))
        XCTAssertEqual(decoded.tls, pinned)
    }
}
