#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
internal import CHTTPEngine

/// The buffer between the engine (producer, loop thread) and a
/// `PocketResponseBodyStream` reader, with backpressure: past `highWater` buffered
/// bytes the engine is told to stop reading the socket; when the reader has
/// drained below `lowWater`, reading resumes. Memory stays under highWater
/// plus one delivery (at most 16 KiB, or one decoded block).
final class BodyStreamState: @unchecked Sendable {
    private struct State {
        var chunks: [Data] = []
        var head = 0
        var buffered = 0
        var paused = false
        var finished = false
        var failure: PocketError?
        var timings: PocketTimings?
        var waiter: UnsafeContinuation<Data?, any Error>?
        var wakeQueued = false
    }

    private let state = Lock(State())
    let highWater: Int
    let lowWater: Int
    /// Set once before the request is submitted. Weak: the request holds
    /// this state; once the engine is done with the request, there is
    /// nothing left to resume or cancel.
    weak var request: InFlightRequest?

    init(highWater: Int) {
        self.highWater = max(1, highWater)
        self.lowWater = max(1, highWater) / 4
    }

    /// Loop thread: body bytes arrived. Returns whether to pause the socket,
    /// and whether the waiting reader must be woken at the end of the pass
    /// (`wake`), which the caller arranges.
    func append(_ chunk: Data) -> (pause: Bool, notify: Bool) {
        state.withLock { s in
            s.chunks.append(chunk)
            s.buffered += chunk.count
            if s.buffered >= highWater { s.paused = true }
            return (s.paused, notifyIfWaiting(&s))
        }
    }

    /// Loop thread: the body ended (nil) or failed. Returns whether the
    /// reader must be woken at the end of the pass.
    func finish(_ failure: PocketError?, timings: PocketTimings? = nil) -> Bool {
        state.withLock { s in
            s.finished = true
            s.failure = failure
            s.timings = failure == nil ? timings : nil
            return notifyIfWaiting(&s)
        }
    }

    private func notifyIfWaiting(_ s: inout State) -> Bool {
        guard s.waiter != nil, !s.wakeQueued else { return false }
        s.wakeQueued = true
        return true
    }

    /// Loop thread, end of a pass: hands the waiting reader what arrived.
    func wake() {
        let (waiter, step) = state.withLock { s -> (UnsafeContinuation<Data?, any Error>?, Step) in
            s.wakeQueued = false
            guard let w = s.waiter else { return (nil, .wait) }
            let step = take(&s)
            if case .wait = step { return (nil, .wait) }
            s.waiter = nil
            return (w, step)
        }
        waiter?.resume(with: Result { try deliver(step) })
    }

    private enum Step {
        case chunk(Data, resume: Bool)
        case end
        case fail(PocketError)
        case wait
    }

    /// Under the lock: the next buffered chunk (and whether the socket may
    /// flow again), the end, or nothing yet.
    private func take(_ s: inout State) -> Step {
        if s.head < s.chunks.count {
            let c = s.chunks[s.head]
            s.head += 1
            if s.head == s.chunks.count {
                s.chunks.removeAll(keepingCapacity: true)
                s.head = 0
            }
            s.buffered -= c.count
            var resume = false
            if s.paused && s.buffered <= lowWater {
                s.paused = false
                resume = true
            }
            return .chunk(c, resume: resume)
        }
        if s.finished { return s.failure.map { .fail($0) } ?? .end }
        return .wait
    }

    private func deliver(_ step: Step) throws -> Data? {
        switch step {
        case let .chunk(c, resume):
            // The reader runs after `stream` returned, so it sees the handle
            // the submitter stored; the job carries it to the loop.
            if resume, let request { request.onLoop(request.handle) { r, h in _ = pk_request_resume_read(r.engine.raw, h) } }
            return c
        case .end, .wait: return nil
        case .fail(let e): throw e
        }
    }

    /// The reader: the next chunk, nil at the end.
    func next() async throws -> Data? {
        let step = state.withLock { take(&$0) }
        if case .wait = step {} else { return try deliver(step) }
        let request = self.request
        return try await withTaskCancellationHandler {
            try await withUnsafeThrowingContinuation { (c: UnsafeContinuation<Data?, any Error>) in
                let step = state.withLock { s -> Step in
                    let step = take(&s) // something may have arrived since
                    if case .wait = step { s.waiter = c }
                    return step
                }
                if case .wait = step { return }
                c.resume(with: Result { try deliver(step) })
            }
        } onCancel: {
            request?.cancel()
        }
    }

    /// The reader is gone: stop the transfer (a no-op once it finished).
    func abandon() {
        let done = state.withLock { $0.finished }
        if !done { request?.cancel() }
    }

    /// Bytes buffered now (tests assert the bound).
    var bufferedBytes: Int { state.withLock { $0.buffered } }

    /// The request's timings once the body ended without error; nil before.
    var timings: PocketTimings? { state.withLock { $0.timings } }
}
