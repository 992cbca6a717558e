import Foundation
import XCTest
@testable import Pocket
import PocketTestSupport

/// A 1 GiB multipart form goes out in constant memory: the file part is
/// sent with sendfile(2), never read into the process. Measured twice: in
/// this process (whose XCTest + Foundation baseline alone is above 32 MiB,
/// so the bound is on the growth of its peak), and as the whole peak RSS of
/// a separate client process (pocket-bench --upload-form, which
/// `swift build --build-tests` builds next to this test bundle).
final class MultipartMemoryTests: XCTestCase {
    private struct Missing: Error, CustomStringConvertible { var description: String }

    /// A `kB` figure of /proc/self/status, in bytes.
    private func status(_ field: String) throws -> Int {
        let text = try String(contentsOfFile: "/proc/self/status", encoding: .utf8)
        let line = try XCTUnwrap(text.split(separator: "\n").first { $0.hasPrefix(field + ":") })
        let kb = try XCTUnwrap(Int(line.split(separator: " ", omittingEmptySubsequences: true)[1]))
        return kb * 1024
    }

    /// "<length> <sha256>" of a one-file-part form of `size` zero bytes,
    /// written out here by hand (not by Pocket's encoder).
    private func expected(boundary: String, name: String, fileName: String, size: Int) -> String {
        let head = "--\(boundary)\r\nContent-Disposition: form-data; name=\"\(name)\"; filename=\"\(fileName)\"\r\n"
            + "Content-Type: application/octet-stream\r\n\r\n"
        let tail = "\r\n--\(boundary)--\r\n"
        let hasher = SHA256Hasher()
        hasher.update(Array(head.utf8))
        let zeros = [UInt8](repeating: 0, count: 1 << 20)
        for _ in 0..<(size >> 20) { hasher.update(zeros) }
        hasher.update(Array(tail.utf8))
        return "\(head.utf8.count + size + tail.utf8.count) \(hasher.finalizeHex())"
    }

    func testOneGiBFormUploadsWithPeakRSSUnder32MiB() async throws {
        let server = try TestServer()
        server.keepsRequestBodies = false // the server hashes the body as it reads it
        server.route("/form") { r in .text("\(r.bodyLength) \(r.bodySHA256)") }
        let directory = try temporaryDirectory("pocket-mpm", shuttingDown: server) // the 1 GiB file is removed after
        // A sparse file: 1 GiB of zeros that takes no disk space (256 MiB
        // under a sanitizer).
        let size = sanitizedScale(1 << 30)
        let file = directory.appendingPathComponent("big.img")
        XCTAssertTrue(FileManager.default.createFile(atPath: file.path, contents: nil))
        let handle = try FileHandle(forWritingTo: file)
        try handle.truncate(atOffset: UInt64(size))
        try handle.close()

        var form = PocketMultipartForm(boundary: "pocket-memory-test")
        form.addFile("big", at: file)
        let want = expected(boundary: "pocket-memory-test", name: "big", fileName: "big.img", size: size)
        let client = try makeClient { $0.timeouts = PocketTimeouts(connect: .seconds(10), read: .seconds(60), total: .seconds(600)) }
        _ = try await client.send(PocketRequest(url: URL(string: server.baseURL + "/form")!)) // engine and pool warm
        // Start the peak over from the current size (clear_refs 5 resets VmHWM).
        try "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8)
        let start = try status("VmRSS")
        let r = try await client.send(PocketRequest(method: .put, url: URL(string: server.baseURL + "/form")!, body: .multipart(form)))
        let peak = try status("VmHWM")
        XCTAssertEqual(r.status, 200)
        XCTAssertEqual(r.text, want)
        print("multipart \(size >> 20) MiB in-process: RSS at start \(start >> 10) KiB, peak \(peak >> 10) KiB")
        XCTAssertLessThan(peak - start, 32 << 20, "peak RSS grew by \((peak - start) >> 10) KiB")

        // The same file from a process of its own: its whole peak RSS.
        let (exit, output) = try spawn(try pocketBench(), ["--url", server.baseURL + "/form", "--connections", "1",
                                                                   "--requests", "1", "--warmup", "0", "--json",
                                                                   "--upload-form", file.path])
        XCTAssertEqual(exit, 0, output)
        let received = try XCTUnwrap(server.receivedRequests.last)
        let contentType = try XCTUnwrap(received.header("Content-Type"))
        let prefix = "multipart/form-data; boundary="
        XCTAssertTrue(contentType.hasPrefix(prefix + "pocket-"), contentType)
        let boundary = String(contentType.dropFirst(prefix.count))
        XCTAssertEqual("\(received.bodyLength) \(received.bodySHA256)",
                       expected(boundary: boundary, name: "file", fileName: "big.img", size: size))
        // pocket-bench reports its own VmHWM (a parent's ru_maxrss for a
        // posix_spawn child would count the parent's size at the spawn).
        let json = try XCTUnwrap(output.split(separator: "\n").first { $0.hasPrefix("{") }, output)
        let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        XCTAssertEqual(object["errors"] as? Int, 0, output)
        let peakKiB = try XCTUnwrap(object["peak_rss_kib"] as? Int, output)
        print("multipart 1 GiB from pocket-bench: peak RSS \(peakKiB) KiB")
        // The child is built with this bundle's sanitizer, if any (its runtime's memory counts).
        XCTAssertLessThan(peakKiB, (32 << 10) * sanitizerMemoryFactor, "pocket-bench peak RSS \(peakKiB) KiB")
    }

    /// pocket-bench from the build directory of this test bundle.
    private func pocketBench() throws -> String {
        let bundle = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        let candidates = [bundle, bundle.deletingLastPathComponent(), URL(fileURLWithPath: ".build/debug")]
            .map { $0.appendingPathComponent("pocket-bench").path }
        guard let path = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw Missing(description: "no pocket-bench in \(candidates): build it with swift build --build-tests")
        }
        return path
    }

    /// Runs `path` with `args` (ChildProcess: a clean signal mask, stopped by
    /// its PID on a timeout); returns its exit status and its output.
    private func spawn(_ path: String, _ args: [String]) throws -> (Int32, String) {
        let (result, timedOut) = try ChildProcess.run(path, args, timeout: 600)
        XCTAssertFalse(timedOut, "\(path) \(args) did not finish in 600 s")
        return (result.status, result.stdoutText + result.stderrText)
    }
}
