internal import CHTTPEngine

/// A snapshot of a client's connection pool and requests (for metrics
/// gauges and dashboards). Read off the engine's counters without stopping
/// its loop, so the fields may disagree by a request in flight.
public struct PocketPoolStatistics: Sendable, Hashable {
    /// Connections open now (idle or carrying a request).
    public var openConnections: Int
    /// Open connections waiting in the pool for their next request.
    public var idleConnections: Int
    /// Open connections carrying a request now: `open - idle`.
    public var activeConnections: Int { max(0, openConnections - idleConnections) }
    /// Requests submitted to the engine and not finished yet.
    public var pendingRequests: Int
    /// Requests submitted and not yet on a connection (waiting for one, or
    /// for DNS and connect): `pending - active`, never below zero.
    public var waitingRequests: Int { max(0, pendingRequests - activeConnections) }
    /// Connections opened since the client started.
    public var connectionsOpened: Int
    /// Requests the engine finished since the client started.
    public var requestsCompleted: Int
    /// Of those, the ones answered on the sending task's own thread
    /// (`Configuration.sendingThreadWait`) rather than by the engine's loop.
    public var requestsAnsweredOnSendingThread: Int
    /// Of those, the ones whose answer came while the thread was still
    /// spinning (`Configuration.sendingThreadSpin`): no sleep, no wake-up.
    public var sendingThreadSpinsAnswered: Int
    /// Spins that ended with no answer (the thread then slept for the rest
    /// of its wait, and the next waits do not spin for a while).
    public var sendingThreadSpinsMissed: Int
    /// The backend the loops write with: `.epoll` or `.ioUring` (never `.automatic`).
    public var ioBackend: PocketIOBackend
    /// Writes queued on the io_uring ring since the client started (0 on epoll).
    public var ringWrites: Int
    /// `io_uring_enter` calls that submitted them: `ringWrites / ringSubmits`
    /// requests went to the kernel per system call.
    public var ringSubmits: Int

    /// A snapshot with these values (for tests of code that reads one).
    public init(openConnections: Int, idleConnections: Int, pendingRequests: Int, connectionsOpened: Int = 0,
                requestsCompleted: Int = 0, requestsAnsweredOnSendingThread: Int = 0, sendingThreadSpinsAnswered: Int = 0,
                sendingThreadSpinsMissed: Int = 0, ioBackend: PocketIOBackend = .epoll, ringWrites: Int = 0, ringSubmits: Int = 0) {
        self.openConnections = openConnections
        self.idleConnections = idleConnections
        self.pendingRequests = pendingRequests
        self.connectionsOpened = connectionsOpened
        self.requestsCompleted = requestsCompleted
        self.requestsAnsweredOnSendingThread = requestsAnsweredOnSendingThread
        self.sendingThreadSpinsAnswered = sendingThreadSpinsAnswered
        self.sendingThreadSpinsMissed = sendingThreadSpinsMissed
        self.ioBackend = ioBackend
        self.ringWrites = ringWrites
        self.ringSubmits = ringSubmits
    }
}

extension PocketClient {
    /// The pool's counters now (a few atomic loads; no lock, no syscall).
    /// Scoped clients share their parent's pool and report it.
    public var poolStatistics: PocketPoolStatistics {
        let s = engine.stats
        // Counters read one by one may cross: never below zero, never a trap.
        let open = Int(truncatingIfNeeded: s.connections_opened) - Int(truncatingIfNeeded: s.connections_closed)
        return PocketPoolStatistics(openConnections: max(0, open),
                                    idleConnections: Int(truncatingIfNeeded: s.connections_idle),
                                    pendingRequests: max(0, Int(truncatingIfNeeded: s.requests_pending)),
                                    connectionsOpened: Int(truncatingIfNeeded: s.connections_opened),
                                    requestsCompleted: Int(truncatingIfNeeded: s.requests_completed),
                                    requestsAnsweredOnSendingThread: Int(truncatingIfNeeded: s.requests_answered_inline),
                                    sendingThreadSpinsAnswered: Int(truncatingIfNeeded: s.inline_spins_answered),
                                    sendingThreadSpinsMissed: Int(truncatingIfNeeded: s.inline_spins_missed),
                                    ioBackend: s.io_backend == UInt32(PK_IO_URING.rawValue) ? .ioUring : .epoll,
                                    ringWrites: Int(truncatingIfNeeded: s.ring_sends),
                                    ringSubmits: Int(truncatingIfNeeded: s.ring_submits))
    }

    /// The backend the engine's loops write with (`Configuration.ioBackend`
    /// decided at `init`): `.epoll` or `.ioUring`.
    public var ioBackend: PocketIOBackend { poolStatistics.ioBackend }
}
