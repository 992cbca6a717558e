import Foundation

/// One-shot SHA-256 digests as lowercase hex (64 digits), via `SHA256Hasher`.
public enum SHA256Digest {
    /// The digest of `bytes`, e.g. `hex([])` is `"e3b0c442…b855"`.
    public static func hex(_ bytes: some Collection<UInt8>) -> String {
        let hasher = SHA256Hasher()
        let hashedInPlace: Bool? = bytes.withContiguousStorageIfAvailable {
            hasher.update(UnsafeRawBufferPointer($0))
            return true
        }
        if hashedInPlace == nil { hasher.update(Array(bytes)) }
        return hasher.finalizeHex()
    }

    /// The digest of the file at `path`, read in 1 MiB blocks (never whole).
    /// Throws if the file cannot be opened or read.
    public static func hex(fileAtPath path: String) throws -> String {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw CocoaError(.fileReadNoSuchFile, userInfo: [NSFilePathErrorKey: path])
        }
        defer { try? handle.close() }
        let hasher = SHA256Hasher()
        while let block = try handle.read(upToCount: 1 << 20), !block.isEmpty {
            block.withUnsafeBytes { hasher.update($0) }
        }
        return hasher.finalizeHex()
    }
}
