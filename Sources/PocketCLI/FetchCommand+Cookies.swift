import Pocket
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// -b/--cookie, -c/--cookie-jar and -j/--junk-session-cookies, as curl
/// 7.88 treats them: a -b value with `=` is a Cookie field; without, a
/// file to read (a missing or unreadable one is ignored, as curl ignores
/// it); a -b file or -c turns the invocation's one cookie store on for the
/// transfers of that option set; -c writes the whole store when the
/// invocation ends, whether the transfers succeeded or not.
extension FetchCommand {
    /// The -b values that are cookie strings, joined as curl joins them (';').
    var cookieStrings: String? {
        let strings = cookies.filter { $0.contains("=") }
        return strings.isEmpty ? nil : strings.joined(separator: ";")
    }

    /// The -b values that name files.
    var cookieFiles: [String] { cookies.filter { !$0.contains("=") } }

    /// Whether this set's transfers use the cookie store (curl's cookie engine).
    var usesCookieStore: Bool { cookieJar != nil || !cookieFiles.isEmpty }
}

/// The cookie store of one invocation (shared by every option set whose
/// transfers use it, as curl shares its cookies between --next sets), its
/// -b files read at the start and its -c files written at the end.
struct CookieRun: Sendable {
    /// nil when no option set turns cookies on.
    let store: PocketCookieStore?
    private let jars: [(path: String, silent: Bool)]

    init(sets: [FetchCommand]) {
        guard sets.contains(where: \.usesCookieStore) else {
            store = nil
            jars = []
            return
        }
        // As curl: Secure cookies go to and come from loopback over http too.
        let store = PocketCookieStore(treatsLoopbackAsSecure: true)
        var jars: [(String, Bool)] = []
        for set in sets {
            for file in set.cookieFiles {
                Self.load(file, into: store, set: set)
            }
            if let jar = set.cookieJar, !jars.contains(where: { $0.0 == jar }) {
                jars.append((jar, set.silent && !set.showError))
            }
        }
        self.store = store
        self.jars = jars
    }

    /// Reads one -b file; "" only turns the store on (curl's `-b ''`).
    private static func load(_ file: String, into store: PocketCookieStore, set: FetchCommand) {
        guard !file.isEmpty else { return }
        do {
            let summary = try store.importNetscape(contentsOfFile: file == "-" ? "/dev/stdin" : file,
                                                   dropSessionCookies: set.junkSessionCookies,
                                                   setCookieOrigin: set.urls.first.flatMap(Self.origin))
            if set.verbose {
                var note = "* cookie file \(file): \(summary.imported) cookies"
                if summary.malformed > 0 {
                    note += ", \(summary.malformed) malformed lines skipped (lines "
                        + summary.malformedLines.map(String.init).joined(separator: ", ") + ")"
                }
                if summary.expired > 0 { note += ", \(summary.expired) expired" }
                if summary.sessionCookiesDropped > 0 { note += ", \(summary.sessionCookiesDropped) session cookies dropped (-j)" }
                if summary.rejected > 0 { note += ", \(summary.rejected) refused" }
                Output.diagnostic(note + "\n")
            }
        } catch {
            // As curl: a cookie file that cannot be read is not an error.
            if set.verbose { Output.diagnostic("* cookie file \(file) ignored: \(error.message)\n") }
        }
    }

    /// `scheme://host[:port]/` of a set's first URL: where the `Set-Cookie:`
    /// lines of a saved head given to -b are taken to come from.
    private static func origin(_ url: String) -> URL? {
        guard let parsed = URL(string: FetchCommand.repaired(url)), let scheme = parsed.scheme,
              let host = parsed.host(percentEncoded: true) else { return nil }
        let name = host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
        return URL(string: "\(scheme)://\(name)\(parsed.port.map { ":\($0)" } ?? "")/")
    }

    /// Writes every -c file (stdout for '-'). A file that cannot be written
    /// is a warning on stderr, not a failure: curl exits as the transfer did.
    func save() {
        guard let store else { return }
        let text = store.netscapeFile()
        for (path, silent) in jars {
            if path == "-" {
                try? Output.stdout.write(text)
                continue
            }
            do {
                try store.exportNetscape(toFile: path)
            } catch {
                if !silent { Output.diagnostic("pocket: warning: \(error.message)\n") }
            }
        }
    }

    /// The Cookie field a request would carry (for -v): the store's cookies
    /// for its URL, then the request's own field, as the client merges them.
    func displayed(_ request: PocketRequest) -> PocketRequest {
        guard let store else { return request }
        let chosen = store.cookies(for: request.url)
        guard !chosen.isEmpty else { return request }
        var shown = request
        let own = request.headers.values(for: "Cookie")
        let names = Set(own.flatMap { $0.split(separator: ";") }.map { String($0.prefix { $0 != "=" }).trimmingWhitespace() })
        shown.headers.remove("Cookie")
        shown.headers.add(name: "Cookie", value: (chosen.filter { !names.contains($0.name) }.map(\.pair) + own).joined(separator: "; "))
        return shown
    }
}
