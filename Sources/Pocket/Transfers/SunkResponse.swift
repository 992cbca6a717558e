#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// One attempt's outcome of the sink sends: the response without its body,
/// and the sink that has it (or is still being written, `running`).
struct SunkResponse: ExchangedResponse {
    var response: PocketResponse
    let sink: any PocketResponseBodySink
    /// Bytes written before the send returned.
    let written: Int
    /// The request still writing the body (returned at the head), cancelled
    /// when this response is dropped for a retry or a redirect.
    let running: InFlightRequest?

    init(response: PocketResponse, sink: any PocketResponseBodySink, written: Int, running: InFlightRequest?) {
        self.response = response
        self.sink = sink
        self.written = written
        self.running = running
    }

    /// A complete response (cached, or from a transport) written into one sink.
    init(replaying complete: PocketResponse, into makeSink: (PocketResponseBodyStart) -> any PocketResponseBodySink) {
        var response = complete
        let body = response.body
        response.body = Data()
        let sink = makeSink(PocketResponseBodyStart(head: response.head, contentLength: body.count,
                                                    control: PocketResponseBodyControl(nil)))
        if !body.isEmpty { _ = body.withUnsafeBytes { sink.write($0) } }
        sink.finish(nil, timings: response.timings)
        self.sink = sink
        self.response = response
        written = body.count
        running = nil
    }

    var attemptView: PocketResponse { response }

    func validationFailure(_ validation: PocketValidation, format: PocketContentFormat) -> PocketError? {
        let hasBody: Bool
        if running != nil {
            let status = response.status
            hasBody = !(response.headers["Content-Length"] == "0" || status == 204 || status == 304)
        } else {
            hasBody = written > 0
        }
        return response.validationFailure(validation, format: format, hasBody: hasBody)
    }

    mutating func keep(request: PocketRequest) { response.request = request }

    func discardBody() async { running?.cancel() }

    var redirectStatus: Int { response.status }
    var redirectHead: PocketResponseHead { response.head }
    var hopDuration: Duration { running == nil ? response.timings.total : .zero }
    mutating func record(url: URL, redirects: [PocketRedirectHop]) { response.record(url: url, redirects: redirects) }
    func discardRedirectBody() async { running?.cancel() }
}
