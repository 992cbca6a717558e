import CPocketBenchServer
import PocketBench
import PocketBenchKit
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The standard scenarios `pocket bench` runs with no URL, each against an
/// in-process loopback server at 1 and 64 connections.
struct BenchScenario: Sendable {
    enum Server: Sendable {
        /// `CPocketBenchServer` answering every request with these bytes (nil: 13 bytes).
        case answer([UInt8]?)
        /// The same server over TLS (a certificate it makes in-process at
        /// start), answering 13 bytes: plain and TLS figures from one server.
        case tls
    }

    /// Short name, e.g. `"64KiB"`: the `scenario` key of the JSON.
    let name: String
    let server: Server
    /// PUT a file of this many bytes instead of a GET.
    let uploadBytes: Int
    /// Requests when `--requests` is not given (a few seconds' worth or less).
    let defaultRequests: Int
    /// Ask for and decode gzip.
    let compressed: Bool

    /// 13 bytes, 64 KiB, 1 MiB, 256 KiB of gzip text, TLS, a 1 MiB upload.
    static let standard: [BenchScenario] = [
        BenchScenario(name: "13B", server: .answer(nil), uploadBytes: 0, defaultRequests: 20_000, compressed: false),
        BenchScenario(name: "64KiB", server: .answer(answer(body: pattern(65_536))), uploadBytes: 0,
                      defaultRequests: 5_000, compressed: false),
        BenchScenario(name: "1MiB", server: .answer(answer(body: pattern(1 << 20))), uploadBytes: 0,
                      defaultRequests: 500, compressed: false),
        BenchScenario(name: "gzip-text", server: .answer(gzipAnswer(text: logText(256 << 10))), uploadBytes: 0,
                      defaultRequests: 2_000, compressed: true),
        BenchScenario(name: "tls", server: .tls, uploadBytes: 0, defaultRequests: 5_000, compressed: false),
        BenchScenario(name: "upload-1MiB", server: .answer(nil), uploadBytes: 1 << 20, defaultRequests: 1_000,
                      compressed: false),
    ]

    /// Runs this scenario with `base`'s flags (its `requests`, `warmup` and
    /// `maxSeconds` when given; else the scenario's defaults, warmup
    /// max(2·C, 100), at most 3 s).
    func run(_ base: BenchOptions, requestsGiven: Bool) async throws -> BenchMeasurement {
        var options = base
        if !requestsGiven { options.requests = defaultRequests }
        options.warmup = base.warmup ?? min(max(2 * options.connections, 100), options.requests)
        options.maxSeconds = base.maxSeconds ?? 3
        options.compressed = compressed || (base.compressed ?? false)
        options.url = nil
        var uploadFile: String?
        if uploadBytes > 0 {
            let path = FileManager.default.temporaryDirectory
                .appending(path: "pocket-bench-upload-\(getpid())").path(percentEncoded: false)
            guard FileManager.default.createFile(atPath: path, contents: Data(BenchScenario.pattern(uploadBytes))) else {
                throw PocketBenchmark.Failure(description: "cannot write the upload file \(path)", exitCode: 1)
            }
            uploadFile = path
            options.uploadFile = path
        }
        defer { if let uploadFile { try? FileManager.default.removeItem(atPath: uploadFile) } }

        switch server {
        case .answer(let bytes):
            let port = try EmbeddedServer.start(answer: bytes, cpu: base.serverCPU, threads: base.serverThreads)
            defer { EmbeddedServer.stop() }
            return try await PocketBenchmark.run(options, url: "http://127.0.0.1:\(port)/", embedded: true, scenario: name)
        case .tls:
            // The server's certificate, written by the server at start: the client's CA file.
            let certificate = FileManager.default.temporaryDirectory
                .appending(path: "pocket-bench-cert-\(getpid()).pem").path(percentEncoded: false)
            defer { try? FileManager.default.removeItem(atPath: certificate) }
            let port = try EmbeddedServer.start(answer: nil, cpu: base.serverCPU, threads: base.serverThreads,
                                                tlsCertificate: certificate)
            defer { EmbeddedServer.stop() }
            options.caFile = certificate
            return try await PocketBenchmark.run(options, url: "https://localhost:\(port)/", embedded: true, scenario: name)
        }
    }

    // MARK: bodies

    static func answer(body: [UInt8], extraHeaders: String = "", contentType: String = "application/octet-stream") -> [UInt8] {
        Array("HTTP/1.1 200 OK\r\nContent-Length: \(body.count)\r\nContent-Type: \(contentType)\r\n\(extraHeaders)\r\n".utf8) + body
    }

    static func gzipAnswer(text: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: text.count + 1024)
        let n = text.withUnsafeBytes { src in
            out.withUnsafeMutableBytes { dst in pkbs_gzip(src.baseAddress, src.count, dst.baseAddress, dst.count) }
        }
        return answer(body: Array(out[..<n]), extraHeaders: "Content-Encoding: gzip\r\n", contentType: "text/plain")
    }

    /// `count` bytes of an incompressible-looking pattern (xorshift).
    static func pattern(_ count: Int) -> [UInt8] {
        var x: UInt64 = 0x9E37_79B9_7F4A_7C15
        return (0..<count).map { _ in
            x ^= x << 13; x ^= x >> 7; x ^= x << 17
            return UInt8(truncatingIfNeeded: x)
        }
    }

    /// `count` bytes of service-log-like text (compresses about 4-6x with gzip).
    static func logText(_ count: Int) -> [UInt8] {
        let words = ["GET", "POST", "/api/v1/items", "/health", "200", "404", "user", "request", "completed",
                     "in", "ms", "cache", "miss", "hit", "upstream", "connection", "reused", "INFO", "WARN"]
        var out: [UInt8] = []
        out.reserveCapacity(count)
        var x: UInt64 = 42
        var line = 0
        while out.count < count {
            line += 1
            out += Array("2026-11-23T12:\(10 + line % 50):\(10 + line % 49).\(line % 1000)Z ".utf8)
            for _ in 0..<8 {
                x ^= x << 13; x ^= x >> 7; x ^= x << 17
                out += Array(words[Int(x % UInt64(words.count))].utf8)
                out.append(0x20)
            }
            out += Array("id=\(x % 100_000)\n".utf8)
        }
        return Array(out.prefix(count))
    }
}
