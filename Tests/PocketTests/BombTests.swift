import Foundation
import XCTest
@testable import Pocket
import PocketTestSupport

/// The decompression-bomb guard against a real bomb: 1,827 bytes that
/// decode (gzip of gzip) to 1 GiB of zeros.
final class BombTests: XCTestCase {
    /// gzip(gzip(1 GiB of zeros)), made with Python's zlib at level 9.
    static let gigabyteBomb = Array(Data(base64Encoded: "H4sIAAAAAAACA+3coW5TcRyG4XataCY2JqYQ4yZIZkiKAYvYFGIhmZlAottkoDDcCRguABR3AHO7gGViWVALpe1NLDnv85j/0T/55eQ9+jwbbexMbn6Mx+uP5Zd/X29nuyMAAABg4JZXl5PNGDB6tvr96s0pAAAAMHTv9vem21Hg4ezpS+cAAACAwfv04vjJ9g+Bu8X7qXMAAADA4B3+vZ5vt4Bfq+8HJ+4BAAAAg/dHMAAAAABSBAMAAACgRTAAAAAAWgQDAAAAIEYwAAAAAFoEAwAAAKBFMAAAAABaBAMAAAAgRjAAAAAAWgQDAAAAoEUwAAAAAFoEAwAAACBGMAAAAABaBAMAAACgRTAAAAAAWgQDAAAAIEYwAAAAAFoEAwAAAKBFMAAAAABaBAMAAAAgRjAAAAAAWgQDAAAAoEUwAAAAAFoEAwAAACBGMAAAAABaBAMAAACgRTAAAAAAWgQDAAAAIEYwAAAAAFoEAwAAAKBFMAAAAABaBAMAAAAgRjAAAAAAWgQDAAAAoEUwAAAAAFoEAwAAACBGMAAAAABaBAMAAACgRTAAAAAAWgQDAAAAIEYwAAAAAFoEAwAAAKBFMAAAAABaBAMAAAAgRjAAAAAAWgQDAAAAoEUwAAAAAFoEAwAAACBGMAAAAABaBAMAAACgRTAAAAAAWgQDAAAAIEYwAAAAAFoEAwAAAKBFMAAAAABaBAMAAAAgRjAAAAAAWgQDAAAAoEUwAAAAAFoEAwAAACBGMAAAAABaBAMAAACgRTAAAAAAWgQDAAAAIEYwAAAAAFoEAwAAAKBFMAAAAABaBAMAAAAgRjAAAAAAWgQDAAAAoEUwAAAAAFoEAwAAACBGMAAAAABaBAMAAACgRTAAAAAAWgQDAAAAIEYwAAAAAFoEAwAAAKBFMAAAAABaBAMAAAAgRjAAAAAAWgQDAAAAoEUwAAAAAFoEAwAAACBGMAAAAABaBAMAAACgRTAAAAAAWgQDAAAAIEYwAAAAAFoEAwAAAKBFMAAAAABaBAMAAAAgRjAAAAAAWgQDAAAAoEUwAAAAAFoEAwAAACBGMAAAAABaBAMAAACgRTAAAAAAWgQDAAAAIEYwAAAAAFoEAwAAAKBFMAAAAABaBAMAAAAgRjAAAAAAWgQDAAAAoEUwAAAAAFoEAwAAACBGMAAAAABaBAMAAACgRTAAAAAAWgQDAAAAIEYwAAAAAFoEAwAAAKBFMAAAAABaBAMAAAAgRjAAAAAAWgQDAAAAoEUwAAAAAFoEAwAAACBGMAAAAABaBAMAAACgRTAAAAAAWgQDAAAAIEYwAAAAAFoEAwAAAKBFMAAAAABaBAMAAAAgRjAAAAAAWgQDAAAAoEUwAAAAAFoEAwAAACBGMAAAAABaBAMAAACgRTAAAAAAWgQDAAAAIEYwAAAAAFoEAwAAAKBFMAAAAABaBAMAAAAgRjAAAAAAWgQDAAAAoEUwAAAAAFoEAwAAACBGMAAAAABaBAMAAACgRTAAAAAAWgQDAAAAIEYwAAAAAFoEAwAAAKBFMAAAAABaBAMAAAAgRjAAAAAAWgQDAAAAoEUwAAAAAFoEAwAAACBGMAAAAABaBAMAAACgRTAAAAAAWgQDAAAAIEYwAAAAAFoEAwAAAKBFMAAAAABaBAMAAAAgRjAAAAAAWgQDAAAAoEUwAAAAAFoEAwAAACBGMAAAAABaBAMAAACgRTAAAAAAWgQDAAAAIEYwAAAAAFoEAwAAAKBFMAAAAABaBAMAAAAgRjAAAAAAWgQDAAAAoEUwAAAAAFoEAwAAACBGMAAAAABaBAMAAACgRTAAAAAAWgQDAAAAIEYwAAAAAFoEAwAAAKBFMAAAAABaBAMAAAAgRjAAAAAAWgQDAAAAoEUwAAAAAFoEAwAAACBGMAAAAABaBAMAAACgRTAAAAAAWgQDAAAAIEYwAAAAAFoEAwAAAKBFMAAAAABaBAMAAAAgRjAAAAAAWgQDAAAAoEUwAAAAAFoEAwAAACBGMAAAAABaBAMAAACgRTAAAAAAWgQDAAAAIEYwAAAAAFoEAwAAAKBFMAAAAABaBAMAAAAgRjAAAAAAWgQDAAAAoEUwAAAAAFoEAwAAACBGMAAAAABaBAMAAACgRTAAAAAAWgQDAAAAIEYwAAAAAFoEAwAAAKBFMAAAAABaBAMAAAAgRjAAAAAAWgQDAAAAoEUwAAAAAFoEAwAAACBGMAAAAABaBAMAAACgRTAAAAAAWgQDAAAAIEYwAAAAAFoEAwAAAKBFMAAAAABaBAMAAAAgRjAAAAAAWgQDAAAAoEUwAAAAAFoEAwAAACBGMAAAAABaBAMAAACgRTAAAAAAWgQDAAAAIEYwAAAAAFoEAwAAAKBFMAAAAABaBAMAAAAgRjAAAAAAWi7292abLeDj/eLD69Eje/7t5/nb9Tv/D9RnhczI7A8A")!)

    func testOneGiBBombFailsFastWithBoundedMemory() async throws {
        XCTAssertLessThan(Self.gigabyteBomb.count, 2048)
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/bomb") { _ in .response(headers: [("Content-Encoding", "gzip, gzip")], body: Self.gigabyteBomb) }
        let client = try makeClient { $0.limits.maxBodyBytes = nil } // only the ratio guard stands in the way
        let before = residentBytes()
        let start = ContinuousClock.now
        await assertPocketError(.decompressionBomb) { try await client.send(PocketRequest(url: url(server, "/bomb"))) }
        // Streamed and to a file: the same guard, in the engine.
        let streamed = try await client.stream(PocketRequest(url: url(server, "/bomb")))
        await assertPocketError(.decompressionBomb) { try await streamed.body.discard() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pocket-bomb-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        await assertPocketError(.decompressionBomb) {
            try await client.download(PocketRequest(url: url(server, "/bomb")), to: directory.appendingPathComponent("out"))
        }
        XCTAssertLessThan(ContinuousClock.now - start, .seconds(5), "stopped near the ratio floor, not after 1 GiB")
        XCTAssertLessThan(residentBytes() - before, 32 << 20, "memory stayed bounded")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: directory.path), [], "no file, no temporary left")
    }
}
