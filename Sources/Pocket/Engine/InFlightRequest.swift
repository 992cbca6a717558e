#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
internal import CHTTPEngine
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The Swift side of one request while the engine runs it.
///
/// Passed to C as a retained, unmanaged context: retained on submit, released
/// in `on_done`, which the engine calls exactly once. The response fields are
/// written only by the loop thread between submit and `on_done`, and read by
/// the caller only after the continuation resumes (an acquiring load in
/// `takeResponse` pairs with a releasing store before the resume), so they
/// need no lock.
/// Cancellation races with submit and completion through one atomic state
/// (lock-free, and visible to ThreadSanitizer, which does not see through the
/// futex-based `Mutex`).
final class InFlightRequest: @unchecked Sendable {
    /// Where the request is between submit, cancel and completion: one
    /// atomic word that the submitting thread, a cancelling thread and the
    /// loop thread move along (idle, then running or cancelled early, then
    /// finished, then resumed). Each transition says what its caller must do.
    struct State: ~Copyable {
        static let idle = 0
        static let running = 1        // handleReq/handleID are valid
        static let cancelledEarly = 2 // cancelled before the handle was published
        static let finished = 3
        static let resumed = 4        // the waiting task was handed its outcome

        private let word = Atomic<Int>(State.idle)

        init() {}

        /// The current state (acquiring: the fields written before it are seen).
        var current: Int { word.load(ordering: .acquiring) }

        /// Back to idle, for a spare about to be reused.
        func reset() { word.store(State.idle, ordering: .relaxed) }

        /// Whether a cancel came before the submit (checked just before it).
        var isCancelledEarly: Bool { current == State.cancelledEarly }

        /// The engine has the request: idle becomes running. False when a
        /// cancel came first (cancelled early): the caller passes the cancel
        /// on to the engine, which now has the request.
        func publish() -> Bool {
            let (published, seen) = word.compareExchange(expected: State.idle, desired: State.running,
                                                         ordering: .acquiringAndReleasing)
            return published || seen != State.cancelledEarly
        }

        /// What a cancel must do.
        enum CancelAction: Equatable {
            /// Nothing more: marked cancelled early (the submit refuses it),
            /// or already finished.
            case none
            /// The request is running: cancel it in the engine.
            case cancelInEngine
        }

        /// A cancel from any thread: idle becomes cancelled early; a running
        /// request is cancelled in the engine; later states ignore it.
        func cancel() -> CancelAction {
            var current = word.load(ordering: .acquiring)
            while true {
                switch current {
                case State.idle:
                    let (done, seen) = word.compareExchange(expected: State.idle, desired: State.cancelledEarly,
                                                            ordering: .acquiringAndReleasing)
                    if done { return .none }
                    current = seen
                case State.running:
                    return .cancelInEngine
                default:
                    return .none
                }
            }
        }

        /// The request ended (releasing: its fields are written).
        func finish() { word.store(State.finished, ordering: .releasing) }

        /// The waiting task was handed its outcome (releasing: see `takeResponse`).
        func resume() { word.store(State.resumed, ordering: .releasing) }
    }

    private let state = State()
    // Written once by the submitter before `state` becomes `running` (release);
    // read by `cancel` only after it observes `running` (acquire).
    private var handleReq: UInt = 0
    private var handleID: UInt64 = 0
    private var handleLoop: UInt32 = 0
    private var continuation: UnsafeContinuation<Void, any Error>?
    let engine: Engine
    private var bodyCopy: UnsafeMutableRawBufferPointer?
    /// A file request body, open from submit to `on_done`.
    private var uploadFD: Int32 = -1
    /// A stream request body's feeder.
    private var pump: BodyPump?
    /// A multipart body's segments, files and pump (MultipartUpload.swift).
    private var multipart: MultipartUpload?

    /// Where the response body goes.
    enum Delivery {
        /// Collected into `PocketResponse.body` (bounded by `maxBodyBytes`).
        case collect
        /// Handed to a `PocketResponseBodyStream` as it arrives; `send` returns at the head.
        case stream(BodyStreamState)
        /// Written by the engine to `fd`; `decide` looks at the head first (loop thread).
        case file(fd: Int32, decide: @Sendable (PocketResponseHead) -> FileDecision)
        /// Written into the caller's storage (`PocketResponseBodySink`,
        /// SinkDelivery.swift); `send` returns at the head when `returnsAtHead`.
        case sink(SinkDelivery)
    }

    enum FileDecision {
        case write           // the body goes to the file
        case memory          // the body is collected in memory instead (an error body)
        case abort(PocketError)
    }

    let delivery: Delivery
    private var progress: PocketProgressHandler?
    /// The Unix socket it was sent to (named in connection errors); nil for TCP.
    private var socketPath: String?
    /// The proxy it went through (named in its errors); nil when direct.
    private var proxyUsed: ProxyRoute?
    /// Set when the request is ended from our side for a reason of its own.
    private var abortError: PocketError?
    private var headDelivered = false
    private var lastUploadReport = -1
    private var lastDownloadReport = -1

    // Loop thread only, until on_done. Not checked for exclusivity at run
    // time (a begin and an end access per append, swap and reset, 7 per
    // request): the loop writes them, then the task that owns the request
    // reads them after its resume, never both at once.
    private var status = 0
    @exclusivity(unchecked) private var reason = ""
    private var minorVersion = 1
    @exclusivity(unchecked) private var headers = PocketHeaders()
    @exclusivity(unchecked) private var body = Data()
    /// What the waiting task gets when resumed; the response itself is
    /// built from the fields above only then (once, in place).
    private enum Ready { case none, head, response, failure }
    private var ready = Ready.none
    /// A head handed over before the body (`.stream`, a sink returning at
    /// the head), built on the loop thread: the loop still reads the
    /// fields above while the body flows.
    @exclusivity(unchecked) private var headResponse: PocketResponse?
    /// Set (releasing) by the loop when it hands a head over early, read
    /// (acquiring) by `takeResponse`: see there.
    private let headHandedOver = Atomic<Bool>(false)
    private var failure: PocketError?
    private var timings = PocketTimings()
    /// Link in the loop's list of requests finished in the current pass.
    var nextCompleted: InFlightRequest?
    /// The sending task runs on the engine's loop (loop executor preference),
    /// so it is resumed there directly.
    var resumesOnLoop = false
    private let maxBodyReserve = 1 << 20

    init(engine: Engine, delivery: Delivery = .collect, progress: PocketProgressHandler? = nil) {
        self.engine = engine
        self.delivery = delivery
        self.progress = progress
    }

    /// The state a new object would have, holding nothing of the request it
    /// served (its head, its progress handler and whatever that captures):
    /// a spare must keep nothing alive (`InFlightSpares.recycle`). Only for
    /// a finished `.collect` request nothing else references.
    func reset(progress: PocketProgressHandler?) {
        state.reset()
        handleReq = 0
        handleID = 0
        handleLoop = 0
        // The optionals are written only when set: a nil one is then left
        // alone instead of destroyed through its type's value witnesses.
        if abortError != nil { abortError = nil }
        headDelivered = false
        lastUploadReport = -1
        lastDownloadReport = -1
        status = 0
        reason = ""
        minorVersion = 1
        headers = PocketHeaders()
        body = Data()
        resumesOnLoop = false
        if socketPath != nil { socketPath = nil }
        if proxyUsed != nil { proxyUsed = nil }
        ready = .none
        if failure != nil { failure = nil }
        timings = PocketTimings()
        self.progress = progress
    }

    /// A spare taken for a new request (`InFlightSpares`).
    func use(progress: PocketProgressHandler?) { self.progress = progress }

    /// Whether `reset` may reuse it: finished, collected, holding nothing.
    var isReusable: Bool {
        guard case .collect = delivery else { return false }
        // The acquiring load pairs with `takeResumption`'s releasing store:
        // every field below was last written before it, on another thread.
        return state.current == State.resumed && continuation == nil && ready == .none
            && nextCompleted == nil && pump == nil && multipart == nil && bodyCopy == nil && uploadFD < 0
    }

    /// The whole milliseconds left before `deadline` (nanoseconds after
    /// `PocketDeadline.origin`), rounded down but at least 1: the engine's
    /// loop rounds its sleep up to a whole millisecond, so its timer fires
    /// within a millisecond of the deadline, not up to two after it. A
    /// deadline that has passed is the total timeout it cut, and nothing
    /// is sent.
    private static func millisecondsLeft(before deadline: Int64) throws(PocketError) -> UInt32 {
        let left = deadline &- PocketDeadline.nowNanos()
        guard left > 0 else {
            throw PocketError(.totalTimeout, "the total timeout, cut to the task's deadline, passed before the request was sent")
        }
        let ms = left / 1_000_000
        return ms >= Int64(UInt32.max) ? UInt32.max : UInt32(max(1, ms))
    }

    static func from(_ ctx: UnsafeMutableRawPointer?) -> InFlightRequest {
        Unmanaged<InFlightRequest>.fromOpaque(ctx!).takeUnretainedValue()
    }

    static func release(_ ctx: UnsafeMutableRawPointer?) -> InFlightRequest {
        Unmanaged<InFlightRequest>.fromOpaque(ctx!).takeRetainedValue()
    }

    /// Prepares and submits the request (to `replica` when there is one),
    /// its total timeout cut to what is left of `deadline` (nanoseconds
    /// after `PocketDeadline.origin`; `.max` for none); the continuation is
    /// resumed exactly once.
    func start(_ request: PocketRequest, client: PocketClient, to replica: PocketReplicaEndpoint? = nil, deadline: Int64 = .max,
               continuation: UnsafeContinuation<Void, any Error>) {
        self.continuation = continuation
        resumesOnLoop = pk_engine_on_loop_thread(engine.raw) != 0
        let prepared: PreparedRequest
        let tlsID: UInt32
        do {
            prepared = try PreparedRequest(request, defaultHeaders: client.configuration.defaultHeaders,
                                           decompression: client.configuration.decompression,
                                           timeouts: client.configuration.timeouts,
                                           engineTimeouts: client.engineTimeouts,
                                           unixSocketPath: client.configuration.unixSocketPath,
                                           addressOverrides: client.configuration.addressOverrides,
                                           proxies: client.proxies, replica: replica,
                                           totalCap: deadline == .max ? 0 : try Self.millisecondsLeft(before: deadline))
            tlsID = prepared.https ? try engine.tlsID(for: prepared.tls) : 0
        } catch {
            finishEarly(error)
            return
        }

        var body = BodySpec()
        switch prepared.body {
        case nil:
            break
        case .bytes(let data)?:
            body.present = true
            if !data.isEmpty {
                let copy = UnsafeMutableRawBufferPointer.allocate(byteCount: data.count, alignment: 1)
                data.withUnsafeBytes { copy.copyMemory(from: $0) }
                bodyCopy = copy
            }
        case let .file(path, offset, length)?:
            let fd = open(path, O_RDONLY | O_CLOEXEC)
            var st = stat()
            guard fd >= 0, fstat(fd, &st) == 0 else {
                let e = errno
                if fd >= 0 { close(fd) }
                finishEarly(PocketError(.fileReadFailed, "cannot open the request body file \(path): \(String(cString: strerror(e)))",
                                        systemError: e))
                return
            }
            uploadFD = fd
            body = BodySpec(present: true, kind: Int32(PK_BODY_FILE.rawValue), fd: fd, offset: UInt64(max(0, offset)),
                            length: length ?? max(0, Int(st.st_size) - offset))
        case let .stream(source, length)?:
            let pump = BodyPump(source.makeNext())
            self.pump = pump
            body = BodySpec(present: true, kind: Int32(PK_BODY_STREAM.rawValue), length: length ?? 0, chunked: length == nil)
        case .multipart(let form)?:
            if let once = form.sendOnce, !once.claim() {
                finishEarly(PocketError(.bodyNotReplayable,
                                        "this multipart form has a stream part and was already sent once; it cannot be sent again"))
                return
            }
            do {
                let upload = try MultipartUpload(form)
                multipart = upload
                pump = upload.pump
                body = BodySpec(present: true, kind: Int32(PK_BODY_SEGMENTS.rawValue), length: upload.length,
                                chunked: upload.chunked)
            } catch {
                form.sendOnce?.release() // nothing was read from its streams
                finishEarly(error)
                return
            }
        }

        let rc = submit(prepared, tlsID, body)
        if rc != 0 {
            // The engine refused it synchronously: no callback will come.
            Unmanaged.passUnretained(self).release()
            var error = PocketError.engine(rc, errno: 0)
            if let socketPath { error.message += " (Unix socket \(socketPath))" }
            finishEarly(error)
        }
    }

    /// Builds the C spec on the stack (no heap allocation for typical sizes)
    /// and submits it. Returns the engine's code.
    private func submit(_ prepared: PreparedRequest, _ tlsID: UInt32, _ body: BodySpec) -> Int32 {
        let fields = prepared.fields, timeouts = prepared.engineTimeouts
        var method = prepared.method
        var host = prepared.host
        let https = prepared.https, port = prepared.port
        let proxy = prepared.proxy
        var path = proxy?.absoluteTarget ?? prepared.target.pathAndQuery
        var socket = prepared.unixSocketPath, addresses = prepared.addresses
        var proxyHost = proxy?.proxy.host, proxyAuth = proxy?.tunnel == true ? proxy?.authorization : nil
        socketPath = socket
        proxyUsed = proxy
        var total = method.utf8.count + host.utf8.count + path.utf8.count + (socket?.utf8.count ?? 0)
            + (addresses?.utf8.count ?? 0) + (proxyHost?.utf8.count ?? 0) + (proxyAuth?.utf8.count ?? 0)
        var count = 0
        fields.forEach { f in
            total += f.name.utf8.count + f.value.utf8.count
            count += 1
        }
        // The object's fields are read here, once, not inside the closures
        // below (where each access would be checked for exclusivity).
        let bodyBytes = bodyCopy, segments = multipart?.segmentArray, segmentCount = multipart?.segmentCount ?? 0
        let delivery = self.delivery, progressInterval = progress?.interval, raw = engine.raw
        var handle = pk_request_handle()
        let rc: Int32 = withUnsafeTemporaryAllocation(of: UInt8.self, capacity: max(total, 1)) { bytes in
            withUnsafeTemporaryAllocation(of: pk_header.self, capacity: max(count, 1)) { hdrs in
                var writer = SpecWriter(bytes: bytes.baseAddress!, headers: hdrs.baseAddress!)
                var spec = pk_request_spec()
                (spec.method, spec.method_len) = writer.put(&method)
                (spec.host, spec.host_len) = writer.put(&host)
                (spec.target, spec.target_len) = writer.put(&path)
                if socket != nil { (spec.unix_path, spec.unix_path_len) = writer.put(&socket!) }
                if addresses != nil { (spec.addresses, spec.addresses_len) = writer.put(&addresses!) }
                if let proxy {
                    (spec.proxy_host, spec.proxy_host_len) = writer.put(&proxyHost!)
                    spec.proxy_port = proxy.proxy.port
                    spec.proxy_tunnel = proxy.tunnel ? 1 : 0
                    if proxyAuth != nil { (spec.proxy_authorization, spec.proxy_authorization_len) = writer.put(&proxyAuth!) }
                }
                fields.forEach { f in writer.putField(f) }
                spec.headers = UnsafePointer(hdrs.baseAddress)
                spec.num_headers = count
                spec.scheme = https ? Int32(PK_SCHEME_HTTPS.rawValue) : Int32(PK_SCHEME_HTTP.rawValue)
                spec.port = port
                spec.has_body = body.present ? 1 : 0
                spec.body_kind = body.kind
                spec.body = UnsafeRawPointer(bodyBytes?.baseAddress)
                spec.body_len = body.kind == Int32(PK_BODY_MEMORY.rawValue) ? bodyBytes?.count ?? 0 : body.length
                spec.body_fd = body.fd
                spec.body_offset = body.offset
                spec.body_chunked = body.chunked ? 1 : 0
                spec.segments = segments
                spec.num_segments = segmentCount
                if let wait = prepared.expectContinue { spec.expect_continue_ms = max(1, PocketTimeouts.milliseconds(wait)) }
                switch delivery {
                case .collect: break
                case .stream: spec.max_body_bytes = UInt64.max // the reader sets its own bound (collect(upTo:))
                case .file(let fd, _):
                    spec.use_sink = 1
                    spec.sink_fd = fd
                case .sink(let sink): if sink.returnsAtHead { spec.max_body_bytes = UInt64.max } // as .stream
                }
                if let progressInterval { spec.progress_interval_ms = max(1, PocketTimeouts.milliseconds(progressInterval)) }
                spec.connect_timeout_ms = timeouts.connect
                spec.read_timeout_ms = timeouts.read
                spec.total_timeout_ms = timeouts.total
                spec.idempotent = prepared.idempotent ? 1 : 0
                spec.tls_id = tlsID
                spec.ctx = Unmanaged.passRetained(self).toOpaque()

                if state.isCancelledEarly {
                    return -Int32(PK_E_CANCELLED.rawValue)
                }
                return pk_engine_submit(raw, &spec, &handle)
            }
        }
        guard rc == 0 else { return rc }
        handleReq = UInt(bitPattern: handle.req)
        handleID = handle.id
        handleLoop = handle.loop
        // Cancelled between our check and the submit: the engine has
        // the request now, so the cancel is ours to pass on.
        if !state.publish() { pk_engine_cancel(raw, handle) }
        return 0
    }

    /// Starts reading the socket again after a sink's write paused it (on
    /// the request's loop, at its next pass). Harmless when not paused.
    func resumeReading() {
        onLoop(handle) { r, h in _ = pk_request_resume_read(r.engine.raw, h) }
    }

    /// Called from Task cancellation on any thread.
    func cancel() {
        if state.cancel() == .cancelInEngine {
            pk_engine_cancel(engine.raw, handle) // a no-op if it already finished
        }
    }

    private func finishEarly(_ error: PocketError) {
        state.finish()
        freeBody()
        progress?.finish?()
        let c = continuation
        continuation = nil
        c?.resume(throwing: error)
    }

    private func freeBody() {
        bodyCopy?.deallocate()
        bodyCopy = nil
        if uploadFD >= 0 {
            close(uploadFD)
            uploadFD = -1
        }
        pump?.stop()
        multipart?.close()
        multipart = nil
    }

    /// The engine handle, for the loop-thread calls (valid once running).
    var handle: pk_request_handle {
        pk_request_handle(req: UnsafeMutableRawPointer(bitPattern: handleReq), id: handleID, loop: handleLoop)
    }

    /// Runs `body` with `handle` on the request's loop thread (posted; no-op
    /// once the engine is gone). The request stays alive until it has run.
    /// The handle travels with the job, so the loop never reads the fields
    /// the submitting thread writes.
    func onLoop(_ handle: pk_request_handle, _ body: @escaping @Sendable (InFlightRequest, pk_request_handle) -> Void) {
        let job = LoopJob(self, RequestHandle(handle), body)
        let arg = Unmanaged.passRetained(job).toOpaque()
        let rc = pk_engine_post(engine.raw, handle.loop, { _, arg in
            Unmanaged<LoopJob>.fromOpaque(arg!).takeRetainedValue().run()
        }, arg)
        if rc != 0 { Unmanaged<LoopJob>.fromOpaque(arg).release() }
    }

    // MARK: engine callbacks (loop thread)

    func didReceiveHead(_ head: pk_response_head, contentLength: Int64) -> Int32 {
        status = Int(head.status)
        minorVersion = Int(head.minor_version)
        if head.reason_len > 0 {
            let bytes = UnsafeRawBufferPointer(start: head.reason, count: head.reason_len)
            // "OK", most answers' phrase, as a literal: no string made from bytes.
            reason = bytes.count == 2 && bytes[0] == UInt8(ascii: "O") && bytes[1] == UInt8(ascii: "K")
                ? "OK" : String(decoding: bytes, as: UTF8.self)
        }
        // One allocation for all the fields: their bytes are packed, and
        // become Strings only when read.
        var total = 0
        for i in 0..<head.num_headers { total += head.headers[i].name_len + head.headers[i].value_len }
        let fields = head.headers
        headers = PocketHeaders(packed: PackedFields.make(count: head.num_headers, totalBytes: total) { i in
            let h = fields![i]
            return (UnsafeRawBufferPointer(start: h.name, count: h.name_len), UnsafeRawBufferPointer(start: h.value, count: h.value_len))
        })
        // Small bodies stay inline in Data (no allocation); larger ones get
        // their storage once, bounded so a lying Content-Length costs nothing.
        func reserve() {
            if contentLength > 14 { body.reserveCapacity(Int(min(contentLength, Int64(maxBodyReserve)))) }
        }
        switch delivery {
        case .collect:
            reserve()
            return Int32(PK_HEAD_CONTINUE)
        case .stream:
            // The caller gets the head now; the body follows through the stream.
            headDelivered = true
            ready = .head
            engine.executor.complete(self)
            return Int32(PK_HEAD_CONTINUE)
        case .file(_, let decide):
            switch decide(PocketResponseHead(status: status, reason: reason, headers: headers)) {
            case .write: return Int32(PK_HEAD_CONTINUE)
            case .memory:
                reserve()
                return Int32(PK_HEAD_DIVERT)
            case .abort(let error):
                abortError = error
                return Int32(PK_HEAD_ABORT)
            }
        case .sink(let sink):
            sink.start(self, head: PocketResponseHead(status: status, reason: reason, headers: headers), contentLength: contentLength)
            if sink.returnsAtHead { // as .stream: the caller gets the head now
                headDelivered = true
                ready = .head
                engine.executor.complete(self)
            }
            return Int32(PK_HEAD_CONTINUE)
        }
    }

    func didReceiveBody(_ bytes: UnsafeRawBufferPointer) -> Int32 {
        if case .stream(let stream) = delivery {
            let (pause, notify) = stream.append(Data(bytes))
            if notify { engine.executor.wakeAtPassEnd(stream) }
            return (pause ? Int32(PK_BODY_PAUSE) : 0) | (notify ? Int32(PK_BODY_NOTIFY) : 0)
        }
        if case .sink(let sink) = delivery { return sink.write(bytes) }
        body.append(contentsOf: bytes)
        return Int32(PK_BODY_CONTINUE)
    }

    /// Loop thread: the engine wants the next piece of a stream body.
    func engineWantsBody(_ handle: pk_request_handle) {
        pump?.want(self, RequestHandle(handle))
    }

    /// Loop thread: hands the pump's next piece to the engine.
    func sendBodyPiece(_ piece: UnsafeMutableRawBufferPointer?, last: Bool, handle: pk_request_handle) {
        _ = pk_request_send_body(engine.raw, handle, piece?.baseAddress, piece?.count ?? 0, last ? 1 : 0)
    }

    /// Loop thread: rate-limited progress from the engine.
    func didProgress(_ p: pk_progress) {
        guard let progress else { return }
        let final = p.final != 0
        if p.body_sent > 0 || (p.body_send_total > 0 && final), Int(p.body_sent) != lastUploadReport || final {
            lastUploadReport = Int(p.body_sent)
            let total = p.body_send_total >= 0 ? Int(p.body_send_total) : nil
            progress.report(PocketTransferProgress(direction: .upload, bytes: Int(p.body_sent), total: total,
                                             wireBytes: Int(p.body_sent), wireTotal: total, isFinal: final,
                                             part: multipart?.part(segment: Int(p.segment), sent: Int(p.segment_sent))))
        }
        if p.body_received > 0 || final, Int(p.body_decoded) != lastDownloadReport || final {
            lastDownloadReport = Int(p.body_decoded)
            let wireTotal = p.body_receive_total >= 0 ? Int(p.body_receive_total) : nil
            // An identity body's total is its Content-Length; a chunked or
            // decoded one has none in any report, the last included (the
            // same rule as uploads), unless the user names a header for it.
            var total = p.decoding != 0 ? nil : wireTotal
            if let name = progress.contentLengthHeader, let declared = headers[name].flatMap({ Int($0) }), declared >= 0 {
                total = declared
            }
            progress.report(PocketTransferProgress(direction: .download, bytes: Int(p.body_decoded), total: total,
                                             wireBytes: Int(p.body_received), wireTotal: wireTotal, isFinal: final))
        }
    }

    func didFinish(error: Int32, sysErrno: Int32, timings t: pk_timings) {
        state.finish()
        let pumpError = pump?.failure
        freeBody()
        progress?.finish?()
        var failure: PocketError?
        if error != 0 {
            let head = status != 0 ? PocketResponseHead(status: status, reason: reason, headers: headers) : nil
            if abs(error) == Int32(PK_E_CANCELLED.rawValue), var mine = abortError ?? pumpError {
                if mine.response == nil { mine.response = head }
                failure = mine
            } else if t.retry_refused != 0 {
                let cause = PocketError.engine(error, errno: sysErrno, response: head)
                failure = PocketError(.bodyNotReplayable,
                                      "the reused connection failed before any response (\(cause.code.name)) and the request would be "
                                      + "sent again on a new one, but its body is one-shot (a stream) and was already sent", underlying: cause,
                                      systemError: cause.systemError)
            } else {
                failure = PocketError.engine(error, errno: sysErrno, response: head)
                if let socketPath, status == 0 { failure!.message += " (Unix socket \(socketPath))" }
                if let proxyUsed, status == 0 { failure = Self.proxyError(failure!, code: error, status: sysErrno, proxyUsed) }
            }
        } else if let proxyUsed, !proxyUsed.tunnel, status == 407 {
            // A forwarding proxy's own refusal, not the origin's answer.
            failure = PocketError(.proxyAuthenticationRequired,
                                  "proxy \(proxyUsed.proxy.address) answered 407: "
                                  + (proxyUsed.authorization == nil ? "it wants credentials" : "it refused the credentials"),
                                  response: PocketResponseHead(status: status, reason: reason, headers: headers))
        }
        if headDelivered, case .stream(let stream) = delivery {
            // The caller already has the head; the stream ends here (its
            // reader is woken at the end of this pass, after any chunks).
            if stream.finish(failure, timings: PocketTimings(t)) { engine.executor.wakeAtPassEnd(stream) }
            return
        }
        if headDelivered, case .sink(let sink) = delivery {
            sink.end(failure, timings: PocketTimings(t))
            return
        }
        if let failure {
            self.failure = failure
            ready = .failure
        } else {
            timings = PocketTimings(t)
            ready = .response
        }
        engine.executor.complete(self)
    }

    /// An error of a proxied request, saying which proxy: failing to reach
    /// it is `.proxyUnreachable`; the tunnel's errors carry its status.
    static func proxyError(_ error: PocketError, code: Int32, status: Int32, _ route: ProxyRoute) -> PocketError {
        let at = route.proxy.address
        let c = abs(code)
        var error = error
        switch c {
        case Int32(PK_E_DNS.rawValue), Int32(PK_E_CONNECT_REFUSED.rawValue), Int32(PK_E_NETWORK_UNREACHABLE.rawValue),
             Int32(PK_E_HOST_UNREACHABLE.rawValue), Int32(PK_E_CONNECT.rawValue):
            return PocketError(.proxyUnreachable, "proxy \(at) unreachable: \(error.message)", underlying: error,
                               systemError: error.systemError)
        case Int32(PK_E_PROXY_CONNECT.rawValue):
            error.message = "proxy \(at) answered CONNECT with HTTP \(status): \(error.message)"
        case Int32(PK_E_PROXY_AUTH.rawValue):
            error.message = "proxy \(at) answered \(status) to CONNECT: "
                + (route.authorization == nil ? "it wants credentials" : "it refused the credentials")
        default:
            error.message += " (through proxy \(at))"
        }
        return error
    }

    /// Loop thread, end of the pass: hands the outcome to the waiting task.
    func resume() { takeResumption().run() }

    /// The continuation and what it is resumed with, taken out so that the
    /// caller can drop its reference to this object before the task runs on
    /// (a collected request is then unique again, and reusable). A complete
    /// response is not built here: the task builds it from the fields once
    /// resumed (`takeResponse`), in place, instead of it being moved through
    /// the continuation (some 200 bytes copied twice).
    func takeResumption() -> Resumption {
        guard let c = continuation.take() else { return .none }
        let resumption: Resumption
        switch ready {
        case .none:
            return .none
        case .head:
            // The body is still on its way: the request stays running (and cancellable).
            ready = .none
            headResponse = PocketResponse(status: status, reason: reason, httpMinorVersion: minorVersion, headers: headers)
            headHandedOver.store(true, ordering: .releasing)
            return .resumed(c)
        case .response:
            resumption = .resumed(c)
        case .failure:
            guard let error = failure.take() else { return .none }
            resumption = .failure(c, error)
        }
        ready = .none
        state.resume()
        return resumption
    }

    /// The waiting task, once resumed: the head handed over early, else the
    /// complete response (the loop is done with the fields by then).
    ///
    /// The acquiring loads pair with `takeResumption`'s releasing stores,
    /// made after the loop's last write of the fields and before the
    /// resume: the continuation's hand-off itself goes through the
    /// concurrency runtime's atomics, which ThreadSanitizer does not see,
    /// so without them it reports the loop's writes (`didReceiveBody`) as
    /// racing these reads.
    func takeResponse() -> PocketResponse {
        if headHandedOver.load(ordering: .acquiring) {
            headHandedOver.store(false, ordering: .relaxed)
            if let head = headResponse.take() { return head }
        }
        _ = state.current
        // Moved out, not copied: the object is done with them (a spare is
        // reset before its next use).
        var bytes = Data(), fields = PocketHeaders(), phrase = ""
        swap(&bytes, &body)
        swap(&fields, &headers)
        swap(&phrase, &reason)
        return PocketResponse(status: status, reason: phrase, httpMinorVersion: minorVersion, headers: fields,
                              body: bytes, timings: timings)
    }

    enum Resumption {
        case none
        case resumed(UnsafeContinuation<Void, any Error>)
        case failure(UnsafeContinuation<Void, any Error>, PocketError)

        consuming func run() {
            switch consume self {
            case .none: break
            case .resumed(let c): c.resume()
            case .failure(let c, let error): c.resume(throwing: error)
            }
        }
    }
}

/// Finished collected requests kept for reuse, so a warm `send` allocates
/// no `InFlightRequest`. Owned by the client (not the engine: a spare holds
/// its engine, and the engine must be freed when the client goes).
final class InFlightSpares: Sendable {
    private struct Spares {
        var head: InFlightRequest? // linked through `nextCompleted`
        var count = 0
    }
    private let spares = Lock<Spares>(Spares())
    private static let maxSpares = 256

    init() {}

    /// An `InFlightRequest` on `engine` collecting its body: a reused one,
    /// else a new one.
    func collectingRequest(engine: Engine, progress: PocketProgressHandler?) -> InFlightRequest {
        let reused = spares.withLock { s -> InFlightRequest? in
            guard let r = s.head else { return nil }
            s.head = r.nextCompleted.take()
            s.count -= 1
            return r
        }
        guard let reused, reused.engine === engine else { return InFlightRequest(engine: engine, progress: progress) }
        reused.use(progress: progress)
        return reused
    }

    /// Takes back a finished request from `collectingRequest` that nothing
    /// else references.
    func recycle(_ request: inout InFlightRequest) {
        guard isKnownUniquelyReferenced(&request), request.isReusable else { return }
        // Emptied now, not when reused: a spare that still held its last
        // head or progress handler could keep the client itself alive
        // (a handler capturing it), and with it the engine.
        request.reset(progress: nil)
        let r = request
        spares.withLock { s in
            guard s.count < Self.maxSpares else { return }
            r.nextCompleted = s.head
            s.head = r
            s.count += 1
        }
    }
}

/// Packs the spec's strings into one stack buffer and the header array.
private struct SpecWriter {
    let bytes: UnsafeMutablePointer<UInt8>
    let headers: UnsafeMutablePointer<pk_header>
    var offset = 0
    var count = 0

    mutating func put(_ s: inout String) -> (UnsafePointer<CChar>?, Int) {
        let start = bytes + offset
        let n = s.withUTF8 { u -> Int in
            if u.count > 0 { start.update(from: u.baseAddress!, count: u.count) }
            return u.count
        }
        offset += n
        return (UnsafeRawPointer(start).assumingMemoryBound(to: CChar.self), n)
    }

    mutating func putField(_ f: PocketHeaders.Field) {
        var name = f.name, value = f.value
        let (n, nl) = put(&name)
        let (v, vl) = put(&value)
        headers[count] = pk_header(name: n, name_len: nl, value: v, value_len: vl)
        count += 1
    }
}

/// The request body as the spec needs it.
private struct BodySpec {
    var present = false
    var kind = Int32(PK_BODY_MEMORY.rawValue)
    var fd: Int32 = -1
    var offset: UInt64 = 0
    var length = 0
    var chunked = false
}

/// Work posted to a request's loop thread.
private final class LoopJob {
    let request: InFlightRequest
    let handle: RequestHandle
    let body: @Sendable (InFlightRequest, pk_request_handle) -> Void
    init(_ request: InFlightRequest, _ handle: RequestHandle, _ body: @escaping @Sendable (InFlightRequest, pk_request_handle) -> Void) {
        self.request = request
        self.handle = handle
        self.body = body
    }
    func run() { body(request, handle.value) }
}

/// An engine handle carried between threads: an opaque name whose pointer
/// only the engine dereferences (and only while the id matches).
struct RequestHandle: @unchecked Sendable {
    let value: pk_request_handle
    init(_ value: pk_request_handle) { self.value = value }
}
