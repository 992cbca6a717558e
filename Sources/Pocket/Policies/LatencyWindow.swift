/// The recent latencies of one origin, for a percentile hedging delay: a
/// ring of the last `capacity` samples. The percentile is worked out again
/// only every `capacity / 8` samples (a sort of the ring), not per request.
struct LatencyWindow: Sendable {
    static let minimumSamples = 20
    private var samples: [Int64] = []
    private var next = 0
    private let capacity: Int
    private var sinceSorted = 0
    private var sorted: [Int64] = []

    init(capacity: Int) {
        self.capacity = max(Self.minimumSamples, capacity)
        samples.reserveCapacity(self.capacity)
    }

    mutating func record(_ nanoseconds: Int64) {
        if samples.count < capacity {
            samples.append(nanoseconds)
        } else {
            samples[next] = nanoseconds
            next = (next + 1) % capacity
        }
        sinceSorted += 1
    }

    /// The `p`th percentile (0...100) in nanoseconds, nil until
    /// `minimumSamples` have been recorded.
    mutating func percentile(_ p: Double) -> Int64? {
        guard samples.count >= Self.minimumSamples else { return nil }
        if sorted.isEmpty || sinceSorted >= max(1, capacity / 8) {
            sorted = samples.sorted()
            sinceSorted = 0
        }
        let rank = Int((min(100, max(0, p)) / 100 * Double(sorted.count - 1)).rounded(.up))
        return sorted[rank]
    }
}

/// `LatencyWindow`s by origin (`scheme://host:port`), for a client's
/// hedged requests.
final class OriginLatencies: Sendable {
    private let windows = Lock([String: LatencyWindow]())

    func record(_ origin: String, _ latency: Duration, capacity: Int) {
        let nanos = BudgetWindow.nanoseconds(latency)
        windows.withLock { $0[origin, default: LatencyWindow(capacity: capacity)].record(nanos) }
    }

    func percentile(_ origin: String, _ p: Double) -> Duration? {
        windows.withLock { $0[origin]?.percentile(p) }.map { .nanoseconds($0) }
    }
}
