import Foundation
import XCTest
@testable import Pocket
import PocketTestSupport

/// `curlCommand` output, checked against curl itself on the test server.
final class CurlCommandTests: XCTestCase {
    func testCommandLines() throws {
        var post = try PocketRequest(method: .post, "http://127.0.0.1:8080/items?q=a%20b")
        post.headers["Content-Type"] = "application/json"
        post.headers["Authorization"] = "Bearer s3cret"
        post.body = .text(#"{"name":"it's"}"#)
        XCTAssertEqual(post.curlCommand(),
                       #"curl -X 'POST' 'http://127.0.0.1:8080/items?q=a%20b' -H 'Content-Type: application/json' -H 'Authorization: Bearer s3cret' --data-binary '{"name":"it'\''s"}'"#)
        XCTAssertEqual(post.curlCommand(redacting: ["authorization"]),
                       #"curl -X 'POST' 'http://127.0.0.1:8080/items?q=a%20b' -H 'Content-Type: application/json' -H 'Authorization: <redacted>' --data-binary '{"name":"it'\''s"}'"#)
        XCTAssertEqual(try PocketRequest("http://h/x").curlCommand(), "curl 'http://h/x'")
        XCTAssertEqual(try PocketRequest(method: .head, "http://h/x").curlCommand(), "curl --head 'http://h/x'")
        XCTAssertEqual(try PocketRequest(method: .post, "http://h/x", body: .bytes(Data([0, 1, 0xFF]))).curlCommand(),
                       #"printf '\0\1\377' | curl -X 'POST' 'http://h/x' --data-binary @-"#)
        XCTAssertEqual(try PocketRequest(method: .put, "http://h/x", body: .file(URL(filePath: "/tmp/a b"))).curlCommand(),
                       "curl -X 'PUT' 'http://h/x' --data-binary '@/tmp/a b'")
        let stream = AsyncStream<Data> { $0.finish() }
        XCTAssertEqual(try PocketRequest(method: .post, "http://h/x", body: .stream(stream, length: nil)).curlCommand(),
                       "curl -X 'POST' 'http://h/x' # body: stream (one-shot, not shown)")
    }

    func testMultipartFormBecomesCurlFormOptions() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/upload") { _ in .text("ok") }
        let file = FileManager.default.temporaryDirectory.appending(path: "curl-form-\(UUID().uuidString).txt")
        try Data("file body\n".utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        var form = PocketMultipartForm()
        form.addField("title", "it's here")
        form.addFile("doc", at: file, fileName: "notes.txt", contentType: "text/plain")
        form.addData("blob", Data([0, 1, 2]), fileName: "b.bin")
        var request = PocketRequest(method: .post, url: url(server, "/upload"))
        request.body = .multipart(form)
        let command = request.curlCommand()
        XCTAssertEqual(command, "curl -X 'POST' '\(server.url("/upload"))' --form-string 'title=it'\\''s here' "
                       + "-F 'doc=@\(file.path);filename=\"notes.txt\";type=text/plain' # parts not shown: 'blob' (3 bytes in memory)")
        XCTAssertEqual(try shell(command + " -s -o /dev/null"), 0)
        let got = try XCTUnwrap(server.receivedRequests.last)
        XCTAssertTrue(got.header("Content-Type")?.hasPrefix("multipart/form-data; boundary=") == true)
        let body = String(decoding: got.body, as: UTF8.self)
        XCTAssertTrue(body.contains("name=\"title\"\r\n\r\nit's here\r\n"), body)
        XCTAssertTrue(body.contains("filename=\"notes.txt\"\r\nContent-Type: text/plain\r\n\r\nfile body\n\r\n"), body)
    }

    func testClientCommandAddsDefaultsAndTimeouts() throws {
        let client = try makeClient()
        let request = try PocketRequest("http://h/x", headers: ["User-Agent": "mine"])
        XCTAssertEqual(client.curlCommand(for: request),
                       "curl 'http://h/x' --compressed --connect-timeout 5 --max-time 20 -H 'User-Agent: mine'")
    }

    func testCurlSendsWhatPocketSends() async throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/echo") { _ in .text("ok") }
        let client = try makeClient()
        var request = PocketRequest(method: .post, url: url(server, "/echo?x=1"))
        request.headers["X-Quote"] = "it's \"quoted\" $HOME `date`"
        request.body = .bytes(Data([0x41, 0x00, 0x42, 0x27, 0x0A]))
        _ = try await client.send(request)
        let fromPocket = try XCTUnwrap(server.receivedRequests.last)
        XCTAssertEqual(try shell(client.curlCommand(for: request) + " -s -o /dev/null"), 0)
        let fromCurl = try XCTUnwrap(server.receivedRequests.last)
        XCTAssertEqual(server.requestCount, 2)
        XCTAssertEqual(fromCurl.method, fromPocket.method)
        XCTAssertEqual(fromCurl.target, fromPocket.target)
        XCTAssertEqual(fromCurl.body, fromPocket.body)
        XCTAssertEqual(fromCurl.header("X-Quote"), fromPocket.header("X-Quote"))
        XCTAssertEqual(fromCurl.header("User-Agent"), "Pocket/0.2.0")
    }
}

/// Runs `command` with `/bin/sh -c`; returns its exit status.
private func shell(_ command: String) throws -> Int32 {
    try ChildProcess.run("/bin/sh", ["-c", command]).0.status
}
