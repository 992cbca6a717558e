import CPocketBenchServer
import Foundation
import PocketTestSupport
import XCTest

/// `pocket URL` and its flags, through the built binary against the test server.
final class FetchCommandTests: XCTestCase {
    func testBodyGoesToStdoutByteExact() throws {
        let server = try TestServer()
        defer { server.shutdown() }
        let bytes = (0..<70_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 8) }
        server.route("/bytes") { _ in .response(headers: [("Content-Type", "application/octet-stream")], body: bytes) }
        let run = try PocketBinary.run([server.url("/bytes")])
        XCTAssertEqual(run.status, 0, run.stderrText)
        XCTAssertEqual(Array(run.stdout), bytes)
        XCTAssertEqual(run.stderrText, "", "no progress bar when stderr is not a terminal, no error")
    }

    func testChunkedBodyToStdout() throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/c") { _ in .chunked(chunks: [Array("one,".utf8), Array("two,".utf8), Array("three".utf8)]) }
        let run = try PocketBinary.run([server.url("/c")])
        XCTAssertEqual(run.status, 0, run.stderrText)
        XCTAssertEqual(run.stdoutText, "one,two,three")
    }

    func testMethodAndRepeatedHeadersAndRemovedDefault() throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/h") { _ in .text("ok") }
        let run = try PocketBinary.run(["-X", "PATCH", "-H", "X-Tag: one", "-H", "X-Tag: two", "-H", "User-Agent:",
                                        "-H", "X-Empty;", server.url("/h")])
        XCTAssertEqual(run.status, 0, run.stderrText)
        let request = try XCTUnwrap(server.receivedRequests.last)
        XCTAssertEqual(request.method, "PATCH")
        XCTAssertEqual(request.headerValues("X-Tag"), ["one", "two"])
        XCTAssertNil(request.header("User-Agent"), "'User-Agent:' removes the default field")
        XCTAssertEqual(request.header("X-Empty"), "", "'X-Empty;' sends the field empty")
    }

    func testDataFlagsJoinAndSetFormType() throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/d") { _ in .text("ok") }
        let dir = try PocketBinary.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let lines = dir.appendingPathComponent("lines.txt")
        try Data("c=3\r\nd=4\n".utf8).write(to: lines)
        let run = try PocketBinary.run(["-d", "a=1", "-d", "b=2", "-d", "@\(lines.path)", server.url("/d")])
        XCTAssertEqual(run.status, 0, run.stderrText)
        let request = try XCTUnwrap(server.receivedRequests.last)
        XCTAssertEqual(request.method, "POST")
        XCTAssertEqual(request.bodyText, "a=1&b=2&c=3d=4", "-d parts joined with &, CR and LF of @file dropped")
        XCTAssertEqual(request.header("Content-Type"), "application/x-www-form-urlencoded")
        XCTAssertEqual(request.header("Content-Length"), "14")
    }

    func testDataFromStdin() throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/d") { _ in .text("ok") }
        let run = try PocketBinary.run(["--data-binary", "@-", "-H", "Content-Type: text/plain", server.url("/d")],
                                       stdin: Data("from\nstdin".utf8))
        XCTAssertEqual(run.status, 0, run.stderrText)
        let request = try XCTUnwrap(server.receivedRequests.last)
        XCTAssertEqual(request.bodyText, "from\nstdin")
        XCTAssertEqual(request.header("Content-Type"), "text/plain", "-H replaces the body's Content-Type")
    }

    func testDataBinaryFileIsSentWhole() throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.keepsRequestBodies = false
        server.route("/up") { _ in .text("stored") }
        let dir = try PocketBinary.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("blob.bin")
        let bytes = Data((0..<(1 << 20) + 17).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 9) })
        try bytes.write(to: file)
        let run = try PocketBinary.run(["--data-binary", "@\(file.path)", "-X", "PUT", server.url("/up")])
        XCTAssertEqual(run.status, 0, run.stderrText)
        XCTAssertEqual(run.stdoutText, "stored")
        let request = try XCTUnwrap(server.receivedRequests.last)
        XCTAssertEqual(request.method, "PUT")
        XCTAssertEqual(request.bodyLength, bytes.count)
        XCTAssertEqual(request.bodySHA256, SHA256Digest.hex(Array(bytes)))
        XCTAssertEqual(request.header("Content-Length"), String(bytes.count))
    }

    func testJSONSetsHeaders() throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/j") { r in .text(r.bodyText, headers: [("Content-Type", "application/json")]) }
        let run = try PocketBinary.run(["--json", #"{"name":"pocket"}"#, server.url("/j")])
        XCTAssertEqual(run.status, 0, run.stderrText)
        XCTAssertEqual(run.stdoutText, #"{"name":"pocket"}"#)
        let request = try XCTUnwrap(server.receivedRequests.last)
        XCTAssertEqual(request.method, "POST")
        XCTAssertEqual(request.header("Content-Type"), "application/json")
        XCTAssertEqual(request.header("Accept"), "application/json")
    }

    func testIncludePrintsHeadThenBody() throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/i") { _ in .response(status: 201, headers: [("X-Test", "yes"), ("Content-Type", "text/plain")], body: Array("body".utf8)) }
        let run = try PocketBinary.run(["-i", server.url("/i")])
        XCTAssertEqual(run.status, 0, run.stderrText)
        XCTAssertEqual(run.stdoutText, "HTTP/1.1 201 Created\r\nX-Test: yes\r\nContent-Type: text/plain\r\nContent-Length: 4\r\n\r\nbody")
    }

    func testDumpHeaderWritesHeadToFileAndBodyToStdout() throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/i") { _ in .response(headers: [("X-Test", "yes")], body: Array("body".utf8)) }
        let dir = try PocketBinary.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let headFile = dir.appendingPathComponent("head.txt")
        let run = try PocketBinary.run(["-D", headFile.path, server.url("/i")])
        XCTAssertEqual(run.status, 0, run.stderrText)
        XCTAssertEqual(run.stdoutText, "body")
        XCTAssertEqual(try String(contentsOf: headFile, encoding: .utf8), "HTTP/1.1 200 OK\r\nX-Test: yes\r\nContent-Length: 4\r\n\r\n")
    }

    func testHeadSendsHEADAndPrintsHead() throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/h") { _ in .response(headers: [("X-Size", "big")], body: Array("not sent for HEAD".utf8)) }
        let run = try PocketBinary.run(["-I", server.url("/h")])
        XCTAssertEqual(run.status, 0, run.stderrText)
        XCTAssertEqual(server.receivedRequests.last?.method, "HEAD")
        XCTAssertEqual(run.stdoutText, "HTTP/1.1 200 OK\r\nX-Size: big\r\nContent-Length: 17\r\n\r\n")
    }

    func testWriteOutVariables() throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/w") { _ in .response(headers: [("Content-Type", "text/plain")], body: Array("Hello, World!".utf8)) }
        let format = "%{http_code} %{http_version} %{size_download} %{size_header} %{size_upload} %{content_type} "
            + "%{num_connects} %{exitcode} 100%% %{time_total} %{time_connect} %{time_starttransfer} %{speed_download}\\n"
        let run = try PocketBinary.run(["-d", "12345", "-w", format, server.url("/w")])
        XCTAssertEqual(run.status, 0, run.stderrText)
        XCTAssertTrue(run.stdoutText.hasPrefix("Hello, World!"), run.stdoutText)
        let fields = run.stdoutText.dropFirst(13).dropLast().split(separator: " ").map(String.init)
        XCTAssertEqual(Array(fields.prefix(9)), ["200", "1.1", "13", "65", "5", "text/plain", "1", "0", "100%"])
        for time in fields[9..<12] {
            XCTAssertNotNil(time.wholeMatch(of: /[0-9]+\.[0-9]{6}/), "seconds with six decimals: \(time)")
        }
        XCTAssertNotNil(Int(fields[12]), "speed is whole bytes per second: \(fields[12])")
        XCTAssertTrue(run.stdoutText.hasSuffix("\n"))
    }

    func testWriteOutOnFailureAndUnknownVariable() throws {
        let port = try closedPort()
        let failed = try PocketBinary.run(["-s", "-w", "%{http_code} %{exitcode}", "http://127.0.0.1:\(port)/"])
        XCTAssertEqual(failed.status, 7)
        XCTAssertEqual(failed.stdoutText, "000 7")
        // As curl: an unknown variable is warned about and left out; the transfer goes on.
        let bad = try PocketBinary.run(["-s", "-w", "[%{no_such_thing}]%{exitcode}", "http://127.0.0.1:\(port)/"])
        XCTAssertEqual(bad.status, 7)
        XCTAssertEqual(bad.stdoutText, "[]7")
        XCTAssertEqual(bad.stderrLines, ["pocket: unknown --write-out variable: 'no_such_thing'"])
    }

    func testVerboseShowsBothHeadsAndTimingsOnStderr() throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/v") { _ in .text("fine") }
        let run = try PocketBinary.run(["-v", "-H", "X-Mine: 1", server.url("/v")])
        XCTAssertEqual(run.status, 0, run.stderrText)
        XCTAssertEqual(run.stdoutText, "fine")
        var lines = run.stderrLines
        // A new client says how it writes: io_uring, or epoll where the kernel refuses it or the environment asks.
        let backend = lines.isEmpty ? "" : lines.removeFirst()
        if ProcessInfo.processInfo.environment["POCKET_IO_BACKEND"] == "epoll" {
            XCTAssertEqual(backend, "* I/O: epoll (one send per write)")
        } else {
            XCTAssertTrue(["* I/O: io_uring (a loop pass's request writes share one system call)",
                           "* I/O: epoll (one send per write)"].contains(backend), backend)
        }
        XCTAssertEqual(lines.first, "> GET /v HTTP/1.1")
        XCTAssertTrue(lines.contains("> Host: 127.0.0.1:\(server.port)"), run.stderrText)
        XCTAssertTrue(lines.contains("> X-Mine: 1"), run.stderrText)
        XCTAssertTrue(lines.contains("< HTTP/1.1 200 OK"), run.stderrText)
        XCTAssertTrue(lines.contains("< Content-Type: text/plain; charset=utf-8"), run.stderrText)
        XCTAssertTrue(lines.last?.hasPrefix("* timings: dns ") ?? false, run.stderrText)
    }

    func testCompressedAsksForGzipAndDecodes() throws {
        let server = try TestServer()
        defer { server.shutdown() }
        let text = String(repeating: "Pocket decodes what the server compressed. ", count: 200)
        let gzip = Self.gzip(Array(text.utf8))
        server.route("/z") { r in
            if r.header("Accept-Encoding")?.contains("gzip") == true {
                return .response(headers: [("Content-Encoding", "gzip"), ("Content-Type", "text/plain")], body: gzip)
            }
            return .text(text)
        }
        let decoded = try PocketBinary.run(["--compressed", server.url("/z")])
        XCTAssertEqual(decoded.status, 0, decoded.stderrText)
        XCTAssertEqual(decoded.stdoutText, text)
        XCTAssertEqual(server.receivedRequests.last?.header("Accept-Encoding"), "gzip, deflate")
        let plain = try PocketBinary.run([server.url("/z")])
        XCTAssertEqual(plain.stdoutText, text)
        XCTAssertNil(server.receivedRequests.last?.header("Accept-Encoding"), "without --compressed nothing is asked for")
    }

    func testCompressedDownloadIsDecodedIntoTheFile() throws {
        let server = try TestServer()
        defer { server.shutdown() }
        let text = String(repeating: "saved decoded ", count: 500)
        let gzip = Self.gzip(Array(text.utf8))
        server.route("/z") { r in
            r.header("Accept-Encoding")?.contains("gzip") == true
                ? .response(headers: [("Content-Encoding", "gzip")], body: gzip) : .text(text)
        }
        let dir = try PocketBinary.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = dir.appendingPathComponent("z.txt")
        let run = try PocketBinary.run(["--compressed", "-o", out.path, server.url("/z")])
        XCTAssertEqual(run.status, 0, run.stderrText)
        XCTAssertEqual(server.receivedRequests.last?.header("Accept-Encoding"), "gzip, deflate")
        XCTAssertEqual(try String(contentsOf: out, encoding: .utf8), text)
        let plain = try PocketBinary.run(["-o", out.path, server.url("/z")])
        XCTAssertEqual(plain.status, 0, plain.stderrText)
        XCTAssertEqual(server.receivedRequests.last?.header("Accept-Encoding"), "identity", "a download asks for the resumable form")
    }

    func testURLWithoutSchemeIsHTTP() throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/plain") { _ in .text("no scheme needed") }
        let run = try PocketBinary.run(["127.0.0.1:\(server.port)/plain"])
        XCTAssertEqual(run.status, 0, run.stderrText)
        XCTAssertEqual(run.stdoutText, "no scheme needed")
    }

    func testSilentAndShowError() throws {
        let port = try closedPort()
        let loud = try PocketBinary.run(["http://127.0.0.1:\(port)/"])
        XCTAssertEqual(loud.status, 7)
        XCTAssertEqual(loud.stderrLines.count, 1, loud.stderrText)
        let silent = try PocketBinary.run(["-s", "http://127.0.0.1:\(port)/"])
        XCTAssertEqual(silent.status, 7)
        XCTAssertEqual(silent.stderrText, "")
        let shown = try PocketBinary.run(["-sS", "http://127.0.0.1:\(port)/"])
        XCTAssertEqual(shown.status, 7)
        XCTAssertEqual(shown.stderrLines, loud.stderrLines)
    }

    // MARK: helpers

    static func gzip(_ bytes: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: bytes.count + 1024)
        let n = bytes.withUnsafeBytes { src in
            out.withUnsafeMutableBytes { pkbs_gzip(src.baseAddress, src.count, $0.baseAddress, $0.count) }
        }
        return Array(out[..<n])
    }
}

/// A loopback port nothing listens on (bound, then closed).
func closedPort() throws -> Int {
    let server = try TestServer()
    let port = server.port
    server.shutdown()
    return port
}
