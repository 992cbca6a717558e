#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Foundation

/// A real tinyproxy (Debian's) on a loopback port, for proxy tests and
/// benchmarks: forwarding for `http://`, CONNECT tunnels for `https://`.
///
/// Its config, pid file and log live in a fresh temporary directory; it runs
/// in the foreground (`-d`), started with a clean signal mask (`ChildProcess`)
/// and stopped by its recorded PID (SIGTERM, SIGKILL after 2 s).
///
/// ```swift
/// let proxy = try TinyproxyFixture(basicAuth: ("user", "secret"))
/// defer { proxy.stop() }
/// // config.proxy = try PocketProxy("http://user:secret@127.0.0.1:\(proxy.port)")
/// ```
public final class TinyproxyFixture: @unchecked Sendable {
    // Invariant: `process` and `stopped` are used only with `lock` held;
    // every other stored property is immutable after init.
    private let lock = NSLock()
    private var process: ChildProcess?
    private var stopped = false

    /// tinyproxy's process ID, recorded when it was started.
    public let pid: pid_t
    /// The loopback port it listens on (127.0.0.1).
    public let port: Int
    /// The temporary directory of its config and log (removed by `stop()`).
    public let directory: URL

    /// Where tinyproxy is looked for.
    public static let searchPaths = ["/usr/bin/tinyproxy", "/usr/sbin/tinyproxy", "/usr/local/bin/tinyproxy"]

    /// The executable, or nil if tinyproxy is not installed.
    public static var executablePath: String? {
        searchPaths.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Why the fixture could not start.
    public struct StartError: Error, CustomStringConvertible {
        public var description: String
    }

    /// Starts tinyproxy on a free loopback port. `basicAuth` makes it demand
    /// those credentials (407 otherwise); `connectPorts` limits CONNECT to
    /// those ports (others get 403), nil allows every port.
    public init(basicAuth: (user: String, password: String)? = nil, connectPorts: [Int]? = nil,
                maxClients: Int = 256, timeout: Double = 10) throws {
        guard let executable = Self.executablePath else {
            throw StartError(description: "tinyproxy is not installed: apt-get install tinyproxy (scripts/setup.sh)")
        }
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("pocket-tinyproxy-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var lastError = ""
        for _ in 0..<3 {
            let port = try Sockets.freePort()
            var config = """
            Port \(port)
            Listen 127.0.0.1
            Timeout 30
            PidFile "\(directory.path)/tinyproxy.pid"
            LogFile "\(directory.path)/tinyproxy.log"
            LogLevel Info
            MaxClients \(maxClients)
            Allow 127.0.0.1
            DisableViaHeader Yes

            """
            if let basicAuth { config += "BasicAuth \(basicAuth.user) \(basicAuth.password)\n" }
            for p in connectPorts ?? [] { config += "ConnectPort \(p)\n" }
            let file = directory.appendingPathComponent("tinyproxy.conf")
            try config.write(to: file, atomically: true, encoding: .utf8)
            let started = try ChildProcess(executable, ["-d", "-c", file.path])
            let deadline = Date(timeIntervalSinceNow: timeout)
            while Date() < deadline, started.exitStatus == nil, !Sockets.canConnect(host: "127.0.0.1", port: port) {
                Sockets.sleep(milliseconds: 20)
            }
            if started.exitStatus == nil, Sockets.canConnect(host: "127.0.0.1", port: port) {
                self.port = port
                self.pid = started.pid
                self.process = started
                return
            }
            started.terminate(grace: 1)
            lastError = Self.log(directory)
        }
        try? FileManager.default.removeItem(at: directory)
        throw StartError(description: "tinyproxy did not start:\n\(lastError)")
    }

    deinit { stop() }

    /// `http://127.0.0.1:PORT`, or with `user:password@` when given.
    public func url(user: String? = nil, password: String? = nil) -> String {
        let credentials = user.map { "\($0):\(password ?? "")@" } ?? ""
        return "http://\(credentials)127.0.0.1:\(port)"
    }

    /// Its log so far (for failure messages).
    public var log: String { Self.log(directory) }

    private static func log(_ directory: URL) -> String {
        (try? String(contentsOf: directory.appendingPathComponent("tinyproxy.log"), encoding: .utf8)) ?? ""
    }

    /// Stops tinyproxy by its PID and removes the directory. Idempotent.
    @discardableResult
    public func stop() -> ChildProcess.Ending? {
        let (first, running): (Bool, ChildProcess?) = lock.withLock {
            defer { process = nil; stopped = true }
            return (!stopped, process)
        }
        guard first else { return nil }
        let ending = running?.terminate(grace: 2)
        try? FileManager.default.removeItem(at: directory)
        return ending
    }
}
