import Foundation
import XCTest
@testable import Pocket
import PocketTestSupport

/// Downloads to a file through the in-process server's range-capable
/// resources: bounded memory, pause and resume (also across a simulated
/// process restart), servers that ignore ranges, and the error cases.
final class DownloadTests: XCTestCase {
    var server: TestServer!
    var client: PocketClient!
    var directory: URL!

    override func setUp() async throws {
        server = try TestServer()
        client = try makeClient { $0.timeouts = PocketTimeouts(connect: .seconds(5), read: .seconds(20), total: .seconds(120)) }
        directory = FileManager.default.temporaryDirectory.appending(path: "pocket-download-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDown() async throws {
        try await client.shutdown()
        server.shutdown()
        // XCTest keeps every test case object alive to the end of the run:
        // drop the client so its engine threads are joined now.
        client = nil
        server = nil
        try? FileManager.default.removeItem(at: directory)
    }

    /// Names in `directory` other than `except` (temporary files left behind).
    func leftovers(except: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0 != except }
    }

    /// Routes `path` so that the first GET sends the head of the whole
    /// `resource` (200, its length and validators) and only its first `held`
    /// bytes, then holds the connection open until the client closes it; the
    /// requests after it get `resource` itself. A pause test then acts while
    /// the download is certainly in flight, however slowly the test's task is
    /// scheduled, instead of racing a paced server to the end of the body.
    /// The resource's `delayMillisecondsPerPiece` paces both responses, so
    /// that progress (reported at most once per interval) has many reports
    /// to give between the point a test waits for and `held`.
    func routeHeldOnce(_ path: String, _ resource: TestServer.Resource, held: Int) {
        let head = "HTTP/1.1 200 OK\r\nContent-Length: \(resource.size)\r\nContent-Type: \(resource.contentType)\r\n"
            + "Accept-Ranges: bytes\r\nETag: \(resource.etag ?? "\"x\"")\r\n\r\n"
        server.route(path) { [weak server] _ in
            server?.routeResource(path, resource)
            return .raw([.sendString(head),
                         .pattern(seed: resource.seed, count: held, pieceSize: resource.pieceSize,
                                  delayMillisecondsPerPiece: resource.delayMillisecondsPerPiece),
                         .stall(milliseconds: 60_000), .close])
        }
    }

    func testOneGiBDownloadPausedNearFortyPercentAndResumedKeepsPeakRSSUnder32MiB() async throws {
        let size = sanitizedScale(1 << 30)
        // The first response stops at 45% and waits: the pause comes while it
        // is in flight, whenever the progress reaches the test.
        let held = size * 45 / 100
        routeHeldOnce("/big", .init(size: size, seed: 11, etag: "\"big\"", delayMillisecondsPerPiece: 1,
                                    pieceSize: 1 << 20), held: held)
        let destination = directory.appending(path: "big.bin")
        let baseline = try MemoryStatus.resetPeak()
        let (updates, progress) = PocketProgressHandler.stream(interval: .milliseconds(1))
        let task = client.downloadTask(PocketRequest(url: url(server, "/big")), to: destination, progress: progress)
        for await update in updates where update.direction == .download && update.bytes >= size * 4 / 10 { break }
        let stopped = await task.cancelProducingResumeData()
        let resume = try XCTUnwrap(stopped)
        XCTAssertGreaterThanOrEqual(resume.bytesReceived, size * 4 / 10)
        XCTAssertLessThanOrEqual(resume.bytesReceived, held, "paused before the end")
        XCTAssertFalse(FileManager.default.fileExists(atPath: destination.path), "nothing at the destination until complete")
        await assertPocketError(.cancelled) { try await task.response() }

        let decoded = try JSONDecoder().decode(PocketResumeData.self, from: JSONEncoder().encode(resume))
        let response = try await client.downloadTask(resumingWith: decoded).response()
        let peak = try MemoryStatus.read().peakKiB
        XCTAssertEqual(response.status, 206)
        XCTAssertTrue(response.resumed)
        XCTAssertEqual(response.fileSize, size)
        XCTAssertEqual(response.fileURL, destination)
        XCTAssertEqual(try SHA256Digest.hex(fileAtPath: destination.path), BytePattern.sha256(seed: 11, size: size))
        XCTAssertEqual(try leftovers(except: "big.bin"), [], "the temporary file was renamed into place")
        // The process (XCTest, the test server, the client) was at `baseline`
        // when the peak was reset; the whole 1 GiB download, paused and
        // resumed, added less than 32 MiB (256 MiB under a sanitizer).
        XCTAssertLessThan(peak - baseline.residentKiB, 32 * 1024,
                          "peak RSS \(peak) KiB during the download, \(baseline.residentKiB) KiB before it")
        let requests = server.receivedRequests.suffix(2)
        XCTAssertEqual(requests.map { $0.header("Accept-Encoding") }, ["identity", "identity"],
                       "a download asks for the bytes as stored, so Range offsets stay valid")
        XCTAssertEqual(requests.last?.header("Range"), "bytes=\(resume.bytesReceived)-")
        XCTAssertEqual(requests.last?.header("If-Range"), "\"big\"")
    }

    func testPauseNearFortyPercentThenResumeInANewProcessMatchesTheDigest() async throws {
        let size = 8 << 20
        let held = size / 2
        routeHeldOnce("/f", .init(size: size, seed: 5, etag: "\"v1\"", delayMillisecondsPerPiece: 2,
                                  pieceSize: 64 * 1024), held: held)
        let destination = directory.appending(path: "f.bin")
        let (updates, progress) = PocketProgressHandler.stream(interval: .milliseconds(1))
        let task = client.downloadTask(PocketRequest(url: url(server, "/f")), to: destination, progress: progress)
        var sawTotal: Int?
        for await update in updates where update.direction == .download {
            sawTotal = update.total
            if update.bytes >= size * 4 / 10 { break }
        }
        XCTAssertEqual(sawTotal, size, "the total is the Content-Length")
        let stopped = await task.cancelProducingResumeData()
        let resume = try XCTUnwrap(stopped)
        XCTAssertFalse(FileManager.default.fileExists(atPath: destination.path), "nothing at the destination until complete")
        XCTAssertTrue(FileManager.default.fileExists(atPath: resume.temporaryFile.path), "the partial file is kept")
        let partial = try FileManager.default.attributesOfItem(atPath: resume.temporaryFile.path)[.size] as? Int
        XCTAssertEqual(partial, resume.bytesReceived)
        XCTAssertGreaterThanOrEqual(resume.bytesReceived, size * 4 / 10)
        XCTAssertLessThanOrEqual(resume.bytesReceived, held, "paused before the end")
        XCTAssertEqual(resume.etag, "\"v1\"")
        XCTAssertEqual(resume.totalBytes, size)
        await assertPocketError(.cancelled) { try await task.response() }

        // A process restart: the resume data goes through JSON and a new client continues it.
        let archived = try JSONEncoder().encode(resume)
        try await client.shutdown()
        client = try makeClient()
        let decoded = try JSONDecoder().decode(PocketResumeData.self, from: archived)
        XCTAssertEqual(decoded, resume)
        let done = try await client.downloadTask(resumingWith: decoded).response()
        XCTAssertEqual(done.status, 206)
        XCTAssertTrue(done.resumed)
        XCTAssertEqual(done.fileSize, size)
        XCTAssertEqual(try SHA256Digest.hex(fileAtPath: destination.path), BytePattern.sha256(seed: 5, size: size))
        XCTAssertEqual(try leftovers(except: "f.bin"), [])
        let last = try XCTUnwrap(server.receivedRequests.last)
        XCTAssertEqual(last.header("Range"), "bytes=\(resume.bytesReceived)-")
        XCTAssertEqual(last.header("If-Range"), "\"v1\"")
    }

    /// A body that arrives as fast as the loop can read it does not hold the
    /// loop (the engine reads at most 1 MiB per connection per event): while
    /// it flows, progress is reported and a small request on the same client
    /// (one loop thread) reaches the server long before the body stops.
    func testAFastBodyDoesNotHoldTheLoopFromOtherRequests() async throws {
        let size = 1 << 30
        let held = size * 3 / 4
        routeHeldOnce("/fast", .init(size: size, seed: 3, etag: "\"f\"", pieceSize: 1 << 20), held: held)
        let latest = Lock(0)
        let atSmall = Lock<Int?>(nil)
        server.route("/small") { _ in
            atSmall.withLock { $0 = latest.withLock { $0 } }
            return .text("small")
        }
        let progress = PocketProgressHandler(interval: .milliseconds(1)) { update in
            if update.direction == .download { latest.withLock { $0 = update.bytes } }
        }
        let task = client.downloadTask(PocketRequest(url: url(server, "/fast")), to: directory.appending(path: "fast.bin"),
                                       progress: progress)
        // Well into the body, past the slow start of a new TCP connection.
        let deadline = ContinuousClock.now + .seconds(10)
        while latest.withLock({ $0 }) < size * 4 / 10 && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(1))
        }
        XCTAssertGreaterThanOrEqual(latest.withLock { $0 }, size * 4 / 10, "progress is reported while the body flows")

        let small = try await client.send(PocketRequest(url: url(server, "/small")))
        XCTAssertEqual(small.status, 200)
        let bytesThen = try XCTUnwrap(atSmall.withLock { $0 })
        XCTAssertLessThan(bytesThen, held, "the small request went out while the body was still flowing")
        task.cancel()
        await assertPocketError(.cancelled) { try await task.response() }
    }

    func testAFailureMidBodyKeepsResumeDataAndAServerThatIgnoresRangeRestartsTheFile() async throws {
        let size = 3 << 20
        server.routeResource("/f", .init(size: size, seed: 8, lastModified: "Sun, 06 Nov 1994 08:49:37 GMT",
                                         stopAfter: 1_000_000, pieceSize: 64 * 1024))
        let destination = directory.appending(path: "f.bin")
        let task = client.downloadTask(PocketRequest(url: url(server, "/f")), to: destination)
        await assertPocketError(.truncatedBody) { try await task.response() }
        let resume = try XCTUnwrap(task.resumeData, "a failure with a partial file leaves resume data")
        XCTAssertEqual(resume.bytesReceived, 1_000_000)
        XCTAssertEqual(resume.lastModified, "Sun, 06 Nov 1994 08:49:37 GMT")
        XCTAssertFalse(FileManager.default.fileExists(atPath: destination.path))

        server.updateResource("/f") { $0.honorsRange = false }
        let (updates, progress) = PocketProgressHandler.stream(interval: .milliseconds(1))
        let done = try await client.downloadTask(resumingWith: resume, progress: progress).response()
        XCTAssertEqual(done.status, 200, "the server sent the whole body")
        XCTAssertFalse(done.resumed)
        XCTAssertEqual(done.fileSize, size, "restarted from zero, not appended")
        XCTAssertEqual(try SHA256Digest.hex(fileAtPath: destination.path), BytePattern.sha256(seed: 8, size: size))
        XCTAssertEqual(server.receivedRequests.last?.header("If-Range"), "Sun, 06 Nov 1994 08:49:37 GMT")

        var seen: [Int] = []
        for await update in updates where update.direction == .download { seen.append(update.bytes) }
        XCTAssertEqual(seen, seen.sorted(), "download progress never goes back")
        XCTAssertEqual(seen.last, size, "and ends exactly at the total")
    }

    func testAChangedResourceIsSentWholeAndReplacesThePartialFile() async throws {
        let size = 2 << 20
        server.routeResource("/f", .init(size: size, seed: 1, etag: "\"v1\"", stopAfter: 500_000))
        let destination = directory.appending(path: "f.bin")
        let first = client.downloadTask(PocketRequest(url: url(server, "/f")), to: destination)
        await assertPocketError(.truncatedBody) { try await first.response() }
        let resume = try XCTUnwrap(first.resumeData)
        server.updateResource("/f") { $0.etag = "\"v2\""; $0.seed = 2 }
        let done = try await client.downloadTask(resumingWith: resume).response()
        XCTAssertEqual(done.status, 200, "If-Range did not match: the server sent the new version whole")
        XCTAssertEqual(try SHA256Digest.hex(fileAtPath: destination.path), BytePattern.sha256(seed: 2, size: size),
                       "no splice of two versions")
    }

    func testA206ForAnotherVersionIsAValidatorMismatch() async throws {
        // A server that ignores If-Range and answers the range from a new version.
        server.route("/v") { request in
            guard let range = request.header("Range") else {
                return .response(headers: [("ETag", "\"v1\"")], body: [UInt8](repeating: 1, count: 100))
            }
            XCTAssertEqual(range, "bytes=40-")
            return .response(status: 206, headers: [("ETag", "\"v2\""), ("Content-Range", "bytes 40-99/100")],
                             body: [UInt8](repeating: 2, count: 60))
        }
        let destination = directory.appending(path: "v.bin")
        let partial = directory.appending(path: ".v.partial")
        try Data(repeating: 1, count: 40).write(to: partial)
        let resume = PocketResumeData(request: PocketRequest(url: url(server, "/v")), destination: destination,
                                temporaryFile: partial, bytesReceived: 40, etag: "\"v1\"", totalBytes: 100)
        let error = await assertPocketError(.resumeValidatorMismatch) {
            try await client.downloadTask(resumingWith: resume).response()
        }
        XCTAssertEqual(error?.response?.status, 206)
        XCTAssertFalse(FileManager.default.fileExists(atPath: destination.path), "nothing spliced into place")
    }

    func testA206AtTheWrongOffsetIsABadContentRange() async throws {
        server.route("/r") { _ in
            .response(status: 206, headers: [("Content-Range", "bytes 0-99/100")], body: [UInt8](repeating: 3, count: 100))
        }
        let partial = directory.appending(path: ".r.partial")
        try Data(repeating: 3, count: 10).write(to: partial)
        let resume = PocketResumeData(request: PocketRequest(url: url(server, "/r")), destination: directory.appending(path: "r"),
                                temporaryFile: partial, bytesReceived: 10)
        await assertPocketError(.badContentRange) { try await client.downloadTask(resumingWith: resume).response() }
    }

    func testResumingPastTheEndIsRangeNotSatisfiable() async throws {
        server.routeResource("/f", .init(size: 1000, seed: 4, etag: "\"v1\""))
        let partial = directory.appending(path: ".f.partial")
        try Data(BytePattern.bytes(seed: 4, range: 0..<1000)).write(to: partial)
        let resume = PocketResumeData(request: PocketRequest(url: url(server, "/f")), destination: directory.appending(path: "f"),
                                temporaryFile: partial, bytesReceived: 1000, etag: "\"v1\"", totalBytes: 1000)
        let error = await assertPocketError(.rangeNotSatisfiable) {
            try await client.downloadTask(resumingWith: resume).response()
        }
        XCTAssertEqual(error?.response?.status, 416)
        XCTAssertEqual(server.receivedRequests.last?.header("Range"), "bytes=1000-")
    }

    func testAnErrorStatusLeavesTheDestinationAloneAndKeepsTheBodyInMemory() async throws {
        let destination = directory.appending(path: "kept.txt")
        try Data("old".utf8).write(to: destination)
        server.route("/missing") { _ in .text("no such file", status: 404) }
        let response = try await client.download(PocketRequest(url: url(server, "/missing")), to: destination)
        XCTAssertEqual(response.status, 404)
        XCTAssertNil(response.fileURL)
        XCTAssertEqual(String(decoding: response.body, as: UTF8.self), "no such file")
        XCTAssertEqual(try String(contentsOf: destination, encoding: .utf8), "old")
        XCTAssertEqual(try leftovers(except: "kept.txt"), [], "no temporary file left")
    }

    func testCancellingADownloadRemovesThePartialFile() async throws {
        server.routeResource("/slow", .init(size: 4 << 20, seed: 9, delayMillisecondsPerPiece: 20, pieceSize: 64 * 1024))
        let destination = directory.appending(path: "slow.bin")
        let (updates, progress) = PocketProgressHandler.stream(interval: .milliseconds(1))
        let task = client.downloadTask(PocketRequest(url: url(server, "/slow")), to: destination, progress: progress)
        for await update in updates where update.bytes > 0 { break }
        task.cancel()
        await assertPocketError(.cancelled) { try await task.response() }
        XCTAssertNil(task.resumeData)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: directory.path), [])
    }
}
