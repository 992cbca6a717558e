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
import Synchronization

/// The outcome of a download.
public struct PocketDownloadResponse: Sendable {
    /// The status code, e.g. 200 (206 for a resumed download).
    public var status: Int
    /// The reason phrase as sent (may be empty).
    public var reason: String
    /// Header fields in the order received.
    public var headers: PocketHeaders
    /// The destination, when the body was saved there (2xx). Nil otherwise.
    public var fileURL: URL?
    /// For a non-2xx status: the (error) body, kept in memory instead of the
    /// file (bounded by `maxBodyBytes`). Empty when the body was saved.
    public var body: Data
    /// The saved file's size.
    public var fileSize: Int
    /// True when the download continued a partial file (206).
    public var resumed: Bool
    /// Where the time went (of the last hop, when redirected).
    public var timings: PocketTimings
    /// The URL the body came from (the request's, or where its redirects led).
    public var url: URL?
    /// The redirects followed to get here, in order; empty for none.
    public var redirects: [PocketRedirectHop] = []
    /// The request's `metadata`, or nil.
    public var metadata: (any Sendable)?

    /// True for 2xx.
    public var isSuccess: Bool { (200..<300).contains(status) }
}

/// Everything needed to continue a paused or failed download, even in
/// another process: encode it (it is `Codable`), decode it later and pass it
/// to `PocketClient.download(resumingWith:)`.
///
/// The resume asks for `Range: bytes=N-` (N = the partial file's size on
/// disk at that moment) with `If-Range` set to the ETag (strong ones only) or
/// the Last-Modified date the first response carried, so a changed resource
/// is sent whole (200: the file restarts from zero) instead of spliced.
public struct PocketResumeData: Sendable, Codable, Hashable {
    /// The original request.
    public var request: PocketRequest
    /// Where the complete file goes.
    public var destination: URL
    /// The partial file (next to the destination, a hidden name).
    public var temporaryFile: URL
    /// Bytes in the partial file when the resume data was made.
    public var bytesReceived: Int
    /// The validators of the response being resumed.
    public var etag: String?
    /// The resumed response's `Last-Modified`, checked like `etag` (either may be nil).
    public var lastModified: String?
    /// The full size, when the server said it.
    public var totalBytes: Int?
}

/// Where a `PocketDownloadTask` is (AFURLConnectionOperation's `isPaused`,
/// `isExecuting`, `isFinished`, `isCancelled`).
public enum PocketDownloadState: Sendable, Hashable, CaseIterable {
    /// Made or resumed; its request is about to be sent.
    case pending
    /// The request is in flight (retries and redirects included).
    case running
    /// Stopped by `pause()`, the partial file kept; `resume()` continues it.
    case paused
    /// Done with a response (`response()` returns it; a non-2xx status included).
    case finished
    /// Ended by an error (`response()` throws it); `resumeData` may continue it.
    case failed
    /// Ended by `cancel()` (or by cancelling `download`'s caller).
    case cancelled

    /// Finished, failed or cancelled: nothing more will happen.
    public var isTerminal: Bool { self == .finished || self == .failed || self == .cancelled }
}

/// A download you can wait for, pause and resume (on the same task), or cancel.
///
/// The engine writes the body to a temporary file next to the destination
/// (no trip through Swift per chunk, constant memory) and renames it into
/// place when the body is complete, so the destination appears complete or
/// not at all (a rename within one directory is atomic).
///
/// ```swift
/// let task = client.downloadTask(request, to: file, progress: progress)
/// await task.pause()              // the partial file is kept
/// task.resume()                   // Range: bytes=N- with If-Range, same task
/// for await state in task.states() { print(state) }   // ... running, finished
/// let response = try await task.response()
/// ```
///
/// Progress continues across a pause: after a resume that the server answers
/// with 206, reports count from the bytes already in the file, against the
/// whole size. A progress `stream()` ends when the task ends, not when it pauses.
public final class PocketDownloadTask: Sendable {
    enum Outcome: Sendable {
        case done(PocketDownloadResponse)
        case paused(PocketResumeData)
    }

    /// What the task and one run share.
    final class Control: Sendable {
        let pausing = Atomic<Bool>(false)
        let saved = Lock<PocketResumeData?>(nil)
    }

    private struct Machine {
        var state = PocketDownloadState.pending
        var run: Task<Void, Never>?
        var control = Control()
        var cancelling = false
        var resumeData: PocketResumeData?
        var outcome: Result<PocketDownloadResponse, any Error>?
        var waiters: [CheckedContinuation<PocketDownloadResponse, any Error>] = []
        var watchers: [UInt64: AsyncStream<PocketDownloadState>.Continuation] = [:]
        var nextWatcher: UInt64 = 0
    }

    private let client: PocketClient
    private let request: PocketRequest
    private let destination: URL
    private let progress: PocketProgressHandler?
    private let machine = Lock(Machine())

    init(client: PocketClient, request: PocketRequest, destination: URL, resume: PocketResumeData?, progress: PocketProgressHandler?) {
        self.client = client
        self.request = request
        self.destination = destination
        self.progress = progress
        machine.withLock { m in
            m.resumeData = resume
            m.run = start(resume: resume, control: m.control)
        }
    }

    /// The task's state now.
    public var state: PocketDownloadState { machine.withLock { $0.state } }

    /// True while paused (AFURLConnectionOperation's `isPaused`).
    public var isPaused: Bool { state == .paused }

    /// The task's states as an `AsyncSequence`: the current one first, then
    /// each change, ending after a terminal state (finished, failed,
    /// cancelled). Each call is a new subscription; it holds at most one
    /// state per change, so a few per pause.
    public func states() -> AsyncStream<PocketDownloadState> {
        let (stream, continuation) = AsyncStream<PocketDownloadState>.makeStream()
        let id: UInt64? = machine.withLock { m in
            continuation.yield(m.state)
            if m.state.isTerminal { return nil }
            m.nextWatcher += 1
            m.watchers[m.nextWatcher] = continuation
            return m.nextWatcher
        }
        guard let id else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in _ = self?.machine.withLock { $0.watchers.removeValue(forKey: id) } }
        return stream
    }

    /// Waits for the download's end, across pauses and resumes. Throws what
    /// kept it from completing (`.cancelled` after `cancel()`); after a
    /// failure other than cancellation, `resumeData` holds what the partial
    /// file needs to continue.
    public func response() async throws -> PocketDownloadResponse {
        try await withCheckedThrowingContinuation { continuation in
            let outcome = machine.withLock { m -> Result<PocketDownloadResponse, any Error>? in
                if m.outcome == nil { m.waiters.append(continuation) }
                return m.outcome
            }
            if let outcome { continuation.resume(with: outcome) }
        }
    }

    /// Stops the transfer and keeps the partial file; the task is `.paused`
    /// until `resume()` or `cancel()`. Returns the resume data (also in
    /// `resumeData`; nil when the body was content-coded, which a Range
    /// cannot continue: `resume()` then starts again from zero). Pausing a
    /// paused task returns its data; pausing a finished, failed or
    /// cancelled one does nothing and returns nil.
    @discardableResult
    public func pause() async -> PocketResumeData? {
        let run = machine.withLock { m -> Task<Void, Never>? in
            guard m.state == .pending || m.state == .running, !m.cancelling else { return nil }
            m.control.pausing.store(true, ordering: .sequentiallyConsistent)
            m.run?.cancel()
            return m.run
        }
        await run?.value
        return machine.withLock { $0.state == .paused ? $0.resumeData : nil }
    }

    /// Continues a paused task with `Range: bytes=N-` (N = the partial
    /// file's size) and `If-Range` (the strong ETag, else Last-Modified), as
    /// `downloadTask(resumingWith:)` does. Does nothing unless the task is
    /// paused, so resuming twice sends one request.
    public func resume() {
        machine.withLock { m in
            guard m.state == .paused else { return }
            m.control = Control()
            m.run = start(resume: m.resumeData, control: m.control)
            Self.enter(.pending, &m)
        }
    }

    /// Stops the transfer (or a pause) for good and removes the partial file;
    /// `response()` throws `.cancelled`. Does nothing to an ended task.
    public func cancel() {
        var watchers: [AsyncStream<PocketDownloadState>.Continuation]?
        let (run, partial) = machine.withLock { m -> (Task<Void, Never>?, PocketResumeData?) in
            switch m.state {
            case .pending, .running:
                m.cancelling = true
                return (m.run, nil)
            case .paused:
                let partial = m.resumeData
                m.resumeData = nil
                watchers = Self.end(.cancelled, with: .failure(PocketError(.cancelled, "the paused download was cancelled")), &m)
                return (nil, partial)
            case .finished, .failed, .cancelled:
                return (nil, nil)
            }
        }
        run?.cancel()
        if let partial { unlink(partial.temporaryFile.path(percentEncoded: false)) }
        if let watchers { finished(watchers) }
    }

    /// Ends the task like `cancel()` but keeps the partial file and returns
    /// how to continue it later, even in another process
    /// (`PocketClient.downloadTask(resumingWith:)`), as URLSession's
    /// `cancel(byProducingResumeData:)` does. Nil when nothing can be continued.
    public func cancelProducingResumeData() async -> PocketResumeData? {
        let data = await pause()
        let watchers = machine.withLock { m -> [AsyncStream<PocketDownloadState>.Continuation]? in
            guard m.state == .paused else { return nil }
            return Self.end(.cancelled, with: .failure(PocketError(.cancelled, "the download was stopped; continue it with its resume data")), &m)
        }
        guard let watchers else { return nil }
        finished(watchers)
        return data
    }

    /// Resume data after a pause, or after a failure that left a partial file.
    public var resumeData: PocketResumeData? { machine.withLock { $0.resumeData } }

    // MARK: runs

    /// Starts one run (fresh or resumed) in a task of its own.
    private func start(resume: PocketResumeData?, control: Control) -> Task<Void, Never> {
        let (client, request, destination, progress) = (self.client, self.request, self.destination, self.progress)
        return Task { [weak self] in
            self?.machine.withLock { m in if m.state == .pending { Self.enter(.running, &m) } }
            let result: Result<Outcome, any Error>
            do {
                result = .success(try await Downloader(client: client, request: request, destination: destination, resume: resume,
                                                       progress: progress, control: control).run())
            } catch {
                result = .failure(error)
            }
            self?.ended(result, control: control)
        }
    }

    /// A run ended: done, paused, failed or cancelled.
    private func ended(_ result: Result<Outcome, any Error>, control: Control) {
        var discard: PocketResumeData?
        let watchers = machine.withLock { m -> [AsyncStream<PocketDownloadState>.Continuation]? in
            guard m.control === control else { return nil }
            m.run = nil
            switch result {
            case .success(.done(let response)):
                return Self.end(.finished, with: .success(response), &m)
            case .success(.paused(let data)) where m.cancelling:
                // cancel() came while the pause was under way.
                discard = data
                return Self.end(.cancelled, with: .failure(PocketError(.cancelled, "the download was cancelled")), &m)
            case .success(.paused(let data)):
                m.resumeData = data
                Self.enter(.paused, &m)
                return nil
            case .failure(let error):
                if !m.cancelling, control.pausing.load(ordering: .sequentiallyConsistent), Self.isCancelled(error) {
                    // A content-coded body: nothing to continue, a resume starts again.
                    m.resumeData = nil
                    Self.enter(.paused, &m)
                    return nil
                }
                m.resumeData = control.saved.withLock { $0 }
                return Self.end(m.cancelling || Self.isCancelled(error) ? .cancelled : .failed, with: .failure(error), &m)
            }
        }
        if let discard { unlink(discard.temporaryFile.path(percentEncoded: false)) }
        if let watchers { finished(watchers) }
    }

    /// After a terminal state, outside the lock: state streams end (their
    /// termination handlers take the lock) and the progress stream too.
    private func finished(_ watchers: [AsyncStream<PocketDownloadState>.Continuation]) {
        for watcher in watchers { watcher.finish() }
        progress?.finish?()
    }

    private static func isCancelled(_ error: any Error) -> Bool {
        (error as? PocketError)?.code == .cancelled || error is CancellationError
    }

    private static func enter(_ state: PocketDownloadState, _ m: inout Machine) {
        guard m.state != state else { return }
        m.state = state
        for watcher in m.watchers.values { watcher.yield(state) }
    }

    /// Enters a terminal state: waiters get `outcome`; returns the state
    /// streams, for `finished` to end once the lock is released.
    private static func end(_ state: PocketDownloadState, with outcome: Result<PocketDownloadResponse, any Error>,
                            _ m: inout Machine) -> [AsyncStream<PocketDownloadState>.Continuation] {
        enter(state, &m)
        m.outcome = outcome
        for waiter in m.waiters { waiter.resume(with: outcome) }
        m.waiters = []
        defer { m.watchers = [:] }
        return Array(m.watchers.values)
    }
}

extension PocketClient {
    /// Downloads `request`'s response body into `destination` (replacing a
    /// file there once complete). `Range`-resumable: see `PocketDownloadTask.pause`.
    /// A non-2xx status leaves the destination untouched and returns the
    /// body in memory (`PocketDownloadResponse.body`).
    ///
    /// Unless the request sets `Accept-Encoding`, a download asks for
    /// `identity`: Range offsets count the bytes as sent, so a file decoded
    /// from gzip could not be resumed. A content-coded body (the server sent
    /// one anyway, or the request asked) is still decoded and saved, but a
    /// failure or pause then keeps no partial file.
    public func downloadTask(_ request: PocketRequest, to destination: URL, progress: PocketProgressHandler? = nil) -> PocketDownloadTask {
        PocketDownloadTask(client: self, request: request, destination: destination, resume: nil, progress: progress)
    }

    /// Continues a paused or failed download. 206 appends to the partial
    /// file; 200 (the server ignored the range, or the resource changed)
    /// starts it again from zero; 416 is `.rangeNotSatisfiable`; a 206 for a
    /// different version than the resume data's is `.resumeValidatorMismatch`.
    public func downloadTask(resumingWith data: PocketResumeData, progress: PocketProgressHandler? = nil) -> PocketDownloadTask {
        PocketDownloadTask(client: self, request: data.request, destination: data.destination, resume: data, progress: progress)
    }

    /// Downloads and waits: `downloadTask(request, to:).response()`.
    nonisolated(nonsending) public func download(_ request: PocketRequest, to destination: URL,
                                                 progress: PocketProgressHandler? = nil) async throws -> PocketDownloadResponse {
        let task = downloadTask(request, to: destination, progress: progress)
        return try await withTaskCancellationHandler { try await task.response() } onCancel: { task.cancel() }
    }
}

/// One run of a download (fresh or resumed).
private struct Downloader {
    let client: PocketClient
    let request: PocketRequest
    let destination: URL
    let resume: PocketResumeData?
    let progress: PocketProgressHandler?
    let control: PocketDownloadTask.Control

    /// Validators and size of the response being written (set on the loop thread).
    struct Seen: Sendable {
        var etag: String?
        var lastModified: String?
        var total: Int?
        /// The body was content-coded (and decoded): not resumable by Range.
        var encoded = false
    }

    nonisolated(nonsending) func run() async throws -> PocketDownloadTask.Outcome {
        let temp = resume?.temporaryFile ?? destination.deletingLastPathComponent()
            .appending(path: ".\(destination.lastPathComponent).pocket-\(String(UInt64.random(in: 0...UInt64.max), radix: 16))")
        let tempPath = temp.path(percentEncoded: false)
        let fd = open(tempPath, O_WRONLY | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw Self.fileError("cannot create \(tempPath)") }
        var offset = 0
        if resume != nil {
            var st = stat()
            if fstat(fd, &st) == 0 { offset = Int(st.st_size) }
        } else {
            _ = ftruncate(fd, 0)
        }
        lseek(fd, off_t(offset), SEEK_SET)

        var sent = request
        // Range offsets count the bytes as sent: a decoded file could not be
        // resumed, so a download asks for the plain representation.
        if !sent.headers.contains("Accept-Encoding") { sent.headers["Accept-Encoding"] = "identity" }
        if offset > 0 {
            sent.headers["Range"] = "bytes=\(offset)-"
            if let validator = resume?.etag.flatMap({ $0.hasPrefix("W/") ? nil : $0 }) ?? resume?.lastModified {
                sent.headers["If-Range"] = validator
            }
        }
        let seen = Lock(Seen(etag: resume?.etag, lastModified: resume?.lastModified, total: resume?.totalBytes))
        let start = offset
        // Download progress counts from the bytes already in the file when
        // a 206 continues it; the task ends the user's progress stream.
        let base = Lock(0)
        let progress = self.progress.map { user in
            var handler = PocketProgressHandler(interval: user.interval, report: { p in
                var p = p
                let skipped = p.direction == .download ? base.withLock { $0 } : 0
                if skipped > 0 {
                    p.bytes += skipped
                    p.wireBytes += skipped
                    p.total = p.total.map { $0 + skipped }
                    p.wireTotal = p.wireTotal.map { $0 + skipped }
                }
                user.report(p)
            }, finish: nil)
            handler.contentLengthHeader = user.contentLengthHeader
            return handler
        }
        let expectedETag = resume?.etag, expectedDate = resume?.lastModified
        let decide: @Sendable (PocketResponseHead) -> InFlightRequest.FileDecision = { head in
            guard (200..<300).contains(head.status) else { return .memory }
            let etag = head.headers["ETag"], date = head.headers["Last-Modified"]
            if head.headers.contains("Content-Encoding") { seen.withLock { $0.encoded = true } }
            if head.status == 206 {
                guard start > 0, let range = ContentRange(head.headers["Content-Range"]), range.first == start else {
                    return .abort(PocketError(.badContentRange, "206 with Content-Range \(head.headers["Content-Range"] ?? "(none)") for a resume at byte \(start)", response: head))
                }
                if let expectedETag, let etag, etag != expectedETag {
                    return .abort(PocketError(.resumeValidatorMismatch, "the resource changed: ETag \(etag), resuming \(expectedETag)", response: head))
                }
                if expectedETag == nil, let expectedDate, let date, date != expectedDate {
                    return .abort(PocketError(.resumeValidatorMismatch, "the resource changed: Last-Modified \(date), resuming \(expectedDate)", response: head))
                }
                seen.withLock { $0.total = range.total ?? $0.total }
                base.withLock { $0 = start }
                return .write
            }
            // A whole body: start the file again from zero.
            if start > 0 {
                _ = ftruncate(fd, 0)
                lseek(fd, 0, SEEK_SET)
            }
            let total = head.headers["Content-Length"].flatMap { Int($0) }
            base.withLock { $0 = 0 }
            seen.withLock { $0 = Seen(etag: etag, lastModified: date, total: total, encoded: $0.encoded) }
            return .write
        }

        let response: PocketResponse
        do {
            // The request path: middleware, retries, events; then redirects,
            // whose bodies are collected in memory (`decide` keeps non-2xx
            // out of the file), so the file only sees the final response.
            // Once the file is written to, the attempt is not retried (its
            // bytes reached the caller: `FileDelivery`).
            response = try await client.execute(sent, options: PocketSendOptions(), progress: progress, sink: nil,
                                                FileDelivery(fd: fd, decide: decide))
        } catch let error as PocketError {
            let size = Self.size(fd)
            close(fd)
            let s = seen.withLock { $0 }
            let data = PocketResumeData(request: request, destination: destination, temporaryFile: temp, bytesReceived: size,
                                  etag: s.etag, lastModified: s.lastModified, totalBytes: s.total)
            if error.code == .cancelled && control.pausing.load(ordering: .sequentiallyConsistent) && !s.encoded {
                control.saved.withLock { $0 = data }
                return .paused(data)
            }
            // Keep a partial file only where Range can continue it.
            if error.code == .cancelled || size == 0 || s.encoded {
                unlink(tempPath)
            } else {
                control.saved.withLock { $0 = data }
            }
            throw error
        }
        let size = Self.size(fd)
        close(fd)
        guard response.isSuccess else {
            if offset == 0 { unlink(tempPath) }
            if response.status == 416 {
                let data = PocketResumeData(request: request, destination: destination, temporaryFile: temp, bytesReceived: size,
                                      etag: resume?.etag, lastModified: resume?.lastModified, totalBytes: resume?.totalBytes)
                control.saved.withLock { $0 = data }
                throw PocketError(.rangeNotSatisfiable, "the server has no bytes from offset \(offset) (416, Content-Range \(response.headers["Content-Range"] ?? "none"))",
                                  response: PocketResponseHead(status: response.status, reason: response.reason, headers: response.headers))
            }
            return .done(PocketDownloadResponse(status: response.status, reason: response.reason, headers: response.headers, fileURL: nil,
                                          body: response.body, fileSize: 0, resumed: false, timings: response.timings,
                                          url: response.url, redirects: response.redirects, metadata: request.metadata))
        }
        guard rename(tempPath, destination.path(percentEncoded: false)) == 0 else {
            let error = Self.fileError("cannot move the download into \(destination.path(percentEncoded: false))")
            unlink(tempPath)
            throw error
        }
        return .done(PocketDownloadResponse(status: response.status, reason: response.reason, headers: response.headers,
                                      fileURL: destination, body: Data(), fileSize: size, resumed: response.status == 206,
                                      timings: response.timings, url: response.url, redirects: response.redirects, metadata: request.metadata))
    }

    static func size(_ fd: Int32) -> Int {
        var st = stat()
        return fstat(fd, &st) == 0 ? Int(st.st_size) : 0
    }

    static func fileError(_ what: String) -> PocketError {
        let e = errno
        return PocketError(.fileSystem, "\(what): \(String(cString: strerror(e)))", systemError: e)
    }
}

/// `Content-Range: bytes FIRST-LAST/TOTAL` (RFC 9110 §14.4); TOTAL may be `*`.
struct ContentRange {
    var first: Int
    var last: Int
    var total: Int?

    init?(_ value: String?) {
        guard let value, value.hasPrefix("bytes ") else { return nil }
        let spec = value.dropFirst(6).split(separator: "/", maxSplits: 1)
        guard spec.count == 2 else { return nil }
        let range = spec[0].split(separator: "-", maxSplits: 1)
        guard range.count == 2, let first = Int(range[0]), let last = Int(range[1]), first <= last else { return nil }
        self.first = first
        self.last = last
        if spec[1] == "*" { total = nil } else if let t = Int(spec[1]), t > last { total = t } else { return nil }
    }
}

extension PocketResumeData {
    /// Resume data for a partial file made elsewhere (by another tool, or an
    /// earlier run that kept only the file), e.g. `pocket -C -`: the resume
    /// asks for the bytes from `temporaryFile`'s size on (its size when the
    /// download starts, whatever `bytesReceived` says; it becomes
    /// `temporaryFile`). Without `etag` or
    /// `lastModified` there is no `If-Range`, so the server cannot tell a
    /// changed resource: pass the validators whenever they are known.
    public init(request: PocketRequest, destination: URL, partialFile: URL, bytesReceived: Int,
                etag: String? = nil, lastModified: String? = nil, totalBytes: Int? = nil) {
        self.request = request
        self.destination = destination
        self.temporaryFile = partialFile
        self.bytesReceived = bytesReceived
        self.etag = etag
        self.lastModified = lastModified
        self.totalBytes = totalBytes
    }
}
