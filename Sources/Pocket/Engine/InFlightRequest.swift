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
/// the caller only after the continuation resumes, so they need no lock; the
/// lock guards the small state machine that cancellation races with.
final class InFlightRequest: @unchecked Sendable {
    private enum State {
        case idle
        case running(req: UInt, id: UInt64) // a pk_request_handle, as plain values
        case cancelledEarly
        case finished
    }

    private let state = Mutex<State>(.idle)
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

        // Header list: client defaults the request does not override, then the request's own.
        var extra = HTTPHeaders()
        if let userInfo = target.userInfo, !request.headers.contains("Authorization") {
            let token = Data("\(userInfo.user):\(userInfo.password)".utf8).base64EncodedString()
            extra.add(name: "Authorization", value: "Basic \(token)")
        }
        let defaults = configuration.defaultHeaders
        var fields: [HTTPHeaders.Field] = []
        let needsMerge = !defaults.isEmpty || !extra.isEmpty
        if needsMerge {
            fields.reserveCapacity(defaults.count + extra.count + request.headers.count)
            for f in defaults.fields where !request.headers.contains(f.name) && !extra.contains(f.name) { fields.append(f) }
            fields.append(contentsOf: extra.fields)
            fields.append(contentsOf: request.headers.fields)
        }

        if let body = request.body, !body.isEmpty {
            let copy = UnsafeMutableRawBufferPointer.allocate(byteCount: body.count, alignment: 1)
            body.withUnsafeBytes { copy.copyMemory(from: $0) }
            bodyCopy = copy
        }

        let rc: Int32 = needsMerge
            ? submit(request, target, fields[...], timeouts)
            : submit(request, target, request.headers.fields[...], timeouts)
        if rc != 0 {
            // The engine refused it synchronously: no callback will come.
            Unmanaged.passUnretained(self).release()
            finishEarly(PocketError.engine(rc, errno: 0))
        }
    }

    /// Builds the C spec on the stack (no heap allocation for typical sizes)
    /// and submits it. Returns the engine's code.
    private func submit(_ request: Request, _ target: Target, _ fields: ArraySlice<HTTPHeaders.Field>,
                        _ timeouts: Timeouts) -> Int32 {
        var method = request.method.rawValue
        var host = target.host
        var path = target.pathAndQuery
        var total = method.utf8.count + host.utf8.count + path.utf8.count
        for f in fields { total += f.name.utf8.count + f.value.utf8.count }

        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: max(total, 1)) { bytes in
            withUnsafeTemporaryAllocation(of: pk_header.self, capacity: max(fields.count, 1)) { hdrs in
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
                for f in fields {
                    var name = f.name, value = f.value
                    let (n, nl) = put(&name)
                    let (v, vl) = put(&value)
                    hdrs[i] = pk_header(name: n, name_len: nl, value: v, value_len: vl)
                    i += 1
                }
                spec.headers = UnsafePointer(hdrs.baseAddress)
                spec.num_headers = fields.count
                spec.scheme = target.https ? Int32(PK_SCHEME_HTTPS.rawValue) : Int32(PK_SCHEME_HTTP.rawValue)
                spec.port = target.port
                spec.has_body = request.body == nil ? 0 : 1
                spec.body = UnsafeRawPointer(bodyCopy?.baseAddress)
                spec.body_len = bodyCopy?.count ?? 0
                spec.connect_timeout_ms = Timeouts.milliseconds(timeouts.connect)
                spec.read_timeout_ms = Timeouts.milliseconds(timeouts.read)
                spec.total_timeout_ms = Timeouts.milliseconds(timeouts.total)
                spec.idempotent = -1
                spec.ctx = Unmanaged.passRetained(self).toOpaque()

                var handle = pk_request_handle()
                // Under the lock so a concurrent cancel sees either "not yet
                // started" (and we skip submitting) or a valid handle.
                return state.withLock { st -> Int32 in
                    if case .cancelledEarly = st { return -Int32(PK_E_CANCELLED.rawValue) }
                    let rc = pk_engine_submit(engine.raw, &spec, &handle)
                    if rc == 0 { st = .running(req: UInt(bitPattern: handle.req), id: handle.id) }
                    return rc
                }
            }
        }
    }

    /// Called from Task cancellation on any thread.
    func cancel() {
        let handle: pk_request_handle? = state.withLock { st in
            switch st {
            case .idle:
                st = .cancelledEarly
                return nil
            case let .running(req, id):
                return pk_request_handle(req: UnsafeMutableRawPointer(bitPattern: req), id: id)
            case .cancelledEarly, .finished:
                return nil
            }
        }
        // Outside our lock: the engine takes its own, and on_done takes ours.
        if let handle { pk_engine_cancel(engine.raw, handle) }
    }

    private func finishEarly(_ error: PocketError) {
        state.withLock { $0 = .finished }
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
        for i in 0..<head.num_headers {
            let h = head.headers[i]
            list.add(name: String(decoding: UnsafeRawBufferPointer(start: h.name, count: h.name_len), as: UTF8.self),
                     value: String(decoding: UnsafeRawBufferPointer(start: h.value, count: h.value_len), as: UTF8.self))
        }
        headers = list
        if contentLength > 0 {
            body.reserveCapacity(Int(min(contentLength, Int64(maxBodyReserve))))
        }
    }

    func didReceiveBody(_ bytes: UnsafeRawBufferPointer) {
        body.append(contentsOf: bytes)
    }

    func didFinish(error: Int32, sysErrno: Int32, timings t: pk_timings) {
        state.withLock { $0 = .finished }
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
            timings.reusedConnection = t.reused != 0
            timings.retried = t.retried != 0
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
