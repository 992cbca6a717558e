import Foundation
import PocketTestSupport
import XCTest

/// `-o`, `-O` and `-C -`: the engine writes the file; an interrupted download
/// leaves the partial body in the file and resumes with Range and If-Range.
final class DownloadCommandTests: XCTestCase {
    func testOutputFileHoldsTheBody() throws {
        let server = try TestServer()
        defer { server.shutdown() }
        let resource = TestServer.Resource(size: 300_000, seed: 5)
        server.routeResource("/file.bin", resource)
        let dir = try PocketBinary.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = dir.appendingPathComponent("out.bin")
        let run = try PocketBinary.run(["-o", out.path, server.url("/file.bin")])
        XCTAssertEqual(run.status, 0, run.stderrText)
        XCTAssertEqual(run.stdout.count, 0, "the body goes to the file only")
        XCTAssertEqual(try SHA256Digest.hex(fileAtPath: out.path), resource.sha256)
    }

    func testOutputToADeviceIsWrittenInPlace() throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/x") { _ in .text("discarded") }
        let run = try PocketBinary.run(["-o", "/dev/null", "-w", "%{size_download}", server.url("/x")])
        XCTAssertEqual(run.status, 0, run.stderrText)
        XCTAssertEqual(run.stdoutText, "9")
        var st = stat()
        XCTAssertEqual(stat("/dev/null", &st), 0)
        XCTAssertEqual(st.st_mode & S_IFMT, S_IFCHR, "/dev/null is still the device, not a file renamed over it")
        let dash = try PocketBinary.run(["-o", "-", server.url("/x")])
        XCTAssertEqual(dash.stdoutText, "discarded", "-o - is stdout")
    }

    func testRemoteNameUsesTheLastPathSegment() throws {
        let server = try TestServer()
        defer { server.shutdown() }
        let resource = TestServer.Resource(size: 10_000, seed: 2)
        server.routeResource("/dir/report.csv", resource)
        let dir = try PocketBinary.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let run = try PocketBinary.run(["-O", "-w", "%{filename_effective}", server.url("/dir/report.csv")], directory: dir)
        XCTAssertEqual(run.status, 0, run.stderrText)
        let saved = dir.appendingPathComponent("report.csv")
        XCTAssertEqual(try SHA256Digest.hex(fileAtPath: saved.path), resource.sha256)
        XCTAssertEqual(run.stdoutText, saved.path)
        let noName = try PocketBinary.run(["-O", server.url("/")], directory: dir)
        XCTAssertEqual(noName.status, 23)
    }

    func testErrorStatusBodyGoesToTheFileUnlessFail() throws {
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/missing") { _ in .text("no such thing", status: 404) }
        let dir = try PocketBinary.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = dir.appendingPathComponent("out.txt")
        let run = try PocketBinary.run(["-o", out.path, server.url("/missing")])
        XCTAssertEqual(run.status, 0)
        XCTAssertEqual(try String(contentsOf: out, encoding: .utf8), "no such thing", "as curl: the body is saved")
        try FileManager.default.removeItem(at: out)
        let failed = try PocketBinary.run(["-f", "-o", out.path, server.url("/missing")])
        XCTAssertEqual(failed.status, 22)
        XCTAssertFalse(FileManager.default.fileExists(atPath: out.path), "-f: nothing written")
    }

    func testContinueAfterAnInterruptedDownload() throws {
        let server = try TestServer()
        defer { server.shutdown() }
        let resource = TestServer.Resource(size: 400_000, seed: 9, etag: "\"v1\"", stopAfter: 150_000, pieceSize: 50_000)
        server.routeResource("/big.bin", resource)
        let dir = try PocketBinary.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = dir.appendingPathComponent("big.bin")
        // The validators wait in $XDG_STATE_HOME/pocket/resume, never beside the file.
        let state = try PocketBinary.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: state) }
        setenv("XDG_STATE_HOME", state.path, 1)
        defer { unsetenv("XDG_STATE_HOME") }

        let cut = try PocketBinary.run(["-o", out.path, server.url("/big.bin")])
        XCTAssertEqual(cut.status, 18, "a body cut short is curl's partial file, never exit 0: \(cut.stderrText)")
        XCTAssertTrue(cut.stderrText.contains("truncated_body"), cut.stderrText)
        let partial = try Data(contentsOf: out)
        XCTAssertEqual(partial.count, 150_000, "the partial body stays in the file, as with curl")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir.path), ["big.bin"], "nothing beside the file")
        let kept = try FileManager.default.contentsOfDirectory(atPath: state.appendingPathComponent("pocket/resume").path)
        XCTAssertEqual(kept.count, 1, "the validators are kept for -C -")
        XCTAssertTrue(kept.first?.hasSuffix("-big.bin.json") == true, "\(kept)")

        let resumed = try PocketBinary.run(["-C", "-", "-o", out.path, server.url("/big.bin")])
        XCTAssertEqual(resumed.status, 0, resumed.stderrText)
        XCTAssertEqual(try SHA256Digest.hex(fileAtPath: out.path), resource.sha256)
        let last = try XCTUnwrap(server.receivedRequests.last)
        XCTAssertEqual(last.header("Range"), "bytes=150000-")
        XCTAssertEqual(last.header("If-Range"), "\"v1\"", "the validator saved by the first run")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: state.appendingPathComponent("pocket/resume").path), [],
                       "the state goes when the transfer ends")
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: dir.path)
        XCTAssertEqual(leftovers, ["big.bin"])
    }

    func testContinueAFileMadeElsewhere() throws {
        let server = try TestServer()
        defer { server.shutdown() }
        let resource = TestServer.Resource(size: 50_000, seed: 4, etag: "\"e\"")
        server.routeResource("/f", resource)
        let dir = try PocketBinary.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = dir.appendingPathComponent("f")
        try Data(resource.bytes(0..<12_345)).write(to: out)
        let run = try PocketBinary.run(["-C", "-", "-o", out.path, server.url("/f")])
        XCTAssertEqual(run.status, 0, run.stderrText)
        XCTAssertEqual(try SHA256Digest.hex(fileAtPath: out.path), resource.sha256)
        let last = try XCTUnwrap(server.receivedRequests.last)
        XCTAssertEqual(last.header("Range"), "bytes=12345-")
        XCTAssertNil(last.header("If-Range"), "no validator known for a file pocket did not start")
    }

    func testContinueAtTheEndIsARangeError() throws {
        let server = try TestServer()
        defer { server.shutdown() }
        let resource = TestServer.Resource(size: 1_000, seed: 1, etag: "\"e\"")
        server.routeResource("/f", resource)
        let dir = try PocketBinary.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = dir.appendingPathComponent("f")
        try Data(resource.bytes(0..<1_000) + [1, 2, 3]).write(to: out)
        let run = try PocketBinary.run(["-C", "-", "-o", out.path, server.url("/f")])
        XCTAssertEqual(run.status, 33, run.stderrText)
        XCTAssertEqual(try Data(contentsOf: out).count, 1_003, "the file is left as it was")
    }

    func testContinueNeedsAnOutputFile() throws {
        let run = try PocketBinary.run(["-C", "-", "http://127.0.0.1:9/"])
        XCTAssertEqual(run.status, 64)
        XCTAssertEqual(run.stderrLines, ["pocket: -C - needs -o FILE or -O"])
    }
}

/// Ctrl-C during `-o`: the download pauses, the partial body and its
/// validators stay, exit 130; `-C -` finishes it.
final class InterruptedDownloadTests: XCTestCase {
    func testInterruptKeepsThePartialFileForContinue() throws {
        let server = try TestServer()
        defer { server.shutdown() }
        let resource = TestServer.Resource(size: 1_000_000, seed: 12, etag: "\"slow\"", delayMillisecondsPerPiece: 200,
                                           pieceSize: 100_000)
        server.routeResource("/slow.bin", resource)
        let dir = try PocketBinary.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = dir.appendingPathComponent("slow.bin")

        let process = try ChildProcess(try PocketBinary.path().path, ["-s", "-o", out.path, server.url("/slow.bin")])
        defer { process.terminate() }
        // Wait (bounded) until some of the body is on disk, then interrupt.
        var started = false
        for _ in 0..<600 where !started {
            usleep(50_000)
            let names = (try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []
            started = names.contains { name in
                let path = dir.appendingPathComponent(name).path
                let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
                return name.hasPrefix(".slow.bin.pocket-") && size >= 200_000
            }
        }
        XCTAssertTrue(started, "the download never got going")
        process.signal(SIGINT)
        XCTAssertEqual(process.wait(), 130)
        let partial = try Data(contentsOf: out)
        XCTAssertGreaterThanOrEqual(partial.count, 200_000)
        XCTAssertLessThan(partial.count, 1_000_000)
        XCTAssertEqual(Array(partial), resource.bytes(0..<partial.count))

        server.updateResource("/slow.bin") { $0.delayMillisecondsPerPiece = 0 }
        let resumed = try PocketBinary.run(["-C", "-", "-o", out.path, server.url("/slow.bin")])
        XCTAssertEqual(resumed.status, 0, resumed.stderrText)
        XCTAssertEqual(try SHA256Digest.hex(fileAtPath: out.path), resource.sha256)
        XCTAssertEqual(server.receivedRequests.last?.header("Range"), "bytes=\(partial.count)-")
        XCTAssertEqual(server.receivedRequests.last?.header("If-Range"), "\"slow\"")
    }
}
