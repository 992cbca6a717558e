#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Foundation

/// A real Apache httpd on a loopback port with `mod_auth_digest` and
/// `mod_auth_basic`, for checking Pocket's authentication against a
/// production server.
///
/// Everything lives in a fresh temporary directory (config, password
/// files, logs, pid file, document root). It serves:
/// - `/digest/hello.txt`: `helloBody`, behind Digest (MD5, qop=auth) in the realm `realm`;
/// - `/basic/hello.txt`: the same, behind Basic;
/// - `/open/hello.txt`: the same, with no authentication.
/// The one user is `user` with `password`; the password files are written
/// with the openssl command-line tool (MD5 for htdigest, apr1 for htpasswd),
/// independently of Pocket.
///
/// httpd runs in the foreground as one process (`-X`, the event MPM, so
/// several connections are served at once), as `www-data` when
/// the tests run as root, started with a clean signal mask (`ChildProcess`)
/// and stopped by its recorded PID: SIGTERM, SIGKILL only after 2 s.
public final class ApacheFixture: @unchecked Sendable {
    // Invariant: `process` is read and written only with `lock` held; every
    // other stored property is immutable after `init`.
    private let lock = NSLock()
    private var process: ChildProcess?

    /// httpd's process ID, recorded when it was started.
    public let pid: pid_t
    /// The port httpd listens on (127.0.0.1).
    public let port: Int
    /// The temporary directory (removed by `stop()`).
    public let directory: URL

    public static let realm = "pocket apache"
    public static let user = "mufasa"
    public static let password = "Circle of Life"
    public static let helloBody = "Hello from Apache\n"

    /// `http://127.0.0.1:PORT` + `path`.
    public func url(_ path: String) -> String { "http://127.0.0.1:\(port)\(path)" }

    public struct StartError: Error, CustomStringConvertible {
        public var description: String
    }

    static let executable = "/usr/sbin/apache2"
    static let modules = "/usr/lib/apache2/modules"

    /// True when Debian's apache2 (with mod_auth_digest) and openssl are installed.
    public static var isAvailable: Bool {
        FileManager.default.isExecutableFile(atPath: executable)
            && FileManager.default.fileExists(atPath: "\(modules)/mod_auth_digest.so")
            && FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl")
    }

    /// Writes the directory, starts httpd on a free port and waits (up to
    /// `timeout` seconds) until it accepts connections.
    public init(timeout: Double = 10) throws {
        guard Self.isAvailable else {
            throw StartError(description: "apache2 is not installed: apt-get install apache2 (scripts/setup.sh)")
        }
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("pocket-apache-\(UUID().uuidString)")
        do {
            try Self.populate(directory)
            var started: (Int, ChildProcess)?
            for _ in 0..<3 where started == nil {
                let port = try Sockets.freePort()
                try Self.config(directory: directory, port: port)
                    .write(to: directory.appendingPathComponent("httpd.conf"), atomically: true, encoding: .utf8)
                if let process = try Self.launch(directory: directory, port: port, timeout: timeout) { started = (port, process) }
            }
            guard let started else { throw StartError(description: "apache2 could not bind a free port:\n\(Self.errorLog(directory))") }
            (port, pid) = (started.0, started.1.pid)
            process = started.1
        } catch {
            try? FileManager.default.removeItem(at: directory)
            throw error
        }
    }

    deinit { stop() }

    /// Stops httpd by its PID (SIGTERM, SIGKILL after 2 s) and removes the
    /// directory. Idempotent.
    public func stop() {
        let running: ChildProcess? = lock.withLock {
            defer { process = nil }
            return process
        }
        guard let running else { return }
        running.terminate(grace: 2)
        try? FileManager.default.removeItem(at: directory)
    }

    /// One line per request answered so far: `GET /path HTTP/1.1 STATUS`.
    public var accessLog: [String] {
        ((try? String(contentsOf: directory.appendingPathComponent("access.log"), encoding: .utf8)) ?? "")
            .split(separator: "\n").map(String.init)
    }

    /// httpd's error log so far (for failure messages).
    public var errorLog: String { Self.errorLog(directory) }

    static func errorLog(_ directory: URL) -> String {
        (try? String(contentsOf: directory.appendingPathComponent("error.log"), encoding: .utf8)) ?? ""
    }

    /// The standard output of `openssl arguments`, trimmed.
    static func openssl(_ arguments: [String], in directory: URL) throws -> String {
        let out = directory.appendingPathComponent("openssl.out")
        let process = try ChildProcess("/usr/bin/openssl", arguments, stdout: .file(out.path))
        guard process.wait(seconds: 10) == 0 else { throw StartError(description: "openssl \(arguments.joined(separator: " ")) failed") }
        defer { try? FileManager.default.removeItem(at: out) }
        return try String(contentsOf: out, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    static func populate(_ directory: URL) throws {
        let fm = FileManager.default
        for sub in ["www/digest", "www/basic", "www/open", "run"] {
            try fm.createDirectory(at: directory.appendingPathComponent(sub), withIntermediateDirectories: true)
        }
        for sub in ["digest", "basic", "open"] {
            try Data(helloBody.utf8).write(to: directory.appendingPathComponent("www/\(sub)/hello.txt"))
        }
        // htdigest: user:realm:MD5(user:realm:password).
        let a1 = directory.appendingPathComponent("a1.txt")
        try Data("\(user):\(realm):\(password)".utf8).write(to: a1)
        let md5 = try openssl(["dgst", "-md5", "-r", a1.path], in: directory).split(separator: " ").first.map(String.init) ?? ""
        try fm.removeItem(at: a1)
        try Data("\(user):\(realm):\(md5)\n".utf8).write(to: directory.appendingPathComponent("digest.users"))
        let apr1 = try openssl(["passwd", "-apr1", "-salt", "pocketsa", password], in: directory)
        try Data("\(user):\(apr1)\n".utf8).write(to: directory.appendingPathComponent("basic.users"))
    }

    static func config(directory: URL, port: Int) -> String {
        let d = directory.path
        let asRoot = getuid() == 0
        let modules = ["mpm_event", "authn_core", "authn_file", "authz_core", "authz_user", "auth_basic", "auth_digest"]
            .map { "LoadModule \($0)_module \(Self.modules)/mod_\($0).so" }.joined(separator: "\n")
        return """
        ServerRoot "\(d)"
        ServerName 127.0.0.1
        Listen 127.0.0.1:\(port)
        PidFile "\(d)/run/httpd.pid"
        ErrorLog "\(d)/error.log"
        LogLevel warn
        CustomLog "\(d)/access.log" "%r %>s"
        Mutex file:\(d)/run default
        DefaultRuntimeDir "\(d)/run"
        \(modules)
        \(asRoot ? "User www-data\nGroup www-data" : "")
        KeepAlive On
        DocumentRoot "\(d)/www"
        <Directory "\(d)/www">
            Require all granted
        </Directory>
        <Location "/digest/">
            AuthType Digest
            AuthName "\(realm)"
            AuthDigestDomain /digest/
            AuthDigestProvider file
            AuthUserFile "\(d)/digest.users"
            Require valid-user
        </Location>
        <Location "/basic/">
            AuthType Basic
            AuthName "\(realm)"
            AuthBasicProvider file
            AuthUserFile "\(d)/basic.users"
            Require valid-user
        </Location>

        """
    }

    /// Starts httpd; the process once the port accepts, nil if the address
    /// was taken; throws on other failures.
    static func launch(directory: URL, port: Int, timeout: Double) throws -> ChildProcess? {
        let process = try ChildProcess(executable, ["-X", "-d", directory.path, "-f", directory.appendingPathComponent("httpd.conf").path],
                                       stderr: .file(directory.appendingPathComponent("stderr.log").path))
        let deadline = Date(timeIntervalSinceNow: timeout)
        while Date() < deadline {
            if Sockets.canConnect(host: "127.0.0.1", port: port) { return process }
            if let status = process.exitStatus {
                let log = errorLog(directory) + ((try? String(contentsOf: directory.appendingPathComponent("stderr.log"), encoding: .utf8)) ?? "")
                if log.contains("Address already in use") { return nil }
                throw StartError(description: "apache2 exited with status \(status):\n\(log)")
            }
            Sockets.sleep(milliseconds: 20)
        }
        process.terminate(grace: 2)
        throw StartError(description: "apache2 did not accept on port \(port) within \(timeout) s:\n\(errorLog(directory))")
    }
}
