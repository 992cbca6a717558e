import Foundation

/// Counts requests in flight in a `TestServer`'s handlers: how many now,
/// the most at once, per `Host` field too. A request is in flight from the
/// moment its handler starts (head and body read) until the handler returns,
/// so the server sees at most what a client has outstanding: a queue's
/// concurrency cap is checked by `peak <= cap`.
///
/// ```swift
/// let gauge = server.routeCountingInFlight("/slow") { _ in .text("ok") }
/// // ... send through a queue capped at 3 ...
/// XCTAssertLessThanOrEqual(gauge.peak, 3)
/// ```
public final class InFlightGauge: Sendable {
    /// The counts at one moment.
    public struct Counts: Sendable {
        /// Requests in handlers.
        public var current = 0
        /// The most at once so far.
        public var peak = 0
        /// Handlers returned.
        public var completed = 0
        /// `current` per `Host` field value.
        public var currentByHost: [String: Int] = [:]
        /// `peak` per `Host` field value.
        public var peakByHost: [String: Int] = [:]
        /// `completed` per `Host` field value.
        public var completedByHost: [String: Int] = [:]
    }

    // Invariant: `counts` is only touched while `condition` is locked.
    private let condition = NSCondition()
    nonisolated(unsafe) private var counts = Counts()

    /// A gauge at zero.
    public init() {}

    /// Requests in handlers now.
    public var current: Int { locked { $0.current } }
    /// The most requests in handlers at the same time.
    public var peak: Int { locked { $0.peak } }
    /// Requests whose handler has returned.
    public var completed: Int { locked { $0.completed } }
    /// The most requests at once per `Host` field value (e.g. `"localhost:8080"`).
    public var peakByHost: [String: Int] { locked { $0.peakByHost } }

    /// Blocks the calling handler until `condition(current, completed)` holds
    /// or `timeout` seconds pass; returns whether it held. Lets a handler keep
    /// its request open until as many as a test expects have arrived. For a
    /// barrier ("all N arrived") test `peak`, not `current`: the first
    /// handler to wake returns and lowers `current` before the others look.
    @discardableResult
    public func wait(timeout: Double = 5, until condition: (_ current: Int, _ completed: Int) -> Bool) -> Bool {
        wait(timeout: timeout) { (counts: Counts) in condition(counts.current, counts.completed) }
    }

    /// As `wait(timeout:until:)`, looking at all the counts (per host too).
    @discardableResult
    public func wait(timeout: Double = 5, until condition: (Counts) -> Bool) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        self.condition.lock()
        defer { self.condition.unlock() }
        while !condition(counts) {
            if !self.condition.wait(until: deadline) { return condition(counts) }
        }
        return true
    }

    func enter(host: String) {
        locked { c in
            c.current += 1
            c.peak = max(c.peak, c.current)
            c.currentByHost[host, default: 0] += 1
            c.peakByHost[host] = max(c.peakByHost[host] ?? 0, c.currentByHost[host]!)
        }
    }

    func leave(host: String) {
        locked { c in
            c.current -= 1
            c.completed += 1
            c.currentByHost[host, default: 1] -= 1
            c.completedByHost[host, default: 0] += 1
        }
    }

    private func locked<T>(_ body: (inout Counts) -> T) -> T {
        condition.lock()
        defer {
            condition.broadcast()
            condition.unlock()
        }
        return body(&counts)
    }
}

extension TestServer {
    /// Routes `path` to `handler`, counting the requests in flight in
    /// `gauge` (a new one by default; share one between routes to count them together).
    @discardableResult
    public func routeCountingInFlight(_ path: String, gauge: InFlightGauge = InFlightGauge(),
                                      _ handler: @escaping Handler) -> InFlightGauge {
        route(path) { request in
            let host = request.header("Host") ?? ""
            gauge.enter(host: host)
            defer { gauge.leave(host: host) }
            return handler(request)
        }
        return gauge
    }
}
