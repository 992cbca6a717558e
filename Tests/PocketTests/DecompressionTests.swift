import Foundation
import XCTest
@testable import Pocket
import PocketTestSupport

/// Content decoding through real sockets: gzip/deflate asked for by default,
/// decoded in the engine, bounded, and strict about broken streams.
final class DecompressionTests: XCTestCase {
    private func serve(_ body: [UInt8], encoding: String, chunked: Bool = false) throws -> TestServer {
        let server = try TestServer()
        server.route("/") { _ in
            chunked
                ? .chunked(headers: [("Content-Encoding", encoding)],
                           chunks: stride(from: 0, to: body.count, by: 100).map { Array(body[$0..<min($0 + 100, body.count)]) })
                : .response(headers: [("Content-Encoding", encoding)], body: body)
        }
        return server
    }

    func testGzipAndDeflateAreAskedForAndDecoded() async throws {
        let client = try makeClient()
        for (body, encoding, chunked) in [(CompressedBodies.gzip, "gzip", false), (CompressedBodies.gzip, "x-gzip", true),
                                          (CompressedBodies.deflate, "deflate", false),
                                          (CompressedBodies.deflateThenGzip, "deflate, gzip", true)] {
            let server = try serve(body, encoding: encoding, chunked: chunked)
            defer { server.shutdown() }
            let r = try await client.send(PocketRequest(url: url(server, "/")))
            XCTAssertEqual(r.text, CompressedBodies.text, encoding)
            XCTAssertEqual(server.receivedRequests.last?.header("Accept-Encoding"), "gzip, deflate")
        }
    }

    func testDecompressionOffSendsNothingAndKeepsTheBytes() async throws {
        let server = try serve(CompressedBodies.gzip, encoding: "gzip")
        defer { server.shutdown() }
        let client = try makeClient { $0.decompression = false }
        let r = try await client.send(PocketRequest(url: url(server, "/")))
        XCTAssertEqual(Array(r.body), CompressedBodies.gzip)
        XCTAssertNil(server.receivedRequests.last?.header("Accept-Encoding"))
    }

    func testCodingsWeDoNotDecodeArePassedThrough() async throws {
        let server = try serve(Array("opaque brotli bytes".utf8), encoding: "br")
        defer { server.shutdown() }
        var request = PocketRequest(url: url(server, "/"))
        request.headers["Accept-Encoding"] = "br"
        let r = try await makeClient().send(request)
        XCTAssertEqual(r.text, "opaque brotli bytes")
        XCTAssertEqual(server.receivedRequests.last?.header("Accept-Encoding"), "br")
    }

    func testBrokenStreamsAndLimitsHaveTheirOwnCodes() async throws {
        let client = try makeClient()
        let truncated = try serve(Array(CompressedBodies.gzip.prefix(40)), encoding: "gzip")
        defer { truncated.shutdown() }
        await assertPocketError(.truncatedContentEncoding) { try await client.send(PocketRequest(url: url(truncated, "/"))) }

        let corrupt = try serve(Array("this is not gzip".utf8), encoding: "gzip")
        defer { corrupt.shutdown() }
        await assertPocketError(.badContentEncoding) { try await client.send(PocketRequest(url: url(corrupt, "/"))) }

        let three = try serve(CompressedBodies.gzip, encoding: "gzip, gzip, gzip")
        defer { three.shutdown() }
        await assertPocketError(.tooManyContentEncodings) { try await client.send(PocketRequest(url: url(three, "/"))) }

        let bomb = try serve(CompressedBodies.bomb, encoding: "gzip")
        defer { bomb.shutdown() }
        await assertPocketError(.decompressionBomb) { try await client.send(PocketRequest(url: url(bomb, "/"))) }

        // The in-memory body limit counts decoded bytes.
        let small = try makeClient { $0.limits.maxBodyBytes = 1000 }
        let ok = try serve(CompressedBodies.gzip, encoding: "gzip")
        defer { ok.shutdown() }
        await assertPocketError(.bodyTooLarge) { try await small.send(PocketRequest(url: url(ok, "/"))) }

        // The absolute cap on decoded bytes: off by default, its own code,
        // also for a download to a file (which no in-memory limit bounds).
        let capped = try makeClient {
            $0.limits.maxBodyBytes = nil
            $0.limits.maxDecodedBytes = CompressedBodies.text.utf8.count - 1
        }
        await assertPocketError(.decodedBodyTooLarge) { try await capped.send(PocketRequest(url: url(ok, "/"))) }
        let file = FileManager.default.temporaryDirectory.appending(path: "pocket-capped-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: file) }
        await assertPocketError(.decodedBodyTooLarge) {
            _ = try await capped.download(PocketRequest(url: url(ok, "/"), headers: ["Accept-Encoding": "gzip"]), to: file)
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: file.path))
        let exact = try makeClient { $0.limits.maxDecodedBytes = CompressedBodies.text.utf8.count }
        let whole = try await exact.send(PocketRequest(url: url(ok, "/")))
        XCTAssertEqual(whole.text, CompressedBodies.text, "a body of exactly the cap passes")
        for c in [small, capped, exact] { try await c.shutdown() }
    }
}
