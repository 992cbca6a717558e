// libFuzzer target: the cookie store (PocketCookieStore) fed what servers
// send, with the public suffix list (libpsl) it uses.
//
// Input: byte 0 picks the origin the lines come from (a URL of the table
// below) and, with bit 7, reads the rest as a Netscape cookie file (the
// reader of `-b FILE`) instead of Set-Cookie lines (one per "\n").
// Beyond "no crash", after the lines are stored:
//   - for every URL of the table, every cookie the store returns matches
//     it by an independent reading of RFC 6265 §5.1.3/§5.1.4/§5.4: a
//     host-only cookie's domain is the host; another's is the host or a
//     parent of it (never for an IP address host); its path is a prefix of
//     the request's path on a "/" boundary; a Secure one only for https;
//   - no stored cookie's Domain is a public suffix unless host-only, and
//     `__Host-`/`__Secure-` names carry what their prefix demands;
//   - the Cookie field value never holds CR, LF or NUL;
//   - storing the lines (or reading the file) allocates at most a fixed
//     amount plus a multiple of the input's size (allocationBounded);
//   - the store's Netscape file, read into a new store, writes the same
//     file again (a write-then-read round trip).
import FuzzDriver
@testable import Pocket

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

let origins = ["https://www.example.com/a/b", "http://example.com/", "https://a.b.example.co.uk/x/",
               "https://co.uk/", "http://127.0.0.1:8080/p", "https://localhost/", "https://user.github.io/r/s",
               "http://github.io/", "https://[::1]/v6", "https://xn--bcher-kva.example/"]
let probes = origins.map { URL(string: $0)! } + [URL(string: "https://example.com/a/b/c")!,
                                                   URL(string: "http://www.example.com/")!,
                                                   URL(string: "https://deep.www.example.com/a")!,
                                                   URL(string: "https://example.co.uk/")!]
let clockNow = Date(timeIntervalSince1970: 1_700_000_000)

func fail(_ message: String) -> Never {
    fatalError("FuzzCookies: \(message)")
}

func isIP(_ host: String) -> Bool {
    host.contains(":") || (!host.isEmpty && host.allSatisfy { $0.isNumber || $0 == "." })
}

func check(_ url: URL, _ cookie: PocketCookie) {
    var host = (url.host(percentEncoded: false) ?? "").lowercased()
    if host.hasPrefix("[") { host = String(host.dropFirst().dropLast()) }
    let domain = cookie.domain
    if cookie.hostOnly {
        guard host == domain else { fail("host-only \(cookie) returned for \(url)") }
    } else {
        guard host == domain || (!isIP(host) && host.hasSuffix("." + domain)) else {
            fail("\(cookie) returned for \(url): its domain does not match")
        }
    }
    var path = url.path(percentEncoded: true)
    if path.isEmpty { path = "/" }
    let p = cookie.path
    guard path == p || (path.hasPrefix(p) && (p.hasSuffix("/") || path.dropFirst(p.count).first == "/")) else {
        fail("\(cookie) returned for \(url): its path does not match")
    }
    if cookie.secure && url.scheme != "https" { fail("Secure \(cookie) returned for \(url)") }
}

func checkStored(_ cookie: PocketCookie) {
    if !cookie.hostOnly && PublicSuffixList.isPublicSuffix(cookie.domain) {
        fail("a cookie for the public suffix \(cookie.domain): \(cookie)")
    }
    if cookie.name.hasPrefix("__Secure-") && !cookie.secure { fail("__Secure- without Secure: \(cookie)") }
    if cookie.name.hasPrefix("__Host-") && !(cookie.secure && cookie.hostOnly && cookie.path == "/") {
        fail("__Host- without Secure, host-only and Path=/: \(cookie)")
    }
}

@_cdecl("FuzzCookies_main")
func fuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    runFuzzer(argc, argv) { data in
        guard let first = data.first else { return }
        let origin = URL(string: origins[Int(first & 0x7F) % origins.count])!
        let text = String(decoding: data.dropFirst(), as: UTF8.self)
        let store: PocketCookieStore
        if first & 0x80 != 0 {
            let (read, summary) = allocationBounded("importNetscape", inputBytes: data.count) {
                let store = PocketCookieStore(clock: { clockNow })
                return (store, store.importNetscape(text, setCookieOrigin: origin))
            }
            store = read
            let lines = text.split(separator: "\n", omittingEmptySubsequences: false).count
            if summary.imported > lines { fail("more cookies than lines") }
        } else {
            store = allocationBounded("Set-Cookie into the store", inputBytes: data.count) {
                let store = PocketCookieStore(clock: { clockNow })
                for line in text.split(separator: "\n") { store.store(String(line), from: origin) }
                return store
            }
            for url in probes {
                for cookie in store.cookies(for: url) {
                    check(url, cookie)
                    // Only file lines may set a public suffix (the user's own file).
                    checkStored(cookie)
                }
                if let field = store.cookieHeader(for: url), field.utf8.contains(where: { $0 == 13 || $0 == 10 || $0 == 0 }) {
                    fail("a control byte in the Cookie field for \(url): \(field.debugDescription)")
                }
            }
        }
        let file = store.netscapeFile()
        let again = PocketCookieStore(clock: { clockNow })
        again.importNetscape(file)
        let second = again.netscapeFile()
        if second != file { fail("the Netscape file does not survive a round trip:\n\(file.debugDescription)\n\(second.debugDescription)") }
    }
}
