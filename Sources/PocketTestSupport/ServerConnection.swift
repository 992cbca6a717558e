/// One accepted connection, served by its own thread: reads requests one after
/// another (keep-alive), runs the route handler, and plays its reply.
final class ServerConnection: @unchecked Sendable {
    // Invariant: `isIdle` and `closeRequested` are read and written only with
    // `core.condition` locked. Everything else is immutable or touched only by
    // the connection thread inside `run()`.
    let index: Int
    let transport: Transport
    let core: ServerCore

    /// Waiting for the first byte of the next request.
    var isIdle = false
    /// `closeIdleConnections()` chose this connection; stop serving.
    var closeRequested = false

    private static let maxHeadSize = 64 * 1024
    static let slice = 100 // milliseconds per bounded wait

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
            let route = core.route(for: head.path)
            if route.respondsBeforeBody {
                return answerBeforeBody(head, rawHead: rawHead, requestIndex: requestIndex, handler: route.handler)
            }
            if head.expectsContinue && framing != .none && input.isEmpty && core.locked({ core.sendsContinue }) {
                guard sendAll(Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)) else { return }
            }
            let body: ReceivedBody
            do {
                guard let read = try readBody(framing, &input, keep: core.locked { core.keepsRequestBodies }) else { return }
                body = read
            } catch {
                return reject(status: 400)
            }

            let request = TestServer.Request(head: head, rawHead: rawHead, body: body,
                                             connectionIndex: index, requestIndex: requestIndex)
            let capReached = core.record(request)
            // The handler routed now, once the body is in (it may have changed).
            let reply = core.route(for: request.path).handler(request)
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

    // MARK: Writing

    /// Plays `steps`; returns false once the connection is finished. A
    /// `.close` drains the client's bytes for up to `drainMilliseconds`.
    func play(_ steps: [TestServer.RawStep], _ input: inout InputBuffer, drainMilliseconds: Int = 100) -> Bool {
        for step in steps {
            switch step {
            case let .send(bytes):
                guard sendAll(bytes) else { return false }
            case let .sendString(text):
                guard sendAll(Array(text.utf8)) else { return false }
            case let .sendTogether(texts):
                transport.cork(true)
                defer { transport.cork(false) }
                for text in texts {
                    guard sendAll(Array(text.utf8)) else { return false }
                }
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
            case let .pattern(seed, offset, count, pieceSize, chunked, delay):
                guard sendPattern(seed: seed, offset: offset, count: count, pieceSize: pieceSize,
                                  chunked: chunked, delayMillisecondsPerPiece: delay) else { return false }
            case .close:
                closeGracefully(drainMilliseconds: drainMilliseconds)
                return false
            case .reset:
                transport.reset()
                return false
            case .closeWithoutTLSNotify:
                transport.closeWithoutNotify()
                return false
            case .requestTLSRenegotiation:
                guard transport.requestRenegotiation() else { return false }
            case .corruptNextTLSRecord:
                guard transport.corruptNextRecord() else { return false }
            }
        }
        return true
    }

    /// Waits without reading or sending; false (early) if the peer closed or
    /// reset the connection, or the server is shutting down, so a client that
    /// gave up is not counted as open for the rest of a long stall.
    func pause(milliseconds: Int) -> Bool {
        let deadline = Sockets.nowMilliseconds() + Int64(max(0, milliseconds))
        while true {
            if core.isStopping { return false }
            let left = deadline - Sockets.nowMilliseconds()
            if left <= 0 { return true }
            if transport.waitForPeerClose(timeoutMilliseconds: Int(min(left, 50))) { return false }
        }
    }

    /// Sends every byte, waiting in bounded slices; false on failure/shutdown.
    func sendAll(_ bytes: [UInt8]) -> Bool {
        sendAll(bytes[...])
    }

    /// Sends every byte, waiting in bounded slices; false on failure/shutdown.
    func sendAll(_ bytes: ArraySlice<UInt8>) -> Bool {
        var offset = bytes.startIndex
        while offset < bytes.endIndex {
            guard let sent = transport.send(bytes[offset...], timeoutMilliseconds: Self.slice) else { return false }
            if sent == 0 && core.isStopping { return false }
            offset += sent
        }
        return true
    }

    /// FIN first, then drain what the client still sends (up to
    /// `drainMilliseconds`, or until it closes) so the final close does not
    /// turn into an RST, then close.
    func closeGracefully(drainMilliseconds: Int = 100) {
        transport.shutdownWrite()
        let deadline = Sockets.nowMilliseconds() + Int64(drainMilliseconds)
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
