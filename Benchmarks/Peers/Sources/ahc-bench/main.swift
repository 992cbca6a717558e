// ahc-bench: AsyncHTTPClient 1.37.0 under pocket-bench's loop and report
// (PocketBenchKit): C concurrent tasks, each awaiting `client.execute` back to
// back and reading the whole body, on one HTTPClient whose pool allows C
// connections per host. Flags: --url (required; given several times, the
// replicas of one set, taken in turn) --requests --connections --warmup
// --max-seconds --json --cacert -k --compressed --rate (open loop, latency
// from each request's due time: PocketBenchKit's OpenLoopSchedule).
import AsyncHTTPClient
import NIOCore
import NIOSSL
import PocketBenchKit
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// AsyncHTTPClient has no replica sets: the requests go to the URLs in turn.
final class AHCClient: BenchClient {
    let client: HTTPClient
    let requests: [HTTPClientRequest]
    let turn = Atomic<Int>(0)

    init(client: HTTPClient, requests: [HTTPClientRequest]) {
        self.client = client
        self.requests = requests
    }

    func perform() async throws -> BenchOutcome {
        let request = requests[turn.wrappingAdd(1, ordering: .relaxed).oldValue % requests.count]
        let response = try await client.execute(request, timeout: .seconds(60))
        var n = 0
        for try await buffer in response.body { n += buffer.readableBytes }
        return BenchOutcome(status: Int(response.status.code), bytes: n)
    }
}

let usage = "usage: ahc-bench --url URL [--url URL...] [--requests N] [--connections C] [--warmup W] [--max-seconds T] [--json] [--cacert FILE] [-k] [--compressed] [--rate R]"
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
let requests = options.urls.map { url in
    var request = HTTPClientRequest(url: url)
    if options.compressed == true { request.headers.add(name: "Accept-Encoding", value: "gzip, deflate") }
    return request
}
if !options.tail.policyFlags.isEmpty {
    eprint("ahc-bench: AsyncHTTPClient has no \(options.tail.policyFlags.joined(separator: ", ")); ignored")
}
var setup = MeasureSetup(clientName: "ahc", url: url)
setup.replicas = requests.count
let measurement = await measure(AHCClient(client: client, requests: requests), options: options, setup: setup)
try? await client.shutdown()
measurement.finish("ahc-bench", json: options.json)
