import Foundation
import PocketTestSupport
import XCTest

/// The built `pocket` executable, run as a subprocess. SwiftPM puts it next
/// to the test bundle (`swift build --build-tests` builds every product);
/// a test target cannot depend on an executable target reliably on Linux,
/// so it is found there, and a missing binary fails the test with the path.
struct PocketBinary {
    /// The outcome of one run.
    struct Run {
        var status: Int32
        var stdout: Data
        var stderr: Data
        var stdoutText: String { String(decoding: stdout, as: UTF8.self) }
        var stderrText: String { String(decoding: stderr, as: UTF8.self) }
        /// Non-empty stderr lines.
        var stderrLines: [String] { stderrText.split(separator: "\n").map(String.init) }
    }

    static func path(_ name: String = "pocket", file: StaticString = #filePath, line: UInt = #line) throws -> URL {
        if name.hasPrefix("/") { return URL(fileURLWithPath: name) }
        let exe = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        // The test bundle is .build/<triple>/debug/PocketPackageTests.xctest.
        let candidate = exe.deletingLastPathComponent().appendingPathComponent(name)
        guard FileManager.default.isExecutableFile(atPath: candidate.path) else {
            XCTFail("the \(name) binary is missing at \(candidate.path): build it with `swift build --build-tests`",
                    file: file, line: line)
            throw CocoaError(.fileNoSuchFile)
        }
        return candidate
    }

    /// Runs `pocket args` (or another product), with `stdin` bytes and
    /// `directory` as its working directory; kills it after `timeout`
    /// seconds (generous: the machine may be loaded) and fails the test then.
    @discardableResult
    static func run(_ args: [String], binary: String = "pocket", stdin: Data? = nil, directory: URL? = nil,
                    timeout: TimeInterval = 120, file: StaticString = #filePath, line: UInt = #line) throws -> Run {
        // A clean signal mask and default dispositions; stopped by PID on a timeout.
        let (result, timedOut) = try ChildProcess.run(try path(binary, file: file, line: line).path, args, input: stdin,
                                                      directory: directory?.path, timeout: timeout)
        if timedOut {
            XCTFail("pocket \(args.joined(separator: " ")) did not finish in \(Int(timeout)) s", file: file, line: line)
        }
        return Run(status: result.status, stdout: result.stdout, stderr: result.stderr)
    }

    /// A fresh temporary directory, removed by the caller's `defer`.
    static func scratchDirectory() throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("pocket-cli-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        return dir
    }
}
