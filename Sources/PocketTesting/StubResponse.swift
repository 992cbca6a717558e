#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Pocket

/// One canned answer of a `PocketStubTransport`.
public struct PocketStubResponse: Sendable {
    /// The status, 200 by default.
    public var status: Int
    /// Header fields; `Content-Length` is added when missing.
    public var headers: PocketHeaders
    /// The body, empty by default.
    public var body: Data
    /// Waited (on the stub's clock) before answering; none by default.
    public var delay: Duration?
    /// Thrown instead of answering (after the delay); none by default.
    public var error: PocketError?

    /// A canned answer; each parameter defaults as its property says.
    public init(status: Int = 200, headers: PocketHeaders = [:], body: Data = Data(), delay: Duration? = nil,
                error: PocketError? = nil) {
        self.status = status
        self.headers = headers
        self.body = body
        self.delay = delay
        self.error = error
    }

    /// An empty response with `status`.
    public static func status(_ status: Int, headers: PocketHeaders = [:]) -> PocketStubResponse {
        PocketStubResponse(status: status, headers: headers)
    }

    /// A JSON body (`Content-Type: application/json`).
    public static func json(_ text: String, status: Int = 200) -> PocketStubResponse {
        PocketStubResponse(status: status, headers: ["Content-Type": "application/json"], body: Data(text.utf8))
    }

    /// A text body (`Content-Type: text/plain; charset=utf-8`).
    public static func text(_ text: String, status: Int = 200) -> PocketStubResponse {
        PocketStubResponse(status: status, headers: ["Content-Type": "text/plain; charset=utf-8"], body: Data(text.utf8))
    }

    /// A failure instead of a response.
    public static func failure(_ error: PocketError, delay: Duration? = nil) -> PocketStubResponse {
        PocketStubResponse(delay: delay, error: error)
    }
}
