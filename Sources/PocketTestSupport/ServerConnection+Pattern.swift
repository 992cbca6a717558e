extension ServerConnection {
    /// Sends bytes `offset..<offset + count` of the pattern of `seed`,
    /// generated into one reused buffer a piece at a time (see
    /// `RawStep.pattern`); false once the connection is finished.
    func sendPattern(seed: UInt64, offset: Int, count: Int, pieceSize: Int,
                     chunked: Bool, delayMillisecondsPerPiece: Int) -> Bool {
        let piece = max(1, pieceSize)
        // Room for a chunk-size line in front and the CRLF behind the data.
        let front = chunked ? String(piece, radix: 16).utf8.count + 2 : 0
        var buffer = [UInt8](repeating: 0, count: front + piece + 2)
        var sent = 0
        while sent < count {
            if sent > 0 && delayMillisecondsPerPiece > 0 {
                guard pause(milliseconds: delayMillisecondsPerPiece) else { return false }
            }
            let length = min(piece, count - sent)
            let range = buffer.withUnsafeMutableBytes { raw -> Range<Int> in
                var start = front
                var end = front + length
                if chunked {
                    let line = Array(String(length, radix: 16).utf8) + [13, 10]
                    start = front - line.count
                    raw[start..<front].copyBytes(from: line)
                    raw[end] = 13
                    raw[end + 1] = 10
                    end += 2
                }
                BytePattern.fill(seed: seed, offset: offset + sent,
                                 into: UnsafeMutableRawBufferPointer(rebasing: raw[front..<(front + length)]))
                return start..<end
            }
            guard sendAll(buffer[range]) else { return false }
            sent += length
        }
        return true
    }
}
