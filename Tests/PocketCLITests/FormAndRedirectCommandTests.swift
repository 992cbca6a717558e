import Foundation
import PocketTestSupport
import XCTest

/// `pocket -F` (multipart, read back by an independent parser) and `-L`/`--max-redirs`.
final class FormAndRedirectCommandTests: XCTestCase {
    func testFormFieldsFilesAndModifiers() throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/upload") { _ in .text("stored") }
        let dir = try PocketBinary.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let photo = dir.appendingPathComponent("beach.jpg")
        let photoBytes = (0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ $0 >> 9) }
        try Data(photoBytes).write(to: photo)
        let note = dir.appendingPathComponent("note.txt")
        try Data("from a file".utf8).write(to: note)

        let run = try PocketBinary.run([
            "-F", "title=Holiday; day one", "-F", "photo=@\(photo.path)",
            "-F", "raw=@\(photo.path);type=application/x-raw;filename=\"r.bin\"",
            "-F", "note=<\(note.path)", "-F", "meta={\"a\":1};type=application/json",
            "-w", "%{size_upload}", server.url("/upload"),
        ])
        XCTAssertEqual(run.status, 0, run.stderrText)
        let request = try XCTUnwrap(server.receivedRequests.last)
        XCTAssertEqual(request.method, "POST")
        XCTAssertEqual(run.stdoutText, "stored\(request.bodyLength)", "size_upload is the form's exact size")
        XCTAssertEqual(request.header("Content-Length"), String(request.bodyLength), "every size known: not chunked")
        let contentType = try XCTUnwrap(request.header("Content-Type"))
        XCTAssertTrue(contentType.hasPrefix("multipart/form-data; boundary="), contentType)
        let form = try IndependentMultipartParser.parse(request.body, contentType: contentType)
        XCTAssertEqual(form.defects, [])
        XCTAssertEqual(form.parts.map(\.name), ["title", "photo", "raw", "note", "meta"])
        XCTAssertEqual(form.parts[0].data, Data("Holiday; day one".utf8), "a ';' not followed by a modifier is content")
        XCTAssertNil(form.parts[0].filename)
        XCTAssertEqual(form.parts[1].filename, "beach.jpg")
        XCTAssertEqual(form.parts[1].header("Content-Type"), "image/jpeg")
        XCTAssertEqual(form.parts[1].sha256, SHA256Digest.hex(photoBytes))
        XCTAssertEqual(form.parts[2].filename, "r.bin")
        XCTAssertEqual(form.parts[2].header("Content-Type"), "application/x-raw")
        XCTAssertEqual(form.parts[3].data, Data("from a file".utf8))
        XCTAssertNil(form.parts[3].filename, "<FILE is a field, not a file part")
        XCTAssertEqual(form.parts[4].header("Content-Type"), "application/json")
        XCTAssertEqual(form.parts[4].data, Data("{\"a\":1}".utf8))
    }

    func testFormErrors() throws {
        let server = try TestServer()
        defer { server.shutdown() }
        let missing = try PocketBinary.run(["-F", "f=@/nonexistent/file.bin", server.url("/")])
        XCTAssertEqual(missing.status, 26, "a file part that cannot be read is a local read error")
        XCTAssertTrue(missing.stderrText.contains("/nonexistent/file.bin"), missing.stderrText)
        let mixed = try PocketBinary.run(["-F", "a=1", "-d", "b=2", server.url("/")])
        XCTAssertEqual(mixed.status, 64)
        let noName = try PocketBinary.run(["-F", "=x", server.url("/")])
        XCTAssertEqual(noName.status, 64)
        XCTAssertEqual(server.requestCount, 0, "nothing sent")
    }

    func testRedirectsAreAnswersUnlessLocation() throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/old") { _ in .response(status: 302, headers: [("Location", "/new")], body: Array("moved".utf8)) }
        server.route("/new") { request in .text("new \(request.method)") }

        let plain = try PocketBinary.run(["-i", server.url("/old")])
        XCTAssertEqual(plain.status, 0, plain.stderrText)
        XCTAssertTrue(plain.stdoutText.hasPrefix("HTTP/1.1 302"), plain.stdoutText)
        XCTAssertTrue(plain.stdoutText.hasSuffix("moved"))

        let followed = try PocketBinary.run(["-L", "-d", "x=1", "-w", " %{http_code}", server.url("/old")])
        XCTAssertEqual(followed.status, 0, followed.stderrText)
        XCTAssertEqual(followed.stdoutText, "new GET 200", "302 turns the POST into a GET")
        XCTAssertEqual(server.receivedRequests.map(\.path), ["/old", "/old", "/new"])
    }

    func testMaxRedirsAndLoops() throws {
        let server = try TestServer()
        defer { server.shutdown() }
        for i in 0..<5 {
            server.route("/r\(i)") { _ in .response(status: 301, headers: [("Location", "/r\(i + 1)")]) }
        }
        server.route("/r5") { _ in .text("end") }
        server.route("/loop") { _ in .response(status: 307, headers: [("Location", "/loop")]) }

        let enough = try PocketBinary.run(["-L", "--max-redirs", "5", server.url("/r0")])
        XCTAssertEqual(enough.status, 0, enough.stderrText)
        XCTAssertEqual(enough.stdoutText, "end")
        let tooMany = try PocketBinary.run(["-L", "--max-redirs", "4", server.url("/r0")])
        XCTAssertEqual(tooMany.status, 47, tooMany.stderrText)
        XCTAssertTrue(tooMany.stderrText.contains("too_many_redirects"), tooMany.stderrText)
        XCTAssertEqual(tooMany.stdoutText, "", "no body of a hop is printed")
        let loop = try PocketBinary.run(["-L", "--max-redirs", "-1", server.url("/loop")])
        XCTAssertEqual(loop.status, 47, loop.stderrText)
        XCTAssertTrue(loop.stderrText.contains("redirect_loop"), loop.stderrText)
    }

    /// `-L` never follows a server into a local socket: exit 47, nothing
    /// printed, the socket's service receives nothing (GET and a 307 POST).
    func testLocationIntoAUnixSocketIsRefused() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pocket-cli-unix-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("api.sock").path
        let unix = try TestServer(unixSocketPath: path)
        defer { unix.shutdown() }
        unix.defaultHandler = { _ in .text("local service") }
        let web = try TestServer()
        defer { web.shutdown() }
        let socket = path.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        web.route("/get") { _ in .response(status: 302, headers: [("Location", "http+unix://\(socket)/v1.43/containers/json")]) }
        web.route("/post") { _ in .response(status: 307, headers: [("Location", "http+unix://\(socket)/v1.43/containers/create")]) }
        for args in [["-L", web.url("/get")], ["-L", "--data-binary", "{\"Image\":\"alpine\"}", web.url("/post")]] {
            let run = try PocketBinary.run(args)
            XCTAssertEqual(run.status, 47, run.stderrText)
            XCTAssertTrue(run.stderrText.contains("forbidden_redirect"), run.stderrText)
            XCTAssertEqual(run.stdoutText, "")
        }
        XCTAssertEqual(unix.requestCount, 0, "nothing reached the Unix socket")
    }
}
