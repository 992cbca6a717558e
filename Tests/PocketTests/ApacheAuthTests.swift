import Foundation
import XCTest
import Pocket
import PocketTestSupport

/// Digest (RFC 7616, MD5, qop=auth) and Basic against a real Apache httpd
/// with mod_auth_digest, started by the test on a loopback port.
final class ApacheAuthTests: XCTestCase {
    func testDigestAndBasicAgainstApache() async throws {
        guard ApacheFixture.isAvailable else { throw XCTSkip("apache2 is not installed (scripts/setup.sh installs it)") }
        let apache = try ApacheFixture()
        defer { apache.stop() }
        let client = try makeClient {
            $0.handling.authentication = PocketAuthentication(username: ApacheFixture.user, password: ApacheFixture.password)
        }
        let open = try await client.send(PocketRequest(url: URL(string: apache.url("/open/hello.txt"))!))
        XCTAssertEqual(open.status, 200, apache.errorLog)

        // No credential: Apache's 401 with its Digest challenge.
        let bare = try makeClient()
        let refused = try await bare.send(PocketRequest(url: URL(string: apache.url("/digest/hello.txt"))!))
        XCTAssertEqual(refused.status, 401)
        XCTAssertTrue(refused.headers["WWW-Authenticate"]?.hasPrefix("Digest ") ?? false, "\(refused.headers)")
        try await bare.shutdown()

        let digest = try await client.send(PocketRequest(url: URL(string: apache.url("/digest/hello.txt"))!))
        XCTAssertEqual(digest.status, 200, apache.errorLog)
        XCTAssertEqual(digest.text, ApacheFixture.helloBody)
        // The nonce is used again, counted: Apache accepts nc=00000002 and 3.
        for query in ["?a=1", "?b=2"] {
            let again = try await client.send(PocketRequest(url: URL(string: apache.url("/digest/hello.txt" + query))!))
            XCTAssertEqual(again.status, 200, apache.errorLog)
        }

        // Apache writes its log line after the answer has gone out: give
        // the last one a moment (bounded) to land.
        var log = apache.accessLog.filter { $0.contains("/digest/") }
        for _ in 0..<100 where log.count < 5 {
            try await Task.sleep(for: .milliseconds(20))
            log = apache.accessLog.filter { $0.contains("/digest/") }
        }
        XCTAssertEqual(log.map { $0.split(separator: " ").last.map(String.init) }, ["401", "401", "200", "200", "200"],
                       "one challenge for the client, then the counted nonce: \(log)")

        let basic = try await client.send(PocketRequest(url: URL(string: apache.url("/basic/hello.txt"))!))
        XCTAssertEqual(basic.status, 200, apache.errorLog)
        XCTAssertEqual(basic.text, ApacheFixture.helloBody)

        // A wrong password: answered once, Apache's second 401 returned.
        var wrong = PocketRequest(url: URL(string: apache.url("/digest/hello.txt?w"))!)
        wrong.authentication = PocketAuthentication(username: ApacheFixture.user, password: "wrong")
        let denied = try await client.send(wrong)
        XCTAssertEqual(denied.status, 401)
        try await client.shutdown()
    }
}
