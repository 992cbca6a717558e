/// A request body as it was read: every byte hashed and counted, and kept
/// only if the server keeps request bodies.
struct ReceivedBody {
    let keep: Bool
    private(set) var bytes: [UInt8] = []
    private(set) var length = 0
    private let hasher = SHA256Hasher()
    var trailers: [(String, String)] = []

    init(keep: Bool) {
        self.keep = keep
    }

    mutating func append(_ piece: ArraySlice<UInt8>) {
        hasher.update(piece)
        length += piece.count
        if keep { bytes += piece }
    }

    /// The SHA-256 of everything appended (call once, at the end).
    func digest() -> String {
        hasher.finalizeHex()
    }
}

extension ServerConnection {
    /// Reads the body per `framing`, streaming it into a `ReceivedBody` as it
    /// arrives (so with `keep` false nothing but the current read is held);
    /// nil if the connection ended first. Throws on malformed chunking.
    func readBody(_ framing: RequestHead.Framing, _ input: inout InputBuffer, keep: Bool) throws -> ReceivedBody? {
        var body = ReceivedBody(keep: keep)
        switch framing {
        case .none:
            return body
        case let .length(length):
            while true {
                body.append(input.take(min(input.readableCount, length - body.length)))
                if body.length == length { return body }
                guard receiveMore(&input) else { return nil }
            }
        case .chunked:
            var decoder = ChunkedBodyDecoder()
            while true {
                try decoder.consume(&input, into: &body)
                if decoder.isDone {
                    body.trailers = decoder.trailers
                    return body
                }
                guard receiveMore(&input) else { return nil }
            }
        }
    }

    /// Appends the next bytes received to `input`; false if the connection
    /// ended (or the server is stopping) first.
    func receiveMore(_ input: inout InputBuffer) -> Bool {
        while true {
            switch transport.receive(maxCount: 64 * 1024, timeoutMilliseconds: Self.slice) {
            case let .data(bytes):
                input.append(bytes)
                return true
            case .timedOut:
                if core.isStopping { return false }
            case .closed, .failed:
                return false
            }
        }
    }
}
