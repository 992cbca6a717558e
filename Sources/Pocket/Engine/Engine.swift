internal import CHTTPEngine
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

/// Owns one C engine. The engine's submit, cancel and shutdown are
/// thread-safe, and the pointer never changes.
final class Engine: @unchecked Sendable {
    // Invariant: `raw` is set once in init and destroyed once in deinit.
    let raw: OpaquePointer
    /// The first loop as a TaskExecutor. Also retained by the C engine
    /// (post_ctx) until it is freed, since posted jobs may run until then.
    let executor: LoopExecutor

    /// Whole microseconds of `d`, rounded down (saturating for absurd lengths).
    private static func microseconds(_ d: Duration) -> Int64 {
        min(d.components.seconds, Int64.max / 1_000_000 - 1) * 1_000_000 + d.components.attoseconds / 1_000_000_000_000
    }

    init(configuration c: PocketClient.Configuration) throws(PocketError) {
        var cfg = pk_engine_config()
        pk_engine_config_init(&cfg)
        cfg.loops = UInt32(clamping: max(1, c.engineThreads))
        cfg.max_conns_per_origin = UInt32(clamping: max(1, c.maxConnectionsPerOrigin))
        cfg.idle_timeout_ms = PocketTimeouts.milliseconds(c.idleConnectionTimeout)
        cfg.dns_cache_ttl_ms = PocketTimeouts.milliseconds(c.dnsCacheTTL)
        cfg.connection_attempt_delay_ms = c.connectionAttemptDelay <= .zero ? 0 : max(1, PocketTimeouts.milliseconds(c.connectionAttemptDelay))
        cfg.inline_wait_us = c.sendingThreadWait <= .zero ? 0 : Int32(clamping: max(1, Self.microseconds(c.sendingThreadWait)))
        cfg.inline_wait_quiet_ms = PocketTimeouts.milliseconds(c.sendingThreadWaitQuiet)
        cfg.inline_wait_gap_us = UInt32(clamping: max(0, Self.microseconds(c.sendingThreadWaitGap)))
        cfg.inline_spin_us = UInt32(clamping: max(0, Self.microseconds(c.sendingThreadSpin)))
        cfg.max_interim = UInt32(clamping: c.limits.maxInterimResponses)
        cfg.max_body_bytes = c.limits.maxBodyBytes.map { UInt64(clamping: $0) } ?? 0
        cfg.limits.max_head_bytes = max(64, c.limits.maxHeadBytes)
        cfg.limits.max_header_fields = max(1, c.limits.maxHeaderFields)
        cfg.limits.max_chunk_hex_digits = max(1, c.limits.maxChunkSizeDigits)
        cfg.limits.max_trailer_bytes = c.limits.maxTrailerBytes
        cfg.decode_content = c.decompression ? 1 : 0
        cfg.io_backend = c.ioBackend.engineValue
        cfg.inflate_limits.max_ratio = UInt64(max(0, c.limits.maxDecompressionRatio))
        cfg.inflate_limits.ratio_floor = UInt64(max(0, c.limits.decompressionRatioFloor))
        cfg.inflate_limits.max_output = c.limits.maxDecodedBytes.map { UInt64(max(1, $0)) } ?? 0
        cfg.callbacks.on_head = { ctx, head, raw, rawLen, contentLength in
            InFlightRequest.from(ctx).didReceiveHead(head!.pointee, contentLength: contentLength)
        }
        cfg.callbacks.on_body = { ctx, data, len in
            InFlightRequest.from(ctx).didReceiveBody(UnsafeRawBufferPointer(start: data, count: len))
        }
        cfg.callbacks.on_send_more = { ctx, handle in
            InFlightRequest.from(ctx).engineWantsBody(handle)
        }
        cfg.callbacks.on_progress = { ctx, progress in
            InFlightRequest.from(ctx).didProgress(progress!.pointee)
        }
        cfg.callbacks.on_done = { ctx, error, sysErrno, timings in
            InFlightRequest.release(ctx).didFinish(error: error, sysErrno: sysErrno, timings: timings!.pointee)
        }
        cfg.callbacks.on_pass_end = { ctx in
            Unmanaged<LoopExecutor>.fromOpaque(ctx!).takeUnretainedValue().resumeCompleted()
        }
        let executor = LoopExecutor()
        let retained = Unmanaged.passRetained(executor)
        cfg.post_ctx = retained.toOpaque()
        // The engine releases it once its threads are gone, wherever that is.
        cfg.post_ctx_release = { ctx in Unmanaged<LoopExecutor>.fromOpaque(ctx!).takeRetainedValue().closeResumer() }
        var engine: OpaquePointer?
        let rc: Int32
        do {
            rc = try Self.withTLSConfig(c.tls) { tls in
                cfg.tls = tls
                return pk_engine_create(&cfg, &engine)
            }
        } catch {
            retained.release()
            throw error
        }
        guard rc == 0, let engine else {
            retained.release()
            throw PocketError.engine(rc, errno: 0)
        }
        raw = engine
        executor.attach(engine)
        self.executor = executor
        defaultTLS = c.tls
    }

    /// The client's own TLS settings (engine id 0).
    private let defaultTLS: PocketTLSConfiguration
    /// Per-request TLS settings registered so far, by value.
    private let tlsIDs = Lock<[PocketTLSConfiguration: UInt32]>([:])

    /// The engine id of `tls` (nil or the client's own: 0), registering it on
    /// first use. Connections are pooled per id.
    func tlsID(for tls: PocketTLSConfiguration?) throws(PocketError) -> UInt32 {
        guard let tls, tls != defaultTLS else { return 0 }
        return try tlsIDs.withLock { ids throws(PocketError) -> UInt32 in
            if let id = ids[tls] { return id }
            var id: UInt32 = 0
            let rc = try Self.withTLSConfig(tls) { config in pk_engine_add_tls(raw, &config, &id) }
            guard rc == 0 else {
                throw PocketError(.tlsConfiguration, "TLS settings could not be loaded, or more than \(PK_MAX_TLS_CONFIGS) distinct ones are in use")
            }
            ids[tls] = id
            return id
        }
    }

    /// Builds the C view of `tls` for the duration of `body`.
    static func withTLSConfig(_ tls: PocketTLSConfiguration, _ body: (inout pk_tls_config) -> Int32) throws(PocketError) -> Int32 {
        var pins: [UInt8] = []
        for pin in tls.pinnedPublicKeys {
            guard pin.hasPrefix("sha256//"), let digest = Data(base64Encoded: String(pin.dropFirst(8))),
                  digest.count == 32 else {
                throw PocketError(.tlsConfiguration, "not a SHA-256 public key pin (sha256//<base64 of 32 bytes>): \(pin)")
            }
            pins.append(contentsOf: digest)
        }
        if tls.insecureSkipVerification { Engine.warnInsecureOnce() }
        var config = pk_tls_config()
        config.min_version = Int32(tls.minimumVersion == .tls13 ? PK_TLS_1_3 : PK_TLS_1_2)
        config.insecure = tls.insecureSkipVerification ? 1 : 0
        config.pin_count = tls.pinnedPublicKeys.count
        return withOptionalCString(tls.caFile) { caFile in
            withOptionalCString(tls.caDirectory) { caDir in
                withOptionalCString(tls.certificateChainFile) { cert in
                    withOptionalCString(tls.privateKeyFile) { key in
                        withOptionalCString(tls.ciphers) { ciphers in
                            pins.withUnsafeBufferPointer { pinBytes in
                                config.ca_file = caFile
                                config.ca_dir = caDir
                                config.cert_file = cert
                                config.key_file = key
                                config.ciphers = ciphers
                                config.pins = pinBytes.baseAddress
                                return body(&config)
                            }
                        }
                    }
                }
            }
        }
    }

    private static let insecureWarning: Void = {
        let text = "Pocket: TLS certificate verification is OFF (TLSConfiguration.insecureSkipVerification). "
            + "Never use this in production.\n"
        _ = text.withCString { write(2, $0, strlen($0)) }
    }()

    static func warnInsecureOnce() { _ = insecureWarning }

    /// Fails everything in flight with `.shutdown` and joins the loop threads.
    func shutdown() {
        pk_engine_shutdown(raw)
    }

    deinit {
        executor.attach(nil)
        pk_engine_destroy(raw)
    }

    /// Pool and request counters (for tests and metrics).
    var stats: pk_engine_stats {
        var s = pk_engine_stats()
        pk_engine_get_stats(raw, &s)
        return s
    }

    /// Requests submitted and not yet finished.
    var pendingRequests: Int { Int(stats.requests_pending) }

    /// Allocations the C engine has made in this process.
    static var allocationCount: UInt64 { pk_alloc_count() }
}

extension PocketError {
    /// The Swift error for an engine error number (negative or positive).
    static func engine(_ code: Int32, errno: Int32, response: PocketResponseHead? = nil) -> PocketError {
        let c = abs(code)
        var message = String(cString: pk_error_message(c))
        var underlying: (any Error & Sendable)?
        var sys: Int32?
        if errno != 0 {
            sys = errno
            if c == PK_E_DNS.rawValue {
                message += " (\(String(cString: gai_strerror(errno))))"
            } else if [PK_E_TLS_UNTRUSTED, PK_E_TLS_HOSTNAME, PK_E_TLS_EXPIRED, PK_E_TLS_NOT_YET_VALID]
                        .map({ Int32($0.rawValue) }).contains(c) {
                message += " (\(String(cString: pk_tls_verify_reason(errno))))"
            } else if c == PK_E_TLS_ALERT.rawValue {
                var received: Int32 = 0
                let reason = String(cString: pk_tls_alert_reason(errno, &received))
                message += received != 0 ? " (the server sent: \(reason))" : " (\(reason))"
            } else if c >= Int32(PK_E_TLS_CONFIG.rawValue) {
                // OpenSSL reason codes, not errno: the code alone is kept.
            } else if let posix = POSIXErrorCode(rawValue: errno) {
                underlying = POSIXError(posix)
                // A timeout's message already says what timed out (the
                // engine's timer reports ETIMEDOUT): strerror's "Connection
                // timed out" would misname a read or a deadline.
                let timeouts = [PK_E_CONNECT_TIMEOUT, PK_E_READ_TIMEOUT, PK_E_TOTAL_TIMEOUT].map { Int32($0.rawValue) }
                if !(errno == ETIMEDOUT && timeouts.contains(c)) {
                    message += " (\(String(cString: strerror(errno))))"
                }
            }
        }
        var head = response
        if head == nil, c == PK_E_PROXY_AUTH.rawValue {
            // A refused CONNECT: the proxy's status (errno) and challenge, read
            // while its on_done runs (pk_proxy_challenge), so that the proxy
            // step (Sources/Pocket/Proxy) can answer it.
            var length = 0
            var fields = PocketHeaders()
            if let value = pk_proxy_challenge(&length), length > 0 {
                let text = String(decoding: UnsafeRawBufferPointer(start: value, count: length), as: UTF8.self)
                fields.add(name: errno == 401 ? "WWW-Authenticate" : "Proxy-Authenticate", value: text)
            }
            head = PocketResponseHead(status: Int(errno), reason: "", headers: fields)
        }
        return PocketError(.engine(c), message, underlying: underlying, systemError: sys, response: head)
    }
}

extension PocketError.Code {
    /// The code of an engine error number (either sign): the engine's own
    /// name for it (`pk_error_name`), `unknown` past the table.
    static func engine(_ value: Int32) -> PocketError.Code {
        let c = value < 0 ? -value : value
        guard c > 0, c < Int32(PK__ERROR_COUNT.rawValue) else { return .unknown }
        return PocketError.Code(String(cString: pk_error_name(c)))
    }

    /// Every code the engine can report, in its table's order (tests check
    /// each has its constant).
    static var engineCodes: [PocketError.Code] {
        (1..<Int32(PK__ERROR_COUNT.rawValue)).map { engine($0) }
    }
}

private func withOptionalCString<R>(_ s: String?, _ body: (UnsafePointer<CChar>?) -> R) -> R {
    guard let s else { return body(nil) }
    return s.withCString { body($0) }
}
