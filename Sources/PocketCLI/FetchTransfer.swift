import Pocket
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

/// One attempt of one URL: to stdout through `client.stream` (the body
/// written as it arrives, constant memory), to a file through the engine's
/// download (`-o`/`-O`), or appended to the file for `-C -`.
struct FetchTransfer: Sendable {
    /// A failure `--retry` may try again (`retryPolicy`'s rules; with
    /// `--retry-all-errors`, any failure), and the policy's decision: retry
    /// after its backoff, or after the server's `Retry-After`.
    struct Retryable: Error {
        let failure: CLIFailure
        let decision: PocketRetryDecision
    }

    /// `--retry` as the library's retry policy: its retried statuses (408,
    /// 429, 500, 502, 503, 504) and `Retry-After` rules; curl's transient
    /// errors (timeouts, DNS and connect failures: curl also needs
    /// `--retry-connrefused` for a refused connection, Pocket retries it);
    /// any method, as curl; curl's backoff, 1 s doubling to 10 minutes, or
    /// a fixed `--retry-delay` (which then wins over `Retry-After`).
    static func retryPolicy(_ command: FetchCommand) -> PocketRetryPolicy {
        PocketRetryPolicy(maxAttempts: command.retry + 1,
                          backoff: command.retryDelay.map { .fixed(.milliseconds(Int64(max(0, $0) * 1000))) }
                              ?? .exponential(initial: .seconds(1), multiplier: 2, cap: .seconds(600), jitter: .none),
                          retryableErrors: [.connectTimeout, .readTimeout, .totalTimeout, .dnsFailure, .connectionRefused,
                                            .connectFailed, .networkUnreachable, .hostUnreachable],
                          nonIdempotent: .always, honoursRetryAfter: command.retryDelay == nil, maxRetryAfter: .seconds(600))
    }

    let command: FetchCommand
    let plan: FetchPlan
    let client: PocketClient
    let progress: ProgressBar?
    /// Where stdout bytes (body, -i heads) go.
    let sink: TransferSink

    /// One attempt. `canRetry`: a retryable answer is thrown as `Retryable`
    /// after its body is written (else it is an ordinary answer).
    func run(_ facts: inout TransferFacts, canRetry: Bool) async throws {
        let heads = HeadLog()
        let started = ContinuousClock.now
        defer {
            facts.headBytes += heads.bytes
            facts.redirects = heads.hops
            facts.redirectTime = heads.lastHop.map { $0 - started } ?? .zero
        }
        // -D: a file, or stdout through the sink (with -Z the heads stay with their body).
        let dumpFile = try command.dumpHeader.flatMap { path throws(CLIFailure) in path == "-" ? nil : try OutputFile(path: path) }
        defer { dumpFile?.close() }
        let sink = self.sink
        var dump: HeadWriter?
        if let output = dumpFile?.output {
            dump = { @Sendable head throws(CLIFailure) in try output.write(head) }
        } else if command.dumpHeader != nil {
            dump = { @Sendable head throws(CLIFailure) in try sink.write(Array(head.utf8)) }
        }
        var request = plan.request
        request.redirects = redirectPolicy(heads, dump: dump)
        guard let destination = plan.destination else {
            return try await stream(request, into: sink.write, &facts, canRetry: canRetry, heads, dump)
        }
        let path = destination.path(percentEncoded: false)
        var st = stat()
        if stat(path, &st) == 0 && (st.st_mode & S_IFMT) != S_IFREG && (st.st_mode & S_IFMT) != S_IFDIR {
            // /dev/null, a pipe, a terminal: written in place (a download
            // would rename a temporary file over it).
            let file = try OutputFile(path: path, truncate: false)
            defer { file.close() }
            return try await stream(request, into: file.output.write, &facts, canRetry: canRetry, heads, dump)
        }
        let partial = PartialDownload(destination: destination)
        if plan.resume, let point = partial.resumePoint() {
            return try await resume(request, partial, from: point, &facts, canRetry: canRetry, heads, dump)
        }
        try await download(request, to: destination, &facts, canRetry: canRetry, heads, dump)
    }

    /// -L's policy for this transfer: the hop limit; each 3xx head shown as
    /// curl shows it (-i, -D, -v); a method forced with -X kept on every hop;
    /// with --location-trusted, the credentials put back on every hop.
    private func redirectPolicy(_ heads: HeadLog, dump: HeadWriter?) -> PocketRedirectPolicy {
        guard let policy = plan.configuration.redirects.follows ? plan.configuration.redirects : nil else {
            return .disabled
        }
        let include = command.include || command.head, verbose = command.verbose, sink = self.sink
        let forced = command.method.map { PocketMethod($0) }
        let kept = command.trustedFields(plan.request)
        return PocketRedirectPolicy(maxHops: policy.maxHops) { redirect in
            let r = redirect.response
            let head = HeadFormat.response(minorVersion: 1, status: r.status, reason: r.reason, headers: r.headers)
            heads.add(head)
            if verbose {
                Output.diagnostic(HeadFormat.verboseResponse(minorVersion: 1, status: r.status, reason: r.reason, headers: r.headers))
                Output.diagnostic("* following the redirect to \(redirect.request.url.absoluteString)\n")
            }
            try dump?(head)
            if include { try sink.write(Array(head.utf8)) }
            var next = redirect.request
            for (name, value) in kept where !next.headers.contains(name) { next.headers[name] = value }
            if let forced { next.method = forced }
            return kept.isEmpty && next.method == redirect.request.method ? .follow : .modify(next)
        }
    }

    // MARK: stdout (or a device)

    private func stream(_ request: PocketRequest, into write: (Data) throws(CLIFailure) -> Void,
                        _ facts: inout TransferFacts, canRetry: Bool, _ heads: HeadLog, _ dump: HeadWriter?) async throws {
        let response: PocketStreamingResponse
        do {
            response = try await client.stream(request, progress: progress?.handler())
        } catch let e as PocketError {
            facts.status = Self.status(of: e)
            throw classify(e)
        }
        facts.followed(response.url, response.redirects)
        try showHead(status: response.status, reason: response.reason, minor: response.httpMinorVersion,
                     headers: response.headers, &facts, heads, dump)
        let retry = canRetry ? retryable(response.status, response.reason, response.headers) : nil
        let failed = failure(response.status, response.reason)
        if let failed, !command.failWithBody {
            // -f: no body; a transient status (any, with --retry-all-errors) is tried again.
            try? await response.body.discard()
            if let retry { throw retry }
            throw failed
        }
        if command.include || command.head {
            try sink.write(Array(HeadFormat.response(minorVersion: response.httpMinorVersion, status: response.status,
                                                     reason: response.reason, headers: response.headers).utf8))
        }
        do {
            for try await chunk in response.body {
                try write(chunk)
                facts.bodyBytes += chunk.count
            }
        } catch let e as PocketError {
            // Body bytes may be out already: never retried, never a short body with exit 0.
            facts.timings = response.body.timings
            throw named(e)
        }
        facts.timings = response.body.timings
        if let retry { throw retry }
        if let failed { throw failed }
    }

    // MARK: -o / -O

    private func download(_ request: PocketRequest, to destination: URL, _ facts: inout TransferFacts, canRetry: Bool,
                          _ heads: HeadLog, _ dump: HeadWriter?) async throws {
        let partial = PartialDownload(destination: destination)
        partial.discardState()
        let task = client.downloadTask(request, to: destination, progress: progress?.handler())
        let response: PocketDownloadResponse
        let interrupt = InterruptPause(task)
        do {
            defer { interrupt.stop() }
            response = try await withTaskCancellationHandler { try await task.response() } onCancel: { [task] in task.cancel() }
        } catch let e as PocketError {
            facts.status = Self.status(of: e)
            if let head = e.response {
                try? showHead(status: head.status, reason: head.reason, minor: 1, headers: head.headers, &facts, heads, dump)
            }
            if let data = task.resumeData { partial.keep(data) }
            if interrupt.fired {
                let kept = task.resumeData == nil ? "nothing kept" : "the partial file is kept, continue with -C -"
                throw CLIFailure(.interrupted, "interrupted; \(kept)")
            }
            throw classify(e)
        }
        facts.followed(response.url, response.redirects)
        try showHead(status: response.status, reason: response.reason, minor: 1, headers: response.headers, &facts, heads, dump)
        facts.timings = response.timings
        if response.isSuccess {
            facts.bodyBytes = response.fileSize
            return
        }
        if canRetry, let retry = retryable(response.status, response.reason, response.headers) { throw retry }
        if let failed = failure(response.status, response.reason), !command.failWithBody { throw failed }
        // Not 2xx and no -f: the body goes into the file, as curl does.
        let file = try OutputFile(path: destination.path(percentEncoded: false))
        defer { file.close() }
        try file.output.write(Array(response.body))
        facts.bodyBytes = response.body.count
        if let failed = failure(response.status, response.reason) { throw failed }
    }

    // MARK: -C -

    /// Asks for the rest of FILE (`Range`, and `If-Range` when its validators
    /// are known) and appends a 206 to it. As curl: a 416 for a file that
    /// is already whole is success; a 200 (the server ignores Range, or the
    /// resource changed) is exit 33 and FILE is left as it was.
    private func resume(_ request: PocketRequest, _ partial: PartialDownload, from point: (offset: Int, saved: PocketResumeData?),
                        _ facts: inout TransferFacts, canRetry: Bool, _ heads: HeadLog, _ dump: HeadWriter?) async throws {
        let path = partial.destination.path(percentEncoded: false)
        var request = request
        request.headers["Range"] = "bytes=\(point.offset)-"
        if let validator = point.saved?.etag ?? point.saved?.lastModified { request.headers["If-Range"] = validator }
        if !request.headers.contains("Accept-Encoding") { request.headers["Accept-Encoding"] = "identity" }
        if command.verbose { Output.diagnostic("* resuming \(partial.destination.lastPathComponent) from byte \(point.offset)\n") }
        let response: PocketStreamingResponse
        do {
            response = try await client.stream(request, progress: progress?.handler())
        } catch let e as PocketError {
            facts.status = Self.status(of: e)
            throw classify(e)
        }
        facts.url = response.url?.absoluteString ?? facts.url
        try showHead(status: response.status, reason: response.reason, minor: response.httpMinorVersion,
                     headers: response.headers, &facts, heads, dump)
        let range = response.headers["Content-Range"].map { $0.trimmingWhitespace() } ?? ""
        switch response.status {
        case 206:
            guard range.hasPrefix("bytes \(point.offset)-") else {
                try? await response.body.discard()
                throw CLIFailure(.range, "cannot resume \(path) from byte \(point.offset): the server sent Content-Range '\(range)'")
            }
            let fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC)
            guard fd >= 0 else { throw CLIFailure(.localWrite, "cannot append to \(path): \(String(cString: strerror(errno)))") }
            defer { close(fd) }
            let file = Output(fd: fd)
            var written = point.offset
            do {
                for try await chunk in response.body {
                    try file.write(chunk)
                    written += chunk.count
                    facts.bodyBytes += chunk.count
                }
            } catch let e as PocketError {
                if let saved = point.saved { partial.save(saved, size: written) }
                facts.timings = response.body.timings
                throw named(e)
            }
            facts.timings = response.body.timings
            partial.discardState()
        case 416 where range == "bytes */\(point.offset)":
            try? await response.body.discard()
            facts.timings = response.body.timings
            partial.discardState()
            if command.verbose { Output.diagnostic("* \(path) is already complete\n") }
        default:
            try? await response.body.discard()
            facts.timings = response.body.timings
            if canRetry, let retry = retryable(response.status, response.reason, response.headers) { throw retry }
            if let failed = failure(response.status, response.reason) { throw failed }
            partial.discardState()
            throw CLIFailure(.range, "cannot resume \(path) from byte \(point.offset): "
                + "\(Self.answered(response.status, response.reason)) (not 206: it ignores Range, or the file changed); "
                + "the file is left as it was")
        }
    }

    // MARK: shared

    /// -v, -D and the facts of -w (the head is shown before the body or error).
    private func showHead(status: Int, reason: String, minor: Int, headers: PocketHeaders,
                          _ facts: inout TransferFacts, _ heads: HeadLog, _ dump: HeadWriter?) throws(CLIFailure) {
        facts.status = status
        facts.minorVersion = minor
        facts.headers = headers
        let head = HeadFormat.response(minorVersion: minor, status: status, reason: reason, headers: headers)
        heads.add(head, hop: false)
        facts.finalHeadBytes = head.utf8.count
        if command.verbose {
            Output.diagnostic(HeadFormat.verboseResponse(minorVersion: minor, status: status, reason: reason, headers: headers))
        }
        try dump?(head)
    }

    /// -f/--fail-with-body's failure for a status >= 400, else nil.
    private func failure(_ status: Int, _ reason: String) -> CLIFailure? {
        guard (command.fail || command.failWithBody) && status >= 400 else { return nil }
        return CLIFailure(.httpError, "\(Self.answered(status, reason)) (\(command.failWithBody ? "--fail-with-body" : "-f"))")
    }

    private func retryable(_ status: Int, _ reason: String, _ headers: PocketHeaders) -> Retryable? {
        let answer = PocketResponse(status: status, reason: reason, headers: headers)
        let decision = Self.retryPolicy(command).defaultDecision(for: PocketRetryAttempt(request: plan.request, number: 1, response: answer),
                                                                 now: Date())
        // --retry-all-errors: any status that is an error, i.e. >= 400 with -f (without -f it is an answer, as curl).
        let anyError = command.retryAllErrors && status >= 400 && (command.fail || command.failWithBody)
        guard decision != .stop || anyError else { return nil }
        return Retryable(failure: CLIFailure(.httpError, Self.answered(status, reason)), decision: decision == .stop ? .retry : decision)
    }

    /// "the server answered 503 Service Unavailable"
    static func answered(_ status: Int, _ reason: String) -> String {
        "the server answered \(status)\(reason.isEmpty ? "" : " " + reason)"
    }

    /// A library error before any body byte was written: retryable or final.
    private func classify(_ e: PocketError) -> any Error {
        Self.retryPolicy(command).retryableErrors.contains(e.code) || command.retryAllErrors
            ? Retryable(failure: named(e), decision: .retry) : named(e)
    }

    /// A library error as a failure whose message names what failed: the
    /// host (DNS) or host and port (connect, TLS, timeouts, the connection),
    /// as curl's messages do; file errors name their file already.
    private func named(_ e: PocketError) -> CLIFailure {
        let url = plan.request.url
        guard let host = url.host(percentEncoded: false) else { return CLIFailure(e) }
        let port = url.port ?? (url.scheme?.lowercased() == "https" ? 443 : 80)
        let status = ExitStatus.for(e.code)
        let what: String
        switch status {
        case .dns: what = "could not resolve host \(host)"
        case .connect: what = "cannot connect to \(host) port \(port)"
        case .localRead, .localWrite, .usage, .invalidRequest, .url, .redirects: return CLIFailure(e)
        default: what = "\(host) port \(port)"
        }
        return CLIFailure(status, "\(what): \(e.message) (\(e.code.name))")
    }
}

extension TransferFacts {
    /// Where -L led: the last URL, and the final request's method and body
    /// (a 301/302/303 that became GET sent none), as curl's -w shows them.
    mutating func followed(_ final: URL?, _ hops: [PocketRedirectHop]) {
        url = final?.absoluteString ?? url
        guard let last = hops.last else { return }
        if last.method.rawValue != method && (last.method == .get || last.method == .head) { uploadBytes = 0 }
        method = last.method.rawValue
    }
}

extension FetchTransfer {
    /// The status -w reports for a failure: the response's, but not a
    /// proxy's answer to CONNECT (a tunnel error carries that status as
    /// its `systemError`), which curl reports as 000 (`http_connect`).
    static func status(of e: PocketError) -> Int? {
        if e.code == .proxyAuthenticationRequired, e.systemError != nil { return nil }
        return e.response?.status
    }
}

/// Where -D writes a head.
typealias HeadWriter = @Sendable (String) throws(CLIFailure) -> Void

/// The heads of one transfer, counted for -w (`size_header`, `num_redirects`,
/// `time_redirect`); the redirect hook adds to it from the client's task.
final class HeadLog: Sendable {
    private let counts = Lock((bytes: 0, hops: 0, lastHop: ContinuousClock.Instant?.none))
    var bytes: Int { counts.withLock { $0.bytes } }
    var hops: Int { counts.withLock { $0.hops } }
    /// When the last redirect was followed: the next request started then.
    var lastHop: ContinuousClock.Instant? { counts.withLock { $0.lastHop } }

    func add(_ head: String, hop: Bool = true) {
        let now = ContinuousClock.now
        counts.withLock { c in
            c.bytes += head.utf8.count
            if hop {
                c.hops += 1
                c.lastHop = now
            }
        }
    }
}

/// Where one transfer's stdout bytes go: straight to stdout, or with `-Z`
/// kept until the transfer ends and then written whole (so bodies never
/// interleave; the cost is the body in memory).
final class TransferSink: Sendable {
    private let buffered: Bool
    private let buffer = Lock<[UInt8]>([])
    /// Serialises flushes to standard output; the value counts them. (A
    /// `Lock<Void>` has a zero-size value whose address is the mutex's own,
    /// so ThreadSanitizer read the value's access as racing the mutex.)
    private static let stdout = Lock(0)

    init(buffered: Bool) { self.buffered = buffered }

    func write<C: Collection>(_ bytes: C) throws(CLIFailure) where C.Element == UInt8 {
        if buffered {
            buffer.withLock { $0 += bytes }
        } else {
            try Output.stdout.write(bytes)
        }
    }

    /// Writes what was kept (with -Z), in one piece.
    func flush() throws(CLIFailure) {
        guard buffered else { return }
        let bytes = buffer.withLock { b in defer { b = [] }; return b }
        try Self.stdout.withLock { (flushes: inout Int) throws(CLIFailure) in
            flushes += 1
            try Output.stdout.write(bytes)
        }
    }
}
