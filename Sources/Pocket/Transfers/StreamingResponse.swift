#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A response whose body is read as it arrives (`PocketClient.stream`).
///
/// ```swift
/// let response = try await client.stream(request)
/// guard response.status == 200 else { ... }
/// for try await chunk in response.body { try handle.write(contentsOf: chunk) }
/// // or, bounded:
/// let data = try await response.body.collect(upTo: 10 << 20)
/// ```
public struct PocketStreamingResponse: Sendable {
    /// The status code, e.g. 200.
    public var status: Int
    /// The reason phrase as sent.
    public var reason: String
    /// 0 for HTTP/1.0, 1 for HTTP/1.1.
    public var httpMinorVersion: Int
    /// Header fields in the order received.
    public var headers: PocketHeaders
    /// The body, once (it is a stream, not a buffer).
    public let body: PocketResponseBodyStream
    /// The URL this response came from (the request's, or where its redirects led).
    public var url: URL?
    /// The redirects followed to get here, in order; empty for none.
    public var redirects: [PocketRedirectHop] = []
    /// The request's `metadata`, or nil.
    public var metadata: (any Sendable)?
    /// True when the response came from the client's cache (see `PocketResponse.fromCache`).
    public var fromCache = false
    /// True when a stored response was revalidated (a 304) before being returned.
    public var revalidated = false

    init(status: Int, reason: String, httpMinorVersion: Int, headers: PocketHeaders, body: PocketResponseBodyStream) {
        self.status = status
        self.reason = reason
        self.httpMinorVersion = httpMinorVersion
        self.headers = headers
        self.body = body
    }

    /// A streamed view of a response that is already complete (what a
    /// configured `PocketTransport` returns): its body is one chunk.
    init(collected response: PocketResponse) {
        let state = BodyStreamState(highWater: max(1, response.body.count))
        if !response.body.isEmpty { _ = state.append(response.body) }
        _ = state.finish(nil, timings: response.timings)
        self.init(status: response.status, reason: response.reason, httpMinorVersion: response.httpMinorVersion,
                  headers: response.headers, body: PocketResponseBodyStream(state))
    }

    /// The head as kept with errors.
    public var head: PocketResponseHead { PocketResponseHead(status: status, reason: reason, headers: headers) }
}

/// The body of a `PocketStreamingResponse`: an `AsyncSequence` of chunks (decoded
/// if the response was compressed), with backpressure.
///
/// The engine buffers at most `bufferSize` bytes (given to `stream`, 256 KiB by
/// default) ahead of the reader; past that it stops reading the socket, so a
/// slow reader holds the server back through TCP flow control instead of
/// growing memory. Iterate it once. Dropping it (and its iterator) before the
/// end cancels the request and closes its connection. Cancelling the reading
/// task cancels the request. A truncated or malformed body ends the
/// iteration with the `PocketError` — never a silent short body.
public final class PocketResponseBodyStream: AsyncSequence, Sendable {
    /// One delivery of body bytes (decoded if the response was compressed).
    public typealias Element = Data
    let state: BodyStreamState
    /// Where the response cache stores the body as it is read; set once by
    /// the cache step before the response reaches the caller (so never
    /// written while read), nil otherwise.
    nonisolated(unsafe) var tee: (any CacheWriter)?
    /// Where the pieces come from instead of the engine: a stored body
    /// (a cache hit), read as the caller asks; set once before the response
    /// reaches the caller, nil otherwise.
    nonisolated(unsafe) var source: (any CacheBodyReader)?

    init(_ state: BodyStreamState) { self.state = state }

    deinit { state.abandon() }

    /// Reads the body's chunks in order.
    public struct AsyncIterator: AsyncIteratorProtocol {
        let stream: PocketResponseBodyStream
        /// The next chunk, waiting for it; nil at the end of the body. Throws the
        /// `PocketError` that ended the body early.
        public mutating func next() async throws -> Data? {
            if let source = stream.source { return try source.next() }
            guard let tee = stream.tee else { return try await stream.state.next() }
            do {
                guard let chunk = try await stream.state.next() else {
                    tee.commit()
                    return nil
                }
                _ = tee.append(chunk)
                return chunk
            } catch {
                tee.abandon()
                throw error
            }
        }
    }

    /// The one iterator of this body (iterate it once).
    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(stream: self) }

    /// The whole body in memory, failing with `.bodyTooLarge` (and cancelling
    /// the transfer) as soon as it would exceed `limit` bytes.
    public func collect(upTo limit: Int) async throws -> Data {
        var all = Data()
        for try await chunk in self {
            guard all.count + chunk.count <= limit else {
                state.abandon()
                throw PocketError(.bodyTooLarge, "response body exceeds the \(limit)-byte limit of collect(upTo:)")
            }
            all.append(chunk)
        }
        return all
    }

    /// Reads and drops the rest of the body (the connection can then be
    /// reused if the response ends cleanly).
    public func discard() async throws {
        for try await _ in self {}
    }

    /// Bytes the engine holds for the reader right now (at most about the
    /// buffer size plus one delivery).
    public var bufferedBytes: Int { state.bufferedBytes }
}

extension PocketResponseBodyStream {
    /// The request's timings (connect, TLS, first byte, total, bytes) once
    /// the engine has received the whole body without error (the reader may
    /// still have buffered chunks to read; after the iteration ends they are
    /// always there); nil before that and after a failure.
    /// `PocketStreamingResponse` returns at the head, so this is where a streamed
    /// request's `PocketTimings` become known.
    public var timings: PocketTimings? { state.timings }
}
