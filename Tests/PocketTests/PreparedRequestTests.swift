import Foundation
import XCTest
@testable import Pocket

/// Request preparation is a pure value step: no client, no socket.
final class PreparedRequestTests: XCTestCase {
    private func fields(_ prepared: PreparedRequest) -> [String] {
        prepared.fields.list.fields.map { "\($0.name): \($0.value)" }
    }

    func testDefaultsMergeUnderTheRequestsOwnFields() throws {
        var config = PocketClient.Configuration()
        config.defaultHeaders = ["User-Agent": "Pocket/test", "X-Team": "core"]
        var request = PocketRequest(url: URL(string: "http://example.test:8080/a?b=c")!)
        request.headers["X-Team"] = "edge"
        let prepared = try PreparedRequest(request, configuration: config)
        XCTAssertEqual(fields(prepared), ["Accept-Encoding: gzip, deflate", "User-Agent: Pocket/test", "X-Team: edge"])
        XCTAssertEqual(prepared.method, "GET")
        XCTAssertEqual(prepared.target.host, "example.test")
        XCTAssertEqual(prepared.target.port, 8080)
        XCTAssertEqual(prepared.target.pathAndQuery, "/a?b=c")
        XCTAssertTrue(prepared.idempotent)
    }

    func testPackedFieldsAreReadInPlaceAndMergeLikeAList() throws {
        let received = PocketHeaders.received([("x-team", "edge"), ("Accept", "text/plain"), ("Set-Cookie", "a=1"), ("Set-Cookie", "b=2")])
        XCTAssertEqual((0..<received.count).map { received.field(at: $0) }, received.fields)
        XCTAssertTrue(received.contains("X-TEAM"))
        XCTAssertFalse(received.contains("X-Other"))
        var config = PocketClient.Configuration()
        config.defaultHeaders = ["User-Agent": "Pocket/test", "X-Team": "core"]
        config.decompression = false
        var request = PocketRequest(url: URL(string: "http://example.test/")!)
        request.headers = received
        let prepared = try PreparedRequest(request, configuration: config)
        XCTAssertEqual(fields(prepared), ["User-Agent: Pocket/test", "x-team: edge", "Accept: text/plain",
                                          "Set-Cookie: a=1", "Set-Cookie: b=2"])
    }

    func testAcceptEncodingOnlyWhenDecompressingAndNotSetAlready() throws {
        var config = PocketClient.Configuration()
        config.defaultHeaders = [:]
        config.decompression = false
        let request = PocketRequest(url: URL(string: "http://example.test/")!)
        XCTAssertEqual(fields(try PreparedRequest(request, configuration: config)), [])
        config.decompression = true
        var own = request
        own.headers["Accept-Encoding"] = "identity"
        XCTAssertEqual(fields(try PreparedRequest(own, configuration: config)), ["Accept-Encoding: identity"])
    }

    func testURLCredentialsBecomeBasicAuthorizationUnlessTheRequestHasOne() throws {
        var config = PocketClient.Configuration()
        config.defaultHeaders = [:]
        config.decompression = false
        let request = PocketRequest(url: URL(string: "https://ann:s3cret@example.test/")!)
        let prepared = try PreparedRequest(request, configuration: config)
        XCTAssertEqual(fields(prepared), ["Authorization: Basic YW5uOnMzY3JldA=="])
        XCTAssertTrue(prepared.target.https)
        XCTAssertEqual(prepared.target.port, 443)
        var own = request
        own.headers["Authorization"] = "Bearer t"
        XCTAssertEqual(fields(try PreparedRequest(own, configuration: config)), ["Authorization: Bearer t"])
    }

    func testAFormGetsItsContentTypeAndTheBodyIsDescribed() throws {
        var config = PocketClient.Configuration()
        config.defaultHeaders = [:]
        config.decompression = false
        var form = PocketMultipartForm(boundary: "b0undary")
        form.addField("a", "1")
        let request = PocketRequest(method: .post, url: URL(string: "http://example.test/f")!, body: .multipart(form))
        let prepared = try PreparedRequest(request, configuration: config)
        XCTAssertEqual(fields(prepared), ["Content-Type: multipart/form-data; boundary=b0undary"])
        guard case .multipart? = prepared.body else { return XCTFail("the body is the form") }
        XCTAssertFalse(prepared.idempotent, "POST without an Idempotency-Key")
    }

    func testTheOneIdempotencyRule() throws {
        let config = PocketClient.Configuration()
        var post = PocketRequest(method: .post, url: URL(string: "http://example.test/")!)
        XCTAssertFalse(try PreparedRequest(post, configuration: config).idempotent)
        post.headers["Idempotency-Key"] = "k-1"
        XCTAssertTrue(post.isIdempotent)
        XCTAssertTrue(try PreparedRequest(post, configuration: config).idempotent)
        XCTAssertTrue(PocketRetryPolicy().allowsRetry(of: post))
        for method in [PocketMethod.get, .head, .options, .put, .delete, .trace] {
            XCTAssertTrue(PocketRequest(method: method, url: URL(string: "http://example.test/")!).isIdempotent, "\(method)")
        }
        XCTAssertFalse(PocketRequest(method: .patch, url: URL(string: "http://example.test/")!).isIdempotent)
    }

    func testTimeoutsResolveRequestOverClient() throws {
        var config = PocketClient.Configuration()
        config.timeouts = PocketTimeouts(connect: .seconds(1), read: .seconds(2), total: nil)
        var request = PocketRequest(url: URL(string: "http://example.test/")!)
        var engine = try PreparedRequest(request, configuration: config).engineTimeouts
        XCTAssertEqual([engine.connect, engine.read, engine.total], [1000, 2000, 0])
        request.timeouts = PocketTimeouts(connect: .seconds(3), read: .seconds(4), total: .seconds(5))
        engine = try PreparedRequest(request, configuration: config).engineTimeouts
        XCTAssertEqual([engine.connect, engine.read, engine.total], [3000, 4000, 5000])
    }

    func testATaskDeadlineCutsOnlyALongerTotalTimeout() throws {
        let client = PocketTimeouts(connect: .seconds(1), read: .seconds(2), total: nil)
        var request = PocketRequest(url: URL(string: "http://example.test/")!)
        func engine(cap: UInt32) throws -> [UInt32] {
            let t = try PreparedRequest(request, defaultHeaders: PocketHeaders(), decompression: false, timeouts: client,
                                        totalCap: cap).engineTimeouts
            return [t.connect, t.read, t.total]
        }
        XCTAssertEqual(try engine(cap: 0), [1000, 2000, 0], "no deadline")
        XCTAssertEqual(try engine(cap: 700), [1000, 2000, 700], "none of its own: the time left")
        request.timeouts = PocketTimeouts(connect: .seconds(3), read: .seconds(4), total: .seconds(5))
        XCTAssertEqual(try engine(cap: 700), [3000, 4000, 700])
        XCTAssertEqual(try engine(cap: 9000), [3000, 4000, 5000], "its own shorter total stays")
    }

    func testAReplicaMovesTheTargetAndLeavesTheRequest() throws {
        let request = PocketRequest(url: URL(string: "http://svc/x?q=1")!)
        let replica = PocketReplicaEndpoint(scheme: "https", host: "10.0.0.7", port: 8443, address: "10.0.0.8")
        let prepared = try PreparedRequest(request, defaultHeaders: PocketHeaders(), decompression: false, timeouts: PocketTimeouts(),
                                           replica: replica)
        XCTAssertEqual([prepared.https ? "https" : "http", prepared.host, String(prepared.port), prepared.target.pathAndQuery],
                       ["https", "10.0.0.7", "8443", "/x?q=1"])
        XCTAssertEqual(prepared.addresses, "10.0.0.8", "the replica's address")
        XCTAssertEqual([request.target.host, String(request.target.port)], ["svc", "80"], "the request is not moved")
        let direct = try PreparedRequest(request, defaultHeaders: PocketHeaders(), decompression: false, timeouts: PocketTimeouts())
        XCTAssertEqual([direct.https ? "https" : "http", direct.host, String(direct.port)], ["http", "svc", "80"])
        XCTAssertNil(direct.addresses)
    }

    func testURLsTheEngineCannotSendToFailWithTheirOwnCodes() {
        let config = PocketClient.Configuration()
        XCTAssertThrowsError(try PreparedRequest(PocketRequest(url: URL(string: "ftp://example.test/")!), configuration: config)) {
            XCTAssertEqual(($0 as? PocketError)?.code, .unsupportedScheme)
        }
        XCTAssertThrowsError(try PreparedRequest(PocketRequest(url: URL(string: "http:///nohost")!), configuration: config)) {
            XCTAssertEqual(($0 as? PocketError)?.code, .invalidURL)
        }
    }
}

final class EndpointPathTests: XCTestCase {
    /// The endpoint key read from the target is the URL's decoded path,
    /// whatever the URL holds (the events' and observers' key).
    func testEndpointPathIsTheURLsDecodedPath() {
        let urls = ["http://h", "http://h/", "http://h/a/b?x=1&y=%20", "http://h/a%20b?q", "http://h/caf%C3%A9/",
                    "http://h/a;b/c", "http://user:pw@h:81/x/y/", "http+unix://%2Ftmp%2Fs.sock/p?q", "ftp://x/y",
                    "http://h?only=query", "https://[::1]:8443/v6/path", "http://h/%3F?x"]
        for string in urls {
            let url = URL(string: string)!
            XCTAssertEqual(PocketRequest(url: url).endpointPath, url.path(percentEncoded: false), string)
        }
    }
}
