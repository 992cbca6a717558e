#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Foundation

/// The shared state of one `TestServer`: listener, accept thread, live
/// connections, routes and statistics. Threads retain the core, never the
/// `TestServer`, so dropping the server runs its `deinit` (which shuts down).
final class ServerCore: @unchecked Sendable {
    // Invariant: every `var` below is read and written only while `condition`
    // is locked (use `locked { }`). `listenerFD` is immutable and closed once,
    // by `shutdown()`, after the accept thread has been joined.
    let condition = NSCondition()
    let listenerFD: Int32

    private var stopping = false
    private var acceptThread: JoinableThread?
    private var connectionThreads: [JoinableThread] = []
    private var connections: [Int: ServerConnection] = [:]
    private var nextConnectionIndex = 0

    var routes: [String: Route] = [:]
    var defaultHandler: TestServer.Handler?
    var maxRequestsPerConnection: Int?
    var sendsContinue = true
    var keepsRequestBodies = true
    var resources: [String: TestServer.Resource] = [:]

    var acceptedConnections = 0
    var requestCount = 0
    var openConnections = 0
    var maxConcurrentConnections = 0
    var receivedRequests: [TestServer.Request] = []
    var lastRequestHead: [UInt8] = []

    // TLS servers only (see `TLSTransport`).
    var tlsHandshakes: [TestServer.TLSHandshake] = []
    var failedTLSHandshakes: [String] = []

    /// Wraps each accepted socket; the seam where a TLS transport plugs in.
    /// Gets the core too (so a transport can report into its statistics).
    let makeTransport: @Sendable (Int32, ServerCore) -> Transport

    init(listenerFD: Int32, makeTransport: @escaping @Sendable (Int32) -> Transport = { PlainTransport(fd: $0) }) {
        self.listenerFD = listenerFD
        self.makeTransport = { fd, _ in makeTransport(fd) }
    }

    init(listenerFD: Int32, makeTransportWithCore: @escaping @Sendable (Int32, ServerCore) -> Transport) {
        self.listenerFD = listenerFD
        self.makeTransport = makeTransportWithCore
    }

    func locked<T>(_ body: () throws -> T) rethrows -> T {
        condition.lock()
        defer { condition.unlock() }
        return try body()
    }

    var isStopping: Bool { locked { stopping } }

    /// `isStopping` for callers already holding `condition`.
    var isStoppingUnlocked: Bool { stopping }

    func start() throws {
        let thread = try JoinableThread { [self] in acceptLoop() }
        locked { acceptThread = thread }
    }

    // MARK: Accepting

    private func acceptLoop() {
        while !isStopping {
            guard Sockets.poll(listenerFD, events: Int32(POLLIN), timeoutMilliseconds: 100) != 0 else { continue }
            // Accepted sockets are blocking (O_NONBLOCK is not inherited on Linux).
            let fd = Glibc.accept(listenerFD, nil, nil)
            if fd < 0 {
                if errno == EMFILE || errno == ENFILE { Sockets.sleep(milliseconds: 10) }
                continue
            }
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            Sockets.setNoDelay(fd)
            register(makeTransport(fd, self))
        }
    }

    private func register(_ transport: Transport) {
        condition.lock()
        defer { condition.unlock() }
        if stopping {
            transport.close()
            return
        }
        let connection = ServerConnection(index: nextConnectionIndex, transport: transport, core: self)
        do {
            let thread = try JoinableThread { [self] in
                connection.run()
                locked {
                    connections[connection.index] = nil
                    openConnections -= 1
                    condition.broadcast()
                }
            }
            nextConnectionIndex += 1
            acceptedConnections += 1
            openConnections += 1
            maxConcurrentConnections = max(maxConcurrentConnections, openConnections)
            connections[connection.index] = connection
            connectionThreads.removeAll { $0.isFinished && $0.join(timeoutMilliseconds: 0) }
            connectionThreads.append(thread)
        } catch {
            transport.close()
        }
    }

    // MARK: Requests

    /// The route for `path`: its own, else the default handler, else 404.
    func route(for path: String) -> Route {
        locked {
            routes[path] ?? Route(handler: defaultHandler ?? { _ in .text("Not Found\n", status: 404) })
        }
    }

    /// Records a request; returns whether the per-connection request cap is
    /// reached with it.
    func record(_ request: TestServer.Request) -> Bool {
        locked {
            requestCount += 1
            receivedRequests.append(request)
            return maxRequestsPerConnection.map { request.requestIndexOnConnection + 1 >= $0 } ?? false
        }
    }

    // MARK: Closing

    /// Closes every connection that is waiting for its next request with no
    /// bytes pending; waits (up to 1 s) until they are gone.
    ///
    /// A client can read a response before the serving thread is back to
    /// waiting, so busy connections get a short grace (100 ms, usually
    /// microseconds thanks to the broadcast in `ServerConnection`) to become
    /// idle first.
    func closeIdleConnections() -> Int {
        condition.lock()
        defer { condition.unlock() }
        let grace = Date(timeIntervalSinceNow: 0.1)
        while connections.values.contains(where: { !$0.isIdle && !$0.closeRequested }) && Date() < grace {
            _ = condition.wait(until: grace)
        }
        let targets = connections.values.filter { $0.isIdle && !$0.closeRequested && !$0.transport.hasPendingInput }
        for connection in targets {
            connection.closeRequested = true
            connection.transport.interrupt()
        }
        let deadline = Date(timeIntervalSinceNow: 1)
        while targets.contains(where: { connections[$0.index] != nil }) && Date() < deadline {
            _ = condition.wait(until: deadline)
        }
        return targets.count
    }

    /// Stops accepting, closes the listener and all connections, and joins
    /// every thread (bounded: about 1 s in total even if a handler hangs).
    func shutdown() {
        let (alreadyStopping, accept, live): (Bool, JoinableThread?, [ServerConnection]) = locked {
            defer { stopping = true }
            return (stopping, acceptThread, Array(connections.values))
        }
        if alreadyStopping { return }
        // Wakes the accept thread's poll at once (Linux reports the shut-down
        // listener readable); the close waits until that thread is gone.
        Glibc.shutdown(listenerFD, Int32(SHUT_RDWR))
        accept?.join(timeoutMilliseconds: 1000)
        Glibc.close(listenerFD)
        for connection in live { connection.transport.interrupt() }
        let threads = locked { connectionThreads }
        let deadline = Sockets.nowMilliseconds() + 1000
        for thread in threads {
            thread.join(timeoutMilliseconds: Int(max(0, deadline - Sockets.nowMilliseconds())))
        }
        locked {
            connectionThreads = []
            // Handlers that capture the server would otherwise keep it alive.
            routes = [:]
            resources = [:]
            defaultHandler = nil
        }
    }
}
