import AsyncHTTPClient
import Hummingbird

/// The same gateway on AsyncHTTPClient (its shared client, on NIO's
/// singleton event loop group).
func ahcRouter(downstream: String) -> Router<BasicRequestContext> {
    let client = HTTPClient.shared
    let router = Router()
    router.get("/") { _, _ -> Response in
        let answer = try await client.execute(HTTPClientRequest(url: downstream), timeout: .seconds(15))
        let body = try await answer.body.collect(upTo: 16 << 20)
        var headers = HTTPFields()
        headers[.contentType] = answer.headers.first(name: "Content-Type") ?? "application/octet-stream"
        return Response(status: .init(code: Int(answer.status.code)), headers: headers, body: ResponseBody(byteBuffer: body))
    }
    return router
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
