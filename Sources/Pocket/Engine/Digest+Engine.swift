internal import CHTTPEngine

/// The hashes of HTTP Digest authentication (RFC 7616 §3.4.2), computed by
/// the engine's OpenSSL (`pk_digest`).
enum DigestHash: Sendable, Hashable {
    case md5
    case sha256

    /// The lowercase hex digest of `text`'s UTF-8 bytes (RFC 7616 §3.4.1's
    /// H(data): 32 hex digits for MD5, 64 for SHA-256), or nil when OpenSSL
    /// refuses the algorithm (MD5 under a FIPS-only configuration).
    func hex(_ text: String) -> String? {
        var text = text
        return text.withUTF8 { bytes in
            withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 32) { out -> String? in
                let n = pk_digest(self == .md5 ? PK_DIGEST_MD5 : PK_DIGEST_SHA256, bytes.baseAddress, bytes.count, out.baseAddress)
                guard n > 0 else { return nil }
                let digits = Array("0123456789abcdef".utf8)
                var hex = [UInt8]()
                hex.reserveCapacity(Int(n) * 2)
                for byte in out.prefix(Int(n)) {
                    hex.append(digits[Int(byte >> 4)])
                    hex.append(digits[Int(byte & 0xF)])
                }
                return String(decoding: hex, as: UTF8.self)
            }
        }
    }
}
