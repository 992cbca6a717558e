// libFuzzer target: where a request may be sent next, from what a server or
// the environment says: a redirect's Location resolved against the URL that
// answered (URL resolution, Target, RedirectFollower's scheme and origin
// rules), and the proxy variables with NO_PROXY (names, IPs, CIDR blocks).
//
// Input: byte 0 picks the base URL and the mode; the rest is, with bit 7
// clear, a Location value, else "\n"-separated lines: the NO_PROXY value,
// then proxy variables (http_proxy, HTTPS_PROXY, ALL_PROXY, HTTP_PROXY
// taken in turn), then hosts to look up.
// Beyond "no crash":
//   - a Location that resolves is either refused (a Unix socket from
//     http(s), another socket) or leads to http/https; the target it gives
//     has no CR, LF, NUL or space (it cannot add a line or split the request
//     line); sameOrigin is symmetric and reflexive;
//   - NO_PROXY: a host equal to a listed name, or under it, never goes
//     through the proxy, a host that is neither never is bypassed by a name
//     (checked apart from the matcher); an IPv4 host inside a listed CIDR
//     block is bypassed (prefix checked on 32-bit integers); `*` as the
//     whole list bypasses every host, `*` among other entries none;
//   - HTTP_PROXY in upper case alone is never used (httpoxy);
//   - resolving the Location, reading NO_PROXY and the proxy variables
//     allocate at most a fixed amount plus a multiple of the input's size
//     (allocationBounded).
import FuzzDriver
@testable import Pocket

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

func fail(_ message: String) -> Never {
    fatalError("FuzzReach: \(message)")
}

let bases = ["https://api.example.com/v1/items?x=1", "http://127.0.0.1:8080/a/b", "http+unix://%2Frun%2Fapp.sock/x",
             "https://[::1]:8443/", "http://example.com"].map { URL(string: $0)! }
let head = PocketResponseHead(status: 302, reason: "Found", headers: [:])

func ipv4(_ text: String) -> UInt32? {
    let parts = text.split(separator: ".", omittingEmptySubsequences: false)
    guard parts.count == 4 else { return nil }
    var value: UInt32 = 0
    for p in parts {
        guard !p.isEmpty, p.count <= 3, p.allSatisfy(\.isASCII), p.allSatisfy(\.isNumber), let n = UInt32(p), n <= 255 else { return nil }
        value = value << 8 | n
    }
    return value
}

func location(_ text: String, base: URL) {
    let trimmed = String(text.drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    guard !trimmed.isEmpty else { return }
    let parsed = allocationBounded("Location resolution", inputBytes: text.utf8.count) { () -> (URL, Target)? in
        guard let resolved = URL(string: trimmed, relativeTo: base)?.absoluteURL else { return nil }
        return (resolved, Target(resolved))
    }
    guard let (resolved, target) = parsed, target.problem == nil else { return }
    if !PocketClient.sameOrigin(resolved, resolved) { fail("\(resolved) is not its own origin") }
    if PocketClient.sameOrigin(base, resolved) != PocketClient.sameOrigin(resolved, base) { fail("sameOrigin is not symmetric") }
    do {
        try RedirectFollower.checkScheme(from: base, to: resolved, status: 302, head: head)
    } catch {
        if target.unixPath == nil { fail("\(resolved) refused, yet not a Unix socket") }
        return
    }
    if target.unixPath != nil, Target(base).unixPath != target.unixPath { fail("a redirect into the socket \(resolved)") }
    let scheme = resolved.scheme?.lowercased() ?? ""
    guard ["http", "https", "http+unix", "https+unix"].contains(scheme) else { fail("a redirect to \(scheme)") }
    let bad: (UInt8) -> Bool = { $0 == 13 || $0 == 10 || $0 == 0 || $0 == 32 }
    if target.pathAndQuery.utf8.contains(where: bad) { fail("the target \(target.pathAndQuery.debugDescription) of \(text.debugDescription)") }
    if target.host.utf8.contains(where: { $0 == 13 || $0 == 10 || $0 == 0 }) { fail("the host \(target.host.debugDescription)") }
}

func proxies(_ lines: [String]) {
    let noProxy = lines.first ?? ""
    let names = ["http_proxy", "HTTPS_PROXY", "ALL_PROXY", "HTTP_PROXY"]
    var environment = ["no_proxy": noProxy]
    for (i, value) in lines.dropFirst().prefix(4).enumerated() where !value.isEmpty { environment[names[i]] = value }
    let hosts = Array(lines.dropFirst(5)) + ["example.com", "a.b.example.com", "10.1.2.3", "::1"]
    let list = allocationBounded("NoProxyList", inputBytes: noProxy.utf8.count) { NoProxyList(noProxy) }
    // The entries as the matcher reads them, checked apart.
    var entryNames: [String] = [], blocks: [(UInt32, Int)] = []
    var all = false, bracketed = false
    let raws = noProxy.split(whereSeparator: { $0 == "," || $0.isWhitespace })
    all = raws.count == 1 && raws[0] == "*" // the wildcard only as the whole list (curl's rule)
    for raw in raws {
        var entry = raw.filter { !$0.isWhitespace }.lowercased()
        if entry == "*" { continue }
        let parts = entry.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        if let first = parts.first, let v4 = ipv4(String(first)), NoProxyList.address(String(first)) != nil {
            let prefix = parts.count == 2 ? Int(parts[1]) ?? -1 : 32
            if (0...32).contains(prefix) { blocks.append((v4, prefix)) }
            continue
        }
        if entry.hasPrefix("[") { bracketed = true; continue } // rewritten by the matcher: not checked here
        if NoProxyList.address(String(parts.first ?? "")) != nil { continue } // IPv6: not checked here
        while entry.hasPrefix(".") { entry.removeFirst() }
        while entry.hasSuffix(".") { entry.removeLast() }
        if !entry.isEmpty { entryNames.append(entry) }
    }
    for host in hosts where !host.contains("\0") {
        let matched = list.matches(host)
        if all {
            if !matched { fail("* did not match \(host)") }
            continue
        }
        if let v4 = ipv4(host), NoProxyList.address(host) != nil {
            let inside = blocks.contains { block in
                block.1 == 0 || (block.0 >> (32 - block.1)) == (v4 >> (32 - block.1))
            }
            if inside && !matched { fail("\(host) is inside a NO_PROXY block of \(noProxy.debugDescription) yet proxied") }
            continue
        }
        guard NoProxyList.address(host) == nil else { continue }
        var name = host.lowercased()
        while name.hasSuffix(".") { name.removeLast() }
        let byName = entryNames.contains { name == $0 || name.hasSuffix("." + $0) }
        if byName && !matched { fail("\(host) is named by NO_PROXY \(noProxy.debugDescription) yet proxied") }
        if !byName && matched && !bracketed {
            fail("\(host) bypasses the proxy, yet NO_PROXY \(noProxy.debugDescription) names no parent of it")
        }
    }
    var configuration = PocketClient.Configuration()
    configuration.proxyFromEnvironment = true
    let rules = allocationBounded("ProxyRules.make", inputBytes: lines.reduce(0) { $0 + $1.utf8.count + 1 }) {
        ProxyRules.make(configuration, environment: environment)
    }
    guard let rules else {
        return
    }
    for host in hosts {
        guard let url = URL(string: "http://\(host.contains(":") ? "[\(host)]" : host)/"), Target(url).problem == nil else { continue }
        let chosen = try? ProxyRules.proxy(for: Target(url), own: nil, rules: rules)
        if chosen != nil, environment.keys.allSatisfy({ $0 == "HTTP_PROXY" || $0 == "no_proxy" }) {
            fail("HTTP_PROXY alone chose \(chosen!.address) (httpoxy)")
        }
    }
}

@_cdecl("FuzzReach_main")
func fuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    runFuzzer(argc, argv) { data in
        guard let first = data.first else { return }
        let text = String(decoding: data.dropFirst(), as: UTF8.self)
        if first & 0x80 == 0 {
            location(text, base: bases[Int(first) % bases.count])
        } else {
            proxies(text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init))
        }
    }
}
