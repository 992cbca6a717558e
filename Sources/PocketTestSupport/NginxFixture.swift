#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Foundation

/// A real nginx on a loopback port, for integration tests against a
/// production HTTP/1.1 server.
///
/// Everything lives in a fresh temporary directory: the config, the logs,
/// the pid file, nginx's temp paths and the document root, which holds:
/// - `/small`: the 13 bytes `Hello, World!` (`smallBody`);
/// - `/large`: 4 MiB of deterministic bytes (`largeBody`);
/// - `/chunked.shtml`: a server-side include page (`ssi on`), which nginx
///   sends with `Transfer-Encoding: chunked` in three chunks (text before the
///   include, the included `/small`, text after); decoded: `chunkedBody`.
/// - `/text.txt`: `textBody`, about 400 KB of log-like text, gzip-compressed
///   by nginx on the fly (`gzip on`) when the client asks for it;
/// - `/host`: `<Host field> <server address>` (`unix:` over the Unix socket);
/// - any other path: nginx's 404.
///
/// nginx also listens on a Unix domain socket, `socketPath`, in the directory.
///
/// nginx runs in the foreground as a single process (`daemon off;
/// master_process off;`), with `keepalive_requests 10000`, started with a
/// clean signal mask and default signal dispositions (`ChildProcess`) and
/// stopped by its recorded PID: SIGTERM, SIGKILL only after 2 s.
///
/// ```swift
/// guard NginxFixture.isAvailable else { throw XCTSkip("no nginx") }
/// let nginx = try NginxFixture()
/// defer { nginx.stop() }
/// // GET nginx.baseURL + "/small" → "Hello, World!"
/// ```
public final class NginxFixture: @unchecked Sendable {
    // Invariant: `process` and `stopped` are read and written only with `lock`
    // held; every other stored property is immutable after `init`.
    private let lock = NSLock()
    private var process: ChildProcess?
    private var stopped = false

    /// nginx's process ID, recorded when it was started.
    public let pid: pid_t

    /// The address nginx listens on.
    public let host = "127.0.0.1"
    /// The port nginx listens on.
    public let port: Int
    /// The temporary directory holding config, logs and files (removed by `stop()`).
    public let directory: URL

    /// TLS settings (see NginxTLSFixture.swift), or nil for plain HTTP.
    public let tls: TLSOptions?

    /// The Unix domain socket nginx also listens on (the same locations).
    public var socketPath: String { directory.appendingPathComponent("nginx.sock").path }

    /// `http://127.0.0.1:PORT` (`https://` with TLS), without a trailing slash.
    public var baseURL: String { "\(tls == nil ? "http" : "https")://\(host):\(port)" }

    /// `baseURL` + `path` (pass a path starting with `/`).
    public func url(_ path: String) -> String { baseURL + path }

    /// Why the fixture could not start.
    public struct StartError: Error, CustomStringConvertible {
        public var description: String
    }

    /// Where nginx is looked for, in order (then each directory in `PATH`).
    public static let searchPaths = ["/usr/sbin/nginx", "/usr/bin/nginx", "/usr/local/sbin/nginx", "/usr/local/bin/nginx"]

    /// The nginx executable, or nil if none is installed.
    public static var executablePath: String? {
        let pathDirectories = (ProcessInfo.processInfo.environment["PATH"] ?? "")
            .split(separator: ":").map { "\($0)/nginx" }
        return (searchPaths + pathDirectories).first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// True if nginx is installed (tests skip themselves otherwise).
    public static var isAvailable: Bool { executablePath != nil }

    /// The body of `/small`.
    public static let smallBody: [UInt8] = Array("Hello, World!".utf8)

    /// The body of `/large`: 4 MiB, byte i = (i * 31 + i / 65536) & 0xff
    /// (not periodic at any power of two, so misplaced chunks are caught).
    public static let largeBody: [UInt8] = (0..<(4 * 1024 * 1024)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 16) }

    /// The body of `/text.txt`: 8,000 numbered lines of text (compressible,
    /// about 5× with gzip -1).
    public static let textBody: [UInt8] = Array((0..<8000).map { i in
        "\(i): GET /api/v1/items/\(i &* 7919 % 10007) 200 \(i % 97) ms from 10.0.\(i % 256).\(i / 256) ok\n"
    }.joined().utf8)

    /// The decoded body of `/chunked.shtml`.
    public static let chunkedBody: [UInt8] = Array("<p>before</p>\nHello, World!\n<p>after</p>\n".utf8)

    private static let chunkedPage = "<p>before</p>\n<!--# include virtual=\"/small\" -->\n<p>after</p>\n"

    /// Creates the directory, starts nginx on a free port and waits (up to
    /// `timeout` seconds) until it accepts connections.
    /// With `tls`, the same locations are served over TLS only.
    public init(tls: TLSOptions? = nil, timeout: Double = 10) throws {
        guard let executable = Self.executablePath else {
            throw StartError(description:
                "nginx is not installed (looked in \(Self.searchPaths.joined(separator: ", ")) and PATH); "
                + "install it with `apt-get install nginx-light`")
        }
        let fileManager = FileManager.default
        self.tls = tls
        directory = fileManager.temporaryDirectory.appendingPathComponent("pocket-nginx-\(UUID().uuidString)")
        do {
            try Self.populate(directory)
            let started: ChildProcess
            (port, started) = try Self.start(executable, directory: directory, tls: tls, timeout: timeout)
            process = started
            pid = started.pid
        } catch {
            try? fileManager.removeItem(at: directory)
            throw error
        }
    }

    deinit {
        stop()
    }

    /// Stops nginx by its PID (SIGTERM, SIGKILL after 2 s), waits for it to
    /// end and removes the directory. Idempotent; also run by `deinit`.
    /// Returns how nginx ended (nil when it was stopped before).
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

    /// The nginx error log so far (for failure messages).
    public var errorLog: String { Self.errorLog(directory) }

    // MARK: Internals

    private static func errorLog(_ directory: URL) -> String {
        (try? String(contentsOf: directory.appendingPathComponent("logs/error.log"), encoding: .utf8)) ?? ""
    }

    private static func populate(_ directory: URL) throws {
        let fileManager = FileManager.default
        for sub in ["www", "logs", "temp/client_body", "temp/proxy", "temp/fastcgi", "temp/uwsgi", "temp/scgi"] {
            try fileManager.createDirectory(at: directory.appendingPathComponent(sub), withIntermediateDirectories: true)
        }
        let www = directory.appendingPathComponent("www")
        try Data(smallBody).write(to: www.appendingPathComponent("small"))
        try Data(largeBody).write(to: www.appendingPathComponent("large"))
        try Data(chunkedPage.utf8).write(to: www.appendingPathComponent("chunked.shtml"))
        try Data(textBody).write(to: www.appendingPathComponent("text.txt"))
    }

    private static func config(directory: URL, port: Int, tls: TLSOptions?) -> String {
        let d = directory.path
        return """
        daemon off;
        master_process off;
        worker_processes 1;
        pid \(d)/nginx.pid;
        error_log \(d)/logs/error.log warn;
        events { worker_connections 1024; }
        http {
            access_log \(d)/logs/access.log;
            client_body_temp_path \(d)/temp/client_body;
            proxy_temp_path \(d)/temp/proxy;
            fastcgi_temp_path \(d)/temp/fastcgi;
            uwsgi_temp_path \(d)/temp/uwsgi;
            scgi_temp_path \(d)/temp/scgi;
            types { text/html html shtml; text/plain txt; }
            default_type application/octet-stream;
            keepalive_requests 10000;
            keepalive_timeout 60s;
            server {
                listen 127.0.0.1:\(port)\(tls == nil ? "" : " ssl");
                listen unix:\(d)/nginx.sock\(tls == nil ? "" : " ssl");
                \(tls.map(tlsDirectives) ?? "")
                root \(d)/www;
                location ~ \\.shtml$ { ssi on; }
                location = /host { default_type text/plain; return 200 "$http_host $server_addr"; }
                location = /text.txt { gzip on; gzip_types text/plain; gzip_min_length 1; gzip_comp_level 1; }
            }
        }

        """
    }

    /// Picks a free port, writes the config and launches nginx; retries
    /// (up to 3 times) if another process took the port in between.
    private static func start(_ executable: String, directory: URL, tls: TLSOptions?, timeout: Double) throws -> (Int, ChildProcess) {
        for _ in 0..<3 {
            let port = try Sockets.freePort()
            try config(directory: directory, port: port, tls: tls)
                .write(to: directory.appendingPathComponent("nginx.conf"), atomically: true, encoding: .utf8)
            if let process = try launch(executable, directory: directory, port: port, timeout: timeout) {
                return (port, process)
            }
        }
        throw StartError(description: "nginx could not bind a free port:\n" + errorLog(directory))
    }

    /// Starts nginx; returns the process once the port accepts, nil if nginx
    /// exited because the address was in use; throws on other failures.
    private static func launch(_ executable: String, directory: URL, port: Int, timeout: Double) throws -> ChildProcess? {
        let process = try ChildProcess(executable, ["-p", directory.path, "-c", directory.appendingPathComponent("nginx.conf").path,
                                                    "-e", directory.appendingPathComponent("logs/error.log").path])

        let deadline = Date(timeIntervalSinceNow: timeout)
        while Date() < deadline {
            if Sockets.canConnect(host: "127.0.0.1", port: port) { return process }
            if let status = process.exitStatus {
                let log = errorLog(directory)
                if log.contains("Address already in use") { return nil }
                throw StartError(description: "nginx exited with status \(status):\n\(log)")
            }
            Sockets.sleep(milliseconds: 20)
        }
        process.terminate(grace: 2)
        throw StartError(description: "nginx did not accept on port \(port) within \(timeout) s:\n\(errorLog(directory))")
    }
}
