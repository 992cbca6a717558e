import Foundation
import XCTest
@testable import Pocket
import PocketTestSupport

/// Re-sending multipart forms: a replayable form goes out again byte for
/// byte (the engine's retry-once on a stale pooled connection), a one-shot
/// form (a stream part) is refused a second send with its own error.
final class MultipartReplayTests: XCTestCase {
    private var server: TestServer!
    private var directory: URL!

    override func setUpWithError() throws {
        let server = try TestServer()
        server.keepsRequestBodies = false
        // The first request on a connection is answered; a later one is met
        // with a close, as if the server's idle timer had fired.
        server.route("/stale") { r in r.requestIndexOnConnection == 0 ? .text("\(r.bodyLength) \(r.bodySHA256)") : .close }
        server.route("/form") { r in .text("\(r.bodyLength) \(r.bodySHA256)") }
        self.server = server
        directory = try temporaryDirectory("pocket-mpr", shuttingDown: server)
    }

    private func file(_ size: Int, seed: UInt64) throws -> URL {
        let f = directory.appendingPathComponent("f-\(seed)")
        XCTAssertTrue(FileManager.default.createFile(atPath: f.path, contents: Data(BytePattern.bytes(seed: seed, range: 0..<size))))
        return f
    }

    func testReplayableFormIsSentAgainIdenticallyOnTheRetry() async throws {
        var form = PocketMultipartForm()
        form.addField("name", "value")
        form.addFile("file", at: try file(2 << 20 | 7, seed: 4))
        form.addData("data", Data(BytePattern.bytes(seed: 5, range: 0..<70_000)), fileName: "d.bin")
        XCTAssertTrue(form.isReplayable)
        let client = try makeClient()
        _ = try await client.send(PocketRequest(url: url(server, "/stale"))) // leaves a pooled connection
        let r = try await client.send(PocketRequest(method: .put, url: url(server, "/stale"), body: .multipart(form)))
        XCTAssertEqual(r.status, 200)
        XCTAssertTrue(r.timings.retried)
        let puts = server.receivedRequests.filter { $0.method == "PUT" }
        XCTAssertEqual(puts.count, 2)
        XCTAssertGreaterThan(puts[0].bodyLength, 2 << 20)
        XCTAssertEqual(puts[0].bodyLength, puts[1].bodyLength)
        XCTAssertEqual(puts[0].bodySHA256, puts[1].bodySHA256)
        XCTAssertEqual(r.text, "\(puts[1].bodyLength) \(puts[1].bodySHA256)")

        // The same form value sent again later: the same bytes once more.
        let again = try await client.send(PocketRequest(method: .put, url: url(server, "/form"), body: .multipart(form)))
        XCTAssertEqual(again.text, r.text)
    }

    func testReplayableFormArchivesWithItsRequest() async throws {
        var form = PocketMultipartForm()
        form.addField("name", "välue")
        form.addData("data", Data(BytePattern.bytes(seed: 6, range: 0..<5_000)), fileName: "d.bin", headers: ["X-Part": "1"])
        form.addFile("file", at: try file(300_000, seed: 7), contentType: "application/x-mine")
        let request = PocketRequest(method: .put, url: url(server, "/form"), body: .multipart(form))
        let archived = try JSONEncoder().encode(request)
        let restored = try JSONDecoder().decode(PocketRequest.self, from: archived)
        XCTAssertEqual(restored, request)
        XCTAssertEqual(restored.body?.multipartForm?.boundary, form.boundary)
        let client = try makeClient()
        let original = try await client.send(request)
        let again = try await client.send(restored)
        XCTAssertEqual(original.status, 200)
        XCTAssertEqual(again.text, original.text) // the same bytes

        // A custom boundary stays custom (and checked when sent).
        var fixed = PocketMultipartForm(boundary: "fixed-b")
        fixed.addField("k", "v")
        let fixedBack = try JSONDecoder().decode(PocketMultipartForm.self, from: JSONEncoder().encode(fixed))
        XCTAssertEqual(fixedBack, fixed)

        // A form with a stream part is one-shot: it cannot be archived.
        var streamed = PocketMultipartForm()
        streamed.addStream("s", AsyncStream<Data> { $0.finish() }, length: nil)
        XCTAssertThrowsError(try JSONEncoder().encode(PocketRequest(method: .post, url: url(server, "/form"), body: .multipart(streamed))))
    }

    func testOneShotFormIsRefusedASecondSend() async throws {
        var form = PocketMultipartForm()
        form.addField("a", "b")
        form.addStream("s", AsyncStream<Data> { c in
            c.yield(Data("streamed".utf8))
            c.finish()
        }, length: nil)
        XCTAssertFalse(form.isReplayable)
        let copy = form
        let client = try makeClient()
        let first = try await client.send(PocketRequest(method: .post, url: url(server, "/form"), body: .multipart(form)))
        XCTAssertEqual(first.status, 200)
        for again in [form, copy] {
            let error = await assertPocketError(.bodyNotReplayable) {
                try await client.send(PocketRequest(method: .post, url: url(self.server, "/form"), body: .multipart(again)))
            }
            XCTAssertTrue(error?.message.contains("already sent") == true)
        }
        XCTAssertEqual(server.requestCount, 1)
    }

    func testOneShotFormThatFailedBeforeSendingCanBeSentLater() async throws {
        let missing = directory.appendingPathComponent("later.txt")
        var form = PocketMultipartForm()
        form.addStream("s", AsyncStream<Data> { c in
            c.yield(Data("kept".utf8))
            c.finish()
        }, length: nil)
        form.addFile("f", at: missing)
        let client = try makeClient()
        await assertPocketError(.fileReadFailed) {
            try await client.send(PocketRequest(method: .post, url: url(self.server, "/form"), body: .multipart(form)))
        }
        XCTAssertEqual(server.requestCount, 0)
        // Nothing was read from the stream: once the file exists the form goes out whole.
        XCTAssertTrue(FileManager.default.createFile(atPath: missing.path, contents: Data("file".utf8)))
        let r = try await client.send(PocketRequest(method: .post, url: url(server, "/form"), body: .multipart(form)))
        XCTAssertEqual(r.status, 200)
        let body = "--\(form.boundary)\r\nContent-Disposition: form-data; name=\"s\"\r\nContent-Type: application/octet-stream\r\n\r\n"
            + "kept\r\n--\(form.boundary)\r\nContent-Disposition: form-data; name=\"f\"; filename=\"later.txt\"\r\n"
            + "Content-Type: text/plain\r\n\r\nfile\r\n--\(form.boundary)--\r\n"
        let hasher = SHA256Hasher()
        hasher.update(Array(body.utf8))
        XCTAssertEqual(r.text, "\(body.utf8.count) \(hasher.finalizeHex())")
    }

    func testOneShotFormIsRefusedTheRetryOnAStaleConnection() async throws {
        var form = PocketMultipartForm()
        form.addFile("file", at: try file(100_000, seed: 8))
        form.addStream("s", AsyncStream<Data> { c in
            c.yield(Data(repeating: 0x41, count: 50_000))
            c.finish()
        }, length: 50_000)
        let client = try makeClient()
        _ = try await client.send(PocketRequest(url: url(server, "/stale")))
        let error = await assertPocketError(.bodyNotReplayable) {
            try await client.send(PocketRequest(method: .put, url: url(self.server, "/stale"), body: .multipart(form)))
        }
        let cause = try XCTUnwrap(error?.underlying as? PocketError)
        XCTAssertTrue([.closedBeforeResponse, .connectionReset, .writeFailed].contains(cause.code), "\(cause)")
        // Sent once, never twice.
        XCTAssertEqual(server.receivedRequests.filter { $0.method == "PUT" }.count, 1)
        XCTAssertEqual(server.acceptedConnections, 1)

        // A plain stream body is one-shot the same way.
        _ = try await client.send(PocketRequest(url: url(server, "/stale")))
        let chunks = AsyncStream<Data> { c in
            c.yield(Data("once".utf8))
            c.finish()
        }
        await assertPocketError(.bodyNotReplayable) {
            try await client.send(PocketRequest(method: .put, url: url(self.server, "/stale"), body: .stream(chunks, length: nil)))
        }
        XCTAssertEqual(server.receivedRequests.filter { $0.method == "PUT" }.count, 2)
    }
}
