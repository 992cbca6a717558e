#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Pocket
import Tracing

/// One client span per request attempt (swift-distributed-tracing), after
/// OpenTelemetry's HTTP client conventions, and the trace context injected
/// into the request's header fields (with an OpenTelemetry tracer: the W3C
/// `traceparent`). Opt-in: install it, and only then does the request path
/// do this work.
///
/// ```swift
/// var config = PocketClient.Configuration()
/// config.handling.middleware.append(PocketTracingMiddleware())
/// ```
///
/// A deadline the task's context carries (`ServiceContext.pocketDeadline`)
/// bounds the request as `PocketDeadline` does.
///
/// Each attempt's span is a child of the task's current context
/// (`ServiceContext.current`), of kind `.client`, named by the method
/// (`GET`), with the attributes `http.request.method`, `url.full` (user and
/// password removed; the query too with `recordsQuery: false`),
/// `server.address`, `server.port`, `http.response.status_code`,
/// `network.protocol.version` (`1.1`, `1.0`), `network.peer.address` and
/// `network.peer.port` (the address and port the connection went to, when
/// the attempt had one), `http.request.resend_count`
/// (on the second attempt and later) and, on failure, `error.type` (the
/// `PocketError` code, or the status code for 4xx/5xx) with the span's
/// status set to error. Events `dns`, `connect`, `tls` and `first_byte`
/// are placed from the response's `PocketTimings` (each only when that
/// phase happened: a reused connection has no connect). Redirects are
/// followed inside one attempt, so they share its span.
///
/// For a request to a replica set's name (`PocketReplicaSet`),
/// `server.address` and `server.port` are the URL's (the set's name, as
/// OpenTelemetry's `server.address` is the URL's host), and
/// `network.peer.address` and `network.peer.port` are those of the replica
/// the attempt went to: its address (a DNS set's record, or what its host
/// resolved to) and port. Each attempt has its own span, so a retry or a
/// hedge that goes to another replica records that one.
///
/// With no tracer (a process that bootstrapped none, outside any
/// `withTracer` scope, or a `NoOpTracer`) the middleware starts no span and
/// leaves the request alone, at the cost of reading the instrument: a client
/// whose middleware are this one (and others with nothing to do, as
/// `PocketMetricsMiddleware` without a metrics backend) then sends the
/// request as a client without middleware does. A span
/// that records nothing (a sampled-out trace) costs its start and the
/// context injection only: no attributes are computed and the request is
/// copied only if the tracer wrote a field.
public struct PocketTracingMiddleware: PocketMiddleware, PocketAttemptObserver, PocketRequestGate {
    /// Whether `url.full` keeps the query (true by default). Queries can
    /// carry tokens or personal data; set false to strip it.
    public var recordsQuery: Bool
    private let tracer: (any Tracer)?

    /// Spans from `tracer`, or from `InstrumentationSystem.tracer` (the
    /// process's bootstrapped tracer, read when each span starts) when nil.
    public init(tracer: (any Tracer)? = nil, recordsQuery: Bool = true) {
        self.tracer = tracer
        self.recordsQuery = recordsQuery
    }

    /// `adapt` and `observe`; none with a `NoOpTracer` of its own (the chain
    /// then skips the middleware). Without a tracer of its own both stay:
    /// a `withTracer` scope can supply one per task.
    public var hooks: PocketMiddlewareHooks { (tracer.map(Self.isNoOp) ?? false) ? [] : [.adapt, .observe] }


    /// Whether `adapt` has work for a request made now: a deadline in the
    /// task's `ServiceContext` to apply, or a tracer other than the no-op
    /// one (its own, or the task's `withTracer` scope's, or the
    /// bootstrapped one). A client whose other middleware can tell as well
    /// sends a request without either as it sends one with no middleware.
    package func engages(_ request: PocketRequest) -> Bool {
        if ServiceContext.current?.pocketDeadline != nil { return true }
        if let tracer { return !Self.isNoOp(tracer) }
        let instrument = InstrumentationSystem.instrument
        return !(Self.isNoOp(instrument) || type(of: instrument) == NoOpTracer.self)
    }

    /// Whether `instrument` is the no-op instrument, or `tracer` the no-op
    /// tracer (both structs): the type compared, where `is` would go
    /// through the runtime's dynamic cast on every request.
    static func isNoOp(_ instrument: any Instrument) -> Bool {
        type(of: instrument) == NoOpInstrument.self
    }

    static func isNoOp(_ tracer: any Tracer) -> Bool {
        type(of: tracer) == NoOpTracer.self
    }

    /// Only an attempt whose `adapt` started a span has one to end: without
    /// a tracer the request path returns the response as with no middleware.
    package func observes(_ context: PocketMiddlewareContext) -> Bool {
        context.keepsAttemptObject
    }

    /// What `adapt` leaves for `observe` in the request's context (its
    /// attempt object: one reference, no store).
    final class Started: Sendable {
        let attempt: Int
        let span: any Span

        init(attempt: Int, span: any Span) {
            self.attempt = attempt
            self.span = span
        }
    }

    /// Starts the attempt's span and injects its context into the
    /// request's header fields.
    public func adapt(_ request: PocketRequest, context: PocketMiddlewareContext) async throws -> PocketRequest {
        if let deadline = ServiceContext.current?.pocketDeadline { context.deadline = deadline }
        let tracer: any Tracer
        if let own = self.tracer {
            tracer = own
        } else {
            // Nothing bootstrapped and no `withTracer` scope: the no-op
            // tracer would start a span that records nothing and inject
            // nothing. The instrument is read once (a task-local and a
            // lock): when it is a tracer, it is the tracer
            // `InstrumentationSystem.tracer` would find again; only a
            // multiplex instrument is searched for one.
            let instrument = InstrumentationSystem.instrument
            if Self.isNoOp(instrument) { return request }
            tracer = (instrument as? any Tracer) ?? InstrumentationSystem.tracer
        }
        if Self.isNoOp(tracer) { return request } // the same: no span, nothing injected
        let parent = ServiceContext.current ?? .topLevel
        let span = tracer.startSpan(request.method.rawValue, context: parent, ofKind: .client)
        // The context goes out even for a span that records nothing (a
        // sampled-out trace still tells the server so); the request is
        // copied only when the tracer wrote a field.
        var fields: [(String, String)] = []
        tracer.inject(span.context, into: &fields, using: FieldListInjector())
        var sent = request
        for (name, value) in fields { sent.headers[name] = value }
        guard span.isRecording else {
            // A no-op or sampled-out span: no attributes to compute, nothing to keep.
            span.end()
            return sent
        }
        let url = request.url
        Self.set(on: span) { put in
            put("http.request.method", .string(request.method.rawValue))
            put("url.full", .string(Self.fullURL(url, recordsQuery: recordsQuery)))
            if let server = request.server {   // parsed once with the URL
                put("server.address", .string(server.host))
                put("server.port", .int64(Int64(server.port)))
            } else {
                if let host = url.host { put("server.address", .string(host)) }
                put("server.port", .int64(Int64(url.port ?? ((url.scheme?.lowercased() == "https") ? 443 : 80))))
            }
            if context.attempt > 1 { put("http.request.resend_count", .int64(Int64(context.attempt - 1))) }
        }
        context.keepAttemptObject(Started(attempt: context.attempt, span: span))
        return sent
    }

    /// Records the outcome on the attempt's span (status, protocol, error,
    /// timing events) and ends it.
    public func observe(_ outcome: Result<PocketResponse, any Error>, for request: PocketRequest,
                        context: PocketMiddlewareContext) async {
        guard let started = context.takeAttemptObject() as? Started, started.attempt == context.attempt else { return }
        let span = started.span
        let end = DefaultTracerClock.now
        switch outcome {
        case .success(let response):
            Self.set(on: span) { put in
                put("http.response.status_code", .int64(Int64(response.status)))
                put("network.protocol.version", .string(response.httpMinorVersion == 1 ? "1.1" : "1.\(response.httpMinorVersion)"))
                if let peer = response.timings.remoteAddress {
                    put("network.peer.address", .string(peer))
                    put("network.peer.port", .int64(Int64(response.timings.remotePort)))
                }
                if response.status >= 400 { put("error.type", .string(String(response.status))) }
            }
            if response.status >= 400 { span.setStatus(SpanStatus(code: .error)) }
            Self.addTimingEvents(response.timings, to: span, endingAt: end)
        case .failure(let error):
            let type = (error as? PocketError)?.code.name ?? (error is CancellationError ? "cancelled" : String(describing: Swift.type(of: error)))
            span.attributes["error.type"] = type
            span.recordError(error)
            span.setStatus(SpanStatus(code: .error, message: "\(error)"))
        }
        span.end(at: end)
    }

    /// Up to five attributes, each given to `put`, set on `span`. A span
    /// with none yet gets them as one dictionary made here at its size;
    /// others get them set one by one, into room made once.
    /// (`SpanAttributes`' own calls are not specialized for its types:
    /// each insert that grows it goes through the standard library's
    /// generic code.)
    static func set(on span: any Span, _ attributes: ((String, SpanAttribute) -> Void) -> Void) {
        span.updateAttributes { current in
            if current.isEmpty {
                var made = [String: SpanAttribute](minimumCapacity: 5)
                attributes { made[$0] = $1 }
                current = SpanAttributes(made)
            } else {
                current.reserveCapacity(current.count + 5)
                attributes { current.set($0, value: $1) }
            }
        }
    }

    /// `dns`, `connect`, `tls` and `first_byte` events, placed from the
    /// engine's timings (measured from the submit, which is `total` before
    /// the end of the attempt).
    static func addTimingEvents(_ timings: PocketTimings, to span: any Span, endingAt end: DefaultTracerClock.Instant) {
        let total = timings.totalNanos
        guard total > 0, UInt64(total) <= end.nanosecondsSinceEpoch else { return }
        let submitted = end.nanosecondsSinceEpoch - UInt64(total)
        var offset: Int64 = 0
        func event(_ name: String, at nanos: Int64) {
            span.addEvent(SpanEvent(name: name, at: DefaultTracerClock.Instant(nanosecondsSinceEpoch: submitted + UInt64(max(0, nanos)))))
        }
        let dns = timings.dnsNanos, connect = timings.connectNanos, tls = timings.tlsNanos
        if dns > 0 { offset += dns; event("dns", at: offset) }
        if connect > 0 { offset += connect; event("connect", at: offset) }
        if tls > 0 { offset += tls; event("tls", at: offset) }
        let firstByte = timings.firstByteNanos
        if firstByte > 0 { event("first_byte", at: firstByte) }
    }

    /// The URL as recorded: without user and password, and without the
    /// query unless `recordsQuery`.
    static func fullURL(_ url: URL, recordsQuery: Bool) -> String {
        // Most URLs have nothing to remove (no user or password, no
        // fragment, a query that stays): those are recorded as they are,
        // without parsing the URL again (URLComponents cost about a third
        // of what the middleware does per request with a recording span).
        let whole = url.absoluteString
        if !Self.hasPartsToRemove(whole, keepingQuery: recordsQuery) { return whole }
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else { return url.absoluteString }
        if components.user != nil || components.password != nil {
            // OTel: credentials are removed, not redacted in place.
            components.user = nil
            components.password = nil
        }
        if !recordsQuery { components.query = nil }
        components.fragment = nil
        return components.string ?? url.absoluteString
    }

    /// Whether the absolute URL `url` has what `url.full` leaves out: a
    /// fragment, an `@` in its authority (the part after the first `//` up
    /// to the next `/` or `?`), or a query unless `keepingQuery`. One pass
    /// over the bytes, read as contiguous UTF-8 (a `UTF8View`'s iterator
    /// is a call per byte).
    static func hasPartsToRemove(_ url: String, keepingQuery: Bool) -> Bool {
        var url = url
        return url.withUTF8 { hasPartsToRemove($0, keepingQuery: keepingQuery) }
    }

    private static func hasPartsToRemove(_ url: UnsafeBufferPointer<UInt8>, keepingQuery: Bool) -> Bool {
        var inAuthority = false, pastAuthority = false
        var previous: UInt8 = 0
        for byte in url {
            switch byte {
            case UInt8(ascii: "#"):
                return true
            case UInt8(ascii: "?"):
                if !keepingQuery { return true }
                if inAuthority { (inAuthority, pastAuthority) = (false, true) }
            case UInt8(ascii: "@"):
                if inAuthority { return true }
            case UInt8(ascii: "/"):
                if inAuthority {
                    (inAuthority, pastAuthority) = (false, true)
                } else if !pastAuthority && previous == UInt8(ascii: "/") {
                    inAuthority = true
                }
            default:
                break
            }
            previous = byte
        }
        return false
    }
}

/// Collects the fields a tracer injects, so the request is changed only
/// when there are some.
struct FieldListInjector: Injector {
    func inject(_ value: String, forKey key: String, into carrier: inout [(String, String)]) {
        carrier.append((key, value))
    }
}

/// Writes trace context fields into a request's `PocketHeaders` (replacing
/// a field of the same name, so a retried request carries one `traceparent`).
public struct PocketHeadersInjector: Injector {
    /// An injector (it has no state).
    public init() {}

    /// Sets the field `key` to `value`.
    public func inject(_ value: String, forKey key: String, into carrier: inout PocketHeaders) {
        carrier[key] = value
    }
}

/// Reads trace context fields from `PocketHeaders` (e.g. a server built on
/// Pocket's types continuing a caller's trace).
public struct PocketHeadersExtractor: Extractor {
    /// An extractor (it has no state).
    public init() {}

    /// The value of the field `key`, nil when absent.
    public func extract(key: String, from carrier: PocketHeaders) -> String? {
        carrier[key]
    }
}
