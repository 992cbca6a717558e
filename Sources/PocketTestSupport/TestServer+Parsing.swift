/// Bytes received on a connection but not consumed yet.
struct InputBuffer {
    private(set) var bytes: [UInt8] = []
    private(set) var start = 0

    var readableCount: Int { bytes.count - start }
    var isEmpty: Bool { readableCount == 0 }

    mutating func append(_ data: [UInt8]) {
        if start > 0 && start >= bytes.count / 2 {
            bytes.removeFirst(start)
            start = 0
        }
        bytes += data
    }

    /// Removes and returns the first `count` readable bytes.
    mutating func take(_ count: Int) -> ArraySlice<UInt8> {
        let slice = bytes[start..<(start + count)]
        start += count
        return slice
    }

    /// The readable offset just past the first `\r\n\r\n`, or nil.
    func headEnd() -> Int? {
        var i = start
        while i + 3 < bytes.count {
            if bytes[i] == 13 && bytes[i + 1] == 10 && bytes[i + 2] == 13 && bytes[i + 3] == 10 {
                return i + 4 - start
            }
            i += 1
        }
        return nil
    }

    /// The readable offset of the first `\r\n`, or nil.
    func lineEnd() -> Int? {
        var i = start
        while i + 1 < bytes.count {
            if bytes[i] == 13 && bytes[i + 1] == 10 { return i - start }
            i += 1
        }
        return nil
    }
}

/// A request line and header block, parsed.
struct RequestHead {
    var method: String
    var target: String
    var version: String
    var headers: [(String, String)]

    /// How the body is delimited.
    enum Framing: Equatable {
        case none
        case length(Int)
        case chunked
    }

    struct Invalid: Error {
        var reason: String
    }

    /// Parses the bytes up to and including the empty line. Strict: lines
    /// must end in CRLF; bare CR or LF, obs-fold, or a malformed line fail.
    static func parse(_ raw: ArraySlice<UInt8>) throws -> RequestHead {
        var lines: [ArraySlice<UInt8>] = []
        var lineStart = raw.startIndex
        var i = raw.startIndex
        while i < raw.endIndex {
            let byte = raw[i]
            if byte == 13 {
                guard i + 1 < raw.endIndex, raw[i + 1] == 10 else { throw Invalid(reason: "bare CR") }
                lines.append(raw[lineStart..<i])
                i += 2
                lineStart = i
                continue
            }
            if byte == 10 { throw Invalid(reason: "bare LF") }
            if byte == 0 { throw Invalid(reason: "NUL byte") }
            i += 1
        }
        // The block ends with "\r\n\r\n", so the last line is empty.
        guard lines.count >= 2, lines.last?.isEmpty == true else { throw Invalid(reason: "unterminated head") }
        lines.removeLast()

        let requestLine = lines.removeFirst().split(separator: 32, omittingEmptySubsequences: false)
        guard requestLine.count == 3, requestLine.allSatisfy({ !$0.isEmpty }) else {
            throw Invalid(reason: "malformed request line")
        }
        let version = String(decoding: requestLine[2], as: UTF8.self)
        guard version == "HTTP/1.1" || version == "HTTP/1.0" else { throw Invalid(reason: "version \(version)") }

        var headers: [(String, String)] = []
        for line in lines {
            guard let first = line.first, first != 32, first != 9 else { throw Invalid(reason: "obs-fold") }
            guard let colon = line.firstIndex(of: 58) else { throw Invalid(reason: "header without colon") }
            let name = line[line.startIndex..<colon]
            guard !name.isEmpty, !name.contains(where: { $0 <= 32 || $0 == 127 }) else {
                throw Invalid(reason: "bad header name")
            }
            let value = String(decoding: line[(colon + 1)...], as: UTF8.self).trimmingSpaces()
            headers.append((String(decoding: name, as: UTF8.self), value))
        }
        return RequestHead(
            method: String(decoding: requestLine[0], as: UTF8.self),
            target: String(decoding: requestLine[1], as: UTF8.self),
            version: version,
            headers: headers
        )
    }

    func values(_ lowercasedName: String) -> [String] {
        headers.filter { $0.0.lowercased() == lowercasedName }.map(\.1)
    }

    /// The body framing per RFC 9112 §6.3 (chunked wins; conflicting
    /// Content-Length values are invalid).
    func framing() throws -> Framing {
        let encodings = values("transfer-encoding")
            .flatMap { $0.split(separator: ",") }
            .map { $0.trimmingSpaces().lowercased() }
        if !encodings.isEmpty {
            guard encodings.last == "chunked" else { throw Invalid(reason: "transfer-encoding without chunked") }
            return .chunked
        }
        let lengths = Set(values("content-length").flatMap { $0.split(separator: ",") }.map { $0.trimmingSpaces() })
        guard !lengths.isEmpty else { return .none }
        guard lengths.count == 1, let text = lengths.first, !text.isEmpty,
              text.allSatisfy({ $0.isASCII && $0.isNumber }), let length = Int(text) else {
            throw Invalid(reason: "bad content-length")
        }
        return length == 0 ? .none : .length(length)
    }

    /// The target up to (not including) `?`.
    var path: String {
        String(target[..<(target.firstIndex(of: "?") ?? target.endIndex)])
    }

    /// The part of the target after `?`, or nil if there is none.
    var query: String? {
        target.firstIndex(of: "?").map { String(target[target.index(after: $0)...]) }
    }

    var expectsContinue: Bool {
        values("expect").contains { $0.lowercased() == "100-continue" }
    }
}

/// Incremental decoder for a chunked request body.
struct ChunkedBodyDecoder {
    private enum State {
        case size
        case data(remaining: Int)
        case dataEnd
        case trailer
        case done
    }

    private var state = State.size
    private(set) var trailers: [(String, String)] = []

    var isDone: Bool {
        if case .done = state { return true }
        return false
    }

    /// Consumes what it can from `input`, passing chunk data on to `body`;
    /// throws on malformed framing.
    mutating func consume(_ input: inout InputBuffer, into body: inout ReceivedBody) throws {
        while true {
            switch state {
            case .done:
                return
            case .size:
                guard let end = input.lineEnd() else {
                    if input.readableCount > 4096 { throw RequestHead.Invalid(reason: "chunk size line too long") }
                    return
                }
                let line = input.take(end)
                _ = input.take(2)
                let sizeText = line.prefix { $0 != 59 } // up to ';' (extensions ignored)
                let hex = String(decoding: sizeText, as: UTF8.self).trimmingSpaces()
                guard !hex.isEmpty, hex.count <= 15, let size = Int(hex, radix: 16), size >= 0 else {
                    throw RequestHead.Invalid(reason: "bad chunk size")
                }
                state = size == 0 ? .trailer : .data(remaining: size)
            case let .data(remaining):
                guard !input.isEmpty else { return }
                let count = min(remaining, input.readableCount)
                body.append(input.take(count))
                state = remaining == count ? .dataEnd : .data(remaining: remaining - count)
            case .dataEnd:
                guard input.readableCount >= 2 else { return }
                let crlf = input.take(2)
                guard crlf.elementsEqual([13, 10]) else { throw RequestHead.Invalid(reason: "missing CRLF after chunk") }
                state = .size
            case .trailer:
                guard let end = input.lineEnd() else { return }
                let line = input.take(end)
                _ = input.take(2)
                if line.isEmpty {
                    state = .done
                } else if let colon = line.firstIndex(of: 58) {
                    trailers.append((String(decoding: line[line.startIndex..<colon], as: UTF8.self),
                                     String(decoding: line[(colon + 1)...], as: UTF8.self).trimmingSpaces()))
                } else {
                    throw RequestHead.Invalid(reason: "bad trailer line")
                }
            }
        }
    }
}
