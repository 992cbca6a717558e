#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Logging

/// Logs every attempt on a swift-log `Logger` (TyphoonRestClient's
/// connection logger): method, URL, status or error, time in ms, attempt;
/// at `.debug` and below also the header fields, the bodies (truncated) and
/// the engine's timings (DNS, connect, TLS, first byte, total, reuse).
/// Credentials are never logged: `Authorization`, `Proxy-Authorization`,
/// `Cookie` and `Set-Cookie` values (and any field in `redactedHeaders`)
/// are replaced by `<redacted>`, and a URL's password is dropped.
///
/// ```swift
/// config.handling.middleware = [PocketLoggingMiddleware(logger: Logger(label: "api"))]
/// // info: GET http://api/users/7 -> 200 (12.4 ms)
/// ```
public struct PocketLoggingMiddleware: PocketMiddleware {
    /// Header fields whose values are never logged.
    public static let defaultRedactedHeaders: Set<String> = ["authorization", "proxy-authorization", "cookie", "set-cookie"]

    private let logger: Logger
    private let level: Logger.Level
    private let failureLevel: Logger.Level
    private let maxBodyBytes: Int
    private let redacted: Set<String>

    /// - Parameters:
    ///   - logger: where the messages go.
    ///   - level: for completed attempts, `.info` by default.
    ///   - failureLevel: for attempts that ended in an error, `.warning` by default.
    ///   - maxBodyBytes: body bytes logged per message, 1024 by default (the
    ///     rest is counted, not shown), so a large body cannot flood the log.
    ///   - redactedHeaders: fields redacted besides the defaults (any case).
    public init(logger: Logger, level: Logger.Level = .info, failureLevel: Logger.Level = .warning,
                maxBodyBytes: Int = 1024, redactedHeaders: Set<String> = []) {
        self.logger = logger
        self.level = level
        self.failureLevel = failureLevel
        self.maxBodyBytes = max(0, maxBodyBytes)
        self.redacted = Self.defaultRedactedHeaders.union(redactedHeaders.map { $0.lowercased() })
    }

    /// `observe` only.
    public var hooks: PocketMiddlewareHooks { .observe }

    public func observe(_ outcome: Result<PocketResponse, any Error>, for request: PocketRequest, context: PocketMiddlewareContext) async {
        let failed = if case .failure = outcome { true } else { false }
        guard logger.logLevel <= (failed ? failureLevel : level) else { return }
        let rounded = Self.milliseconds(context.attemptElapsed)
        let timing = "\(rounded) ms"
        let target = Self.loggableURL(request.url)
        var metadata: Logger.Metadata = [
            "method": "\(request.method)", "url": "\(target)", "attempt": "\(context.attempt)",
            "ms": "\(rounded)", "task": "\(context.taskID)",
        ]
        let verbose = logger.logLevel <= .debug
        if verbose {
            metadata["request.headers"] = .string(headerText(request.headers))
            if let data = request.body?.data { metadata["request.body"] = .string(bodyText(data)) }
        }
        switch outcome {
        case .success(let response):
            metadata["status"] = "\(response.status)"
            if verbose {
                let t = response.timings
                metadata["timings"] = .string("dns \(Self.milliseconds(t.dns)) ms, connect \(Self.milliseconds(t.connect)) ms, "
                    + "tls \(Self.milliseconds(t.tls)) ms, first byte \(Self.milliseconds(t.firstByte)) ms, "
                    + "total \(Self.milliseconds(t.total)) ms, reused \(t.reusedConnection)")
                metadata["response.headers"] = .string(headerText(response.headers))
                metadata["response.body"] = .string(bodyText(response.body))
            }
            logger.log(level: level, "\(request.method) \(target) -> \(response.status) (\(timing))", metadata: metadata)
        case .failure(let error):
            metadata["error"] = "\(error)"
            logger.log(level: failureLevel, "\(request.method) \(target) failed: \(error) (\(timing))", metadata: metadata)
        }
    }

    /// `d` in milliseconds, one decimal.
    static func milliseconds(_ d: Duration) -> Double {
        let ms = Double(d.components.seconds) * 1000 + Double(d.components.attoseconds) / 1e15
        return (ms * 10).rounded() / 10
    }

    /// The fields as `Name: value` lines, credentials redacted.
    func headerText(_ headers: PocketHeaders) -> String {
        headers.fields.map { field in
            "\(field.name): \(redacted.contains(field.name.lowercased()) ? "<redacted>" : field.value)"
        }.joined(separator: "\n")
    }

    /// At most `maxBodyBytes` of `data` as UTF-8, with how much was left out.
    func bodyText(_ data: Data) -> String {
        guard data.count > maxBodyBytes else { return String(decoding: data, as: UTF8.self) }
        return String(decoding: data.prefix(maxBodyBytes), as: UTF8.self) + "… (\(data.count - maxBodyBytes) more bytes)"
    }

    /// The URL without its password.
    static func loggableURL(_ url: URL) -> String {
        guard url.password(percentEncoded: true) != nil,
              var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else { return url.absoluteString }
        components.password = nil
        return components.string ?? url.absoluteString
    }
}
