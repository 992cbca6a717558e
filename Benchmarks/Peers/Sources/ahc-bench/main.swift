// ahc-bench: AsyncHTTPClient 1.37.0 under pocket-bench's loop and report
// (PocketBenchKit): C concurrent tasks, each awaiting `client.execute` back to
// back and reading the whole body, on one HTTPClient whose pool allows C
// connections per host. Flags: --url (required) --requests --connections
// --warmup --max-seconds --json --cacert -k --compressed.
import AsyncHTTPClient
import NIOCore
import NIOSSL
import PocketBenchKit
#if canImport(Glibc)
import Glibc
#endif

struct AHCClient: BenchClient {
    let client: HTTPClient
    let request: HTTPClientRequest

    func perform() async throws -> BenchOutcome {
        let response = try await client.execute(request, timeout: .seconds(60))
        var n = 0
        for try await buffer in response.body { n += buffer.readableBytes }
        return BenchOutcome(status: Int(response.status.code), bytes: n)
    }
}

let usage = "usage: ahc-bench --url URL [--requests N] [--connections C] [--warmup W] [--max-seconds T] [--json] [--cacert FILE] [-k] [--compressed]"
let options = BenchOptions.parseOrExit("ahc-bench", usage: usage, requireURL: true)
let url = options.url!

var configuration = HTTPClient.Configuration()
configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = options.connections
configuration.httpVersion = .http1Only
if options.compressed == true { configuration.decompression = .enabled(limit: .none) }
if options.caFile != nil || options.insecure {
    var tls = TLSConfiguration.makeClientConfiguration()
    if let ca = options.caFile { tls.trustRoots = .file(ca) }
    if options.insecure { tls.certificateVerification = .none }
    configuration.tlsConfiguration = tls
}
let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
var request = HTTPClientRequest(url: url)
if options.compressed == true { request.headers.add(name: "Accept-Encoding", value: "gzip, deflate") }

let measurement = await measure(AHCClient(client: client, request: request), options: options,
                                setup: MeasureSetup(clientName: "ahc", url: url))
try? await client.shutdown()
measurement.finish("ahc-bench", json: options.json)
