#!/usr/bin/env python3
"""Differential checks of the pocket CLI against curl on the same inputs.

    scripts/differential.py cookies [--pocket PATH] [--port N] [--verbose]
    scripts/differential.py noproxy [--pocket PATH] [--port N] [--verbose]

cookies: a table of Set-Cookie lines, each set by a loopback server for one
URL, times a list of request URLs. Each tool stores the cookies of one
response in its own cookie file (-c), then reads that file (-b) and requests
every URL in one invocation (one cookie engine); the server answers each
request with the Cookie field it received. The Cookie fields are compared.

noproxy: a table of NO_PROXY values times hosts. Each tool is run with
http_proxy naming the loopback server and NO_PROXY set; the server answers
"proxy" to an absolute-form request target (it was used as the proxy) and
"direct" otherwise (the host was reached directly through --resolve).

Both modes print every disagreement. A disagreement listed in KNOWN_* below
(with the reason it is one, and which side the RFC or curl's documentation
holds right) is expected; any other, or a known one that went away, makes
the script exit 1. The server listens on 127.0.0.1 and ::1 only, on --port
(default 24080), and stops when the script ends. Build pocket first
(`swift build --product pocket`).
"""
import argparse, concurrent.futures, os, socket, subprocess, sys, tempfile, threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# ---- cookies ----

# (Set-Cookie lines, the URL path and host they are set from). Every line is
# one response's field; each case is a fresh store.
COOKIE_CASES = [
    (["a=1"], "example.com", "/"),
    (["a=1"], "example.com", "/docs/page"),                     # default-path /docs
    (["a=1"], "example.com", "/docs/"),                         # default-path /docs
    (["a=1; Path=/docs"], "example.com", "/"),
    (["a=1; Path=/docs/"], "example.com", "/"),
    (["a=1; Path=docs"], "example.com", "/dir/sub/set"),        # not starting with /: default-path
    (["a=1; Path="], "example.com", "/dir/sub/set"),
    (["a=1; Domain=example.com"], "sub.example.com", "/"),
    (["a=1; Domain=.example.com"], "example.com", "/"),
    (["a=1; Domain=EXAMPLE.com"], "sub.example.com", "/"),
    (["a=1; Domain=example.com."], "example.com", "/"),
    (["a=1; Domain="], "sub.example.com", "/"),
    (["a=1; Domain=sub.example.com"], "example.com", "/"),       # not a parent of the host
    (["a=1; Domain=other.com"], "example.com", "/"),
    (["a=1; Domain=xample.com"], "example.com", "/"),
    (["a=1; Domain=com"], "example.com", "/"),                  # a public suffix
    (["a=1; Domain=co.uk"], "www.example.co.uk", "/"),
    (["a=1; Domain=example.co.uk"], "www.example.co.uk", "/"),
    (["a=1; Domain=github.io"], "foo.github.io", "/"),          # the list's private section
    (["a=1"], "co.uk", "/"),                                    # host-only on a suffix itself
    (["a=1; Domain=co.uk"], "co.uk", "/"),
    (["a=1; Domain=127.0.0.1"], "127.0.0.1", "/"),
    (["a=1; Domain=0.0.1"], "127.0.0.1", "/"),
    (["a=1"], "127.0.0.1", "/"),
    (["a=1; Domain=localhost"], "localhost", "/"),
    (["a=1"], "localhost", "/"),
    (["a=1; Secure"], "example.com", "/"),
    (["a=1; Secure"], "localhost", "/"),
    (["__Secure-a=1; Secure"], "example.com", "/"),
    (["__Host-a=1; Secure; Path=/"], "example.com", "/"),
    (["__Host-a=1; Path=/"], "example.com", "/"),
    (["__host-a=1; Path=/"], "example.com", "/"),
    (["a=1; HttpOnly"], "example.com", "/"),
    (["a=1; SameSite=Strict"], "example.com", "/"),
    (["a=1; Max-Age=0"], "example.com", "/"),
    (["a=1; Max-Age=-5"], "example.com", "/"),
    (["a=1; Max-Age=3600"], "example.com", "/"),
    (["a=1; Expires=Wed, 09 Jun 2021 10:18:14 GMT"], "example.com", "/"),
    (["a=1; Expires=Wed, 09 Jun 2100 10:18:14 GMT"], "example.com", "/"),
    (["a=1; Expires=Wed, 09 Jun 2021 10:18:14 GMT; Max-Age=3600"], "example.com", "/"),
    (["a=1", "a=2"], "example.com", "/"),
    (["a=1", "a=2; Max-Age=0"], "example.com", "/"),
    (["a=1; Path=/", "a=2; Path=/docs"], "example.com", "/"),
    (["b=1; Path=/", "a=2; Path=/docs", "c=3; Path=/docs/x"], "example.com", "/"),
    (["a=1", "a=2; Domain=example.com"], "example.com", "/"),
    (['a="x y"'], "example.com", "/"),
    (["a=x y"], "example.com", "/"),
    (["a = 1 "], "example.com", "/"),
    (["a="], "example.com", "/"),
    (["=1"], "example.com", "/"),
    (["1"], "example.com", "/"),
    (["a=1;Path=/docs;Domain=example.com"], "sub.example.com", "/"),
    (["a=1; path=/DOCS"], "example.com", "/"),
    (["a=" + "v" * 4090], "example.com", "/"),                  # name + value 4091
    (["a=" + "v" * 4100], "example.com", "/"),                  # name + value 4101 > 4096
    (["a=1; Domain=example.com; Domain=other.com"], "example.com", "/"),  # the last one counts
    (["a=1; Path=/docs; Path=/"], "example.com", "/"),
]

COOKIE_URLS = [
    "example.com/", "example.com/docs", "example.com/docs/", "example.com/docs/x", "example.com/docsx",
    "example.com/DOCS", "example.com/dir/sub/x", "example.com/dir/subx", "example.com/dir/",
    "sub.example.com/", "a.sub.example.com/docs/x", "other.com/", "xample.com/", "notexample.com/",
    "www.example.co.uk/", "example.co.uk/", "other.co.uk/", "co.uk/", "foo.github.io/", "bar.github.io/",
    "127.0.0.1/", "localhost/",
]

# Cases where the tools disagree and Pocket follows RFC 6265bis, keyed by
# the case's Set-Cookie lines and origin ("LINES @ HOST PATH"):
# (why, the side the RFC holds right). Every disagreement of such a case is
# expected; a disagreement in any other case fails the run.
KNOWN_COOKIES = {
    "a=1; Path=docs @ example.com/dir/sub/set": (
        "a Path that does not start with '/' gives the default-path /dir/sub (RFC 6265bis §5.6.4); curl uses /",
        "pocket"),
    "a=1; Path= @ example.com/dir/sub/set": (
        "an empty Path gives the default-path /dir/sub (RFC 6265bis §5.6.4); curl uses /", "pocket"),
    "a=1; Path=/docs/ @ example.com/": (
        "cookie-path /docs/ does not path-match the request path /docs (§5.1.4); curl drops the trailing '/'",
        "pocket"),
    "a=1; Domain=co.uk @ co.uk/": (
        "a Domain that is a public suffix and the host itself makes a host-only cookie (§5.7 step 9); "
        "curl stores a domain cookie and sends it to every host under co.uk",
        "pocket"),
}

# ---- NO_PROXY ----

NOPROXY_PATTERNS = [
    "example.com", ".example.com", "*.example.com", "sub.example.com", "EXAMPLE.COM", "example.com.",
    "xample.com", "com", "*", "*,example.com", "other.com, example.com", " example.com ", "example.com:80",
    "localhost", "127.0.0.1", "127.0.0.0/8", "127.0.0.1/32", "127.0.0.2/31", "127.1.0.0/16", "10.0.0.0/8",
    "::1", "[::1]", "::1/128", "::/0", "0.0.0.0/0", "127.0.0.1,::1", "", ",", "*.com",
]

NOPROXY_HOSTS = [
    "example.com", "sub.example.com", "a.sub.example.com", "notexample.com", "xample.com", "EXAMPLE.com",
    "example.com.", "other.com", "localhost", "127.0.0.1", "[::1]",
]

# "NO_PROXY='VALUE' HOST" -> (why, the side curl's documentation holds right).
KNOWN_NOPROXY = {
    "NO_PROXY='0.0.0.0/0' 127.0.0.1": (
        "curl documents CIDR as the number of network bits compared: /0 compares none and matches every "
        "address; curl 7.88 compares the whole address", "pocket"),
    "NO_PROXY='::/0' [::1]": ("the same for IPv6", "pocket"),
    "NO_PROXY='::1/128' [::1]": (
        "curl documents CIDR for IP addresses; ::1/128 is ::1, which curl 7.88 matches only without the mask",
        "pocket"),
    "NO_PROXY='[::1]' [::1]": (
        "a name matches the hostname itself, which the URL writes [::1]; curl documents no bracketed form",
        "pocket"),
}


# ---- the loopback server ----

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def answer(self, body, extra=()):
        data = body.encode()
        self.send_response(200)
        for name, value in extra:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path.startswith("http://"):
            self.answer("proxy\n")
            return
        target = urlsplit(self.path)
        if target.path == "/np":
            self.answer("direct\n")
            return
        if target.path.endswith("/set") or "case=" in (target.query or ""):
            case = int(parse_qs(target.query)["case"][0])
            self.answer("set\n", [("Set-Cookie", line) for line in COOKIE_CASES[case][0]])
            return
        self.answer("[%s]\n" % ("|".join(self.headers.get_all("Cookie") or []) or "-"))


class V6Server(ThreadingHTTPServer):
    address_family = socket.AF_INET6


def serve(port):
    servers = [ThreadingHTTPServer(("127.0.0.1", port), Handler)]
    try:
        servers.append(V6Server(("::1", port), Handler))
    except OSError:
        pass
    for s in servers:
        s.daemon_threads = True
        threading.Thread(target=s.serve_forever, daemon=True).start()
    return servers


def run(argv, env=None):
    result = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60)
    return result.stdout


def host_of(url):
    return url.split("/", 1)[0]


def resolves(hosts, port):
    out = []
    for h in sorted(set(hosts)):
        if h.startswith("[") or h.replace(".", "").isdigit():
            continue
        out += ["--resolve", "%s:%d:127.0.0.1" % (h.rstrip("."), port)]
        if h.endswith("."):
            out += ["--resolve", "%s:%d:127.0.0.1" % (h, port)]
    return out


def short(text):
    return text if len(text) <= 40 else text[:20] + "…(%d bytes)" % len(text)


def case_key(lines, host, path):
    return "%s @ %s%s" % ("; ".join(short(l) for l in lines), host, path)


def cookies(tools, port, verbose):
    hosts = [host_of(u) for u in COOKIE_URLS] + [c[1] for c in COOKIE_CASES]
    res = resolves(hosts, port)
    urls = ["http://%s:%d/%s" % (host_of(u), port, u.split("/", 1)[1]) for u in COOKIE_URLS]
    found = {}
    with tempfile.TemporaryDirectory() as tmp:
        def one(i):
            lines, host, path = COOKIE_CASES[i]
            sent = {}
            for name, tool in tools:
                jar = os.path.join(tmp, "%s-%d.txt" % (name, i))
                run([tool, "-s", "-o", "/dev/null", "-c", jar] + res + ["http://%s:%d%s?case=%d" % (host, port, path, i)])
                out = run([tool, "-s", "-b", jar] + res + urls).split("\n")
                sent[name] = [short(o.strip("[]")) for o in (out + ["?"] * len(urls))[:len(urls)]]
            return i, sent
        with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
            results = sorted(pool.map(one, range(len(COOKIE_CASES))))
        for i, sent in results:
            key = case_key(*COOKIE_CASES[i])
            for u, c, p in zip(COOKIE_URLS, sent["curl"], sent["pocket"]):
                if verbose:
                    print("%-50s %-26s curl %-14s pocket %s" % (key, u, c, p))
                if c != p:
                    found.setdefault(key, []).append("%s: curl %s, pocket %s" % (u, c, p))
    return found, KNOWN_COOKIES, len(COOKIE_CASES) * len(COOKIE_URLS)


def noproxy(tools, port, verbose):
    res = resolves(NOPROXY_HOSTS, port)
    urls = ["http://%s:%d/np" % (h, port) for h in NOPROXY_HOSTS]

    def one(pattern):
        env = {k: v for k, v in os.environ.items() if k.lower() not in ("http_proxy", "https_proxy", "all_proxy", "no_proxy")}
        env["http_proxy"] = "http://127.0.0.1:%d" % port
        env["NO_PROXY"] = pattern
        got = {}
        for name, tool in tools:
            out = run([tool, "-s"] + res + urls, env).split("\n")
            got[name] = (out + ["?"] * len(urls))[:len(urls)]
        return pattern, got

    found = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(one, NOPROXY_PATTERNS))
    for pattern, got in results:
        for h, c, p in zip(NOPROXY_HOSTS, got["curl"], got["pocket"]):
            if verbose:
                print("NO_PROXY=%-22r %-18s curl %-7s pocket %s" % (pattern, h, c, p))
            if c != p:
                found.setdefault("NO_PROXY=%r %s" % (pattern, h), []).append("curl %s, pocket %s" % (c, p))
    return found, KNOWN_NOPROXY, len(NOPROXY_PATTERNS) * len(NOPROXY_HOSTS)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["cookies", "noproxy"])
    parser.add_argument("--pocket", default=os.path.join(ROOT, ".build", "debug", "pocket"))
    parser.add_argument("--curl", default="curl")
    parser.add_argument("--port", type=int, default=24080)
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    servers = serve(args.port)
    try:
        check = cookies if args.mode == "cookies" else noproxy
        found, known, total = check([("curl", args.curl), ("pocket", args.pocket)], args.port, args.verbose)
    finally:
        for s in servers:
            s.shutdown()
    failed = False
    for key, items in sorted(found.items()):
        if key in known:
            why, right = known[key]
            print("known  %s (%d): %s; right: %s" % (key, len(items), why, right))
        else:
            failed = True
            print("NEW    %s" % key)
        for item in items:
            print("         %s" % item)
    for key in sorted(set(known) - set(found)):
        failed = True
        print("GONE   %s: the tools now agree (remove it from the known list)" % key)
    print("%s: %d comparisons, %d disagreeing in %d cases (%d cases known)" %
          (args.mode, total, sum(len(v) for v in found.values()), len(found), len([k for k in found if k in known])))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
