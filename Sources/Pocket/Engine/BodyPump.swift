#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
internal import CHTTPEngine

/// Feeds a stream request body to the engine, one piece at a time.
///
/// The engine asks (`on_send_more`, loop thread) → the pump's task pulls the
/// next chunk from the sequence → the piece is posted back to the loop and
/// handed over (`pk_request_send_body`). One piece is in flight at a time, so
/// a slow socket slows the producer and memory stays at one chunk. A
/// multipart form's stream parts are one pump with several iterators, in
/// order: each one's end is the last piece of its segment.
final class BodyPump: @unchecked Sendable {
    // Invariant: `wants`'s continuation is thread-safe; `piece` is touched on
    // the loop thread only; `failure` is written by the pump task before it
    // aborts the request and read on the loop thread in on_done (ordered by
    // the engine's queue lock).
    private let iterators: [ChunkIterator]
    /// Bytes each iterator produced so far (read by progress reports).
    let produced: Lock<[Int]>
    private struct Want: Sendable {
        let request: InFlightRequest
        let handle: RequestHandle
    }

    private let wants: AsyncStream<Want>.Continuation
    private let requests: AsyncStream<Want>
    private var task: Task<Void, Never>?
    private var started = false
    /// The piece the engine is writing now (borrowed by it until it asks again).
    private var piece: UnsafeMutableRawBufferPointer?
    private(set) var failure: PocketError?

    convenience init(_ iterator: ChunkIterator) { self.init([iterator]) }

    init(_ iterators: [ChunkIterator]) {
        self.iterators = iterators
        produced = Lock(Array(repeating: 0, count: iterators.count))
        (requests, wants) = AsyncStream<Want>.makeStream(bufferingPolicy: .unbounded)
    }

    /// Loop thread: the engine is done with the last piece and wants the next.
    func want(_ request: InFlightRequest, _ handle: RequestHandle) {
        piece?.deallocate()
        piece = nil
        if !started {
            started = true
            let requests = self.requests, iterators = self.iterators
            task = Task { [self] in
                var index = 0
                for await want in requests {
                    let request = want.request
                    do {
                        var chunk: Data?
                        repeat { chunk = try await iterators[index].next() } while chunk?.isEmpty == true
                        if let n = chunk?.count { produced.withLock { $0[index] += n } }
                        let copy = chunk.map { data -> UnsafeMutableRawBufferPointer in
                            let b = UnsafeMutableRawBufferPointer.allocate(byteCount: data.count, alignment: 1)
                            data.withUnsafeBytes { b.copyMemory(from: $0) }
                            return b
                        }
                        let box = PieceBox(copy)
                        request.onLoop(want.handle.value) { r, h in self.hand(box.take(), to: r, handle: h) }
                        if chunk == nil {
                            index += 1
                            if index == iterators.count { return }
                        }
                    } catch {
                        failure = PocketError(.requestBodyStreamFailed, "the request body stream threw: \(error)",
                                              underlying: error)
                        request.cancel() // on_done reports `failure` instead of .cancelled
                        return
                    }
                }
            }
        }
        wants.yield(Want(request: request, handle: handle))
    }

    private var stopped = false

    private func hand(_ next: UnsafeMutableRawBufferPointer?, to request: InFlightRequest, handle: pk_request_handle) {
        if stopped {
            next?.deallocate()
            return
        }
        piece = next
        request.sendBodyPiece(next, last: next == nil, handle: handle)
    }

    /// Loop thread (on_done) or early failure: no more pieces.
    func stop() {
        stopped = true
        wants.finish()
        task?.cancel()
        piece?.deallocate()
        piece = nil
    }
}

/// Carries one piece to the loop; taken exactly once.
private final class PieceBox: @unchecked Sendable {
    // Invariant: written once at init, taken once on the loop thread.
    private var value: UnsafeMutableRawBufferPointer?
    init(_ value: UnsafeMutableRawBufferPointer?) { self.value = value }
    deinit { value?.deallocate() } // the loop never ran it (the engine shut down)
    func take() -> UnsafeMutableRawBufferPointer? {
        defer { value = nil }
        return value
    }
}
