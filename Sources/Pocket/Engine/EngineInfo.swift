internal import CHTTPEngine

/// What the engine is built with, for a `--version` line or a service's
/// diagnostics: the libraries are linked, so these are the versions in use.
public enum PocketEngineInfo {
    /// The TLS library, e.g. `OpenSSL 3.0.15 3 Sep 2024`.
    public static var tlsLibrary: String { String(cString: pk_tls_library_version()) }
    /// zlib's version (gzip and deflate bodies), e.g. `1.2.13`.
    public static var zlibVersion: String { String(cString: pk_zlib_version()) }
    /// libdeflate's version (small whole gzip bodies in one call), e.g. `1.14`.
    public static var libdeflateVersion: String { String(cString: pk_libdeflate_version()) }
    /// The protocols the engine speaks.
    public static let protocols = ["http", "https"]
    /// The engine's features, as curl's `--version` lists its own.
    public static let features = ["HTTP/1.1", "keep-alive", "TLS", "gzip", "deflate", "Range"]
}
