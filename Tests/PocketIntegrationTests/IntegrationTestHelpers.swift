import Foundation
import XCTest
import Pocket
import PocketTestSupport

/// A client with short timeouts so a hung test fails in seconds, not minutes.
func makeIntegrationClient(_ configure: (inout PocketClient.Configuration) -> Void = { _ in }) throws -> PocketClient {
    var config = PocketClient.Configuration()
    config.timeouts = PocketTimeouts(connect: .seconds(5), read: .seconds(10), total: .seconds(20))
    configure(&config)
    return try PocketClient(configuration: config)
}

/// `host:port` of `server`, as an `HTTPRequest` authority.
func authority(_ server: TestServer) -> String { "\(server.host):\(server.port)" }

/// Asserts that `body` throws a `PocketError` with `code`; returns it.
@discardableResult
func expectPocketError<T>(_ code: PocketError.Code, file: StaticString = #filePath, line: UInt = #line,
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

/// Resident set size of this process in bytes (from /proc/self/statm).
func residentBytes() -> Int {
    guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return -1 }
    let fields = text.split(separator: " ")
    guard fields.count > 1, let pages = Int(fields[1]) else { return -1 }
    return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
}

/// The sanitizer this test binary was built with, if any (`swift test
/// --sanitize=...` in scripts/ci-sanitized.sh), found as PocketTests'
/// Sanitizers.swift finds it: its runtime's entry point in the process.
/// The memory multiplier covers shadow memory, redzones and ASan's 16 MB
/// quarantine (4 under TSan, 3 under ASan, else 1).
let sanitizerMemoryFactor: Int = {
    guard let process = dlopen(nil, RTLD_NOW) else { return 1 }
    if dlsym(process, "__tsan_init") != nil { return 4 }
    if dlsym(process, "__asan_init") != nil { return 3 }
    return 1
}()
