/// One accepted connection, served by its own thread: reads requests one after
/// another (keep-alive), runs the route handler, and plays its reply.
final class ServerConnection: @unchecked Sendable {
    // Invariant: `isIdle` and `closeRequested` are read and written only with
    // `core.condition` locked. Everything else is immutable or touched only by
    // the connection thread inside `run()`.
    let index: Int
    let transport: Transport
    private let core: ServerCore

    /// Waiting for the first byte of the next request.
    var isIdle = false
    /// `closeIdleConnections()` chose this connection; stop serving.
    var closeRequested = false

    private static let maxHeadSize = 64 * 1024
    private static let slice = 100 // milliseconds per bounded wait

    init(index: Int, transport: Transport, core: ServerCore) {
        self.index = index
        self.transport = transport
        self.core = core
    }

    func run() {
        defer { transport.close() }
        var input = InputBuffer()
        var requestIndex = 0
        while true {
            guard let headLength = readHead(&input) else { return }
            let rawHead = Array(input.take(headLength))
            core.locked { core.lastRequestHead = rawHead }

            let head: RequestHead
            let framing: RequestHead.Framing
            do {
                head = try RequestHead.parse(rawHead[...])
                framing = try head.framing()
            } catch {
                return reject(status: 400)
            }
            if head.expectsContinue && framing != .none && input.isEmpty && core.locked({ core.sendsContinue }) {
                guard sendAll(Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)) else { return }
            }
            let body: [UInt8]
            let trailers: [(String, String)]
            do {
                guard let read = try readBody(framing, &input) else { return }
                (body, trailers) = read
            } catch {
                return reject(status: 400)
            }

            let questionMark = head.target.firstIndex(of: "?")
            let request = TestServer.Request(
                method: head.method,
                target: head.target,
                path: String(head.target[..<(questionMark ?? head.target.endIndex)]),
                query: questionMark.map { String(head.target[head.target.index(after: $0)...]) },
                version: head.version,
                headers: head.headers,
                body: body,
                trailers: trailers,
                rawHead: rawHead,
                connectionIndex: index,
                requestIndexOnConnection: requestIndex
            )
            let (handler, capReached) = core.accept(request)
            let reply = handler(request)
            let steps = reply.steps(method: request.method, forceClose: request.wantsClose || capReached)
            guard play(steps, &input) else { return }
            requestIndex += 1
        }
    }

    // MARK: Reading

    /// Reads until `input` holds a complete head; returns its length, or nil
    /// if the connection should end (EOF, error, shutdown, idle close).
    private func readHead(_ input: inout InputBuffer) -> Int? {
        while true {
            if let end = input.headEnd() { return end }
            if input.readableCount > Self.maxHeadSize {
                reject(status: 431)
                return nil
            }
            if input.isEmpty && !waitForNextRequest() { return nil }
            switch transport.receive(maxCount: 64 * 1024, timeoutMilliseconds: Self.slice) {
            case let .data(bytes): input.append(bytes)
            case .timedOut: if core.isStopping { return nil }
            case .closed, .failed: return nil
            }
        }
    }

    /// Marks the connection idle while no request has started; returns false
    /// if it should close instead (shutdown or `closeIdleConnections`).
    private func waitForNextRequest() -> Bool {
        let proceed: Bool = core.locked {
            if closeRequested { return false }
            isIdle = true
            core.condition.broadcast() // for closeIdleConnections' grace wait
            return true
        }
        guard proceed else { return false }
        while !transport.waitReadable(timeoutMilliseconds: Self.slice) {
            if core.isStopping { break }
        }
        return core.locked {
            isIdle = false
            return !closeRequested && !core.isStoppingUnlocked
        }
    }

    /// Reads the body per `framing`; nil if the connection ended first.
    private func readBody(_ framing: RequestHead.Framing, _ input: inout InputBuffer) throws -> ([UInt8], [(String, String)])? {
        switch framing {
        case .none:
            return ([], [])
        case let .length(length):
            while input.readableCount < length {
                guard receiveMore(&input) else { return nil }
            }
            return (Array(input.take(length)), [])
        case .chunked:
            var decoder = ChunkedBodyDecoder()
            while true {
                try decoder.consume(&input)
                if decoder.isDone { return (decoder.body, decoder.trailers) }
                guard receiveMore(&input) else { return nil }
            }
        }
    }

    private func receiveMore(_ input: inout InputBuffer) -> Bool {
        while true {
            switch transport.receive(maxCount: 64 * 1024, timeoutMilliseconds: Self.slice) {
            case let .data(bytes):
                input.append(bytes)
                return true
            case .timedOut:
                if core.isStopping { return false }
            case .closed, .failed:
                return false
            }
        }
    }

    // MARK: Writing

    /// Plays `steps`; returns false once the connection is finished.
    private func play(_ steps: [TestServer.RawStep], _ input: inout InputBuffer) -> Bool {
        for step in steps {
            switch step {
            case let .send(bytes):
                guard sendAll(bytes) else { return false }
            case let .sendString(text):
                guard sendAll(Array(text.utf8)) else { return false }
            case let .sleep(milliseconds), let .stall(milliseconds):
                guard pause(milliseconds: milliseconds) else { return false }
            case let .trickle(bytes, chunkSize, delay):
                var offset = 0
                while offset < bytes.count {
                    if offset > 0 { guard pause(milliseconds: delay) else { return false } }
                    let end = min(bytes.count, offset + max(1, chunkSize))
                    guard sendAll(Array(bytes[offset..<end])) else { return false }
                    offset = end
                }
            case .close:
                closeGracefully()
                return false
            case .reset:
                transport.reset()
                return false
            case .closeWithoutTLSNotify:
                transport.closeWithoutNotify()
                return false
            }
        }
        return true
    }

    /// Waits without reading or sending; false (early) if the peer closed or
    /// reset the connection, or the server is shutting down, so a client that
    /// gave up is not counted as open for the rest of a long stall.
    private func pause(milliseconds: Int) -> Bool {
        let deadline = Sockets.nowMilliseconds() + Int64(max(0, milliseconds))
        while true {
            if core.isStopping { return false }
            let left = deadline - Sockets.nowMilliseconds()
            if left <= 0 { return true }
            if transport.waitForPeerClose(timeoutMilliseconds: Int(min(left, 50))) { return false }
        }
    }

    /// Sends every byte, waiting in bounded slices; false on failure/shutdown.
    private func sendAll(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            guard let sent = transport.send(bytes[offset...], timeoutMilliseconds: Self.slice) else { return false }
            if sent == 0 && core.isStopping { return false }
            offset += sent
        }
        return true
    }

    /// FIN first, then drain what the client still sends (up to 100 ms) so
    /// the final close does not turn into an RST, then close.
    private func closeGracefully() {
        transport.shutdownWrite()
        let deadline = Sockets.nowMilliseconds() + 100
        drain: while Sockets.nowMilliseconds() < deadline {
            switch transport.receive(maxCount: 64 * 1024, timeoutMilliseconds: 20) {
            case .data, .timedOut: continue
            case .closed, .failed: break drain
            }
        }
        transport.close()
    }

    /// Answers a malformed request with `status` and closes.
    private func reject(status: Int) {
        let text = "HTTP/1.1 \(status) \(TestServer.reasonPhrase(status))\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        if sendAll(Array(text.utf8)) { closeGracefully() }
    }
}
