#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
internal import CHTTPEngine
import Synchronization

/// The Swift side of one request while the engine runs it.
///
/// Passed to C as a retained, unmanaged context: retained on submit, released
/// in `on_done`, which the engine calls exactly once. The response fields are
/// written only by the loop thread between submit and `on_done`, and read by
/// the caller only after the continuation resumes, so they need no lock.
/// Cancellation races with submit and completion through one atomic state
/// (lock-free, and visible to ThreadSanitizer, which does not see through the
/// futex-based `Mutex`).
final class InFlightRequest: @unchecked Sendable {
    private enum State {
        static let idle = 0
        static let running = 1        // handleReq/handleID are valid
        static let cancelledEarly = 2 // cancelled before the handle was published
        static let finished = 3
    }

    private let state = Atomic<Int>(State.idle)
    // Written once by the submitter before `state` becomes `running` (release);
    // read by `cancel` only after it observes `running` (acquire).
    private var handleReq: UInt = 0
    private var handleID: UInt64 = 0
    private var continuation: UnsafeContinuation<Response, any Error>?
    private let engine: Engine
    private var bodyCopy: UnsafeMutableRawBufferPointer?

    // Loop thread only, until on_done.
    private var status = 0
    private var reason = ""
    private var minorVersion = 1
    private var headers = HTTPHeaders()
    private var body = Data()
    private var outcome: Result<Response, PocketError>?
    /// Link in the loop's list of requests finished in the current pass.
    var nextCompleted: InFlightRequest?
    /// The sending task runs on the engine's loop (loop executor preference),
    /// so it is resumed there directly.
    var resumesOnLoop = false
    private let maxBodyReserve = 1 << 20

    init(engine: Engine) {
        self.engine = engine
    }

    static func from(_ ctx: UnsafeMutableRawPointer?) -> InFlightRequest {
        Unmanaged<InFlightRequest>.fromOpaque(ctx!).takeUnretainedValue()
    }

    static func release(_ ctx: UnsafeMutableRawPointer?) -> InFlightRequest {
        Unmanaged<InFlightRequest>.fromOpaque(ctx!).takeRetainedValue()
    }

    /// Submits the request; the continuation is resumed exactly once.
    func start(_ request: Request, configuration: PocketClient.Configuration,
               continuation: UnsafeContinuation<Response, any Error>) {
        self.continuation = continuation
        resumesOnLoop = pk_engine_on_loop_thread(engine.raw) != 0
        let target = request.target
        if let problem = target.problem {
            finishEarly(PocketError(request.url.scheme.map { ["http", "https"].contains($0.lowercased()) } == false
                                    ? .unsupportedScheme : .invalidURL, problem))
            return
        }
        let timeouts = request.timeouts ?? configuration.timeouts
        let tlsID: UInt32
        do {
            tlsID = target.https ? try engine.tlsID(for: request.tls) : 0
        } catch {
            finishEarly(error)
            return
        }

        // Header list: client defaults the request does not override, then the request's own.
        var extra = HTTPHeaders()
        if let userInfo = target.userInfo, !request.headers.contains("Authorization") {
            let token = Data("\(userInfo.user):\(userInfo.password)".utf8).base64EncodedString()
            extra.add(name: "Authorization", value: "Basic \(token)")
        }
        let acceptEncoding = configuration.decompression && !request.headers.contains("Accept-Encoding")
            && !configuration.defaultHeaders.contains("Accept-Encoding")
        let headers = HeaderSources(defaults: configuration.defaultHeaders, extra: extra, own: request.headers,
                                    acceptEncoding: acceptEncoding)

        if let body = request.body, !body.isEmpty {
            let copy = UnsafeMutableRawBufferPointer.allocate(byteCount: body.count, alignment: 1)
            body.withUnsafeBytes { copy.copyMemory(from: $0) }
            bodyCopy = copy
        }

        let rc = submit(request, target, headers, timeouts, tlsID)
        if rc != 0 {
            // The engine refused it synchronously: no callback will come.
            Unmanaged.passUnretained(self).release()
            finishEarly(PocketError.engine(rc, errno: 0))
        }
    }

    /// Builds the C spec on the stack (no heap allocation for typical sizes)
    /// and submits it. Returns the engine's code.
    private func submit(_ request: Request, _ target: Target, _ fields: HeaderSources,
                        _ timeouts: Timeouts, _ tlsID: UInt32) -> Int32 {
        var method = request.method.rawValue
        var host = target.host
        var path = target.pathAndQuery
        var total = method.utf8.count + host.utf8.count + path.utf8.count
        var count = 0
        fields.forEach { f in
            total += f.name.utf8.count + f.value.utf8.count
            count += 1
        }

        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: max(total, 1)) { bytes in
            withUnsafeTemporaryAllocation(of: pk_header.self, capacity: max(count, 1)) { hdrs in
                var offset = 0
                func put(_ s: inout String) -> (UnsafePointer<CChar>?, Int) {
                    let start = offset
                    s.withUTF8 { u in
                        if u.count > 0 {
                            UnsafeMutableRawPointer(bytes.baseAddress! + offset).copyMemory(from: u.baseAddress!, byteCount: u.count)
                        }
                        offset += u.count
                    }
                    let p = UnsafeRawPointer(bytes.baseAddress! + start).assumingMemoryBound(to: CChar.self)
                    return (p, offset - start)
                }
                var spec = pk_request_spec()
                (spec.method, spec.method_len) = put(&method)
                (spec.host, spec.host_len) = put(&host)
                (spec.target, spec.target_len) = put(&path)
                var i = 0
                fields.forEach { f in
                    var name = f.name, value = f.value
                    let (n, nl) = put(&name)
                    let (v, vl) = put(&value)
                    hdrs[i] = pk_header(name: n, name_len: nl, value: v, value_len: vl)
                    i += 1
                }
                spec.headers = UnsafePointer(hdrs.baseAddress)
                spec.num_headers = count
                spec.scheme = target.https ? Int32(PK_SCHEME_HTTPS.rawValue) : Int32(PK_SCHEME_HTTP.rawValue)
                spec.port = target.port
                spec.has_body = request.body == nil ? 0 : 1
                spec.body = UnsafeRawPointer(bodyCopy?.baseAddress)
                spec.body_len = bodyCopy?.count ?? 0
                spec.connect_timeout_ms = Timeouts.milliseconds(timeouts.connect)
                spec.read_timeout_ms = Timeouts.milliseconds(timeouts.read)
                spec.total_timeout_ms = Timeouts.milliseconds(timeouts.total)
                spec.idempotent = -1
                spec.tls_id = tlsID
                spec.ctx = Unmanaged.passRetained(self).toOpaque()

                if state.load(ordering: .acquiring) == State.cancelledEarly {
                    return -Int32(PK_E_CANCELLED.rawValue)
                }
                var handle = pk_request_handle()
                let rc = pk_engine_submit(engine.raw, &spec, &handle)
                guard rc == 0 else { return rc }
                handleReq = UInt(bitPattern: handle.req)
                handleID = handle.id
                let (published, seen) = state.compareExchange(expected: State.idle, desired: State.running,
                                                              ordering: .acquiringAndReleasing)
                // Cancelled between our check and the submit: the engine has
                // the request now, so the cancel is ours to pass on.
                if !published && seen == State.cancelledEarly { pk_engine_cancel(engine.raw, handle) }
                return 0
            }
        }
    }

    /// Called from Task cancellation on any thread.
    func cancel() {
        var current = state.load(ordering: .acquiring)
        while true {
            switch current {
            case State.idle:
                let (done, seen) = state.compareExchange(expected: State.idle, desired: State.cancelledEarly,
                                                         ordering: .acquiringAndReleasing)
                if done { return }
                current = seen
            case State.running:
                let handle = pk_request_handle(req: UnsafeMutableRawPointer(bitPattern: handleReq), id: handleID)
                pk_engine_cancel(engine.raw, handle) // a no-op if it already finished
                return
            default:
                return
            }
        }
    }

    private func finishEarly(_ error: PocketError) {
        state.store(State.finished, ordering: .releasing)
        freeBody()
        let c = continuation
        continuation = nil
        c?.resume(throwing: error)
    }

    private func freeBody() {
        bodyCopy?.deallocate()
        bodyCopy = nil
    }

    // MARK: engine callbacks (loop thread)

    func didReceiveHead(_ head: pk_response_head, contentLength: Int64) {
        status = Int(head.status)
        minorVersion = Int(head.minor_version)
        if head.reason_len > 0 {
            reason = String(decoding: UnsafeRawBufferPointer(start: head.reason, count: head.reason_len), as: UTF8.self)
        }
        var list = HTTPHeaders()
        list.reserveCapacity(head.num_headers)
        for i in 0..<head.num_headers {
            let h = head.headers[i]
            list.add(name: String(decoding: UnsafeRawBufferPointer(start: h.name, count: h.name_len), as: UTF8.self),
                     value: String(decoding: UnsafeRawBufferPointer(start: h.value, count: h.value_len), as: UTF8.self))
        }
        headers = list
        // Small bodies stay inline in Data (no allocation); larger ones get
        // their storage once, bounded so a lying Content-Length costs nothing.
        if contentLength > 14 {
            body.reserveCapacity(Int(min(contentLength, Int64(maxBodyReserve))))
        }
    }

    func didReceiveBody(_ bytes: UnsafeRawBufferPointer) {
        body.append(contentsOf: bytes)
    }

    func didFinish(error: Int32, sysErrno: Int32, timings t: pk_timings) {
        state.store(State.finished, ordering: .releasing)
        freeBody()
        if error != 0 {
            let head = status != 0 ? ResponseHead(status: status, reason: reason, headers: headers) : nil
            outcome = .failure(PocketError.engine(error, errno: sysErrno, response: head))
        } else {
            var timings = Timings()
            timings.dns = .nanoseconds(Int64(t.dns_ns))
            timings.connect = .nanoseconds(Int64(t.connect_ns))
            timings.tls = .nanoseconds(Int64(t.tls_ns))
            timings.firstByte = .nanoseconds(Int64(t.first_byte_ns))
            timings.total = .nanoseconds(Int64(t.total_ns))
            timings.bytesSent = Int(t.bytes_sent)
            timings.bytesReceived = Int(t.bytes_received)
            timings.wireBytesSent = Int(t.wire_bytes_sent)
            timings.wireBytesReceived = Int(t.wire_bytes_received)
            timings.reusedConnection = t.reused != 0
            timings.retried = t.retried != 0
            timings.tlsResumed = t.tls_resumed != 0
            outcome = .success(Response(status: status, reason: reason, httpMinorVersion: minorVersion,
                                        headers: headers, body: body, timings: timings))
        }
        engine.executor.complete(self)
    }

    /// Loop thread, end of the pass: hands the outcome to the waiting task.
    func resume() {
        let c = continuation
        continuation = nil
        guard let outcome else { return }
        self.outcome = nil
        switch outcome {
        case .success(let response): c?.resume(returning: response)
        case .failure(let error): c?.resume(throwing: error)
        }
    }
}

/// The header fields of one request without building a merged array: the
/// client's defaults the request does not override, then URL credentials,
/// then the request's own fields.
struct HeaderSources {
    let defaults: HTTPHeaders
    let extra: HTTPHeaders
    let own: HTTPHeaders
    /// Adds `Accept-Encoding: gzip, deflate` (decompression on, none set).
    let acceptEncoding: Bool

    private static let acceptEncodingField = HTTPHeaders.Field(name: "Accept-Encoding", value: "gzip, deflate")

    func forEach(_ body: (HTTPHeaders.Field) -> Void) {
        if acceptEncoding { body(Self.acceptEncodingField) }
        for f in defaults.fields where !own.contains(f.name) && !extra.contains(f.name) { body(f) }
        for f in extra.fields { body(f) }
        for f in own.fields { body(f) }
    }
}
