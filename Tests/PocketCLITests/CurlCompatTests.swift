import Foundation
import PocketTestSupport
import XCTest

/// The curl-compatibility suite: each case runs the same command line with
/// curl (Debian's, /usr/bin/curl) and with `pocket`, each against a fresh
/// in-process server set up the same way, and compares the exit status,
/// stdout, the files written, and what the server received (method, target,
/// the case's header fields, body, number of connections). Ports are
/// replaced by PORT before comparing.
///
/// A case marked `differs` documents a deliberate difference
/// (docs/CLI.md): the suite then checks that the two still differ, so a
/// difference that goes away is noticed too. With `POCKET_COMPAT_REPORT=FILE`
/// the suite writes its table of cases and results there (docs/CLI.md
/// keeps a copy).
final class CurlCompatTests: XCTestCase {
    /// One command line. In `args`: `URL/path` is the server's URL with that
    /// path, `TLSURL/path` the TLS server's, `IN/name` a file of `inputs`.
    struct Case {
        var name: String
        var args: [String]
        var setup: (TestServer) -> Void = { _ in }
        /// Files made in the working directory before the run (name → bytes).
        var files: [String: [UInt8]] = [:]
        /// Input files in a folder of their own (not compared).
        var inputs: [String: [UInt8]] = [:]
        /// Request fields compared besides method, target and body.
        var headers: [String] = ["Content-Type", "Content-Length", "Transfer-Encoding", "Range", "Referer"]
        var stdin: Data?
        /// Compare stdout (off where curl prints something pocket
        /// deliberately does not, listed in docs/CLI.md).
        var compareStdout = true
        /// A multipart body: the boundary is replaced before comparing.
        var multipart = false
        /// Against the TLS test server (`URL/` is `https://localhost:PORT/`,
        /// `CA` the test CA's certificate file).
        var tls = false
        /// Why pocket deliberately differs here (docs/CLI.md); nil: must match.
        var differs: String?
        /// Why pocket deliberately opens another number of connections
        /// (docs/CLI.md): the count is reported, the rest compared.
        var connectionsDiffer: String?
        /// stdout holds a cookie jar (`-c -`): compared as `Self.jarLines`.
        var jarOnStdout = false
        /// How the tools reach the server: its TCP port (`URL/`), its Unix
        /// socket (`SOCK` is its path, `NOSOCK` a path nothing listens on),
        /// or through it as a recording proxy (`PROXY` is `http://127.0.0.1:PORT`,
        /// `PROXYHOST` `127.0.0.1:PORT`; it sees absolute-form targets and CONNECT).
        var reach: Reach = .tcp
    }

    enum Reach {
        case tcp, unixSocket, proxy
    }

    /// What one tool did.
    struct Outcome: Equatable {
        var status: Int32
        var stdout: String
        var files: [String: String]
        var requests: [String]
        var connections: Int
    }

    static var cases: [Case] {
        let big = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ $0 >> 7) }
        func common(_ s: TestServer) {
            s.route("/text") { _ in .text("hello, curl\n") }
            s.route("/echo") { r in .text("\(r.method) \(r.target) \(r.bodyText)\n") }
            s.route("/missing") { _ in .text("no such thing\n", status: 404) }
            s.route("/moved") { _ in .response(status: 301, headers: [("Location", "/echo")], body: Array("moved\n".utf8)) }
            s.route("/found") { _ in .response(status: 302, headers: [("Location", "/text")]) }
            s.route("/other") { _ in .response(status: 303, headers: [("Location", "/echo")]) }
            s.route("/temp") { _ in .response(status: 307, headers: [("Location", "/echo")]) }
            s.route("/cut") { _ in .closeMidBody(declaredLength: 1000, sentPrefix: Array(repeating: 0x61, count: 100)) }
            s.route("/json") { _ in .text("{\"a\":1}", headers: [("Content-Type", "application/json")]) }
            s.route("/up/") { r in .text("stored \(r.bodyLength)\n", status: 201) }
            s.route("/hop1") { _ in .response(status: 302, headers: [("Location", "/hop2")]) }
            s.route("/hop2") { _ in .response(status: 302, headers: [("Location", "/hop3")]) }
            s.route("/hop3") { _ in .text("end\n") }
            s.routeResource("/file.bin", .init(size: 100_000, seed: 7, etag: "\"e1\""))
            // Cookies: names of one length (curl orders longer names first
            // among equal paths; RFC 6265 does not), absolute expiry dates.
            s.route("/setcookies") { _ in
                .response(status: 200, headers: Self.setCookies.map { ("Set-Cookie", $0) }, body: Array("set\n".utf8))
            }
            s.route("/setone") { _ in .response(status: 200, headers: [("Set-Cookie", "one=1")], body: Array("one\n".utf8)) }
            s.route("/setpair") { _ in
                .response(status: 200, headers: [("Set-Cookie", "x=1"), ("Set-Cookie", "y=2")], body: Array("pair\n".utf8))
            }
            s.route("/login") { _ in .response(status: 302, headers: [("Set-Cookie", "sid=abc; Path=/"), ("Location", "/echo")]) }
            let port = s.port
            s.route("/elsewhere") { _ in .response(status: 302, headers: [("Location", "http://localhost:\(port)/echo")]) }
            s.routeResource("/norange.bin", .init(size: 100_000, seed: 7, honorsRange: false))
        }
        func flaky(_ s: TestServer) {
            common(s)
            let count = LockedCounter()
            s.route("/flaky") { _ in
                count.next() < 2 ? .text("busy \(count.value)\n", status: 503) : .text("fine\n")
            }
        }
        // The server as an HTTP proxy: it answers forwarded requests by
        // their absolute-form target and records what it received.
        @Sendable func forwarded(_ r: TestServer.Request) -> TestServer.Reply {
            switch r.target {
            case "http://origin.example/text": return .text("hello through the proxy\n")
            case "http://origin.example/moved": return .response(status: 302, headers: [("Location", "/text")], body: Array("moved\n".utf8))
            default: return .text("\(r.method) \(r.target) \(r.bodyText)\n")
            }
        }
        func forwardProxy(_ s: TestServer) { s.defaultHandler = forwarded }
        // Demands Basic u:p (Proxy-Authorization: Basic dTpw): 407 otherwise, to CONNECT too.
        func basicProxy(_ s: TestServer) {
            s.defaultHandler = { r in
                guard r.header("Proxy-Authorization") == "Basic dTpw" else {
                    return .response(status: 407, headers: [("Proxy-Authenticate", "Basic realm=\"compat\"")],
                                     body: Array("proxy credentials, please\n".utf8))
                }
                return r.method == "CONNECT" ? .response(status: 502, body: Array("no tunnels\n".utf8), closeConnection: true)
                    : forwarded(r)
            }
        }
        // Demands Digest (SHA-256, qop=auth) for u:p, offered with Basic:
        // checks the answer; a good CONNECT answer gets 502 (no tunnels here).
        func digestProxy(_ s: TestServer) {
            s.defaultHandler = { r in
                guard let value = r.header("Proxy-Authorization"), ProxyDigest.valid(value, method: r.method, target: r.target) else {
                    return .response(status: 407, headers: [("Proxy-Authenticate", "Basic realm=\"compat\""),
                                                            ("Proxy-Authenticate", ProxyDigest.challenge)],
                                     body: Array("proxy credentials, please\n".utf8))
                }
                return r.method == "CONNECT" ? .response(status: 502, body: Array("no tunnels\n".utf8), closeConnection: true)
                    : forwarded(r)
            }
        }
        let proxyFields = ["Host", "Proxy-Authorization"]
        let digestURI = "pocket's Digest answer to a forwarding proxy names the request-target as sent, the absolute URL (RFC 7616 §3.4); curl names the path"
        return [
            Case(name: "GET to stdout", args: ["URL/text"], setup: common),
            Case(name: "-i head and body", args: ["-i", "URL/text"], setup: common),
            Case(name: "-I HEAD", args: ["-I", "URL/text"], setup: common),
            Case(name: "-s -o file", args: ["-s", "-o", "out.txt", "URL/text"], setup: common),
            Case(name: "-O remote name", args: ["-s", "-O", "URL/file.bin"], setup: common),
            Case(name: "--output-dir --create-dirs", args: ["-s", "--create-dirs", "--output-dir", "d/e", "-o", "f.txt", "URL/text"],
                 setup: common),
            Case(name: "-d joined with &", args: ["-s", "-d", "a=1", "-d", "b=2", "URL/echo"], setup: common),
            Case(name: "-d @file drops newlines", args: ["-s", "-d", "@IN/form.txt", "URL/echo"], setup: common,
                 inputs: ["form.txt": Array("x=1\ny=2\n".utf8)]),
            Case(name: "--data-raw keeps @", args: ["-s", "--data-raw", "@not-a-file", "URL/echo"], setup: common),
            Case(name: "--data-binary @file", args: ["-s", "--data-binary", "@IN/blob", "URL/echo"], setup: common,
                 inputs: ["blob": Array("a\r\nb\n".utf8)]),
            Case(name: "--data-urlencode forms", args: ["-s", "--data-urlencode", "q=a b&c", "--data-urlencode", "=x/y",
                                                        "--data-urlencode", "plain text", "URL/echo"], setup: common),
            Case(name: "-G moves data to the query", args: ["-s", "-G", "-d", "q=1", "-d", "r=2", "URL/echo?z=0"], setup: common),
            Case(name: "-A and -e", args: ["-s", "-A", "agent/1", "-e", "http://ref.example/", "URL/echo"], setup: common,
                 headers: ["User-Agent", "Referer"]),
            Case(name: "-H adds, replaces, removes", args: ["-s", "-H", "X-A: 1", "-H", "X-A: 2", "-H", "Accept:", "-H", "X-E;", "URL/echo"],
                 setup: common, headers: ["X-A", "Accept", "X-E"]),
            Case(name: "-X PUT with -d", args: ["-s", "-X", "PUT", "-d", "v=1", "URL/echo"], setup: common),
            Case(name: "-T file to a / URL", args: ["-s", "-T", "IN/up.txt", "URL/up/"], setup: common,
                 inputs: ["up.txt": Array("upload me\n".utf8)]),
            Case(name: "--json", args: ["-s", "--json", "{\"k\":true}", "URL/echo"], setup: common,
                 headers: ["Content-Type", "Content-Length", "Accept"]),
            Case(name: "-F field and file", args: ["-s", "-F", "name=value", "-F", "f=@IN/part.txt", "URL/echo"], setup: common,
                 inputs: ["part.txt": Array("part\n".utf8)], headers: [], compareStdout: false, multipart: true),
            Case(name: "-L 302", args: ["-s", "-L", "URL/found"], setup: common),
            Case(name: "-L -d after 303 is GET", args: ["-s", "-L", "-d", "x=1", "URL/other"], setup: common),
            Case(name: "-L -d after 301 is GET", args: ["-s", "-L", "-d", "x=1", "URL/moved"], setup: common),
            Case(name: "-L -X POST keeps POST after 301", args: ["-s", "-L", "-X", "POST", "-d", "x=1", "URL/moved"], setup: common),
            Case(name: "-L 307 keeps POST and body", args: ["-s", "-L", "-d", "x=1", "URL/temp"], setup: common),
            Case(name: "-i -L prints every head", args: ["-s", "-i", "-L", "URL/found"], setup: common),
            Case(name: "-f on 404", args: ["-s", "-f", "URL/missing"], setup: common),
            Case(name: "--fail-with-body on 404", args: ["-s", "--fail-with-body", "URL/missing"], setup: common),
            Case(name: "404 without -f", args: ["-s", "URL/missing"], setup: common),
            Case(name: "two URLs, one connection", args: ["-s", "URL/text", "URL/echo"], setup: common),
            Case(name: "two URLs with two -o", args: ["-s", "-o", "a.txt", "-o", "b.txt", "URL/text", "URL/json"], setup: common),
            Case(name: "exit status of the last URL", args: ["-s", "-f", "URL/missing", "URL/text"], setup: common,
                 connectionsDiffer: "after a -f failure curl closes the connection; pocket reads the error body and reuses it"),
            Case(name: "--next with its own options", args: ["-s", "-d", "a=1", "URL/echo", "--next", "URL/echo"], setup: common),
            Case(name: "-Z to files", args: ["-s", "-Z", "-o", "a.txt", "-o", "b.bin", "URL/text", "URL/file.bin"], setup: common,
                 connectionsDiffer: "curl -Z waits to reuse one HTTP/1.1 connection; pocket opens one per transfer at once"),
            Case(name: "-w common variables", args: ["-s", "-o", "/dev/null", "-w",
                                                     "%{http_code} %{http_version} %{num_redirects} %{url_effective} %{size_download} %{size_upload} %{content_type} %{exitcode} %{scheme} %{method} %{num_connects} %{remote_ip}:%{remote_port}\\n",
                                                     "-L", "-d", "abc", "URL/found"], setup: common),
            Case(name: "-w unknown variable warns", args: ["-s", "-w", "[%{nope}]%{http_code}\\n", "URL/text"], setup: common),
            Case(name: "-w on a failure", args: ["-s", "-w", "%{http_code} %{exitcode}\\n", "http://127.0.0.1:1/"], setup: common),
            Case(name: "-w header_json", args: ["-s", "-o", "/dev/null", "-w", "%{header_json}", "URL/json"], setup: common),
            Case(name: "--retry writes each body", args: ["-s", "--retry", "3", "--retry-delay", "0", "URL/flaky"], setup: flaky),
            Case(name: "body cut mid-transfer", args: ["-s", "URL/cut"], setup: common, compareStdout: false),
            Case(name: "-f -o on 404 writes no file", args: ["-s", "-f", "-o", "out.txt", "URL/missing"], setup: common),
            Case(name: "-o with a body cut short", args: ["-s", "-o", "cut.bin", "URL/cut"], setup: common),
            Case(name: "-o on 404 keeps the body", args: ["-s", "-o", "nf.txt", "URL/missing"], setup: common),
            Case(name: "-C - on a complete file", args: ["-s", "-C", "-", "-o", "whole.bin", "URL/file.bin"], setup: common,
                 files: ["whole.bin": BytePattern.bytes(seed: 7, range: 0..<100_000)]),
            Case(name: "-C - finishes a partial file", args: ["-s", "-C", "-", "-o", "part.bin", "URL/file.bin"], setup: common,
                 files: ["part.bin": BytePattern.bytes(seed: 7, range: 0..<40_000)], headers: ["Range"]),
            Case(name: "-C - when Range is ignored", args: ["-s", "-C", "-", "-o", "part.bin", "URL/norange.bin"], setup: common,
                 files: ["part.bin": BytePattern.bytes(seed: 7, range: 0..<40_000)], headers: ["Range"]),
            Case(name: "http:/host repaired", args: ["-s", "ONESLASH/text"], setup: common),
            Case(name: "https with --cacert", args: ["-s", "--cacert", "CA", "URL/text"], setup: common, tls: true),
            Case(name: "https, two URLs, one connection", args: ["-s", "--cacert", "CA", "URL/text", "URL/echo"], setup: common,
                 tls: true),
            Case(name: "https -i -L", args: ["-s", "-i", "-L", "--cacert", "CA", "URL/found"], setup: common, tls: true),
            Case(name: "https untrusted certificate", args: ["-s", "URL/text"], setup: common, tls: true),
            Case(name: "https -k", args: ["-s", "-k", "URL/text"], setup: common, tls: true),
            Case(name: "https to a plain HTTP port", args: ["-s", "-k", "PLAINTLS/"], setup: common),
            Case(name: "connection refused", args: ["-s", "http://127.0.0.1:1/"], setup: common),
            Case(name: "unknown host", args: ["-s", "http://no-such-host.invalid/"], setup: common),
            Case(name: "--max-redirs exceeded", args: ["-s", "-L", "--max-redirs", "1", "URL/hop1"], setup: common),
            Case(name: "--retry-all-errors without -f", args: ["-s", "--retry", "2", "--retry-delay", "0", "--retry-all-errors",
                                                                "URL/missing"], setup: common),
            Case(name: "-f --retry on 503", args: ["-s", "-f", "--retry", "3", "--retry-delay", "0", "URL/flaky"], setup: flaky,
                 connectionsDiffer: "after a -f failure curl closes the connection; pocket reads the error body and reuses it"),
            Case(name: "--retry-all-errors with -f", args: ["-s", "-f", "--retry", "2", "--retry-delay", "0", "--retry-all-errors",
                                                             "URL/missing"], setup: common,
                 connectionsDiffer: "after a -f failure curl closes the connection; pocket reads the error body and reuses it"),
            Case(name: "-I -L", args: ["-s", "-I", "-L", "URL/found"], setup: common),
            Case(name: "-w size_header", args: ["-s", "-o", "/dev/null", "-w", "%{size_header} %{size_download}", "URL/text"], setup: common),
            Case(name: "--create-dirs with a path", args: ["-s", "--create-dirs", "-o", "a/b/c.txt", "URL/text"], setup: common),
            Case(name: "-O without a file name", args: ["-s", "-O", "URL/"], setup: common),
            Case(name: "-D - with -L", args: ["-s", "-L", "-D", "-", "-o", "/dev/null", "URL/found"], setup: common),
            Case(name: "big body byte-exact", args: ["-s", "URL/big"], setup: { s in
                common(s)
                s.route("/big") { _ in .response(body: big) }
            }),
            Case(name: "-d from stdin", args: ["-s", "-d", "@-", "URL/echo"], setup: common, stdin: Data("s=1\n".utf8)),
            // Cookies (-b, -c, -j).
            Case(name: "-b name=value strings", args: ["-s", "-b", "a=1; b=2", "-b", "c=3", "URL/echo"], setup: common,
                 headers: ["Cookie"]),
            Case(name: "-b a Netscape cookie file", args: ["-s", "-b", "IN/jar.txt", "URL/echo"], setup: common,
                 inputs: ["jar.txt": Self.jarFile], headers: ["Cookie"]),
            Case(name: "-b saved Set-Cookie lines", args: ["-s", "-b", "IN/head.txt", "URL/echo"], setup: common,
                 inputs: ["head.txt": Array("HTTP/1.1 200 OK\r\nSet-Cookie: hh=1; Path=/\r\nSet-Cookie: ii=2\r\n\r\n".utf8)],
                 headers: ["Cookie"]),
            Case(name: "-b a missing file is ignored", args: ["-s", "-b", "IN/none.txt", "URL/echo"], setup: common,
                 headers: ["Cookie"]),
            Case(name: "-c writes what the server set", args: ["-s", "-c", "out.jar", "URL/setcookies"], setup: common),
            Case(name: "-c - writes to stdout at the end", args: ["-s", "-c", "-", "URL/setcookies"], setup: common,
                 jarOnStdout: true),
            Case(name: "-b file -c file", args: ["-s", "-b", "IN/jar.txt", "-c", "out.jar", "URL/setcookies"], setup: common,
                 inputs: ["jar.txt": Self.jarFile], headers: ["Cookie"]),
            Case(name: "-L -c sends a cookie set by the redirect", args: ["-s", "-L", "-c", "out.jar", "URL/login"], setup: common,
                 headers: ["Cookie"]),
            Case(name: "-L without a cookie store", args: ["-s", "-L", "URL/login"], setup: common, headers: ["Cookie"]),
            Case(name: "-j drops the file's session cookies", args: ["-s", "-j", "-b", "IN/jar.txt", "URL/echo"], setup: common,
                 inputs: ["jar.txt": Self.jarFile], headers: ["Cookie"]),
            Case(name: "-c after a failed transfer", args: ["-s", "-b", "IN/jar.txt", "-c", "out.jar", "http://127.0.0.1:1/"],
                 setup: common, inputs: ["jar.txt": Self.jarFile]),
            Case(name: "-H Cookie wins over -b strings", args: ["-s", "-b", "a=1", "-H", "Cookie: h=1", "URL/echo"], setup: common,
                 headers: ["Cookie"]),
            Case(name: "--next with -b '' shares the store", args: ["-s", "-c", "out.jar", "URL/setone", "--next", "-b", "", "URL/echo"],
                 setup: common, headers: ["Cookie"]),
            Case(name: "--next without -b/-c sends no stored cookie", args: ["-s", "-c", "out.jar", "URL/setone", "--next", "URL/echo"],
                 setup: common, headers: ["Cookie"],
                 connectionsDiffer: "the cookie store is a client's: a set without -b/-c runs on a client of its own, with its own connection"),
            Case(name: "cookies of equal paths, in one session", args: ["-s", "-c", "out.jar", "URL/setpair", "URL/echo"],
                 setup: common, headers: ["Cookie"],
                 differs: "RFC 6265 §5.4: among equal paths the earlier-created cookie goes first; curl 7.88 sends the newest first"),
            Case(name: "-b string after a cross-origin -L", args: ["-s", "-L", "-b", "a=1", "URL/elsewhere"], setup: common,
                 headers: ["Cookie"],
                 differs: "pocket drops the -b string (a Cookie field) on a redirect to another origin, as it drops -H Cookie; curl 7.88 sends it to every host"),
            Case(name: "-H Cookie with the cookie store", args: ["-s", "-b", "IN/jar.txt", "-H", "Cookie: h=1", "URL/echo"],
                 setup: common, inputs: ["jar.txt": Self.jarFile], headers: ["Cookie"],
                 differs: "pocket sends one Cookie field, the store's cookies then the -H ones (RFC 6265 §5.4: one field); curl 7.88 sends two"),
            Case(name: "User-Agent", args: ["-s", "URL/echo"], setup: common, headers: ["User-Agent"],
                 differs: "pocket sends User-Agent: Pocket/0.2.0, not curl/7.88.1"),
            Case(name: "-o download asks for identity", args: ["-s", "-o", "id.txt", "URL/text"], setup: common,
                 headers: ["Accept-Encoding"],
                 differs: "pocket's -o download sends Accept-Encoding: identity so that it can be resumed by Range"),
            Case(name: "--version", args: ["--version"], compareStdout: true,
                 differs: "pocket prints its own version and libraries"),

            // Over a Unix socket (the server listens on SOCK).
            Case(name: "--unix-socket GET", args: ["-s", "--unix-socket", "SOCK", "http://localhost/text"], setup: common,
                 headers: ["Host"], reach: .unixSocket),
            Case(name: "--unix-socket, the URL names the host", args: ["-s", "--unix-socket", "SOCK", "http://api.internal:8080/echo?q=1"],
                 setup: common, headers: ["Host"], reach: .unixSocket),
            Case(name: "--unix-socket two URLs, one connection", args: ["-s", "--unix-socket", "SOCK", "http://localhost/text",
                                                                        "http://localhost/echo"], setup: common, reach: .unixSocket),
            Case(name: "--unix-socket -d POST", args: ["-s", "-d", "a=1", "--unix-socket", "SOCK", "http://localhost/echo"], setup: common,
                 reach: .unixSocket),
            Case(name: "--unix-socket -i -L", args: ["-s", "-i", "-L", "--unix-socket", "SOCK", "http://localhost/found"], setup: common,
                 reach: .unixSocket),
            Case(name: "--unix-socket -o file", args: ["-s", "-o", "f.bin", "--unix-socket", "SOCK", "http://localhost/file.bin"],
                 setup: common, reach: .unixSocket),
            Case(name: "--unix-socket -f on 404", args: ["-s", "-f", "--unix-socket", "SOCK", "http://localhost/missing"], setup: common,
                 reach: .unixSocket),
            Case(name: "--unix-socket to a missing socket", args: ["-s", "--unix-socket", "NOSOCK", "http://localhost/text"],
                 setup: common, reach: .unixSocket),

            // Through the server as a recording proxy.
            Case(name: "-x forwards in absolute form", args: ["-s", "-x", "PROXY", "http://origin.example/text"], setup: forwardProxy,
                 headers: proxyFields, reach: .proxy),
            Case(name: "-x target with a port and query", args: ["-s", "-x", "PROXY", "http://origin.example:8080/echo?q=1"],
                 setup: forwardProxy, headers: proxyFields, reach: .proxy),
            Case(name: "-x two URLs, one proxy connection", args: ["-s", "-x", "PROXY", "http://origin.example/text",
                                                                   "http://origin.example/echo"], setup: forwardProxy,
                 headers: proxyFields, reach: .proxy),
            Case(name: "-x two origins through one proxy", args: ["-s", "-x", "PROXY", "http://origin.example/text",
                                                                  "http://other.example/echo"], setup: forwardProxy,
                 headers: proxyFields,
                 connectionsDiffer: "pocket pools a forwarding proxy's connections per origin too (each origin's connection cap applies); curl reuses one proxy connection for every origin",
                 reach: .proxy),
            Case(name: "-x -d POST", args: ["-s", "-x", "PROXY", "-d", "a=1", "http://origin.example/echo"], setup: forwardProxy,
                 headers: proxyFields + ["Content-Type", "Content-Length"], reach: .proxy),
            Case(name: "-x -L redirect through the proxy", args: ["-s", "-L", "-x", "PROXY", "http://origin.example/moved"],
                 setup: forwardProxy, headers: proxyFields, reach: .proxy),
            Case(name: "-x --proxy-user: Basic up front", args: ["-s", "-x", "PROXY", "--proxy-user", "u:p", "http://origin.example/echo"],
                 setup: basicProxy, headers: proxyFields, reach: .proxy),
            Case(name: "-x user:password@proxy", args: ["-s", "-x", "http://u:p@PROXYHOST", "http://origin.example/echo"],
                 setup: basicProxy, headers: proxyFields, reach: .proxy),
            Case(name: "--proxy-digest answers the 407", args: ["-s", "-x", "PROXY", "--proxy-user", "u:p", "--proxy-digest",
                                                               "http://origin.example/echo"], setup: digestProxy,
                 headers: proxyFields, differs: digestURI, reach: .proxy),
            Case(name: "--proxy-anyauth picks Digest over Basic", args: ["-s", "-x", "PROXY", "--proxy-user", "u:p", "--proxy-anyauth",
                                                                       "http://origin.example/echo"], setup: digestProxy,
                 headers: proxyFields, differs: digestURI, reach: .proxy),
            Case(name: "CONNECT without credentials: 407", args: ["-s", "-x", "PROXY", "https://origin.example/"], setup: basicProxy,
                 headers: proxyFields, reach: .proxy),
            Case(name: "-w after a CONNECT 407", args: ["-s", "-w", "%{http_code} %{exitcode}\\n", "-x", "PROXY", "https://origin.example/"],
                 setup: basicProxy, headers: proxyFields, reach: .proxy),
            Case(name: "CONNECT with --proxy-user refused: 407", args: ["-s", "-x", "PROXY", "--proxy-user", "u:wrong",
                                                                      "https://origin.example:8443/"], setup: basicProxy,
                 headers: proxyFields, reach: .proxy),
            Case(name: "CONNECT --proxy-user accepted, tunnel refused", args: ["-s", "-x", "PROXY", "--proxy-user", "u:p",
                                                                             "https://origin.example/"], setup: basicProxy,
                 headers: proxyFields, reach: .proxy),
            Case(name: "CONNECT --proxy-digest answers the 407", args: ["-s", "-x", "PROXY", "--proxy-user", "u:p", "--proxy-digest",
                                                                      "https://origin.example/"], setup: digestProxy,
                 headers: proxyFields,
                 connectionsDiffer: "pocket sends the answered CONNECT on a new connection; curl reuses the one the proxy kept open after its 407",
                 reach: .proxy),
            Case(name: "-x --proxy-user refused: 407", args: ["-s", "-x", "PROXY", "--proxy-user", "u:wrong", "http://origin.example/echo"],
                 setup: basicProxy, headers: proxyFields,
                 differs: "a forwarding proxy's 407 that pocket cannot answer is an error (exit 56, as for a refused CONNECT), not the proxy's page with exit 0",
                 reach: .proxy),
        ]
    }

    /// What /setcookies sets (a Secure cookie too: curl and pocket both
    /// count loopback as secure).
    static let setCookies = ["aa=1; Path=/", "bb=2; Path=/echo; HttpOnly", "cc=3; Expires=Wed, 09 Jun 2100 10:18:14 GMT",
                             "dd=4", "ee=5; Secure", "ff=6; Path=/nothere"]

    /// A cookie file as curl writes one: session, persistent, HttpOnly,
    /// Secure, another path, an expired cookie, another host.
    static let jarFile = Array("""
        # Netscape HTTP Cookie File
        # https://curl.se/docs/http-cookies.html

        127.0.0.1\tFALSE\t/\tFALSE\t0\tn2\tv2
        127.0.0.1\tFALSE\t/\tFALSE\t0\tn1\tv1
        #HttpOnly_127.0.0.1\tFALSE\t/echo\tFALSE\t4102444800\tho\th
        127.0.0.1\tFALSE\t/\tTRUE\t0\tse\ts
        127.0.0.1\tFALSE\t/other\tFALSE\t4102444800\tno\tx
        127.0.0.1\tFALSE\t/\tFALSE\t1\tex\tpired
        localhost\tFALSE\t/\tFALSE\t0\tlo\tx

        """.utf8)

    /// A cookie jar's cookie lines, sorted (the comment lines name the
    /// tool, and the order of a file is not compared).
    static func jarLines(_ text: String) -> String {
        text.split(separator: "\n").filter { !$0.hasPrefix("# ") && !$0.isEmpty }.sorted().joined(separator: "\n")
    }

    func testCasesAgainstCurl() throws {
        let curl = "/usr/bin/curl"
        guard FileManager.default.isExecutableFile(atPath: curl) else {
            throw XCTSkip("curl is not installed (scripts/setup.sh installs it)")
        }
        let pocket = try PocketBinary.path().path
        var rows: [String] = []
        for c in Self.cases {
            let theirs = try run(c, executable: curl)
            let ours = try run(c, executable: pocket)
            let same = theirs == ours
            if let reason = c.differs {
                XCTAssertFalse(same, "\(c.name): expected a deliberate difference (\(reason)), but pocket now matches curl")
                rows.append("| \(c.name) | `\(Self.shell(c.args))` | differs (deliberate: \(reason)) |")
                continue
            }
            XCTAssertEqual(theirs.status, ours.status, "\(c.name): exit status")
            XCTAssertEqual(theirs.stdout, ours.stdout, "\(c.name): stdout")
            XCTAssertEqual(theirs.files, ours.files, "\(c.name): files written")
            XCTAssertEqual(theirs.requests, ours.requests, "\(c.name): what the server received")
            // Where the connection count deliberately differs it is reported, not compared
            // (with -Z it depends on timing: a transfer that ends first leaves its connection to the next).
            if c.connectionsDiffer == nil {
                XCTAssertEqual(theirs.connections, ours.connections, "\(c.name): connections")
            }
            var outcome = theirs.status == ours.status && theirs.stdout == ours.stdout && theirs.files == ours.files
                && theirs.requests == ours.requests ? "same, exit \(ours.status)" : "**DIFFERENT**"
            if let reason = c.connectionsDiffer {
                outcome += " (connections: curl \(theirs.connections), pocket \(ours.connections); deliberate: \(reason))"
            }
            rows.append("| \(c.name) | `\(Self.shell(c.args))` | \(outcome) |")
        }
        if let path = ProcessInfo.processInfo.environment["POCKET_COMPAT_REPORT"] {
            let table = "| case | command line | result |\n|---|---|---|\n" + rows.joined(separator: "\n") + "\n"
            try table.write(toFile: path, atomically: true, encoding: .utf8)
        }
    }

    /// Cookie files both ways: a jar curl's -c wrote, read by pocket's -b,
    /// and one pocket's -c wrote, read by curl's -b; each time the server
    /// sees the same Cookie field from both tools, and both jars hold the
    /// same cookies.
    func testCookieJarsRoundTripBetweenCurlAndPocket() throws {
        let curl = "/usr/bin/curl"
        guard FileManager.default.isExecutableFile(atPath: curl) else {
            throw XCTSkip("curl is not installed (scripts/setup.sh installs it)")
        }
        let pocket = try PocketBinary.path().path
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/setcookies") { _ in
            .response(status: 200, headers: Self.setCookies.map { ("Set-Cookie", $0) }, body: Array("set\n".utf8))
        }
        server.defaultHandler = { r in .text("\(r.header("Cookie") ?? "-")\n") }
        let dir = try PocketBinary.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let fromCurl = dir.appendingPathComponent("curl.jar").path, fromPocket = dir.appendingPathComponent("pocket.jar").path
        func run(_ tool: String, _ args: [String]) throws -> String {
            let (result, timedOut) = try ChildProcess.run(tool, ["-s"] + args, input: Data(), directory: dir.path, timeout: 60)
            XCTAssertFalse(timedOut)
            XCTAssertEqual(result.status, 0, "\(tool) \(args)")
            return String(decoding: result.stdout, as: UTF8.self)
        }
        _ = try run(curl, ["-c", fromCurl, server.url("/setcookies")])
        _ = try run(pocket, ["-c", fromPocket, server.url("/setcookies")])
        let curlJar = String(decoding: FileManager.default.contents(atPath: fromCurl) ?? Data(), as: UTF8.self)
        let pocketJar = String(decoding: FileManager.default.contents(atPath: fromPocket) ?? Data(), as: UTF8.self)
        XCTAssertEqual(Self.jarLines(curlJar).split(separator: "\n").count, Self.setCookies.count, curlJar)
        XCTAssertEqual(Self.jarLines(pocketJar), Self.jarLines(curlJar), "the same cookies, written the same way")
        XCTAssertTrue(pocketJar.contains("#HttpOnly_127.0.0.1\tFALSE\t/echo\tFALSE\t0\tbb\t2\n"), pocketJar)
        XCTAssertTrue(pocketJar.contains("127.0.0.1\tFALSE\t/\tFALSE\t4116219494\tcc\t3\n"), pocketJar)
        // curl -c → pocket -b, pocket -c → curl -b: the server sees what the jar's own tool sends.
        for (jar, name) in [(fromCurl, "curl -c"), (fromPocket, "pocket -c")] {
            for path in ["/echo", "/echo/x", "/"] {
                let byCurl = try run(curl, ["-b", jar, server.url(path)])
                let byPocket = try run(pocket, ["-b", jar, server.url(path)])
                XCTAssertEqual(byPocket, byCurl, "\(name) jar, GET \(path)")
                if path.hasPrefix("/echo") { XCTAssertTrue(byPocket.hasPrefix("bb=2; "), byPocket) }
            }
        }
        // The server's view: the Cookie fields of the last six requests pair up.
        let seen = server.receivedRequests.suffix(12).map { $0.header("Cookie") ?? "-" }
        XCTAssertEqual(stride(from: 0, to: 12, by: 2).map { seen[$0] }, stride(from: 1, to: 12, by: 2).map { seen[$0] })
    }

    /// Cookies read from a file are sent in curl's order: among equal paths
    /// the longer domain first, then the longer name, then the file's later
    /// line first; so `-c jar` then `-b jar` sends what curl sends.
    func testCookieFileOrderFollowsCurl() throws {
        let curl = "/usr/bin/curl"
        guard FileManager.default.isExecutableFile(atPath: curl) else {
            throw XCTSkip("curl is not installed (scripts/setup.sh installs it)")
        }
        let pocket = try PocketBinary.path().path
        let server = try TestServer()
        defer { server.shutdown() }
        server.route("/set") { _ in
            .response(status: 200, headers: ["a=1", "bbb=2", "cc=3", "d=4"].map { ("Set-Cookie", $0) }, body: Array("set\n".utf8))
        }
        server.defaultHandler = { r in .text("\(r.header("Cookie") ?? "-")\n") }
        let dir = try PocketBinary.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        func run(_ tool: String, _ args: [String]) throws -> String {
            let (result, timedOut) = try ChildProcess.run(tool, ["-s"] + args, input: Data(), directory: dir.path, timeout: 60)
            XCTAssertFalse(timedOut)
            XCTAssertEqual(result.status, 0, "\(tool) \(args)")
            return String(decoding: result.stdout, as: UTF8.self)
        }
        // -c jar, then -b jar: each tool with its own jar.
        var sent: [String] = []
        for (tool, jar) in [(curl, "curl.jar"), (pocket, "pocket.jar")] {
            _ = try run(tool, ["-c", jar, server.url("/set")])
            sent.append(try run(tool, ["-b", jar, server.url("/echo")]))
        }
        XCTAssertEqual(sent[1], sent[0], "pocket -c then -b sends what curl -c then -b sends")
        XCTAssertEqual(sent[1], "bbb=2; cc=3; a=1; d=4\n", "longer names first, then the file's later line")
        // Hand-written files: names of every length, and a Domain cookie beside a host-only one.
        let host = "www.example.com", resolve = ["--resolve", "www.example.com:\(server.port):127.0.0.1"]
        let files = [
            "names": ["127.0.0.1\tFALSE\t/\tFALSE\t0\taa\t1", "127.0.0.1\tFALSE\t/\tFALSE\t0\tb\t2",
                      "127.0.0.1\tFALSE\t/\tFALSE\t0\tccc\t3", "127.0.0.1\tFALSE\t/\tFALSE\t0\tdd\t4"],
            "domains": ["\(host)\tFALSE\t/\tFALSE\t0\tb\t2", ".example.com\tTRUE\t/\tFALSE\t0\ta\t1"],
            "domains-reversed": [".example.com\tTRUE\t/\tFALSE\t0\ta\t1", "\(host)\tFALSE\t/\tFALSE\t0\tb\t2"],
        ]
        for (name, lines) in files.sorted(by: { $0.key < $1.key }) {
            let path = dir.appendingPathComponent("\(name).txt").path
            try ("# Netscape HTTP Cookie File\n\n" + lines.joined(separator: "\n") + "\n").write(toFile: path, atomically: true, encoding: .utf8)
            let url = name == "names" ? server.url("/echo") : "http://\(host):\(server.port)/echo"
            let args = (name == "names" ? [] : resolve) + ["-b", path, url]
            XCTAssertEqual(try run(pocket, args), try run(curl, args), "\(name): the same Cookie field as curl")
        }
    }

    /// The command line as a shell would take it (for the report's table).
    static func shell(_ args: [String]) -> String {
        args.map { arg in
            !arg.isEmpty && arg.allSatisfy({ $0.isLetter || $0.isNumber || "-_./:=@,%".contains($0) }) ? arg
                : "'" + arg.replacingOccurrences(of: "'", with: "'\\''") + "'"
        }.joined(separator: " ").replacingOccurrences(of: "|", with: "\\|")
    }

    /// Runs `c` with `executable` in a fresh folder against a fresh server.
    private func run(_ c: Case, executable: String) throws -> Outcome {
        let dir = try PocketBinary.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let socket = dir.appendingPathComponent("s.sock").path
        let server = c.tls ? try TestServer(tls: .localhost())
            : c.reach == .unixSocket ? try TestServer(unixSocketPath: socket) : try TestServer()
        defer { server.shutdown() }
        c.setup(server)
        let work = dir.appendingPathComponent("work"), inputs = dir.appendingPathComponent("in")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: inputs, withIntermediateDirectories: true)
        for (name, bytes) in c.files { try Data(bytes).write(to: work.appendingPathComponent(name)) }
        for (name, bytes) in c.inputs { try Data(bytes).write(to: inputs.appendingPathComponent(name)) }
        let base = c.tls ? server.url(host: "localhost", path: "/") : server.url("/")
        let ca = try TestCertificates.shared.caCert
        // A port that answers a ClientHello in plain HTTP, as nginx does (the test server waits for a head).
        let plain = try PlainHTTPAnswerer(connections: 1)
        defer { plain.stop() }
        let args = c.args.map { arg -> String in
            arg.replacingOccurrences(of: "PLAINTLS/", with: "https://127.0.0.1:\(plain.port)/")
                .replacingOccurrences(of: "ONESLASH/", with: base.replacingOccurrences(of: "http://", with: "http:/"))
                .replacingOccurrences(of: "URL/", with: base)
                .replacingOccurrences(of: "IN/", with: inputs.path + "/")
                .replacingOccurrences(of: "PROXYHOST", with: "127.0.0.1:\(server.port)")
        }.map { arg -> String in
            switch arg {
            case "CA": return ca
            case "SOCK": return socket
            case "NOSOCK": return dir.appendingPathComponent("none.sock").path
            case "PROXY": return "http://127.0.0.1:\(server.port)"
            default: return arg
            }
        }
        let (result, timedOut) = try ChildProcess.run(executable, args, input: c.stdin ?? Data(), directory: work.path, timeout: 60)
        XCTAssertFalse(timedOut, "\(c.name): \(executable) did not finish")
        let port = String(server.port)
        func normal(_ s: String) -> String {
            s.replacingOccurrences(of: ":" + port, with: ":PORT").replacingOccurrences(of: inputs.path, with: "IN")
        }
        var files: [String: String] = [:]
        if let walker = FileManager.default.enumerator(atPath: work.path) {
            for case let name as String in walker {
                var isDir: ObjCBool = false
                let path = work.appendingPathComponent(name).path
                guard FileManager.default.fileExists(atPath: path, isDirectory: &isDir), !isDir.boolValue else { continue }
                let data = FileManager.default.contents(atPath: path) ?? Data()
                files[name] = name.hasSuffix(".jar") ? Self.jarLines(String(decoding: data, as: UTF8.self))
                    : "\(data.count) bytes, sha256 \(SHA256Digest.hex(Array(data)))"
            }
        }
        let requests = server.receivedRequests
        var described = requests.map { r -> String in
            var body = r.bodyText
            var fields = c.headers.map { name in "\(name): \(ProxyDigest.comparable(r.headerValues(name).joined(separator: ", ")))" }
            if c.multipart, let type = r.header("Content-Type"), let b = type.range(of: "boundary=") {
                let boundary = String(type[b.upperBound...])
                body = body.replacingOccurrences(of: boundary, with: "BOUNDARY")
                fields.append("Content-Type: " + type.replacingOccurrences(of: boundary, with: "BOUNDARY"))
            }
            return normal("\(r.method) \(r.target) [\(fields.joined(separator: "; "))] \(body)")
        }
        if c.args.contains("-Z") { described.sort() } // at once: in any order
        var stdout = String(decoding: c.compareStdout ? result.stdout : Data(), as: UTF8.self)
        if c.jarOnStdout { stdout = Self.jarLines(stdout) }
        return Outcome(status: result.status,
                       stdout: normal(stdout),
                       files: files, requests: described, connections: Set(requests.map(\.connectionIndex)).count)
    }
}

/// A counter shared by a route's handler calls.
final class LockedCounter: @unchecked Sendable {
    // Guarded by `lock`.
    private var count = 0
    private let lock = NSLock()
    /// The count before this call, then one more.
    func next() -> Int { lock.withLock { defer { count += 1 }; return count } }
    var value: Int { lock.withLock { count } }
}

/// The Digest side of the recording proxy (SHA-256, qop=auth, user u,
/// password p), and Digest answers made comparable across tools: their
/// fields sorted, unquoted, without the client nonce and the hash (which
/// differ on every run; the proxy checks the hash itself).
enum ProxyDigest {
    static let realm = "compat", nonce = "n-compat-1"
    static let challenge = "Digest realm=\"\(realm)\", qop=\"auth\", nonce=\"\(nonce)\", algorithm=SHA-256"

    static func h(_ s: String) -> String { SHA256Digest.hex(Array(s.utf8)) }

    /// The fields of a `Digest a=b, c="d"` value (names lowercased, quotes removed).
    static func fields(_ value: String) -> [String: String]? {
        guard value.hasPrefix("Digest ") else { return nil }
        var out: [String: String] = [:]
        var rest = Substring(value.dropFirst(7))
        while !rest.isEmpty {
            rest = rest.drop { $0 == " " || $0 == "," }
            guard let eq = rest.firstIndex(of: "=") else { break }
            let name = rest[..<eq].trimmingCharacters(in: .whitespaces).lowercased()
            rest = rest[rest.index(after: eq)...]
            var v = ""
            if rest.first == "\"" {
                rest = rest.dropFirst()
                while let ch = rest.first, ch != "\"" {
                    if ch == "\\" { rest = rest.dropFirst() }
                    if let next = rest.first { v.append(next) }
                    rest = rest.dropFirst()
                }
                rest = rest.dropFirst()
            } else {
                let end = rest.firstIndex(of: ",") ?? rest.endIndex
                v = rest[..<end].trimmingCharacters(in: .whitespaces)
                rest = rest[end...]
            }
            out[name] = v
        }
        return out
    }

    /// A correct answer of user u, password p for `method` and `target`.
    /// Its uri is the request-target as sent (RFC 7616 §3.4: what pocket
    /// sends), or, leniently, a forwarded target's path (what curl sends).
    static func valid(_ value: String, method: String, target: String) -> Bool {
        guard let f = fields(value), let uri = f["uri"], f["username"] == "u", f["realm"] == realm, f["nonce"] == nonce,
              f["qop"] == "auth", let nc = f["nc"], let cnonce = f["cnonce"] else { return false }
        let path = URL(string: target).map { $0.path + ($0.query.map { "?" + $0 } ?? "") }
        guard uri == target || (target.hasPrefix("http://") && uri == path) else { return false }
        let expected = h("\(h("u:\(realm):p")):\(nonce):\(nc):\(cnonce):auth:\(h("\(method):\(uri)"))")
        return f["response"] == expected
    }

    /// `value` as compared: a Digest answer's stable fields, sorted; anything else as it is.
    static func comparable(_ value: String) -> String {
        guard let f = fields(value) else { return value }
        return "Digest " + f.filter { $0.key != "cnonce" && $0.key != "response" }.map { "\($0.key)=\($0.value)" }.sorted()
            .joined(separator: ", ")
    }
}
