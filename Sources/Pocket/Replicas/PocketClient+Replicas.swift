extension PocketClient {
    /// A hop through a replica set (or a plain origin's breaker): a replica
    /// leased (the set's balancer, skipping ejected replicas and those this
    /// request used already; `.circuitOpen` at once when all are ejected),
    /// the request sent to it, and its outcome (latency, status or
    /// transport failure) reported to the set when the hop ends: at the
    /// complete response, or at the head of a body delivered as it arrives.
    /// The engine takes the replica as a value (the request is not copied
    /// to move it); the proxy step and a transport get the request moved.
    nonisolated(nonsending) func routedHop<D: ResponseDelivery>(_ request: PocketRequest, through set: PocketReplicaSet,
                                                                progress: PocketProgressHandler?, _ delivery: D) async throws -> D.Response {
        if set.moves, !set.isReady {
            await set.waitForReplicas(upTo: (request.timeouts ?? configuration.timeouts).connect ?? .seconds(10))
        }
        let history = delivery.history
        let lease = try set.lease(avoiding: history)
        history?.add(index: lease.index, generation: lease.generation)
        let response: D.Response
        do {
            if let endpoint = lease.endpoint, hasTransport || proxies != nil || request.proxy != nil {
                response = try await movedHop(request, to: endpoint, progress: progress, delivery)
            } else {
                // The engine connects to the replica: the request itself is sent as it is (no copy).
                response = try await directHop(request, to: lease.endpoint, progress: progress, delivery)
            }
        } catch {
            set.finish(lease, failure: ReplicaRouter.countsAgainstReplica(error))
            throw error
        }
        set.finish(lease, failure: set.isFailure(status: response.redirectStatus))
        return response
    }

    /// A routed hop through a transport or a proxy: the request moved to
    /// `endpoint` (its target for the proxy step, which reads it: no URL
    /// parsed; its URL for a transport, which reads that).
    @inline(never)
    nonisolated(nonsending) private func movedHop<D: ResponseDelivery>(_ request: PocketRequest, to endpoint: PocketReplicaEndpoint,
                                                                       progress: PocketProgressHandler?, _ delivery: D) async throws -> D.Response {
        var sent = request
        if !hasTransport {
            sent.moveTarget(to: endpoint)
        } else if let url = endpoint.url(for: request.target) {
            sent.url = url
        } else {
            throw PocketError(.invalidURL, "\(request.url.absoluteString) cannot be moved to replica \(endpoint)")
        }
        return try await directHop(sent, to: nil, progress: progress, delivery)
    }
}
