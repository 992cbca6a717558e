import NIOCore
import Pocket

// Response bodies handed to SwiftNIO as `ByteBuffer`s, written once: the
// engine's decoded bytes go straight into storage from the caller's
// `ByteBufferAllocator` (through the core's `PocketResponseBodySink`), with
// no `Data` in between. A product of its own, so the core stays NIO-free.

extension PocketClient {
    /// Sends `request` and returns the response with its body in one
    /// `ByteBuffer` from `allocator`, the body's bytes copied into it once.
    ///
    /// A declared `Content-Length` (up to 64 MiB) sizes the buffer when the
    /// first bytes arrive, so a plain body of known length costs one
    /// allocation and no growth; a chunked or content-decoded body grows the
    /// buffer as it arrives (the buffer's reallocations, not copies of the
    /// body through `Data`). An empty body allocates nothing.
    ///
    /// Otherwise this is `send(_:options:progress:)`: middleware, retries,
    /// redirects, validation, events, cancellation and
    /// `Configuration.limits.maxBodyBytes` all apply. `response.body` is
    /// empty: the body is the returned buffer.
    ///
    /// ```swift
    /// let (response, body) = try await client.send(request, into: context.allocator)
    /// return Response(status: .init(code: response.status), body: .init(byteBuffer: body))
    /// ```
    ///
    /// - Parameters:
    ///   - request: the request to send.
    ///   - allocator: where the body's buffer comes from.
    ///   - options: per-call middleware, retry policy and observers.
    ///   - progress: upload and download progress, rate-limited.
    /// - Returns: the response (its `body` empty) and the body.
    /// - Throws: `PocketError`, as `send(_:options:progress:)`.
    nonisolated(nonsending) public func send(_ request: PocketRequest, into allocator: ByteBufferAllocator,
                     options: PocketSendOptions = PocketSendOptions(),
                     progress: PocketProgressHandler? = nil) async throws -> (response: PocketResponse, body: ByteBuffer) {
        let (response, sink) = try await send(request, options: options, progress: progress) { start in
            ByteBufferBodySink(allocator: allocator, contentLength: start.contentLength)
        }
        return (response, sink.take())
    }

    /// Sends `request` and returns at the head; the body follows as
    /// `ByteBuffer`s from `allocator`, one per delivery from the engine (at
    /// most 16 KiB, or one decoded block), each byte copied once.
    ///
    /// Backpressure as with `stream(_:bufferSize:options:progress:)`: about
    /// `bufferSize` bytes (256 KiB by default) wait for the reader, then the
    /// engine stops reading the socket until the reader has taken most of
    /// them. Iterate the body once. Dropping it before the end, or
    /// cancelling the task reading it, cancels the request and closes its
    /// connection. A truncated or failed body ends the iteration with the
    /// `PocketError`. `Configuration.limits.maxBodyBytes` does not apply.
    ///
    /// - Parameters:
    ///   - request: the request to send.
    ///   - allocator: where the body's buffers come from.
    ///   - bufferSize: bytes buffered ahead of the reader before the socket
    ///     is paused, 256 KiB by default.
    ///   - options: per-call middleware, retry policy and observers.
    ///   - progress: upload and download progress, rate-limited.
    /// - Returns: the response head (its `body` empty) and the body's stream.
    /// - Throws: `PocketError` for failures before the head.
    nonisolated(nonsending) public func stream(_ request: PocketRequest, into allocator: ByteBufferAllocator, bufferSize: Int = 256 << 10,
                       options: PocketSendOptions = PocketSendOptions(),
                       progress: PocketProgressHandler? = nil) async throws -> (response: PocketResponse, body: PocketByteBufferStream) {
        let (response, sink) = try await stream(request, options: options, progress: progress) { start in
            ByteBufferStreamSink(allocator: allocator, bufferSize: bufferSize, control: start.control)
        }
        return (response, sink.takeStream())
    }
}

/// Collects one body into a `ByteBuffer`. Unchecked: `buffer` is written on
/// the loop thread until the send's continuation resumes, then only by `take`.
final class ByteBufferBodySink: PocketResponseBodySink, @unchecked Sendable {
    /// A declared length up to this sizes the buffer at once; past it the
    /// buffer grows as bytes arrive (a lying `Content-Length` costs nothing).
    static let maxReserved = 64 << 20
    private let allocator: ByteBufferAllocator
    private let reserve: Int
    private var buffer: ByteBuffer?

    init(allocator: ByteBufferAllocator, contentLength: Int?) {
        self.allocator = allocator
        reserve = min(contentLength ?? 0, Self.maxReserved)
    }

    func write(_ bytes: UnsafeRawBufferPointer) -> PocketBodyWriteAnswer {
        if buffer == nil {
            // Allocated at the first bytes: an empty body allocates nothing.
            buffer = allocator.buffer(capacity: max(reserve, bytes.count))
        }
        buffer!.writeBytes(bytes)
        return .proceed
    }

    /// The body, handed over (the sink keeps no reference, so the caller's
    /// buffer stays uniquely referenced and is written without a copy).
    func take() -> ByteBuffer {
        defer { buffer = nil }
        return buffer ?? allocator.buffer(capacity: 0)
    }
}

/// Feeds one body into a `PocketByteBufferStream` (`write` and `finish` on
/// the loop thread). Unchecked: `sequence` is set in init and taken once by
/// the sending task after the head; the source is thread-safe.
final class ByteBufferStreamSink: PocketResponseBodySink, @unchecked Sendable {
    typealias Producer = NIOThrowingAsyncSequenceProducer<
        ByteBuffer, any Error, NIOAsyncSequenceProducerBackPressureStrategies.HighLowWatermark, ProducerDelegate
    >

    private let allocator: ByteBufferAllocator
    private let source: Producer.Source
    /// Taken by the sending task after the head; never touched by the loop.
    private var sequence: Producer?
    private let timings = TimingsBox()

    init(allocator: ByteBufferAllocator, bufferSize: Int, control: PocketResponseBodyControl) {
        self.allocator = allocator
        // The strategy counts buffers; a delivery is at most about 16 KiB.
        let high = max(2, bufferSize / (16 << 10))
        let made = Producer.makeSequence(
            backPressureStrategy: .init(lowWatermark: max(1, high / 4), highWatermark: high),
            finishOnDeinit: true, delegate: ProducerDelegate(control: control))
        source = made.source
        sequence = made.sequence
    }

    func write(_ bytes: UnsafeRawBufferPointer) -> PocketBodyWriteAnswer {
        var buffer = allocator.buffer(capacity: bytes.count)
        buffer.writeBytes(bytes)
        switch source.yield(buffer) {
        case .produceMore, .dropped: return .proceed // dropped: the reader is gone, and its end cancelled the request
        case .stopProducing: return .pause
        }
    }

    func finish(_ error: PocketError?, timings: PocketTimings?) {
        self.timings.set(timings)
        if let error { source.finish(error) } else { source.finish() }
    }

    func takeStream() -> PocketByteBufferStream {
        defer { sequence = nil }
        return PocketByteBufferStream(sequence!, timings: timings)
    }
}

/// Resumes the engine when the reader wants more; cancels the request when
/// the reader is gone (a no-op once the body ended).
struct ProducerDelegate: NIOAsyncSequenceProducerDelegate {
    let control: PocketResponseBodyControl
    func produceMore() { control.resumeReading() }
    func didTerminate() { control.cancel() }
}

/// The request's timings, set by the loop when the body ends.
final class TimingsBox: Sendable {
    private let value = Lock<PocketTimings?>(nil)
    func set(_ timings: PocketTimings?) { value.withLock { $0 = timings } }
    var timings: PocketTimings? { value.withLock { $0 } }
}

/// The body of `PocketClient.stream(_:into:bufferSize:options:progress:)`:
/// an `AsyncSequence` of `ByteBuffer`s (decoded if the response was
/// compressed), with backpressure. Iterate it once.
public struct PocketByteBufferStream: AsyncSequence, Sendable {
    /// Each element is one delivery of body bytes from the engine.
    public typealias Element = ByteBuffer
    private let producer: ByteBufferStreamSink.Producer
    private let box: TimingsBox

    init(_ producer: ByteBufferStreamSink.Producer, timings: TimingsBox) {
        self.producer = producer
        self.box = timings
    }

    /// Iterates the body's buffers.
    public struct AsyncIterator: AsyncIteratorProtocol {
        var base: ByteBufferStreamSink.Producer.AsyncIterator

        /// The next buffer, nil at the end of the body; throws the
        /// `PocketError` that ended the body early.
        public mutating func next() async throws -> ByteBuffer? { try await base.next() }
    }

    /// The one iterator of this body (a second one traps).
    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(base: producer.makeAsyncIterator()) }

    /// The request's timings once the engine has received the whole body
    /// without error; nil before that and after a failure.
    public var timings: PocketTimings? { box.timings }

    /// The whole remaining body in one buffer from `allocator`, failing with
    /// `.bodyTooLarge` as soon as it would exceed `limit` bytes (dropping the
    /// stream then cancels the transfer).
    public func collect(upTo limit: Int, allocator: ByteBufferAllocator = ByteBufferAllocator()) async throws -> ByteBuffer {
        var all = allocator.buffer(capacity: 0)
        for try await var chunk in self {
            guard all.readableBytes + chunk.readableBytes <= limit else {
                throw PocketError(.bodyTooLarge, "response body exceeds the \(limit)-byte limit of collect(upTo:)")
            }
            if all.readableBytes == 0 && all.capacity == 0 { all = chunk } else { all.writeBuffer(&chunk) }
        }
        return all
    }
}
