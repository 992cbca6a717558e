import CFloorClient
import Foundation
import Hummingbird

/// The gateway's floor for a client with its own I/O thread: each request
/// calls `downstream` through `floor_client` (a probe in C, not an HTTP
/// client: a fixed GET, the answer found by its Content-Length, no timeouts,
/// no errors beyond "failed"), with the thread structure of Pocket's engine.
/// What this variant costs above `static` is what the hops and the kernel's
/// I/O cost the handler with no client code at all.
func floorRouter(downstream: URL) throws -> Router<BasicRequestContext> {
    guard let host = downstream.host, let port = downstream.port,
          let client = floor_open(host, Int32(port), 128, 1) else {
        throw FloorError(message: "the floor client needs an IPv4 address and a port (\(downstream)), and could not start")
    }
    let handle = FloorHandle(client)
    return probeRouter { try await handle.get() }
}

/// The probes' routes: each request answers with what `call` got downstream
/// (status and body, as `text/plain`).
func probeRouter(_ call: @escaping @Sendable () async throws -> (Int, ByteBuffer)) -> Router<BasicRequestContext> {
    let router = Router()
    router.get("/") { _, _ -> Response in
        let (status, body) = try await call()
        var headers = HTTPFields()
        headers[.contentType] = "text/plain"
        return Response(status: .init(code: status), headers: headers, body: ResponseBody(byteBuffer: body))
    }
    return router
}

struct FloorError: Error { let message: String }

/// One submission's continuation, handed to the loop thread and back.
private final class FloorCall {
    let continuation: UnsafeContinuation<(Int, ByteBuffer), any Error>
    init(_ continuation: UnsafeContinuation<(Int, ByteBuffer), any Error>) { self.continuation = continuation }
}

private struct FloorHandle: @unchecked Sendable {
    let client: OpaquePointer
    init(_ client: OpaquePointer) { self.client = client }

    func get() async throws -> (Int, ByteBuffer) {
        try await withUnsafeThrowingContinuation { continuation in
            let call = Unmanaged.passRetained(FloorCall(continuation)).toOpaque()
            floor_submit(client, call) { ctx, status, body, len in
                let call = Unmanaged<FloorCall>.fromOpaque(ctx!).takeRetainedValue()
                guard status >= 0 else {
                    call.continuation.resume(throwing: FloorError(message: "the downstream connection failed"))
                    return
                }
                let buffer = ByteBuffer(bytes: UnsafeRawBufferPointer(start: body, count: len))
                call.continuation.resume(returning: (Int(status), buffer))
            }
        }
    }
}

/// The floor: the same answer as nginx's, with no downstream call.
func staticRouter() -> Router<BasicRequestContext> {
    let router = Router()
    let hello = ByteBuffer(string: "Hello, World!")
    router.get("/") { _, _ -> Response in
        var headers = HTTPFields()
        headers[.contentType] = "text/plain"
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: hello))
    }
    return router
}
