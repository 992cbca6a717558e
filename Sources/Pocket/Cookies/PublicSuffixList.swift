import CLibPSL

/// The Public Suffix List through libpsl, as curl uses it: a `Domain`
/// attribute naming a public suffix (`com`, `co.uk`, `github.io`) would let
/// one site set cookies for every site under it, so the store refuses it
/// (RFC 6265 §5.3 step 5).
///
/// The list is the newer of the one libpsl was built with and Debian's
/// `publicsuffix` package (`/usr/share/publicsuffix/public_suffix_list.dafsa`,
/// `psl_latest`), loaded once per process on first use and kept (libpsl's
/// context is read-only after loading, so lookups from any thread are safe).
/// Both the ICANN and the private section count, and so does the list's
/// implicit `*` rule: a single label the list does not name (`localhost`,
/// `internal`) is a public suffix too, as for curl and browsers.
enum PublicSuffixList {
    /// libpsl's context: the distribution's list, else the built-in one.
    private static let context: Context? = {
        if let latest = psl_latest(nil) { return Context(pointer: latest) }
        return psl_builtin().map { Context(pointer: UnsafeMutableRawPointer(mutating: UnsafeRawPointer($0))) }
    }()

    /// The context pointer, never freed (one per process, like curl's).
    private struct Context: @unchecked Sendable {
        let pointer: OpaquePointer

        init(pointer: OpaquePointer) { self.pointer = pointer }
        init(pointer: UnsafeMutableRawPointer) { self.pointer = OpaquePointer(pointer) }
    }

    /// Whether `domain` (lower case, no leading or trailing dot) is a public
    /// suffix. An IP address never is. Without libpsl's data (it failed to
    /// load) a single label counts as one, the implicit `*` rule.
    static func isPublicSuffix(_ domain: String) -> Bool {
        guard let context else { return !domain.contains(".") }
        return psl_is_public_suffix2(context.pointer, domain, Int32(PSL_TYPE_ANY)) != 0
    }

    /// libpsl's version, e.g. `0.21.2`.
    static var libraryVersion: String {
        String(String(cString: psl_get_version()).prefix { $0 != " " })
    }

    /// The list libpsl uses, for diagnostics (`pocket --version`): the
    /// distribution file's path, or "built-in".
    static var source: String {
        if let name = psl_dist_filename() {
            let path = String(cString: name)
            if !path.isEmpty, access(path, R_OK) == 0 { return path }
        }
        return "built-in"
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
