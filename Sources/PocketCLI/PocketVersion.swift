import Pocket

/// `pocket --version`: curl's layout (the tool, the libraries, the
/// protocols, the features), with the engine's linked library versions.
enum PocketVersion {
    /// The tool's version (also `User-Agent: Pocket/0.2.0` by default).
    static let number = "0.2.0"

    static var text: String {
        """
        pocket \(number) (\(archOS)) Pocket/\(number) \(PocketEngineInfo.tlsLibrary) zlib/\(PocketEngineInfo.zlibVersion) \
        libdeflate/\(PocketEngineInfo.libdeflateVersion) \(psl)
        Protocols: \(PocketEngineInfo.protocols.joined(separator: " "))
        Features: \(PocketEngineInfo.features.joined(separator: " "))

        """
    }

    /// libpsl's version, as curl names it (the cookie store's public suffixes).
    private static var psl: String {
        String(PocketCookieStore.publicSuffixLibrary.prefix { $0 != " " })
    }

    private static var archOS: String {
        #if arch(x86_64)
        "x86_64-linux"
        #elseif arch(arm64)
        "aarch64-linux"
        #else
        "linux"
        #endif
    }
}
