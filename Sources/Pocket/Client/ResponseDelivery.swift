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

/// Where a response's body goes, for `PocketClient.execute`: collected into
/// the response (`send`), streamed to the caller (`stream`), written into a
/// sink the caller makes (`send`/`stream(writingBodyInto:)`) or into a file
/// (downloads). The path's stages are the same for each; a delivery says
/// only how one hop's engine request is made and what the caller gets.
protocol ResponseDelivery: Sendable {
    associatedtype Response: ExchangedResponse

    /// The engine request for one hop, its body going where this delivery says.
    func engineRequest(client: PocketClient, progress: PocketProgressHandler?) -> InFlightRequest

    /// The hop's response, from what the engine handed back: the complete
    /// response, or its head for a body that goes on arriving.
    func response(_ response: consuming PocketResponse, from inflight: inout InFlightRequest, client: PocketClient) -> Response

    /// The error a failed engine hop ends with (a sink is told of it first).
    func failed(_ error: any Error, _ inflight: InFlightRequest) -> any Error

    /// A complete response (from a `PocketTransport`) in this delivery's form.
    func deliver(_ complete: PocketResponse) throws -> Response

    /// The cache step for this delivery (Sources/Pocket/Cache).
    nonisolated(nonsending) func cached(_ request: PocketRequest, client: PocketClient,
                                        progress: PocketProgressHandler?) async throws -> Response
}

extension ResponseDelivery {
    func failed(_ error: any Error, _ inflight: InFlightRequest) -> any Error { error }
}

/// The body collected into `PocketResponse.body` (bounded by `maxBodyBytes`).
/// Finished engine requests are kept for reuse (`InFlightSpares`).
struct CollectDelivery: ResponseDelivery {
    func engineRequest(client: PocketClient, progress: PocketProgressHandler?) -> InFlightRequest {
        client.spares.collectingRequest(engine: client.engine, progress: progress)
    }

    func response(_ response: consuming PocketResponse, from inflight: inout InFlightRequest, client: PocketClient) -> PocketResponse {
        client.spares.recycle(&inflight)
        return response
    }

    func deliver(_ complete: PocketResponse) -> PocketResponse { complete }

    nonisolated(nonsending) func cached(_ request: PocketRequest, client: PocketClient,
                                        progress: PocketProgressHandler?) async throws -> PocketResponse {
        try await client.caching(request, progress: progress, self)
    }
}

/// The body handed to a `PocketResponseBodyStream` as it arrives, at most
/// `bufferSize` bytes waiting for the reader; the send returns at the head.
struct StreamDelivery: ResponseDelivery {
    let bufferSize: Int

    func engineRequest(client: PocketClient, progress: PocketProgressHandler?) -> InFlightRequest {
        let state = BodyStreamState(highWater: bufferSize)
        let inflight = InFlightRequest(engine: client.engine, delivery: .stream(state), progress: progress)
        state.request = inflight
        return inflight
    }

    func response(_ head: consuming PocketResponse, from inflight: inout InFlightRequest,
                  client: PocketClient) -> PocketStreamingResponse {
        guard case .stream(let state) = inflight.delivery else { preconditionFailure("a stream delivery's request streams") }
        return PocketStreamingResponse(status: head.status, reason: head.reason, httpMinorVersion: head.httpMinorVersion,
                                       headers: head.headers, body: PocketResponseBodyStream(state))
    }

    func failed(_ error: any Error, _ inflight: InFlightRequest) -> any Error {
        if case .stream(let state) = inflight.delivery { state.abandon() }
        return error
    }

    func deliver(_ complete: PocketResponse) -> PocketStreamingResponse { PocketStreamingResponse(collected: complete) }

    nonisolated(nonsending) func cached(_ request: PocketRequest, client: PocketClient,
                                        progress: PocketProgressHandler?) async throws -> PocketStreamingResponse {
        try await client.caching(request, progress: progress, self)
    }
}

/// The body written into a `PocketResponseBodySink` made at each head;
/// the send returns once the body is complete, or at the head when
/// `returnsAtHead` (the body then goes on into the sink).
struct SinkWriteDelivery: ResponseDelivery {
    let returnsAtHead: Bool
    let make: @Sendable (PocketResponseBodyStart) -> any PocketResponseBodySink

    func engineRequest(client: PocketClient, progress: PocketProgressHandler?) -> InFlightRequest {
        InFlightRequest(engine: client.engine, delivery: .sink(SinkDelivery(returnsAtHead: returnsAtHead, make: make)),
                        progress: progress)
    }

    func response(_ response: consuming PocketResponse, from inflight: inout InFlightRequest, client: PocketClient) -> SunkResponse {
        guard case .sink(let delivery) = inflight.delivery, let sink = delivery.sink else {
            preconditionFailure("every response has a head, and the head made the sink")
        }
        if !returnsAtHead { sink.finish(nil, timings: response.timings) }
        // A body still being written (returned at the head) is not counted:
        // the loop thread goes on writing `written`.
        return SunkResponse(response: response, sink: sink, written: returnsAtHead ? 0 : delivery.written,
                            running: returnsAtHead ? inflight : nil)
    }

    func failed(_ error: any Error, _ inflight: InFlightRequest) -> any Error {
        if !returnsAtHead, case .sink(let delivery) = inflight.delivery {
            delivery.sink?.finish(error as? PocketError ?? PocketError(.cancelled, "the request was cancelled"), timings: nil)
        }
        return error
    }

    func deliver(_ complete: PocketResponse) -> SunkResponse { SunkResponse(replaying: complete, into: make) }

    /// The cache keeps whole bodies: a cached response (or one fetched for
    /// the cache) is collected, then written into one sink.
    nonisolated(nonsending) func cached(_ request: PocketRequest, client: PocketClient,
                                        progress: PocketProgressHandler?) async throws -> SunkResponse {
        deliver(try await client.caching(request, progress: progress, CollectDelivery()))
    }
}

/// The body written by the engine to a file (a download), when `decide`
/// says so at the head (loop thread); else collected in memory.
struct FileDelivery: ResponseDelivery {
    let fd: Int32
    let decide: @Sendable (PocketResponseHead) -> InFlightRequest.FileDecision
    /// Set once the file is written to: the attempt's bytes reached the
    /// caller, so its failure is not retried.
    let writing = Lock(false)

    func engineRequest(client: PocketClient, progress: PocketProgressHandler?) -> InFlightRequest {
        let writing = self.writing, decide = self.decide
        return InFlightRequest(engine: client.engine, delivery: .file(fd: fd, decide: { head in
            let decision = decide(head)
            if case .write = decision { writing.withLock { $0 = true } }
            return decision
        }), progress: progress)
    }

    func response(_ response: consuming PocketResponse, from inflight: inout InFlightRequest, client: PocketClient) -> PocketResponse {
        response
    }

    func failed(_ error: any Error, _ inflight: InFlightRequest) -> any Error {
        guard var error = error as? PocketError, writing.withLock({ $0 }) else { return error }
        error.bodyDelivered = true
        return error
    }

    /// A complete response, written to the file when `decide` says so.
    func deliver(_ complete: PocketResponse) throws -> PocketResponse {
        var response = complete
        switch decide(response.head) {
        case .memory: return response
        case .abort(let error): throw error
        case .write:
            writing.withLock { $0 = true }
            let written = response.body.withUnsafeBytes { bytes -> Bool in
                var offset = 0
                while offset < bytes.count {
                    let n = write(fd, bytes.baseAddress! + offset, bytes.count - offset)
                    if n <= 0 { return false }
                    offset += n
                }
                return true
            }
            guard written else {
                let e = errno
                var error = PocketError(.fileSystem, "cannot write the download: \(String(cString: strerror(e)))", systemError: e)
                error.bodyDelivered = true
                throw error
            }
            response.body = Data()
            return response
        }
    }

    /// A download bypasses the cache: its body goes to a file, which the
    /// store does not keep (and a resumed one asks for a Range).
    nonisolated(nonsending) func cached(_ request: PocketRequest, client: PocketClient,
                                        progress: PocketProgressHandler?) async throws -> PocketResponse {
        try await client.followingRedirects(request, progress: progress, self)
    }
}
