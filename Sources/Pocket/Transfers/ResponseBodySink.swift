#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Storage the caller owns that one response body is written into as it
/// arrives, in place of `PocketResponse.body`: the way to hand a body to
/// another buffer type (a SwiftNIO `ByteBuffer`: the PocketNIO product)
/// with one copy and no `Data` in between.
///
/// `PocketClient.send(_:options:progress:writingBodyInto:)` makes one sink
/// per response head (each redirect hop and each retried attempt gets its
/// own; the one returned belongs to the final response) and calls `write`
/// with the decoded body bytes straight from the engine's buffer, so the
/// sink's own copy is the only one.
///
/// `write` and, for `stream(_:options:progress:writingBodyInto:)`, `finish`
/// run on the client's loop thread: they must not block, and should do
/// little more than copy the bytes. The sink is handed to the sending task
/// afterwards (or, for `stream`, at the head while writes go on), so state
/// that the loop writes and another thread reads needs the sink's own
/// synchronization in the streaming case.
public protocol PocketResponseBodySink: AnyObject, Sendable {
    /// Takes the next decoded body bytes, in order. `bytes` is borrowed
    /// until return: copy what you keep. Returning `.pause` stops reading
    /// the socket until `PocketResponseBodyControl.resumeReading()` (honoured
    /// for `stream`; a `send` waiting for the whole body ignores it).
    func write(_ bytes: UnsafeRawBufferPointer) -> PocketBodyWriteAnswer

    /// The body ended: `error` is nil when it arrived whole, else why it did
    /// not (a truncated body, a timeout, a cancellation). `timings` are the
    /// request's when it succeeded, else nil. Called exactly once per sink,
    /// after its last `write`: on the loop thread for `stream`, on the
    /// sending task before `send` returns or throws for `send`. Default:
    /// nothing.
    func finish(_ error: PocketError?, timings: PocketTimings?)
}

extension PocketResponseBodySink {
    /// Does nothing: a sink read only after `send` returns needs no end.
    public func finish(_ error: PocketError?, timings: PocketTimings?) {}
}

/// What a `PocketResponseBodySink` answers to each write.
public enum PocketBodyWriteAnswer: Sendable {
    /// Keep reading.
    case proceed
    /// Stop reading the socket after this write until the sink calls
    /// `PocketResponseBodyControl.resumeReading()`: backpressure, the
    /// server's sends then fill the TCP window and stop.
    case pause
}

/// What a sink is made from: the head of the body that starts, its declared
/// length and a control for the transfer.
public struct PocketResponseBodyStart: Sendable {
    /// The response head (status, reason, header fields).
    public let head: PocketResponseHead
    /// The `Content-Length` the server declared, in bytes on the wire; nil
    /// for a chunked or close-delimited body. A content-encoded (gzip,
    /// deflate) body decodes to more bytes than this, so treat it as a
    /// capacity hint, not a bound.
    public let contentLength: Int?
    /// Resumes a paused transfer or cancels it (`stream` only; for `send` its
    /// calls do nothing).
    public let control: PocketResponseBodyControl
}

/// Resumes or cancels the transfer of a body being written into a
/// `PocketResponseBodySink`. Any thread; a no-op once the request finished.
public struct PocketResponseBodyControl: @unchecked Sendable {
    // Weak: the request holds its sink, which may hold this control.
    // Written once, in init.
    private weak var request: InFlightRequest?

    init(_ request: InFlightRequest?) { self.request = request }

    /// Starts reading the socket again after a `write` answered `.pause`
    /// (on the request's loop, at its next pass). Harmless when not paused.
    public func resumeReading() {
        request?.resumeReading()
    }

    /// Cancels the request and closes its connection: the sink's `finish`
    /// gets `.cancelled` (unless the body already ended).
    public func cancel() { request?.cancel() }
}

extension PocketClient {
    /// Sends `request` and writes the response body into a sink the caller
    /// makes at the head, instead of into `PocketResponse.body`; returns
    /// once the body is complete, with the final response's sink.
    ///
    /// The body's bytes go from the engine's buffer into the sink's storage
    /// once: no `Data` is made for them. `makeSink` runs on the loop thread
    /// for each response head (redirects, retried attempts: the sink of a
    /// response that is not returned is dropped), and may size the storage
    /// from `start.contentLength`.
    ///
    /// Otherwise this is `send(_:options:progress:)`: middleware, retries,
    /// redirects, validation (a response has a body when bytes were
    /// written), events, cancellation; `Configuration.limits.maxBodyBytes`
    /// applies. The returned `response.body` is empty, and the request's
    /// `schema` is not applied (it reads `body`). With a response cache or a
    /// configured `PocketTransport` a response arrives complete, and its
    /// body is then written into its sink (one copy from that `Data`).
    ///
    /// - Parameters:
    ///   - request: the request to send.
    ///   - options: per-call middleware, retry policy and observers.
    ///   - progress: upload and download progress, rate-limited.
    ///   - makeSink: makes the storage for the body that starts (loop thread;
    ///     must not block).
    /// - Returns: the response (its `body` empty) and the final response's sink.
    /// - Throws: `PocketError`, as `send(_:options:progress:)`; the sink of
    ///   the failed attempt has its `finish` called with it first.
    nonisolated(nonsending) public func send<Sink: PocketResponseBodySink>(
        _ request: PocketRequest, options: PocketSendOptions = PocketSendOptions(), progress: PocketProgressHandler? = nil,
        writingBodyInto makeSink: @escaping @Sendable (PocketResponseBodyStart) -> Sink
    ) async throws -> (response: PocketResponse, body: Sink) {
        let sunk = try await execute(request, options: options, progress: progress, sink: nil,
                                     SinkWriteDelivery(returnsAtHead: false) { makeSink($0) })
        // The sinks were made by `makeSink`: of type `Sink`.
        return (sunk.response, unsafeDowncast(sunk.sink, to: Sink.self))
    }

    /// Sends `request` and returns at the head, while the body goes on
    /// being written into the sink made for it (`write` and then `finish`,
    /// on the loop thread).
    ///
    /// The sink gives backpressure itself: a `write` that answers `.pause`
    /// stops reading the socket until the sink's
    /// `PocketResponseBodyControl.resumeReading()`. Dropping the sink does
    /// not stop the transfer: call `control.cancel()`. As with
    /// `stream(_:bufferSize:options:progress:)`, `Configuration.limits.maxBodyBytes`
    /// does not apply, retries end at the head, and errors after it reach
    /// the sink's `finish` instead of this call. With a response cache or a
    /// configured `PocketTransport` the whole body is written before this
    /// returns.
    ///
    /// - Parameters:
    ///   - request: the request to send.
    ///   - options: per-call middleware, retry policy and observers.
    ///   - progress: upload and download progress, rate-limited.
    ///   - makeSink: makes the storage for the body that starts (loop thread;
    ///     must not block).
    /// - Returns: the response head (its `body` empty) and the sink the body
    ///   is being written into.
    /// - Throws: `PocketError` for failures before the head.
    nonisolated(nonsending) public func stream<Sink: PocketResponseBodySink>(
        _ request: PocketRequest, options: PocketSendOptions = PocketSendOptions(), progress: PocketProgressHandler? = nil,
        writingBodyInto makeSink: @escaping @Sendable (PocketResponseBodyStart) -> Sink
    ) async throws -> (response: PocketResponse, body: Sink) {
        let sunk = try await execute(request, options: options, progress: progress, sink: nil,
                                     SinkWriteDelivery(returnsAtHead: true) { makeSink($0) })
        return (sunk.response, unsafeDowncast(sunk.sink, to: Sink.self))
    }
}
