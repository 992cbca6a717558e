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

/// One attempt of `pocket URL`: to stdout through `client.stream` (the body
/// written as it arrives, constant memory), or to a file through the
/// engine's download (`-o`/`-O`, resumable with `-C -`).
struct FetchTransfer: Sendable {
    /// A failure `--retry` may try again: a timeout, a connect failure or a
    /// 408/429/500/502/503/504 (curl's transient errors; curl also needs
    /// `--retry-connrefused` for a refused connection, Pocket retries it).
    struct Retryable: Error {
        let failure: CLIFailure
        /// Seconds from a `Retry-After` field, when the server sent one.
        let retryAfter: Int?
    }

    static let retryStatuses: Set<Int> = [408, 429, 500, 502, 503, 504]
    static let retryCodes: Set<PocketError.Code> = [
        .connectTimeout, .readTimeout, .deadlineExceeded, .dnsFailure, .connectionRefused, .connectFailed,
        .networkUnreachable, .hostUnreachable,
    ]

    let command: FetchCommand
    let plan: FetchPlan
    let client: PocketClient
    let progress: ProgressBar?

    init(command: FetchCommand, plan: FetchPlan, client: PocketClient, progress: ProgressBar?) {
        self.command = command
        self.plan = plan
        self.client = client
        self.progress = progress
    }

    /// One attempt. `canRetry`: a retryable status is thrown as `Retryable`
    /// (else it is an ordinary answer).
    func run(_ facts: inout TransferFacts, canRetry: Bool) async throws {
        guard let destination = plan.destination else {
            return try await stream(into: .stdout, &facts, canRetry: canRetry)
        }
        let path = destination.path(percentEncoded: false)
        var st = stat()
        if stat(path, &st) == 0 && (st.st_mode & S_IFMT) != S_IFREG && (st.st_mode & S_IFMT) != S_IFDIR {
            // /dev/null, a pipe, a terminal: written in place (a download
            // would rename a temporary file over it).
            let file = try OutputFile(path: path, truncate: false)
            defer { file.close() }
            return try await stream(into: file.output, &facts, canRetry: canRetry)
        }
        try await download(to: destination, &facts, canRetry: canRetry)
    }

    // MARK: stdout (or a device)

    private func stream(into output: Output, _ facts: inout TransferFacts, canRetry: Bool) async throws {
        let response: PocketStreamingResponse
        do {
            response = try await client.stream(plan.request, progress: progress?.handler())
        } catch let e as PocketError {
            facts.status = e.response?.status
            throw Self.classify(e)
        }
        try showHead(status: response.status, reason: response.reason, minor: response.httpMinorVersion,
                     headers: response.headers, &facts)
        if canRetry, let retry = Self.retryable(response.status, response.reason, response.headers) {
            try? await response.body.discard()
            throw retry
        }
        if command.fail && response.status >= 400 {
            throw CLIFailure(.httpError, "\(Self.answered(response.status, response.reason)) (-f)")
        }
        if command.include || command.head {
            try Output.stdout.write(HeadFormat.response(minorVersion: response.httpMinorVersion, status: response.status,
                                                        reason: response.reason, headers: response.headers))
        }
        do {
            for try await chunk in response.body {
                try output.write(chunk)
                facts.bodyBytes += chunk.count
            }
        } catch let e as PocketError {
            // Body bytes may be out already: never retried, never a short body with exit 0.
            throw CLIFailure(e)
        }
        facts.timings = response.body.timings
    }

    // MARK: -o / -O

    private func download(to destination: URL, _ facts: inout TransferFacts, canRetry: Bool) async throws {
        let partial = PartialDownload(destination: destination)
        var task: PocketDownloadTask
        let resuming = plan.resume ? try partial.resumeData(for: plan.request) : nil
        if let data = resuming {
            if command.verbose {
                Output.diagnostic("* resuming \(destination.lastPathComponent) from byte \(data.bytesReceived)\n")
            }
            task = client.downloadTask(resumingWith: data, progress: progress?.handler())
        } else {
            partial.discardSidecar()
            task = client.downloadTask(plan.request, to: destination, progress: progress?.handler())
        }
        let response: PocketDownloadResponse
        let interrupt = InterruptPause(task)
        do {
            defer { interrupt.stop() }
            response = try await withTaskCancellationHandler { try await task.response() } onCancel: { [task] in task.cancel() }
        } catch let e as PocketError {
            facts.status = e.response?.status
            if let head = e.response {
                try? showHead(status: head.status, reason: head.reason, minor: 1, headers: head.headers, &facts)
            }
            if let data = task.resumeData { partial.keep(data) }
            if interrupt.fired {
                let kept = task.resumeData == nil ? "nothing kept" : "the partial file is kept, continue with -C -"
                throw CLIFailure(.interrupted, "interrupted; \(kept)")
            }
            throw Self.classify(e)
        }
        try showHead(status: response.status, reason: response.reason, minor: 1, headers: response.headers, &facts)
        facts.timings = response.timings
        if response.isSuccess {
            partial.discardSidecar()
            facts.bodyBytes = response.fileSize
            return
        }
        if resuming != nil {
            // The partial file stays as it was; a resume that cannot resume failed.
            partial.restore()
            if canRetry, let retry = Self.retryable(response.status, response.reason, response.headers) { throw retry }
            throw CLIFailure(.httpError, "cannot resume: \(Self.answered(response.status, response.reason))")
        }
        if canRetry, let retry = Self.retryable(response.status, response.reason, response.headers) { throw retry }
        if command.fail && response.status >= 400 {
            throw CLIFailure(.httpError, "\(Self.answered(response.status, response.reason)) (-f)")
        }
        // Not 2xx and no -f: the body goes into the file, as curl does.
        let file = try OutputFile(path: destination.path(percentEncoded: false))
        defer { file.close() }
        try file.output.write(Array(response.body))
        facts.bodyBytes = response.body.count
    }

    // MARK: shared

    /// -v, -D and the facts of -w (the head is shown before the body or error).
    private func showHead(status: Int, reason: String, minor: Int, headers: PocketHeaders,
                          _ facts: inout TransferFacts) throws(CLIFailure) {
        facts.status = status
        facts.minorVersion = minor
        facts.headers = headers
        let head = HeadFormat.response(minorVersion: minor, status: status, reason: reason, headers: headers)
        facts.headBytes = head.utf8.count
        if command.verbose {
            Output.diagnostic(HeadFormat.verboseResponse(minorVersion: minor, status: status, reason: reason, headers: headers))
        }
        if let path = command.dumpHeader {
            let file = try OutputFile(path: path)
            defer { file.close() }
            try file.output.write(head)
        }
    }

    static func retryable(_ status: Int, _ reason: String, _ headers: PocketHeaders) -> Retryable? {
        guard retryStatuses.contains(status) else { return nil }
        let after = headers["Retry-After"].flatMap { Int($0.trimmingWhitespace()) }.map { min(max($0, 0), 600) }
        return Retryable(failure: CLIFailure(.httpError, answered(status, reason)), retryAfter: after)
    }

    /// "the server answered 503 Service Unavailable"
    static func answered(_ status: Int, _ reason: String) -> String {
        "the server answered \(status)\(reason.isEmpty ? "" : " " + reason)"
    }

    /// A library error before any body byte was written: retryable or final.
    static func classify(_ e: PocketError) -> any Error {
        retryCodes.contains(e.code) ? Retryable(failure: CLIFailure(e), retryAfter: nil) : CLIFailure(e)
    }
}
