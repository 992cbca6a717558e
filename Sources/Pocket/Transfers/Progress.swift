/// How far one direction of a transfer has come.
///
/// `total` is the number the server or the body announced, never a guess:
/// nil for a chunked body, and for the decoded size of a compressed response
/// (whose `Content-Length` counts compressed bytes — see `wireBytes` and
/// `wireTotal` for those).
public struct PocketTransferProgress: Sendable, Hashable, CustomStringConvertible {
    /// Which body is moving.
    public enum Direction: Sendable, Hashable {
        /// `upload`: the request body, going out; `download`: the response body, coming in.
        case upload, download
    }

    /// The request body going out (`upload`) or the response body coming in (`download`).
    public var direction: Direction
    /// Payload bytes so far: body bytes sent, or response body bytes after
    /// content decoding.
    public var bytes: Int
    /// The payload's announced total, or nil when it is not known.
    public var total: Int?
    /// Body bytes as framed on the wire (before content decoding; equal to
    /// `bytes` for uploads and uncompressed responses).
    public var wireBytes: Int
    /// The wire total (`Content-Length`), or nil.
    public var wireTotal: Int?
    /// True on the last report of a direction that completed.
    public var isFinal: Bool
    /// For the upload of a multipart form (`PocketRequestBody.multipart`): the
    /// part being sent, with its own figures; nil for other bodies and for
    /// downloads.
    public var part: PocketPartProgress?

    /// A report with these figures (Pocket makes them; this is for tests and
    /// for transports that report progress of their own).
    public init(direction: Direction, bytes: Int, total: Int?, wireBytes: Int, wireTotal: Int?, isFinal: Bool = false,
                part: PocketPartProgress? = nil) {
        self.direction = direction
        self.bytes = bytes
        self.total = total
        self.wireBytes = wireBytes
        self.wireTotal = wireTotal
        self.isFinal = isFinal
        self.part = part
    }

    /// `bytes / total` in 0...1, or nil when the total is unknown (no
    /// guessed percentages). For a compressed response the wire figures give it.
    public var fraction: Double? {
        if let total { return total == 0 ? 1 : min(1, Double(bytes) / Double(total)) }
        if let wireTotal { return wireTotal == 0 ? 1 : min(1, Double(wireBytes) / Double(wireTotal)) }
        return nil
    }

    /// The seeds' percent convenience (MTPocket's `percentComplete`): 0...100, or nil.
    public var percent: Int? { fraction.map { Int(($0 * 100).rounded(.down)) } }

    /// `sent 100 of 400 bytes`, or `received 100 bytes` without a total.
    public var description: String {
        let what = direction == .upload ? "sent" : "received"
        if let total { return "\(what) \(bytes) of \(total) bytes" }
        return "\(what) \(bytes) bytes"
    }
}

/// Where progress reports go: a closure, or an `AsyncSequence` (`stream`).
///
/// Reports are rate-limited in the engine (`interval`, 100 ms by default), so
/// a fast transfer costs a few callbacks a second, not one per packet; the
/// last report of each direction (`isFinal`) always comes, with the totals.
///
/// ```swift
/// let response = try await client.send(request, progress: .init { p in
///     print(p.percent.map { "\($0)%" } ?? "\(p.bytes) bytes")
/// })
///
/// let (updates, handler) = PocketProgressHandler.stream()
/// async let response = client.send(request, progress: handler)
/// for await p in updates { print(p) }   // ends when the request does
/// ```
public struct PocketProgressHandler: Sendable {
    /// Minimum time between two reports of one request.
    public var interval: Duration
    /// A response header that gives the body's size when `Content-Length`
    /// cannot (MTPocket's `contentLengthHeader`): e.g. `X-Stream-Length` on a
    /// chunked or compressed body. When the response carries it as a whole
    /// number, download reports use it as `total`; nil (the default) uses
    /// `Content-Length` alone.
    public var contentLengthHeader: String?
    let report: @Sendable (PocketTransferProgress) -> Void
    var finish: (@Sendable () -> Void)?

    /// Calls `report` (on the engine's loop thread: keep it short) with
    /// upload and download progress.
    public init(interval: Duration = .milliseconds(100), _ report: @escaping @Sendable (PocketTransferProgress) -> Void) {
        self.interval = interval
        self.report = report
        self.finish = nil
    }

    /// Progress as an `AsyncStream` that finishes when the request ends
    /// (successfully or not), and the handler to pass to the request. The
    /// stream keeps the newest reports if the reader falls behind.
    public static func stream(interval: Duration = .milliseconds(100)) -> (AsyncStream<PocketTransferProgress>, PocketProgressHandler) {
        let (stream, continuation) = AsyncStream<PocketTransferProgress>.makeStream(bufferingPolicy: .bufferingNewest(64))
        var handler = PocketProgressHandler(interval: interval) { continuation.yield($0) }
        handler = PocketProgressHandler(interval: interval, report: handler.report, finish: { continuation.finish() })
        return (stream, handler)
    }

    init(interval: Duration, report: @escaping @Sendable (PocketTransferProgress) -> Void, finish: (@Sendable () -> Void)?) {
        self.interval = interval
        self.report = report
        self.finish = finish
    }
}

/// How far the part of a multipart upload that is being sent has come
/// (`PocketTransferProgress.part`).
///
/// Parts go out in order: every part before `index` is complete when this
/// is reported. Reports are rate-limited like the totals, so a small part
/// may pass between two reports without one of its own.
public struct PocketPartProgress: Sendable, Hashable, CustomStringConvertible {
    /// The part's position in the form, from 0.
    public var index: Int
    /// The number of parts in the form.
    public var count: Int
    /// The part's field name.
    public var name: String
    /// Content bytes of the part sent so far (its head not counted).
    public var bytes: Int
    /// The part's content size, or nil for a stream without length.
    public var total: Int?

    /// A report as Pocket makes it (public for tests and adapters that
    /// build progress values of their own).
    public init(index: Int, count: Int, name: String, bytes: Int, total: Int?) {
        self.index = index
        self.count = count
        self.name = name
        self.bytes = bytes
        self.total = total
    }

    /// True once every byte of the part's content is out.
    public var isComplete: Bool { total.map { bytes >= $0 } ?? false }

    /// `part 2/4 "photo": 1048576 of 5242880 bytes`.
    public var description: String {
        "part \(index + 1)/\(count) \"\(name)\": \(bytes)" + (total.map { " of \($0)" } ?? "") + " bytes"
    }
}
