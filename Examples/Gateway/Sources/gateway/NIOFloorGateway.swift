import Foundation
import Hummingbird
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// The gateway's floor for a client hosted on NIO's event loops (no thread
/// of its own): each request calls `downstream` on a channel of NIO's
/// singleton group, the group Hummingbird serves on. A probe, not a client,
/// as `floor`: a fixed GET, the answer found by its Content-Length, no
/// timeouts, no errors beyond "failed". Compared with `floor`, it tells
/// whether hosting the client's I/O on the framework's loops would cost the
/// handler less than a loop thread of the client's own.
func nioFloorRouter(downstream: URL) throws -> Router<BasicRequestContext> {
    guard let host = downstream.host, let port = downstream.port else {
        throw FloorError(message: "the nio-floor client needs a host and a port (\(downstream))")
    }
    let pool = NIOFloorPool(host: host, port: port, maxConnections: 128)
    return probeRouter { try await pool.get() }
}

/// Idle connections, and callers waiting for one; a lock around both.
private final class NIOFloorPool: @unchecked Sendable {
    private let lock = NIOLock()
    private var idle: [Channel] = []
    private var opened = 0
    private var waiting: [CheckedContinuation<Channel, any Error>] = []
    private let host: String, port: Int, max: Int
    private let request: ByteBuffer

    init(host: String, port: Int, maxConnections: Int) {
        self.host = host
        self.port = port
        max = maxConnections
        request = ByteBuffer(string: "GET / HTTP/1.1\r\nHost: \(host):\(port)\r\n\r\n")
    }

    func get() async throws -> (Int, ByteBuffer) {
        let channel = try await checkOut()
        let promise = channel.eventLoop.makePromise(of: (Int, ByteBuffer).self)
        channel.writeAndFlush((request, promise), promise: nil)
        do {
            let answer = try await promise.futureResult.get()
            checkIn(channel)
            return answer
        } catch {
            channel.close(promise: nil)
            lock.withLock { opened -= 1 }
            throw error
        }
    }

    private func checkOut() async throws -> Channel {
        enum Next { case channel(Channel), open, wait }
        let next = lock.withLock { () -> Next in
            if let channel = idle.popLast() { return .channel(channel) }
            if opened < max { opened += 1; return .open }
            return .wait
        }
        switch next {
        case .channel(let channel): return channel
        case .open:
            do {
                return try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                    .channelOption(.socketOption(.tcp_nodelay), value: 1)
                    .channelInitializer { channel in
                        channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(NIOFloorHandler()) }
                    }
                    .connect(host: host, port: port).get()
            } catch {
                lock.withLock { opened -= 1 }
                throw error
            }
        case .wait:
            return try await withCheckedThrowingContinuation { continuation in
                let ready = lock.withLock { () -> Channel? in
                    if let channel = idle.popLast() { return channel }
                    waiting.append(continuation)
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        }
    }

    private func checkIn(_ channel: Channel) {
        let waiter = lock.withLock { () -> CheckedContinuation<Channel, any Error>? in
            if !waiting.isEmpty { return waiting.removeFirst() }
            idle.append(channel)
            return nil
        }
        waiter?.resume(returning: channel)
    }
}

/// One connection: writes the request, collects the answer, fulfils the promise.
private final class NIOFloorHandler: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = (ByteBuffer, EventLoopPromise<(Int, ByteBuffer)>)
    typealias OutboundOut = ByteBuffer

    private var pending: EventLoopPromise<(Int, ByteBuffer)>?
    private var buffer = ByteBuffer()

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let (request, answer) = unwrapOutboundIn(data)
        pending = answer
        context.write(wrapOutboundOut(request), promise: promise)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var bytes = unwrapInboundIn(data)
        buffer.writeBuffer(&bytes)
        let view = buffer.readableBytesView
        guard let end = view.firstRange(of: Array("\r\n\r\n".utf8)) else { return }
        let head = String(decoding: view[view.startIndex..<end.lowerBound], as: UTF8.self)
        var length = 0
        for line in head.split(separator: "\r\n") where line.lowercased().hasPrefix("content-length:") {
            length = Int(line.dropFirst(15).trimmingCharacters(in: .whitespaces)) ?? 0
        }
        let headLength = end.upperBound - view.startIndex
        guard buffer.readableBytes >= headLength + length else { return }
        let status = Int(head.dropFirst(9).prefix(3)) ?? 0
        buffer.moveReaderIndex(forwardBy: headLength)
        let body = buffer.readSlice(length: length)!
        buffer.discardReadBytes()
        let promise = pending
        pending = nil
        promise?.succeed((status, body))
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        pending?.fail(error)
        pending = nil
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        pending?.fail(FloorError(message: "the downstream connection closed"))
        pending = nil
    }
}
