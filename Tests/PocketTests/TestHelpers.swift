import Foundation
import XCTest
@testable import Pocket
import PocketTestSupport

/// A client with short timeouts so a hung test fails in seconds, not minutes.
func makeClient(_ configure: (inout PocketClient.Configuration) -> Void = { _ in }) throws -> PocketClient {
    var config = PocketClient.Configuration()
    config.timeouts = PocketTimeouts(connect: .seconds(5), read: .seconds(10), total: .seconds(20))
    configure(&config)
    return try PocketClient(configuration: config)
}

func url(_ server: TestServer, _ path: String) -> URL {
    URL(string: server.baseURL + path)!
}

/// Asserts that `body` throws a `PocketError` with `code`; returns it.
@discardableResult
func assertPocketError<T>(_ code: PocketError.Code, file: StaticString = #filePath, line: UInt = #line,
                          _ body: () async throws -> T) async -> PocketError? {
    do {
        let value = try await body()
        XCTFail("expected \(code), got \(value)", file: file, line: line)
    } catch let error as PocketError {
        XCTAssertEqual(error.code, code, "\(error)", file: file, line: line)
        return error
    } catch {
        XCTFail("expected PocketError \(code), got \(error)", file: file, line: line)
    }
    return nil
}

/// Open file descriptors of this process.
/// Descriptors open in this process, not counting timerfds: the engine
/// makes none, and the dispatch library makes one the first time anything
/// in the process waits with a timeout (a `Task.sleep`, `eventually`) and
/// keeps it, so a test whose first timed wait falls between its two counts
/// would see it as a leak.
func openFileDescriptorCount() -> Int {
    guard let fds = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") else { return -1 }
    return fds.filter { fd in
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(fd)")) != "anon_inode:[timerfd]"
    }.count
}

/// Engine threads (named pocket-loop / pocket-dns) alive in this process.
func engineThreadCount() -> Int {
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
    return tasks.filter { tid in
        let comm = (try? String(contentsOfFile: "/proc/self/task/\(tid)/comm", encoding: .utf8)) ?? ""
        return comm.hasPrefix("pocket-")
    }.count
}

/// Sends `request` `count` times in a row. Nonisolated, so inside
/// `withTaskExecutorPreference(client.executor)` it runs on the loop.
func sendSequentially(_ client: PocketClient, _ request: PocketRequest, count: Int) async throws {
    for _ in 0..<count {
        let r = try await client.send(request)
        precondition(r.status == 200)
    }
}

/// Polls `condition` every 10 ms for up to `seconds`.
func eventually(_ seconds: Double = 5, _ condition: () -> Bool) async -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return condition()
}

/// Fails unless `condition` becomes true within `seconds`.
func assertEventually(_ message: @autoclosure () -> String, seconds: Double = 5,
                      file: StaticString = #filePath, line: UInt = #line, _ condition: () -> Bool) async {
    let ok = await eventually(seconds, condition)
    XCTAssertTrue(ok, message(), file: file, line: line)
}

/// The test command installs every tool the suite uses (scripts/setup.sh), so
/// a missing one is a failure, not a skip.
func requireTool(_ present: Bool, _ message: String, file: StaticString = #filePath, line: UInt = #line) throws {
    guard present else {
        XCTFail(message, file: file, line: line)
        throw PocketError(.unknown, message)
    }
}

/// Resident and peak resident memory of this process, from /proc/self/status.
enum MemoryStatus {
    struct Reading { var residentKiB: Int; var peakKiB: Int }

    static func read() throws -> Reading {
        let status = try String(contentsOfFile: "/proc/self/status", encoding: .utf8)
        func field(_ name: String) -> Int? {
            status.split(separator: "\n").first { $0.hasPrefix(name + ":") }
                .flatMap { Int($0.dropFirst(name.count + 1).filter(\.isNumber)) }
        }
        guard let rss = field("VmRSS"), let hwm = field("VmHWM") else {
            throw PocketError(.unknown, "no VmRSS/VmHWM in /proc/self/status")
        }
        return Reading(residentKiB: rss, peakKiB: hwm)
    }

    /// Resets VmHWM to the current RSS (`echo 5 > /proc/self/clear_refs`,
    /// Linux 4.0+) and returns the reading just after.
    static func resetPeak() throws -> Reading {
        try Data("5".utf8).write(to: URL(filePath: "/proc/self/clear_refs"))
        return try read()
    }
}

/// This process's resident set size (VmRSS) in bytes, 0 if unreadable.
func residentBytes() -> Int {
    ((try? MemoryStatus.read())?.residentKiB ?? 0) * 1024
}

/// One plain nginx for the test process (started on first use), stopped
/// when the test bundle finishes: a global is never deinitialized, and a full
/// run used to leave this nginx running after it (scripts/test.sh now fails
/// on that).
private let sharedNginx: NginxFixture? = {
    guard let nginx = try? NginxFixture() else { return nil }
    XCTestObservationCenter.shared.addTestObserver(SharedNginxStopper(nginx))
    return nginx
}()

/// Stops the shared nginx at the end of the test bundle.
private final class SharedNginxStopper: NSObject, XCTestObservation {
    private let nginx: NginxFixture

    init(_ nginx: NginxFixture) { self.nginx = nginx }

    func testBundleDidFinish(_ testBundle: Bundle) {
        nginx.stop()
    }
}

/// The shared nginx; its absence is a failure, not a skip (CI installs it).
func requireNginx(file: StaticString = #filePath, line: UInt = #line) throws -> NginxFixture {
    guard let nginx = sharedNginx else {
        XCTFail("nginx is not available: apt-get install nginx-light", file: file, line: line)
        throw PocketError(.unknown, "nginx missing")
    }
    return nginx
}

/// Writes `size` bytes of the `BytePattern` of `seed` to `file`; returns it.
func writePatternFile(_ file: URL, _ size: Int, seed: UInt64 = 7) throws -> URL {
    try Data(BytePattern.bytes(seed: seed, range: 0..<size)).write(to: file)
    return file
}

/// The pattern's first `size` bytes as an async sequence of `chunk`-byte pieces.
func patternStream(_ size: Int, seed: UInt64 = 7, chunk: Int = 100_000) -> AsyncStream<Data> {
    AsyncStream { c in
        var offset = 0
        while offset < size {
            let end = min(size, offset + chunk)
            c.yield(Data(BytePattern.bytes(seed: seed, range: offset..<end)))
            offset = end
        }
        c.finish()
    }
}
