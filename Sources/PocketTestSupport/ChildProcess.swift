#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Foundation

/// A process the tests start (nginx, openssl, curl, python3, the `pocket`
/// binary) and stop by the PID they recorded, never by name.
///
/// It is spawned with `posix_spawn` with an empty signal mask and every
/// signal at its default disposition (`POSIX_SPAWN_SETSIGMASK |
/// POSIX_SPAWN_SETSIGDEF`): a test thread may have signals blocked (XCTest,
/// Dispatch, the engine's threads), and a child that inherits a blocked
/// SIGTERM can only be stopped with SIGKILL. Foundation's `Process` passes
/// the mask on. The child's environment is this process's, plus
/// `POCKET_SPAWNED_BY=<this PID>` so a leftover can be traced to the test
/// process that started it (`ChildProcess.leftovers()`).
///
/// Standard streams are `/dev/null`, a file, or a descriptor of this process
/// (e.g. a pipe's end); capture output through files (`run` does), which
/// cannot deadlock on a full pipe.
public final class ChildProcess: @unchecked Sendable {
    // Invariant: `status` is read and written only with `lock` held.
    private let lock = NSLock()
    private var status: Int32?

    /// The child's process ID (recorded at spawn; reaped by `wait`).
    public let pid: pid_t
    /// The executable's path.
    public let executable: String

    /// Where a standard stream of the child goes.
    public enum Stream: Sendable {
        /// `/dev/null`.
        case null
        /// A file, opened for reading (stdin) or created/truncated for writing.
        case file(String)
        /// A descriptor of this process, duplicated into the child.
        case descriptor(Int32)
    }

    /// Why a child could not be started.
    public struct SpawnError: Error, CustomStringConvertible {
        public var description: String
    }

    /// The environment variable naming the test process that spawned a child.
    public static let spawnedByVariable = "POCKET_SPAWNED_BY"

    /// PIDs of the children started here and not reaped yet: the processes
    /// this test process still owns (a fixture shared by the whole run, say).
    private static let owned = OwnedPIDs()

    /// Starts `executable` (a path) with `arguments`, in `directory` (the
    /// current one when nil), with `environment` added to this process's.
    public init(_ executable: String, _ arguments: [String], directory: String? = nil,
                environment: [String: String] = [:],
                stdin: Stream = .null, stdout: Stream = .null, stderr: Stream = .null) throws {
        self.executable = executable
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var empty = sigset_t(), all = sigset_t()
        sigemptyset(&empty)
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &empty)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for (fd, stream) in [(Int32(0), stdin), (1, stdout), (2, stderr)] {
            switch stream {
            case .null:
                posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", fd == 0 ? O_RDONLY : O_WRONLY, 0)
            case .file(let path):
                posix_spawn_file_actions_addopen(&actions, fd, path,
                                                 fd == 0 ? O_RDONLY : O_WRONLY | O_CREAT | O_TRUNC, 0o600)
            case .descriptor(let source):
                posix_spawn_file_actions_adddup2(&actions, source, fd)
            }
        }
        // Nothing else of this process is inherited: a descriptor left open
        // without FD_CLOEXEC (a pipe of the test runner's, a socket) would
        // stay open in the child, and a child that outlives this process
        // (it crashed) would keep `swift test`'s output pipe from ending.
        if let closeFrom = Self.addCloseFrom { _ = closeFrom(&actions, 3) }

        var env = ProcessInfo.processInfo.environment
        env[Self.spawnedByVariable] = String(getpid())
        for (key, value) in environment { env[key] = value }
        // A working directory through env(1) -C (posix_spawn_file_actions_addchdir_np
        // is not visible to Swift through Glibc).
        let command = directory.map { ["/usr/bin/env", "-C", $0, executable] } ?? [executable]
        let argv = (command + arguments).map { strdup($0) } + [nil]
        let envp = env.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for p in argv + envp { free(p) } }
        var child: pid_t = 0
        let rc = posix_spawn(&child, command[0], &actions, &attributes, argv, envp)
        guard rc == 0 else {
            throw SpawnError(description: "cannot start \(executable): \(String(cString: strerror(rc)))")
        }
        pid = child
        Self.owned.withLock { _ = $0.insert(child) }
    }

    deinit {
        _ = terminate()
    }

    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34 and later;
    /// not visible to Swift through Glibc without `_GNU_SOURCE`), found at
    /// run time; nil where the C library has none.
    private static let addCloseFrom: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32)? = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32).self)
    }()

    /// The exit status once the child has ended: its exit code, or 128 + the
    /// signal that ended it (as a shell reports it); nil while it runs.
    public var exitStatus: Int32? {
        lock.withLock {
            if status == nil {
                status = Self.reap(pid)
                if status != nil { Self.owned.withLock { _ = $0.remove(pid) } }
            }
            return status
        }
    }

    /// True until the child has ended (and been reaped).
    public var isRunning: Bool { exitStatus == nil }

    /// Waits for the child to end; returns `exitStatus`.
    @discardableResult
    public func wait() -> Int32 {
        // Polls (the lock is never held while blocked, so `signal` from
        // another thread is never stuck behind a wait).
        while true {
            if let status = exitStatus { return status }
            usleep(2_000)
        }
    }

    /// Waits at most `seconds`; the exit status, or nil if it still runs.
    public func wait(seconds: Double) -> Int32? {
        let deadline = Date(timeIntervalSinceNow: seconds)
        while true {
            if let status = exitStatus { return status }
            if Date() >= deadline { return nil }
            usleep(5_000)
        }
    }

    /// Sends `signal` to the child (only while it has not been reaped, so the
    /// PID cannot belong to another process by then).
    public func signal(_ signal: Int32) {
        lock.withLock {
            if status == nil {
                status = Self.reap(pid)
                if status != nil { Self.owned.withLock { _ = $0.remove(pid) } }
            }
            if status == nil { kill(pid, signal) }
        }
    }

    /// How `terminate` ended the child.
    public enum Ending: Equatable, Sendable {
        /// It had ended already.
        case alreadyEnded
        /// SIGTERM ended it within the grace period.
        case terminated
        /// It ignored SIGTERM for the grace period; SIGKILL ended it.
        case killed
    }

    /// Stops the child: SIGTERM, a wait of at most `grace` seconds, then
    /// SIGKILL and a wait for it to end. Idempotent.
    @discardableResult
    public func terminate(grace: Double = 2) -> Ending {
        guard isRunning else { return .alreadyEnded }
        signal(SIGTERM)
        if wait(seconds: grace) != nil { return .terminated }
        signal(SIGKILL)
        wait()
        return .killed
    }

    /// The result of `run`.
    public struct Output: Sendable {
        public var status: Int32
        public var stdout: Data
        public var stderr: Data
        public var stdoutText: String { String(decoding: stdout, as: UTF8.self) }
        public var stderrText: String { String(decoding: stderr, as: UTF8.self) }
    }

    /// Runs `executable arguments` to its end with `input` on stdin (none:
    /// /dev/null) and returns its status and output; stopped (SIGTERM, then
    /// SIGKILL) after `timeout` seconds, with `timedOut` set.
    public static func run(_ executable: String, _ arguments: [String], input: Data? = nil,
                           directory: String? = nil, timeout: Double = 120) throws -> (Output, timedOut: Bool) {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("pocket-run-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let out = scratch.appendingPathComponent("out").path, err = scratch.appendingPathComponent("err").path
        var stdin = Stream.null
        if let input {
            let path = scratch.appendingPathComponent("in").path
            guard FileManager.default.createFile(atPath: path, contents: input) else {
                throw SpawnError(description: "cannot write \(path)")
            }
            stdin = .file(path)
        }
        let child = try ChildProcess(executable, arguments, directory: directory,
                                     stdin: stdin, stdout: .file(out), stderr: .file(err))
        var timedOut = false
        if child.wait(seconds: timeout) == nil {
            timedOut = true
            child.terminate()
        }
        let status = child.wait()
        let output = Output(status: status, stdout: FileManager.default.contents(atPath: out) ?? Data(),
                            stderr: FileManager.default.contents(atPath: err) ?? Data())
        return (output, timedOut)
    }

    /// As `run`, throwing with stderr on a non-zero status or a timeout.
    public static func check(_ executable: String, _ arguments: [String], input: Data? = nil,
                             timeout: Double = 120) throws -> Data {
        let (output, timedOut) = try run(executable, arguments, input: input, timeout: timeout)
        guard output.status == 0, !timedOut else {
            throw SpawnError(description: "\(executable) \(arguments.joined(separator: " ")) "
                + (timedOut ? "timed out" : "exited with \(output.status)") + ": \(output.stderrText)")
        }
        return output.stdout
    }

    /// Live processes that carry `POCKET_SPAWNED_BY=<this PID>` in their
    /// environment and that no `ChildProcess` of this process still owns
    /// (started and not yet ended): what the tests started and lost track
    /// of, their children included, even orphaned and re-parented ones.
    /// Each as its PID and command line.
    public static func leftovers() -> [(pid: pid_t, command: String)] {
        let parent = getpid()
        let marker = Array("\(spawnedByVariable)=\(parent)".utf8)
        let owned = Self.owned.withLock { $0 }
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap { name -> (pid_t, String)? in
            guard let pid = pid_t(name), pid != parent, !owned.contains(pid),
                  let environ = FileManager.default.contents(atPath: "/proc/\(name)/environ") else { return nil }
            guard environ.split(separator: 0).contains(where: { Array($0) == marker }) else { return nil }
            // A zombie (ended, not yet reaped by its parent) is not running.
            let stat = (try? String(contentsOfFile: "/proc/\(name)/stat", encoding: .utf8)) ?? ""
            if let close = stat.lastIndex(of: ")"),
               stat[stat.index(after: close)...].trimmingCharacters(in: .whitespaces).hasPrefix("Z") { return nil }
            let cmdline = FileManager.default.contents(atPath: "/proc/\(name)/cmdline") ?? Data()
            let command = cmdline.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }.joined(separator: " ")
            return (pid, command)
        }
    }

    /// `waitpid(WNOHANG)` once: the status (exit code, or 128 + signal), or
    /// nil if it still runs. ECHILD (reaped elsewhere): 255.
    private static func reap(_ pid: pid_t) -> Int32? {
        var raw: Int32 = 0
        while true {
            let r = waitpid(pid, &raw, WNOHANG)
            if r == pid { break }
            if r == 0 { return nil }
            if errno == EINTR { continue }
            return 255
        }
        let low = raw & 0x7f
        return low == 0 ? (raw >> 8) & 0xff : 128 + low
    }
}

/// The PIDs `ChildProcess` owns, behind a lock.
private final class OwnedPIDs: @unchecked Sendable {
    // Invariant: `pids` is read and written only with `lock` held.
    private let lock = NSLock()
    private var pids = Set<pid_t>()

    func withLock<R>(_ body: (inout Set<pid_t>) -> R) -> R {
        lock.withLock { body(&pids) }
    }
}
