import Foundation
@testable import Pocket

/// The request path's hop without a socket: a `PocketTransport` (the hop
/// `PocketClient.hop` takes when one is configured) that records each
/// request it is handed and answers from a script. For unit tests of the
/// stages around the hop (attempts, redirects, cache); the socket tests
/// cover the engine.
final class FakeHop: PocketTransport, @unchecked Sendable {
    /// Answers the `n`th request (1-based).
    typealias Script = @Sendable (_ request: PocketRequest, _ n: Int) throws -> PocketResponse

    // Invariant: `received` is only touched under `lock`.
    private let lock = NSLock()
    private var received: [PocketRequest] = []
    private let script: Script

    init(_ script: @escaping Script) { self.script = script }

    /// Answers with `responses` in turn; the last repeats.
    convenience init(_ responses: [PocketResponse]) {
        self.init { _, n in responses[min(n, responses.count) - 1] }
    }

    func send(_ request: PocketRequest, progress: PocketProgressHandler?) async throws -> PocketResponse {
        let n = lock.withLock {
            received.append(request)
            return received.count
        }
        return try script(request, n)
    }

    /// Every request handed to the hop, in order.
    var requests: [PocketRequest] { lock.withLock { received } }

    /// A client whose hop is this one.
    func client(_ configure: (inout PocketClient.Configuration) -> Void = { _ in }) throws -> PocketClient {
        var configuration = PocketClient.Configuration()
        configuration.proxyFromEnvironment = false
        configuration.handling.transport = self
        configure(&configuration)
        return try PocketClient(configuration: configuration)
    }
}

/// A response the fake hop answers with.
func answer(_ status: Int, _ headers: PocketHeaders = [:], body: String = "") -> PocketResponse {
    PocketResponse(status: status, headers: headers, body: Data(body.utf8))
}
