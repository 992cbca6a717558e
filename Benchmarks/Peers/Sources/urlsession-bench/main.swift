// urlsession-bench: URLSession (FoundationNetworking, libcurl underneath on
// Linux) under pocket-bench's loop and report (PocketBenchKit): C concurrent
// tasks, each awaiting `session.data(for:)` back to back on one session whose
// configuration allows C connections per host. Flags: --url (required)
// --requests --connections --warmup --max-seconds --json --compressed
// (plain http only: a custom CA or -k has no portable URLSession API on Linux).
import Foundation
import PocketBenchKit
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

struct SessionClient: BenchClient {
    let session: URLSession
    let request: URLRequest

    func perform() async throws -> BenchOutcome {
        let (data, response) = try await session.data(for: request)
        return BenchOutcome(status: (response as? HTTPURLResponse)?.statusCode ?? 0, bytes: data.count)
    }
}

let usage = "usage: urlsession-bench --url URL [--requests N] [--connections C] [--warmup W] [--max-seconds T] [--json] [--compressed]"
let options = BenchOptions.parseOrExit("urlsession-bench", usage: usage, requireURL: true)
guard let urlString = options.url, let url = URL(string: urlString) else {
    eprint("urlsession-bench: not a URL: \(options.url ?? "")")
    exit(2)
}
if options.caFile != nil || options.insecure {
    eprint("urlsession-bench: --cacert and -k are not supported (plain http only)")
    exit(2)
}

let configuration = URLSessionConfiguration.ephemeral
configuration.httpMaximumConnectionsPerHost = options.connections
configuration.urlCache = nil
configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
let session = URLSession(configuration: configuration)
var request = URLRequest(url: url)
// libcurl under URLSession asks for and decodes gzip by default; say so only when asked.
if options.compressed == true { request.setValue("gzip, deflate", forHTTPHeaderField: "Accept-Encoding") }

let measurement = await measure(SessionClient(session: session, request: request), options: options,
                                setup: MeasureSetup(clientName: "urlsession", url: urlString))
session.invalidateAndCancel()
measurement.finish("urlsession-bench", json: options.json)
