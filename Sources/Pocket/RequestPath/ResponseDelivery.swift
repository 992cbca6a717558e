#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
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

    /// Whether a hop's response may be raced by hedges.
    static var hedges: Bool { get }

    /// The replicas the request used so far (a request to a replica set's
    /// name that may be sent more than once), or nil: no preference.
    var history: ReplicaHistory? { get set }

    /// The task deadline that bounds the attempt's hops, in nanoseconds
    /// after `PocketDeadline.origin`; `.max` (the default) for none. Each
    /// engine hop cuts its total timeout to what is left of it when the hop
    /// starts (`InFlightRequest.start`), so the request is not copied to
    /// carry a shorter timeout.
    var deadlineNanos: Int64 { get set }

    /// A complete response (from a `PocketTransport`) in this delivery's form.
    func deliver(_ complete: PocketResponse) throws -> Response

    /// The cache step for this delivery (Sources/Pocket/Cache).
    nonisolated(nonsending) func cached(_ request: PocketRequest, client: PocketClient,
                                        progress: PocketProgressHandler?) async throws -> Response
}

extension ResponseDelivery {
    func failed(_ error: any Error, _ inflight: InFlightRequest) -> any Error { error }

    /// Whether a hop's response may be raced by hedges (only a collected
    /// one: a streamed body or a file cannot be had twice).
    static var hedges: Bool { false }
}
