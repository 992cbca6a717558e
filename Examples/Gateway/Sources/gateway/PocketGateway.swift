import Foundation
import HTTPTypes
import Hummingbird
import Pocket
import PocketMetrics
import PocketNIO
import PocketTracing

// Foundation, Hummingbird and Pocket in one file, Pocket's types unqualified:
// with the `Pocket` prefix none of them is shadowed by Hummingbird's
// re-exports (`Request`, `Response`, `HTTPHeaders` stay Hummingbird's).

/// The gateway's routes on Pocket: each request calls `downstream` and
/// answers with its status, content type and body. The body is written by
/// the engine straight into a `ByteBuffer` (PocketNIO), which becomes the
/// response body as it is: one copy of the bytes, no `Data`. With `integrations`
/// (the default) the client has tracing, metrics and a retry policy
/// installed, and an incoming `X-Request-Timeout-Ms` becomes the deadline of
/// the downstream call (and is sent on with what is left); without, none
/// (the request path's shortcut).
/// The header that carries a request's time left, in milliseconds, in and out.
let deadlineHeader = "X-Request-Timeout-Ms"

func pocketRouter(downstream: URL, integrations: Bool = true) throws -> (Router<BasicRequestContext>, PocketClient) {
    var config = PocketClient.Configuration()
    config.timeouts = PocketTimeouts(connect: .seconds(2), read: .seconds(10), total: .seconds(15))
    config.maxConnectionsPerOrigin = 128
    if integrations {
        config.handling.middleware = [PocketTracingMiddleware(), PocketMetricsMiddleware()]
        config.handling.retry = PocketRetryPolicy(maxAttempts: 2)
        config.handling.deadlineHeader = deadlineHeader
    }
    let client = try PocketClient(configuration: config)
    let call = PocketRequest(url: downstream)
    let allocator = ByteBufferAllocator()

    let router = Router()
    if integrations, let name = HTTPField.Name(deadlineHeader) {
        // The caller's time left bounds the downstream call, and goes on with it.
        router.add(middleware: PocketDeadlineMiddleware(header: name))
    }
    router.get("/") { _, _ -> Response in
        let (answer, body): (PocketResponse, ByteBuffer) = try await client.send(call, into: allocator)
        var headers = HTTPFields()
        headers[.contentType] = answer.headers["Content-Type"] ?? "application/octet-stream"
        return Response(status: .init(code: answer.status), headers: headers, body: ResponseBody(byteBuffer: body))
    }
    return (router, client)
}
