import CPocketTestTLS

/// An incremental SHA-256 (OpenSSL's EVP API), for checking bodies in tests
/// without keeping them.
///
/// ```swift
/// let hasher = SHA256Hasher()
/// hasher.update(Array("hello ".utf8))
/// hasher.update(Array("world".utf8))
/// let hex = hasher.finalizeHex() // 64 lowercase hex digits
/// ```
///
/// A reference type: copies share one running digest. Not thread-safe; use
/// one hasher per thread. `finalizeHex()` restarts it (empty input), so the
/// same hasher can digest another message afterwards.
public final class SHA256Hasher {
    private let context: OpaquePointer

    /// A hasher over the empty input. Traps if OpenSSL cannot create a
    /// digest context (out of memory).
    public init() {
        guard let made = pktt_sha256_new() else { fatalError("OpenSSL could not create a SHA-256 context") }
        context = made
    }

    deinit {
        pktt_sha256_free(context)
    }

    /// Appends `bytes` to the message.
    public func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        pktt_sha256_update(context, base, bytes.count)
    }

    /// Appends `bytes` to the message.
    public func update(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { update($0) }
    }

    /// Appends `bytes` to the message.
    public func update(_ bytes: ArraySlice<UInt8>) {
        bytes.withUnsafeBytes { update($0) }
    }

    /// The digest of everything appended so far as 64 lowercase hex digits;
    /// then restarts the hasher with the empty input.
    public func finalizeHex() -> String {
        var out = [CChar](repeating: 0, count: 65)
        guard pktt_sha256_final_hex(context, &out) == 1 else { fatalError("OpenSSL SHA-256 failed") }
        return String(decoding: out.prefix(64).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
