#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Foundation
import PocketTestSupport
import XCTest

/// The tests leave no process behind and stop only what they started:
/// nginx is spawned with a clean signal mask and default
/// dispositions even from a thread that blocks signals, and ends on SIGTERM
/// sent to its recorded PID. `scripts/test.sh` checks the same at the end of
/// a whole run (no process carrying its POCKET_TEST_RUN marker may remain).
final class ProcessHygieneTests: XCTestCase {
    func testNginxStartedFromAThreadThatBlocksSIGTERMStopsOnSIGTERMAndLeavesNothing() throws {
        try requireTool(NginxFixture.isAvailable, "nginx is not installed (apt-get install nginx-light)")
        // Block what a shell and `stop()` send, as XCTest's and Dispatch's threads may.
        var blocked = sigset_t(), previous = sigset_t()
        sigemptyset(&blocked)
        for sig in [SIGTERM, SIGINT, SIGHUP, SIGQUIT] { sigaddset(&blocked, sig) }
        pthread_sigmask(SIG_BLOCK, &blocked, &previous)
        let started = Result { try NginxFixture() }
        pthread_sigmask(SIG_SETMASK, &previous, nil)
        let nginx = try started.get()
        let pid = nginx.pid

        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        let sigBlk = try XCTUnwrap(Self.mask("SigBlk", in: status))
        XCTAssertEqual(sigBlk & (1 << UInt64(SIGTERM - 1)), 0, "nginx inherited a blocked SIGTERM: \(status)")
        XCTAssertEqual(sigBlk & (1 << UInt64(SIGINT - 1)), 0, "nginx inherited a blocked SIGINT")
        let environ = try Data(contentsOf: URL(fileURLWithPath: "/proc/\(pid)/environ"))
        XCTAssertTrue(environ.split(separator: 0).contains { Array($0) == Array("\(ChildProcess.spawnedByVariable)=\(getpid())".utf8) },
                      "nginx carries the marker of the process that started it")

        XCTAssertEqual(nginx.stop(), .terminated, "SIGTERM alone ended nginx")
        XCTAssertEqual(kill(pid, 0), -1, "nginx's PID is gone (ended and reaped)")
        XCTAssertEqual(errno, ESRCH)
        XCTAssertEqual(ChildProcess.leftovers().map(\.command), [], "processes this test process started still run")
    }

    func testTerminateFallsBackToSIGKILLAfterTheGracePeriod() throws {
        // A shell that ignores SIGTERM: only SIGKILL ends it.
        let child = try ChildProcess("/bin/sh", ["-c", "trap '' TERM; while :; do sleep 0.05; done"])
        usleep(100_000) // the trap is set
        let start = Date()
        XCTAssertEqual(child.terminate(grace: 0.3), .killed)
        XCTAssertLessThan(Date().timeIntervalSince(start), 5)
        XCTAssertEqual(child.exitStatus, 128 + SIGKILL)
        XCTAssertEqual(child.terminate(), .alreadyEnded)
        // Its `sleep` children are orphaned but carry the marker: wait until they end.
        let deadline = Date(timeIntervalSinceNow: 2)
        while !ChildProcess.leftovers().isEmpty && Date() < deadline { usleep(20_000) }
        XCTAssertEqual(ChildProcess.leftovers().map(\.command), [])
    }

    func testAChildInheritsNoDescriptorBeyondItsStandardStreams() throws {
        // A pipe without FD_CLOEXEC, as a test runner's may be: a child that
        // outlived a crashed test process would keep it open (and `swift
        // test`, reading its other end, waiting).
        var fds: [Int32] = [0, 0]
        XCTAssertEqual(pipe(&fds), 0)
        defer { close(fds[0]); close(fds[1]) }
        XCTAssertEqual(fcntl(fds[1], F_GETFD) & FD_CLOEXEC, 0, "the pipe is inheritable")
        let (output, timedOut) = try ChildProcess.run("/bin/sh", ["-c", "ls /proc/$$/fd"], timeout: 20)
        XCTAssertFalse(timedOut)
        XCTAssertEqual(output.status, 0, output.stderrText)
        let open = Set(output.stdoutText.split(whereSeparator: \.isNewline).compactMap { Int32($0) })
        XCTAssertTrue(open.isSuperset(of: [0, 1, 2]), "\(open)")
        XCTAssertFalse(open.contains(fds[0]), "the child holds the pipe's read end: \(open)")
        XCTAssertFalse(open.contains(fds[1]), "the child holds the pipe's write end: \(open)")
    }

    func testSetupScriptStopsNoProcessByName() throws {
        // scripts/setup.sh and the scripts it shares with the benchmarks stop
        // only the PIDs they recorded: no pkill, killall or systemctl stop.
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let scripts = root.appendingPathComponent("scripts")
        let names = try FileManager.default.contentsOfDirectory(atPath: scripts.path).filter { $0.hasSuffix(".sh") }
            .map { "scripts/" + $0 }
            + (try FileManager.default.contentsOfDirectory(atPath: scripts.appendingPathComponent("lib").path))
            .filter { $0.hasSuffix(".sh") }.map { "scripts/lib/" + $0 }
        XCTAssertTrue(names.contains("scripts/setup.sh"), "\(names)")
        for name in names {
            let text = try String(contentsOf: root.appendingPathComponent(name), encoding: .utf8)
            for line in text.split(separator: "\n") where !line.trimmingCharacters(in: .whitespaces).hasPrefix("#") {
                for word in ["pkill", "killall", "systemctl stop"] {
                    XCTAssertFalse(line.contains(word), "\(name): \(line)")
                }
            }
        }
    }

    /// A hex signal mask line of /proc/PID/status, e.g. `SigBlk:\t0000000000000000`.
    private static func mask(_ key: String, in status: String) -> UInt64? {
        status.split(separator: "\n").first { $0.hasPrefix(key + ":") }
            .flatMap { UInt64($0.dropFirst(key.count + 1).trimmingCharacters(in: .whitespaces), radix: 16) }
    }
}
