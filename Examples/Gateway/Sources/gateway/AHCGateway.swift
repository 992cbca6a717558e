// The AsyncHTTPClient arm is in this package's build (scripts/bench-gateway.sh
// measures it). CI compiles the gateway inside Pocket's own build without
// it, GATEWAY_WITHOUT_AHC (the end of Pocket's Package.swift):
// AsyncHTTPClient's TLS stack would be about a third of a cold CI build.
#if !GATEWAY_WITHOUT_AHC
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
#endif
