import Foundation
import XCTest
@testable import Pocket
import PocketTestSupport

/// `PocketDownloadTask`'s state: pause and resume on the same task
/// (AFURLConnectionOperation's `pause`/`resume`/`isPaused`), the state
/// sequence, and the no-ops.
extension DownloadTests {
    /// Collects a task's states until it ends.
    func collectStates(_ task: PocketDownloadTask) -> Task<[PocketDownloadState], Never> {
        let states = task.states()
        return Task {
            var seen: [PocketDownloadState] = []
            for await state in states { seen.append(state) }
            return seen
        }
    }

    func testPauseThenResumeTheSameTaskContinuesWithRangeAndProgress() async throws {
        let size = 4 << 20
        let held = size / 2
        routeHeldOnce("/p", .init(size: size, seed: 21, etag: "\"p1\"", delayMillisecondsPerPiece: 1, pieceSize: 64 * 1024),
                      held: held)
        let destination = directory.appending(path: "p.bin")
        let (updates, progress) = PocketProgressHandler.stream(interval: .milliseconds(1))
        let task = client.downloadTask(PocketRequest(url: url(server, "/p")), to: destination, progress: progress)
        let states = collectStates(task)
        var reports: [PocketTransferProgress] = []
        var iterator = updates.makeAsyncIterator()
        while let p = await iterator.next() {
            if p.direction == .download { reports.append(p) }
            if p.bytes >= size / 4 { break }
        }
        let paused0 = await task.pause()
        let data = try XCTUnwrap(paused0, "a paused identity download has resume data")
        XCTAssertEqual(task.state, .paused)
        XCTAssertTrue(task.isPaused)
        XCTAssertEqual(task.resumeData, data)
        XCTAssertGreaterThanOrEqual(data.bytesReceived, size / 4)
        XCTAssertLessThanOrEqual(data.bytesReceived, held)
        XCTAssertTrue(FileManager.default.fileExists(atPath: data.temporaryFile.path), "the partial file is kept")
        XCTAssertFalse(FileManager.default.fileExists(atPath: destination.path))
        let again = await task.pause()
        XCTAssertEqual(again, data, "pausing a paused task returns its data")
        let requestsBefore = server.requestCount

        task.resume()
        task.resume()   // a second resume starts nothing
        let response = try await task.response()
        XCTAssertEqual(response.status, 206)
        XCTAssertTrue(response.resumed)
        XCTAssertEqual(response.fileSize, size)
        XCTAssertEqual(try SHA256Digest.hex(fileAtPath: destination.path), BytePattern.sha256(seed: 21, size: size))
        XCTAssertEqual(server.requestCount, requestsBefore + 1, "two resumes, one request")
        let last = try XCTUnwrap(server.receivedRequests.last)
        XCTAssertEqual(last.header("Range"), "bytes=\(data.bytesReceived)-")
        XCTAssertEqual(last.header("If-Range"), "\"p1\"")

        while let p = await iterator.next() {
            if p.direction == .download { reports.append(p) }
        }
        XCTAssertEqual(reports.map(\.bytes), reports.map(\.bytes).sorted(), "progress never goes back across the pause")
        let afterResume = reports.filter { $0.bytes > data.bytesReceived }
        XCTAssertFalse(afterResume.isEmpty)
        XCTAssertTrue(afterResume.allSatisfy { $0.total == size }, "the total stays the whole size after the resume")
        XCTAssertEqual(reports.last?.bytes, size)
        XCTAssertEqual(reports.last?.isFinal, true)
        let seen = await states.value
        XCTAssertEqual(Array(seen.drop { $0 == .pending }), [.running, .paused, .pending, .running, .finished])
        XCTAssertEqual(task.state, .finished)

        // Pausing or resuming an ended task does nothing.
        let paused = await task.pause()
        XCTAssertNil(paused)
        task.resume()
        XCTAssertEqual(task.state, .finished)
        XCTAssertEqual(server.requestCount, requestsBefore + 1)
        let finalStates = await collectStates(task).value
        XCTAssertEqual(finalStates, [.finished], "a new subscription to an ended task gets its state and ends")
    }

    func testCancellingAPausedTaskRemovesThePartialFileAndEndsIt() async throws {
        let size = 2 << 20
        routeHeldOnce("/c", .init(size: size, seed: 22, etag: "\"c\"", delayMillisecondsPerPiece: 1, pieceSize: 64 * 1024),
                      held: size / 2)
        let destination = directory.appending(path: "c.bin")
        let (updates, progress) = PocketProgressHandler.stream(interval: .milliseconds(1))
        let task = client.downloadTask(PocketRequest(url: url(server, "/c")), to: destination, progress: progress)
        let states = collectStates(task)
        for await p in updates where p.bytes > 0 { break }
        let paused0 = await task.pause()
        let data = try XCTUnwrap(paused0)
        task.cancel()
        await assertPocketError(.cancelled) { try await task.response() }
        XCTAssertEqual(task.state, .cancelled)
        XCTAssertNil(task.resumeData)
        XCTAssertFalse(FileManager.default.fileExists(atPath: data.temporaryFile.path))
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: directory.path), [])
        let seen = await states.value
        XCTAssertEqual(seen.last, .cancelled)
        XCTAssertTrue(seen.contains(.paused))
        // Everything after the end is a no-op.
        let paused = await task.pause()
        XCTAssertNil(paused)
        task.resume()
        task.cancel()
        XCTAssertEqual(task.state, .cancelled)
    }

    func testAFailedDownloadEndsFailedWithResumeDataAndAResponseWaitsAcrossAPause() async throws {
        let size = 1 << 20
        server.routeResource("/f", .init(size: size, seed: 23, etag: "\"f\"", stopAfter: 300_000, pieceSize: 64 * 1024))
        let task = client.downloadTask(PocketRequest(url: url(server, "/f")), to: directory.appending(path: "f.bin"))
        await assertPocketError(.truncatedBody) { try await task.response() }
        XCTAssertEqual(task.state, .failed)
        XCTAssertEqual(task.resumeData?.bytesReceived, 300_000)

        // A waiter started before a pause gets the response after the resume.
        routeHeldOnce("/w", .init(size: size, seed: 24, etag: "\"w\"", delayMillisecondsPerPiece: 1, pieceSize: 32 * 1024),
                      held: size / 2)
        let (updates, progress) = PocketProgressHandler.stream(interval: .milliseconds(1))
        let waited = client.downloadTask(PocketRequest(url: url(server, "/w")), to: directory.appending(path: "w.bin"), progress: progress)
        let response = Task { try await waited.response() }
        for await p in updates where p.bytes > 0 { break }
        _ = await waited.pause()
        XCTAssertEqual(waited.state, .paused)
        waited.resume()
        let done = try await response.value
        XCTAssertEqual(done.fileSize, size)
        XCTAssertEqual(try SHA256Digest.hex(fileAtPath: directory.appending(path: "w.bin").path), BytePattern.sha256(seed: 24, size: size))
    }
}
