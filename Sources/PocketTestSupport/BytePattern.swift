import CPocketTestTLS

/// A deterministic, incompressible byte stream for large test bodies: byte
/// `i` of the stream of `seed` is byte `i % 8` (little-endian) of SplitMix64
/// output number `i / 8` of a generator seeded with `seed`, where output `n`
/// is `mix64(seed &+ (n + 1) &* 0x9E3779B97F4A7C15)` (Steele et al.). Any
/// offset can be produced without generating the prefix, so a server can
/// stream gigabytes in O(1) memory and a test can check any slice.
public enum BytePattern {
    /// Bytes `range` of the stream of `seed` (`range` must not be negative).
    public static func bytes(seed: UInt64, range: Range<Int>) -> [UInt8] {
        precondition(range.lowerBound >= 0, "pattern offsets start at 0")
        return [UInt8](unsafeUninitializedCapacity: range.count) { buffer, count in
            fill(seed: seed, offset: range.lowerBound, into: UnsafeMutableRawBufferPointer(buffer))
            count = range.count
        }
    }

    /// Overwrites `buffer` with bytes `offset..<offset + buffer.count` of the
    /// stream of `seed` (C speed: gigabytes per second).
    public static func fill(seed: UInt64, offset: Int, into buffer: UnsafeMutableRawBufferPointer) {
        precondition(offset >= 0, "pattern offsets start at 0")
        guard let base = buffer.baseAddress, !buffer.isEmpty else { return }
        pktt_pattern_fill(CUnsignedLongLong(seed), CUnsignedLongLong(offset), base, buffer.count)
    }

    /// The SHA-256 (lowercase hex) of the first `size` bytes of the stream of
    /// `seed`, generated and hashed in 1 MiB blocks (1 GiB takes about a
    /// second).
    public static func sha256(seed: UInt64, size: Int) -> String {
        sha256(seed: seed, range: 0..<size)
    }

    /// The SHA-256 (lowercase hex) of bytes `range` of the stream of `seed`,
    /// e.g. the expected digest of a `206` body.
    public static func sha256(seed: UInt64, range: Range<Int>) -> String {
        let hasher = SHA256Hasher()
        let block = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { block.deallocate() }
        var offset = range.lowerBound
        while offset < range.upperBound {
            let piece = UnsafeMutableRawBufferPointer(rebasing: block[0..<min(block.count, range.upperBound - offset)])
            fill(seed: seed, offset: offset, into: piece)
            hasher.update(UnsafeRawBufferPointer(piece))
            offset += piece.count
        }
        return hasher.finalizeHex()
    }
}
