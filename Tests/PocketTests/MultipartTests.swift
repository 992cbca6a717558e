import Foundation
import XCTest
@testable import Pocket
import PocketTestSupport

/// Multipart form uploads (`PocketRequestBody.multipart`): every body the test
/// server receives is parsed by an independent parser (Python's `email`,
/// IndependentMultipartParser) and checked field by field, header by header,
/// byte by byte.
final class MultipartTests: XCTestCase {
    private var server: TestServer!
    private var directory: URL!

    override func setUpWithError() throws {
        let server = try TestServer()
        server.route("/form") { r in .text("\(r.bodyLength) \(r.bodySHA256)") }
        self.server = server
        directory = try temporaryDirectory("pocket-mp", shuttingDown: server)
    }

    // MARK: helpers

    private func sha(_ bytes: [UInt8]) -> String {
        let h = SHA256Hasher()
        h.update(bytes)
        return h.finalizeHex()
    }

    private func patternFile(_ name: String, _ size: Int, seed: UInt64 = 7) throws -> URL {
        try writePatternFile(directory.appendingPathComponent(name), size, seed: seed)
    }


    /// Sends `form` to /form; returns the response, the request as the
    /// server received it and the independent parse of its body.
    private func send(_ form: PocketMultipartForm, method: PocketMethod = .post, client: PocketClient? = nil,
                      progress: PocketProgressHandler? = nil) async throws
        -> (PocketResponse, TestServer.Request, IndependentMultipartParser.Form) {
        let r = try await (client ?? makeClient()).send(PocketRequest(method: method, url: url(server, "/form"), body: .multipart(form)),
                                                         progress: progress)
        XCTAssertEqual(r.status, 200)
        let received = try XCTUnwrap(server.receivedRequests.last)
        XCTAssertEqual(r.text, "\(received.bodyLength) \(received.bodySHA256)")
        let contentType = try XCTUnwrap(received.header("Content-Type"))
        XCTAssertEqual(contentType, form.contentType)
        let parsed = try IndependentMultipartParser.parse(received.body, contentType: contentType)
        XCTAssertTrue(parsed.multipart)
        XCTAssertEqual(parsed.defects, [])
        for part in parsed.parts { XCTAssertEqual(part.defects, [], part.name) }
        // The close delimiter ends the body, nothing after it.
        XCTAssertTrue(received.bodyText.hasSuffix("--\(form.boundary)--\r\n"))
        return (r, received, parsed)
    }

    private func assertContent(_ part: IndependentMultipartParser.Part, _ bytes: [UInt8],
                               file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(part.length, bytes.count, part.name, file: file, line: line)
        XCTAssertEqual(part.sha256, sha(bytes), part.name, file: file, line: line)
    }

    // MARK: encoding

    func testFieldsOnlyAreSentWithContentLength() async throws {
        var form = PocketMultipartForm()
        form.addField("title", "Holiday")
        form.addField("city", "Zürich ∑ 😀")
        form.addField("lines", "one\r\ntwo\nthree\r\n")
        XCTAssertTrue(form.isReplayable)
        let (_, received, parsed) = try await send(form)
        XCTAssertEqual(received.header("Content-Length"), String(received.bodyLength))
        XCTAssertNil(received.header("Transfer-Encoding"))
        XCTAssertEqual(parsed.parts.map(\.name), ["title", "city", "lines"])
        XCTAssertEqual(parsed.parts.map { $0.data.map { String(decoding: $0, as: UTF8.self) } },
                       ["Holiday", "Zürich ∑ 😀", "one\r\ntwo\nthree\r\n"])
        for part in parsed.parts {
            // A text field: Content-Disposition only (text/plain implied, RFC 7578 §4.4).
            XCTAssertEqual(part.headers.map { $0[0] }, ["Content-Disposition"])
            XCTAssertEqual(part.header("Content-Disposition"), "form-data; name=\"\(part.name)\"")
            XCTAssertNil(part.filename)
        }
    }

    func testOneFilePartWithInferredNameAndType() async throws {
        let size = 3 << 20 | 17
        let file = try patternFile("photo.PNG", size)
        var form = PocketMultipartForm()
        form.addFile("photo", at: file)
        let (_, received, parsed) = try await send(form)
        XCTAssertEqual(received.header("Content-Length"), String(received.bodyLength))
        let part = try XCTUnwrap(parsed.parts.first)
        XCTAssertEqual(parsed.parts.count, 1)
        XCTAssertEqual(part.name, "photo")
        XCTAssertEqual(part.filename, "photo.PNG")
        XCTAssertEqual(part.headers.map { $0[0] }, ["Content-Disposition", "Content-Type"])
        XCTAssertEqual(part.header("Content-Type"), "image/png")
        XCTAssertEqual(part.length, size)
        XCTAssertEqual(part.sha256, BytePattern.sha256(seed: 7, size: size))

        // Both overridable; an unknown extension is application/octet-stream.
        var other = PocketMultipartForm()
        other.addFile("doc", at: file, fileName: "report.v2", contentType: "application/x-report")
        other.addFile("raw", at: try patternFile("data.weird", 1000, seed: 3))
        let (_, _, again) = try await send(other)
        XCTAssertEqual(again.parts.map(\.filename), ["report.v2", "data.weird"])
        XCTAssertEqual(again.parts.map { $0.header("Content-Type") }, ["application/x-report", "application/octet-stream"])
        XCTAssertEqual(again.parts[0].sha256, BytePattern.sha256(seed: 7, size: size))
        assertContent(again.parts[1], BytePattern.bytes(seed: 3, range: 0..<1000))
    }

    func testHundredPartsOfEveryKind() async throws {
        var files: [URL] = []
        for i in 0..<3 { files.append(try patternFile("f\(i).txt", 10_000 * (i + 1), seed: UInt64(100 + i))) }
        var form = PocketMultipartForm()
        var expected: [(name: String, type: String?, fileName: String?, bytes: [UInt8])] = []
        for i in 0..<100 {
            let name = "p\(i)"
            switch i % 4 {
            case 0:
                form.addField(name, "value \(i)")
                expected.append((name, nil, nil, Array("value \(i)".utf8)))
            case 1:
                let bytes = BytePattern.bytes(seed: UInt64(i), range: 0..<(i * 37))
                form.addData(name, Data(bytes))
                expected.append((name, "application/octet-stream", nil, bytes))
            case 2:
                let f = i % 3
                form.addFile(name, at: files[f])
                expected.append((name, "text/plain", "f\(f).txt", BytePattern.bytes(seed: UInt64(100 + f), range: 0..<(10_000 * (f + 1)))))
            default:
                let bytes = Array("{\"i\":\(i)}".utf8)
                form.addData(name, Data(bytes), fileName: "d\(i).json")
                expected.append((name, "application/json", "d\(i).json", bytes))
            }
        }
        let (_, _, parsed) = try await send(form, method: .put)
        XCTAssertEqual(parsed.parts.count, 100)
        for (part, want) in zip(parsed.parts, expected) {
            XCTAssertEqual(part.name, want.name)
            XCTAssertEqual(part.header("Content-Type"), want.type, want.name)
            XCTAssertEqual(part.filename, want.fileName, want.name)
            assertContent(part, want.bytes)
        }
    }

    func testEmptyPartsOfEveryKind() async throws {
        let empty = directory.appendingPathComponent("empty.bin")
        XCTAssertTrue(FileManager.default.createFile(atPath: empty.path, contents: Data()))
        var form = PocketMultipartForm()
        form.addField("field", "")
        form.addData("data", Data(), fileName: "nothing.txt")
        form.addFile("file", at: empty)
        form.addStream("stream", AsyncStream<Data> { $0.finish() }, length: 0)
        form.addField("after", "x")
        let (_, received, parsed) = try await send(form)
        XCTAssertNotNil(received.header("Content-Length"))
        XCTAssertEqual(parsed.parts.map(\.name), ["field", "data", "file", "stream", "after"])
        XCTAssertEqual(parsed.parts.map(\.length), [0, 0, 0, 0, 1])
        XCTAssertEqual(parsed.parts.map(\.filename), [nil, "nothing.txt", "empty.bin", nil, nil])
        XCTAssertEqual(parsed.parts[4].data, Data("x".utf8))

        // The same parts in a chunked form (a stream without length): empty
        // segments send no chunk (a zero-size chunk would end the body).
        var chunked = PocketMultipartForm()
        chunked.addStream("unknown", AsyncStream<Data> { $0.finish() }, length: nil)
        chunked.addFile("file", at: empty)
        chunked.addData("data", Data())
        chunked.addStream("last", AsyncStream<Data> { c in
            c.yield(Data())
            c.yield(Data("z".utf8))
            c.finish()
        }, length: nil)
        let (_, chunkedReceived, chunkedParsed) = try await send(chunked)
        XCTAssertEqual(chunkedReceived.header("Transfer-Encoding"), "chunked")
        XCTAssertEqual(chunkedParsed.parts.map(\.name), ["unknown", "file", "data", "last"])
        XCTAssertEqual(chunkedParsed.parts.map(\.length), [0, 0, 0, 1])

        // A form without parts is the close delimiter alone (as browsers send it).
        let nothing = PocketMultipartForm()
        let r = try await makeClient().send(PocketRequest(method: .post, url: url(server, "/form"), body: .multipart(nothing)))
        XCTAssertEqual(r.status, 200)
        XCTAssertEqual(server.receivedRequests.last?.bodyText, "--\(nothing.boundary)--\r\n")
    }

    func testStreamPartOfUnknownLengthMakesTheFormChunked() async throws {
        let file = try patternFile("middle.bin", 1 << 20 | 3, seed: 11)
        var form = PocketMultipartForm()
        form.addField("before", "1")
        form.addStream("log", patternStream(2 << 20 | 5, seed: 5), length: nil, fileName: "app.log")
        form.addFile("middle", at: file)
        form.addStream("known", patternStream(300_001, seed: 6, chunk: 65_536), length: 300_001)
        form.addField("after", "2")
        XCTAssertFalse(form.isReplayable)
        XCTAssertFalse(PocketRequestBody.multipart(form).isReplayable)
        let (_, received, parsed) = try await send(form)
        XCTAssertEqual(received.header("Transfer-Encoding"), "chunked")
        XCTAssertNil(received.header("Content-Length"))
        XCTAssertEqual(parsed.parts.map(\.name), ["before", "log", "middle", "known", "after"])
        XCTAssertEqual(parsed.parts[1].header("Content-Type"), "text/plain")
        XCTAssertEqual(parsed.parts[1].sha256, BytePattern.sha256(seed: 5, size: 2 << 20 | 5))
        XCTAssertEqual(parsed.parts[2].sha256, BytePattern.sha256(seed: 11, size: 1 << 20 | 3))
        XCTAssertEqual(parsed.parts[3].sha256, BytePattern.sha256(seed: 6, size: 300_001))
        XCTAssertEqual(parsed.parts[3].header("Content-Type"), "application/octet-stream")
        XCTAssertEqual(parsed.parts[4].data, Data("2".utf8))
    }

    func testStreamPartWithLengthKeepsContentLengthAndMustMatchIt() async throws {
        var form = PocketMultipartForm()
        form.addStream("s", patternStream(500_000, seed: 9), length: 500_000)
        let (_, received, parsed) = try await send(form)
        XCTAssertEqual(received.header("Content-Length"), String(received.bodyLength))
        XCTAssertEqual(parsed.parts[0].sha256, BytePattern.sha256(seed: 9, size: 500_000))

        for wrong in [499_999, 500_001] {
            var bad = PocketMultipartForm()
            bad.addField("a", "b")
            bad.addStream("s", patternStream(500_000, seed: 9), length: wrong)
            await assertPocketError(.requestBodyLengthMismatch) {
                try await makeClient().send(PocketRequest(method: .post, url: url(self.server, "/form"), body: .multipart(bad)))
            }
        }
    }

    func testNamesAndFileNamesWithQuotesBackslashesLineBreaksAndUTF8() async throws {
        var form = PocketMultipartForm()
        form.addData("say \"hi\"\\", Data("x".utf8), fileName: "\"quoted\" ünïcødé\r\n€.txt")
        form.addField("tab\there", "y")
        let (_, _, parsed) = try await send(form)
        // `"` CR LF and `\` percent-encoded, UTF-8 as-is, no filename* (RFC 7578 §4.2).
        XCTAssertEqual(parsed.parts[0].header("Content-Disposition"),
                       "form-data; name=\"say %22hi%22%5C\"; filename=\"%22quoted%22 ünïcødé%0D%0A€.txt\"")
        XCTAssertEqual(parsed.parts[0].name, "say %22hi%22%5C")
        XCTAssertEqual(parsed.parts[0].filename, "%22quoted%22 ünïcødé%0D%0A€.txt")
        XCTAssertEqual(parsed.parts[0].header("Content-Type"), "text/plain")
        XCTAssertEqual(parsed.parts[1].name, "tab\there")
        XCTAssertEqual(parsed.parts.count, 2)
    }

    func testDataThatContainsTheBoundaryPrefixOrTheBoundaryItself() async throws {
        var form = PocketMultipartForm()
        let original = form.boundary
        XCTAssertTrue(original.hasPrefix("pocket-"))
        XCTAssertEqual(original.utf8.count, 39)
        // Delimiter look-alikes: the prefix, a near miss, dashes at line starts.
        let tricky = Array("\r\n--pocket-\r\n--\(original.dropLast())\r\n----\r\n--\r\n".utf8)
        form.addData("tricky", Data(tricky))
        XCTAssertEqual(form.boundary, original)
        // The boundary itself in a data part: a new one is drawn.
        let collision = Array("abc\r\n--\(original)\r\nxyz".utf8)
        form.addData("collision", Data(collision))
        XCTAssertNotEqual(form.boundary, original)
        let (_, _, parsed) = try await send(form)
        XCTAssertEqual(parsed.parts.count, 2)
        assertContent(parsed.parts[0], tricky)
        assertContent(parsed.parts[1], collision)
    }

    func testCustomBoundaryAndPartHeadersAreCheckedBeforeSending() async throws {
        var fixed = PocketMultipartForm(boundary: "my-boundary")
        fixed.addField("a", "b")
        let (_, received, _) = try await send(fixed)
        XCTAssertEqual(received.header("Content-Type"), "multipart/form-data; boundary=my-boundary")
        let sent = server.requestCount

        var clash = PocketMultipartForm(boundary: "my-boundary")
        clash.addData("d", Data("--my-boundary".utf8))
        var bad = PocketMultipartForm(boundary: String(repeating: "x", count: 71))
        bad.addField("a", "b")
        var quote = PocketMultipartForm(boundary: "a\"b")
        quote.addField("a", "b")
        var header = PocketMultipartForm()
        header.addField("a", "b", headers: ["X-Evil": "1\r\nContent-Type: text/html"])
        var headerName = PocketMultipartForm()
        headerName.addField("a", "b", headers: ["Bad Name": "1"])
        var type = PocketMultipartForm()
        type.addData("a", Data(), contentType: "text/plain\r\nX: y")
        // A token, but its line would read as a delimiter and split the part
        // (found by fuzz/swift FuzzMultipart).
        var delimiterName = PocketMultipartForm(boundary: "x")
        delimiterName.addField("a", "b", headers: ["--x": "1"])
        for form in [clash, bad, quote, header, headerName, type, delimiterName] {
            await assertPocketError(.invalidMultipartForm) {
                try await makeClient().send(PocketRequest(method: .post, url: url(self.server, "/form"), body: .multipart(form)))
            }
        }
        XCTAssertEqual(server.requestCount, sent) // nothing went out
    }

    func testCustomHeadersPerPartAndOverrides() async throws {
        var form = PocketMultipartForm()
        form.addData("meta", Data("{}".utf8), fileName: "m.json",
                     headers: ["X-Checksum": "abc123", "Content-Type": "application/vnd.pocket+json"])
        form.addField("plain", "v", headers: ["Content-Disposition": "form-data; name=\"renamed\""])
        var request = PocketRequest(method: .post, url: url(server, "/form"), body: .multipart(form))
        request.headers["X-Request"] = "1"
        let r = try await makeClient().send(request)
        XCTAssertEqual(r.status, 200)
        let received = try XCTUnwrap(server.receivedRequests.last)
        XCTAssertEqual(received.header("X-Request"), "1")
        let parsed = try IndependentMultipartParser.parse(received.body, contentType: try XCTUnwrap(received.header("Content-Type")))
        XCTAssertEqual(parsed.parts[0].headers.map { $0[0] }, ["Content-Disposition", "X-Checksum", "Content-Type"])
        XCTAssertEqual(parsed.parts[0].header("Content-Type"), "application/vnd.pocket+json")
        XCTAssertEqual(parsed.parts[0].header("X-Checksum"), "abc123")
        XCTAssertEqual(parsed.parts[1].headers.map { $0[0] }, ["Content-Disposition"])
        XCTAssertEqual(parsed.parts[1].name, "renamed")

        // The request's own Content-Type wins over the form's.
        var own = PocketRequest(method: .post, url: url(server, "/form"), body: .multipart(form))
        own.headers["Content-Type"] = "multipart/mixed; boundary=\(form.boundary)"
        _ = try await makeClient().send(own)
        XCTAssertEqual(server.receivedRequests.last?.headerValues("Content-Type"), ["multipart/mixed; boundary=\(form.boundary)"])
    }

    func testMIMETypesComeFromTheExtension() {
        var form = PocketMultipartForm()
        for name in ["a.JPG", "b.tar.gz", "c.json", "noext", ".hidden", "d.pdf", "e.unknownext"] {
            form.addFile("f", at: URL(filePath: "/nonexistent/\(name)"))
        }
        form.addData("g", Data())
        form.addData("h", Data(), fileName: "x.csv", contentType: "text/x-mine")
        form.addField("i", "v")
        XCTAssertEqual(form.parts.map(\.contentType),
                       ["image/jpeg", "application/gzip", "application/json", "application/octet-stream",
                        "application/octet-stream", "application/pdf", "application/octet-stream",
                        "application/octet-stream", "text/x-mine", nil])
        XCTAssertEqual(form.parts[1].fileName, "b.tar.gz")
    }

    func testMissingFileFailsWithFileReadFailedBeforeSending() async throws {
        var form = PocketMultipartForm()
        form.addField("a", "b")
        form.addFile("present", at: try patternFile("present.bin", 10))
        form.addFile("f", at: directory.appendingPathComponent("missing.bin"))
        let client = try makeClient()
        let descriptors = openFileDescriptorCount()
        let error = await assertPocketError(.fileReadFailed) {
            try await client.send(PocketRequest(method: .post, url: url(self.server, "/form"), body: .multipart(form)))
        }
        XCTAssertEqual(error?.systemError, ENOENT)
        XCTAssertTrue(error?.message.contains("missing.bin") == true)
        XCTAssertEqual(server.requestCount, 0)
        XCTAssertEqual(openFileDescriptorCount(), descriptors) // the file opened first is closed again
    }

    // MARK: progress

    func testProgressPerPartAndInTotal() async throws {
        let a = try patternFile("a.bin", 2 << 20, seed: 1), b = try patternFile("b.bin", 3 << 20, seed: 2)
        var form = PocketMultipartForm()
        form.addFile("a", at: a)
        form.addField("mid", "m")
        form.addData("blob", Data(BytePattern.bytes(seed: 4, range: 0..<(8 << 20)))) // one in-memory piece, reported as it goes
        form.addFile("b", at: b)
        form.addStream("s", patternStream(1 << 20, seed: 3), length: nil)
        let client = try makeClient()
        let (updates, handler) = PocketProgressHandler.stream(interval: .milliseconds(1))
        let request = PocketRequest(method: .post, url: url(server, "/form"), body: .multipart(form))
        async let sent = client.send(request, progress: handler)
        var reports: [PocketTransferProgress] = []
        for await p in updates where p.direction == .upload { reports.append(p) }
        let sentStatus = try await sent.status
        XCTAssertEqual(sentStatus, 200)
        let received = try XCTUnwrap(server.receivedRequests.last)
        let last = try XCTUnwrap(reports.last)
        XCTAssertTrue(last.isFinal)
        XCTAssertNil(last.total) // chunked: no total
        // Payload bytes: the body without its chunk framing.
        XCTAssertEqual(last.bytes, received.bodyLength)
        let part = try XCTUnwrap(last.part)
        XCTAssertEqual(part.index, 4)
        XCTAssertEqual(part.count, 5)
        XCTAssertEqual(part.name, "s")
        XCTAssertEqual(part.bytes, 1 << 20)
        XCTAssertNil(part.total)
        var previous = (index: 0, bytes: 0, total: 0)
        for p in reports {
            let part = try XCTUnwrap(p.part)
            XCTAssertTrue(part.index > previous.index || (part.index == previous.index && part.bytes >= previous.bytes), "\(part)")
            XCTAssertGreaterThanOrEqual(p.bytes, previous.total)
            if let total = part.total { XCTAssertLessThanOrEqual(part.bytes, total) }
            XCTAssertEqual(part.total, [2 << 20, 1, 8 << 20, 3 << 20, nil][part.index])
            previous = (part.index, part.bytes, p.bytes)
        }

        // With every size known the total is the Content-Length.
        var known = PocketMultipartForm()
        known.addFile("a", at: a)
        known.addField("z", "zz")
        let (knownUpdates, knownHandler) = PocketProgressHandler.stream(interval: .milliseconds(1))
        let knownRequest = PocketRequest(method: .post, url: url(server, "/form"), body: .multipart(known))
        async let knownSent = client.send(knownRequest, progress: knownHandler)
        var knownLast: PocketTransferProgress?
        for await p in knownUpdates where p.direction == .upload { knownLast = p }
        let knownStatus = try await knownSent.status
        XCTAssertEqual(knownStatus, 200)
        let knownReceived = try XCTUnwrap(server.receivedRequests.last)
        XCTAssertEqual(knownLast?.total, knownReceived.bodyLength)
        XCTAssertEqual(knownLast?.bytes, knownReceived.bodyLength)
        XCTAssertEqual(knownLast?.part, PocketPartProgress(index: 1, count: 2, name: "z", bytes: 2, total: 2))
        XCTAssertEqual(knownLast?.part?.isComplete, true)
    }

    // MARK: TLS

    func testFormOverTLSWithFileAndChunkedStreamParts() async throws {
        let tls = try TestServer(tls: try .localhost())
        defer { tls.shutdown() }
        tls.route("/form") { r in .text("\(r.bodyLength) \(r.bodySHA256)") }
        let file = try patternFile("tls.bin", 1 << 20 | 99, seed: 21)
        let client = try makeClient { $0.tls.insecureSkipVerification = true }
        for chunked in [false, true] {
            var form = PocketMultipartForm()
            form.addFile("file", at: file)
            form.addStream("s", patternStream(200_000, seed: 22), length: chunked ? nil : 200_000)
            form.addField("end", "e")
            let r = try await client.send(PocketRequest(method: .post, url: url(tls, "/form"), body: .multipart(form)))
            XCTAssertEqual(r.status, 200)
            let received = try XCTUnwrap(tls.receivedRequests.last)
            XCTAssertEqual(received.header("Transfer-Encoding"), chunked ? "chunked" : nil)
            let parsed = try IndependentMultipartParser.parse(received.body, contentType: form.contentType)
            XCTAssertEqual(parsed.parts.map(\.name), ["file", "s", "end"])
            XCTAssertEqual(parsed.parts[0].sha256, BytePattern.sha256(seed: 21, size: 1 << 20 | 99))
            XCTAssertEqual(parsed.parts[1].sha256, BytePattern.sha256(seed: 22, size: 200_000))
            XCTAssertEqual(parsed.parts[2].data, Data("e".utf8))
        }
    }
}
