import Pocket
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// `pocket URL...`: curl's flags, Pocket's engine (the default subcommand).
/// One `FetchCommand` holds the options of one set of URLs (curl's `--next`
/// starts another); `transfers()` makes one command per URL, with `url` and
/// its output set, which `FetchRun` runs on one shared client.
struct FetchCommand: Sendable {
    /// A body part of -d, --data-raw, --data-binary or --data-urlencode, in
    /// command-line order (curl joins them with `&` in that order).
    enum DataPart: Sendable {
        case ascii(String), raw(String), binary(String), urlencode(String)
    }

    /// Where one URL's body goes: `-o FILE` or `-O`, paired with the URLs in order.
    enum OutputSpec: Sendable {
        case file(String), remoteName
    }

    /// This transfer's URL (set by `transfers()`).
    var url = ""
    /// The URLs of this option set, in order.
    var urls: [String] = []
    /// The -o/-O given, in order; the nth belongs to the nth URL.
    var outputs: [OutputSpec] = []
    // The options, set by `parse` from `options` (defaults as curl's).
    var method: String?
    var headers: [String] = []
    var data: [DataPart] = []
    var json: [String] = []
    var form: [String] = []
    var get = false
    var uploadFile: String?
    var userAgent: String?
    var referer: String?
    var location = false
    var locationTrusted = false
    var maxRedirs: Int = 50
    var output: String?
    var remoteName = false
    var outputDir: String?
    var createDirs = false
    var continueAt: String?
    var include = false
    var dumpHeader: String?
    var head = false
    var maxTime: Double?
    var connectTimeout: Double?
    var retry: Int = 0
    var retryDelay: Double?
    var retryAllErrors = false
    var compressed = false
    var cacert: String?
    var cert: String?
    var key: String?
    var pinnedPublicKey: String?
    var insecure = false
    var fail = false
    var failWithBody = false
    var silent = false
    var showError = false
    var verbose = false
    var writeOut: String?
    // Network reach (README "Network reach"): proxies, Unix sockets, --resolve.
    var proxy: String?
    var proxyUser: String?
    var proxyBasic = false
    var proxyDigest = false
    var proxyAnyauth = false
    var noProxy: String?
    var unixSocket: String?
    var resolve: [String] = []
    // Cookies (FetchCommand+Cookies.swift): -b strings and files, -c, -j.
    var cookies: [String] = []
    var cookieJar: String?
    var junkSessionCookies = false

    // Authentication (FetchCommand+Auth.swift).
    var user: String?
    var basic = false
    var digest = false
    var anyauth = false
    // The tool's own (global whichever set they are given in).
    var parallel = false
    var parallelMax: Int?
    var version = false
    var completionShell: String?
    var manpage = false
    /// Never set: `--next` ends a set before it is applied (it is in the table for the help).
    var nextMarker = false

    /// Every option of `pocket [fetch]`, by help section (curl's `--help
    /// category`). A new flag is one line in its section plus its field.
    ///
    /// Adding a flag: a field above, one line in its section below (help,
    /// `--help CATEGORY`, completion and the man page follow from it), and
    /// its use in `makePlan` (FetchCommand+Plan.swift).
    static var options: [Option] {
        [httpOptions, postOptions, uploadOptions, outputOptions, connectionOptions, dnsOptions, proxyOptions, authOptions,
         tlsOptions, retryOptions, verboseOptions, toolOptions].flatMap { $0 }
    }

    typealias Option = CommandLineOption<FetchCommand>

    private static var httpOptions: [Option] {
        Option.section(.http, [
            .string("X", "request", \.method, "method", "The method (default GET; POST with data; PUT with -T; HEAD with -I). Kept across -L redirects, as curl."),
            .strings("H", "header", \.headers, "name: value", "A header field 'Name: value' (repeatable). 'Name:' removes a default field; 'Name;' sends it empty."),
            .string("A", "user-agent", \.userAgent, "name", "The User-Agent field ('' removes it)."),
            .string("e", "referer", \.referer, "url", "The Referer field."),
            .flag("L", "location", \.location, "Follow redirects (301/302/303 turn POST into GET unless -X; 307/308 keep it), up to --max-redirs."),
            .flag(nil, "location-trusted", \.locationTrusted, "As -L, and the Authorization of -u (Basic) or -H and the Cookie of -H or -b go to every host a redirect leads to, not only the URL's origin. Only for hosts you trust with them."),
            .number(nil, "max-redirs", \.maxRedirs, "N", "With -L, follow at most N redirects (default 50, as curl; -1: no limit but loops).") { Int($0) },
            .flag("I", "head", \.head, "Send HEAD and print the response head."),
            .flag("i", "include", \.include, "Print each response head (every hop with -L) before the body."),
            .flag(nil, "compressed", \.compressed, "Ask for gzip/deflate and decode the body."),
            .strings("b", "cookie", \.cookies, "data|file", "Send cookies: 'name=value; n2=v2' (with '=': a Cookie field, repeatable, dropped on a cross-origin redirect), else a cookie file to read (Netscape format as -c writes, or saved 'Set-Cookie:' lines; a missing file is ignored, as curl). A file turns the cookie store on: cookies set by responses (each -L hop too) go with later requests of the invocation."),
            .string("c", "cookie-jar", \.cookieJar, "file", "Turn the cookie store on and write every cookie to FILE (Netscape format, curl's) when the invocation ends, also after a failure; '-': stdout."),
            .flag("j", "junk-session-cookies", \.junkSessionCookies, "With -b FILE: leave out the file's session cookies (expiry 0), as a new browser session would."),
            .flag("f", "fail", \.fail, "A status >= 400 is an error: no body output, exit 22."),
            .flag(nil, "fail-with-body", \.failWithBody, "As -f, but the body is written first."),
        ])
    }

    private static var postOptions: [Option] {
        Option.section(.post, [
            .strings("d", "data", \.data, "data", "Body data, POST, x-www-form-urlencoded (repeatable, joined with &). @FILE reads a file without CR/LF; @- stdin.", DataPart.ascii),
            .strings(nil, "data-raw", \.data, "data", "As -d, but @ is not special.", DataPart.raw),
            .strings(nil, "data-binary", \.data, "data|@file", "Body data as is. @FILE sends the file (streamed from disk); @- stdin.", DataPart.binary),
            .strings(nil, "data-urlencode", \.data, "[name]=content", "As -d, URL-encoded: 'content', '=content', 'name=content', '@file', 'name@file'.", DataPart.urlencode),
            .strings(nil, "json", \.json, "json|@file", "JSON body (@FILE, @- too); sets Content-Type and Accept to application/json."),
            .strings("F", "form", \.form, "name=content", "A multipart/form-data part (repeatable; POST): name=value, name=@FILE (a file part, streamed), name=<FILE (a field read from a file); ;type=MIME and ;filename=NAME after the value."),
            .flag("G", "get", \.get, "Send the -d data in the URL's query with GET (HEAD with -I)."),
        ])
    }

    private static var uploadOptions: [Option] {
        Option.section(.upload, [
            .string("T", "upload-file", \.uploadFile, "file", "PUT FILE (streamed; '-': stdin) to the URL; a URL ending in / gets the file's name."),
        ])
    }

    private static var outputOptions: [Option] {
        Option.section(.output, [
            .strings("o", "output", \.outputs, "file", "Write the body to FILE instead of stdout (one per URL, in order; '-': stdout).", OutputSpec.file),
            .flag("O", "remote-name", \.outputs, "Write the body to a file named like the URL's last path segment (one per URL).", OutputSpec.remoteName),
            .string(nil, "output-dir", \.outputDir, "dir", "The directory -o and -O files are written in."),
            .flag(nil, "create-dirs", \.createDirs, "Create the missing directories of -o and --output-dir."),
            .string("D", "dump-header", \.dumpHeader, "file", "Write the response heads to FILE ('-': stdout)."),
        ])
    }

    private static var dnsOptions: [Option] {
        Option.section(.dns, [
            .strings(nil, "resolve", \.resolve, "host:port:addr[,addr]", "Connect to these addresses for host:port instead of resolving it (repeatable)."),
        ])
    }

    private static var proxyOptions: [Option] {
        Option.section(.proxy, [
            .string("x", "proxy", \.proxy, "[http://][user:pass@]host[:port]", "Use this HTTP proxy (CONNECT for https); '' for none. Default: http_proxy, HTTPS_PROXY, ALL_PROXY as curl reads them."),
            .string("U", "proxy-user", \.proxyUser, "user:password", "Credentials for the proxy: Basic, sent at once (or as --proxy-digest/--proxy-anyauth say); also taken from -x's URL."),
            .flag(nil, "proxy-basic", \.proxyBasic, "With proxy credentials: Basic, sent with the first request (the default)."),
            .flag(nil, "proxy-digest", \.proxyDigest, "With proxy credentials: Digest (MD5, SHA-256), answering the proxy's 407 challenge."),
            .flag(nil, "proxy-anyauth", \.proxyAnyauth, "With proxy credentials: wait for the 407 and answer the best scheme offered (Digest over Basic)."),
            .string(nil, "noproxy", \.noProxy, "list", "Hosts reached without the proxy: names (with subdomains), IPs, CIDR blocks, '*' (overrides NO_PROXY)."),
        ])
    }

    private static var authOptions: [Option] {
        Option.section(.auth, [
            .string("u", "user", \.user, "user:password", "Credentials for the URL's origin: Basic, sent at once (or as --digest/--anyauth say)."),
            .flag(nil, "basic", \.basic, "With -u: Basic, sent with the first request (the default)."),
            .flag(nil, "digest", \.digest, "With -u: Digest (MD5, SHA-256), answering the server's 401 challenge."),
            .flag(nil, "anyauth", \.anyauth, "With -u: wait for the 401 and answer the best scheme offered (Digest over Basic)."),
        ])
    }

    private static var connectionOptions: [Option] {
        Option.section(.connection, [
            .optionalNumber("m", "max-time", \.maxTime, "seconds", "Give up after SECONDS for the whole request (exit 28).") { Double($0) },
            .optionalNumber(nil, "connect-timeout", \.connectTimeout, "seconds", "Give up connecting after SECONDS (default 10; exit 28).") { Double($0) },
            .string(nil, "unix-socket", \.unixSocket, "path", "Connect to this Unix domain socket; the URL names the origin."),
        ])
    }

    private static var tlsOptions: [Option] {
        Option.section(.tls, [
            .string(nil, "cacert", \.cacert, "file", "Trust the CA certificates in this PEM file instead of the system store."),
            .string(nil, "cert", \.cert, "file", "Client certificate chain (PEM) for mutual TLS."),
            .string(nil, "key", \.key, "file", "Private key (PEM) of --cert (default: in the --cert file)."),
            .string(nil, "pinnedpubkey", \.pinnedPublicKey, "sha256//base64", "sha256//BASE64 pins of the server's public key, ';'-separated (exit 90 on mismatch)."),
            .flag("k", "insecure", \.insecure, "Skip certificate verification (throwaway test servers only)."),
        ])
    }

    private static var retryOptions: [Option] {
        Option.section(.retry, [
            .number(nil, "retry", \.retry, "n", "Retry transient failures N times (timeouts, connect failures, 408, 429, 500, 502, 503, 504); each failed answer's body is written too, as curl.") { Int($0) },
            .optionalNumber(nil, "retry-delay", \.retryDelay, "seconds", "Wait SECONDS between retries (default: 1 s, doubling, at most 10 minutes).") { Double($0) },
            .flag(nil, "retry-all-errors", \.retryAllErrors, "With --retry, retry every failure (a -f status too), not only transient ones."),
            .string("C", "continue-at", \.continueAt, "-", "'-': resume the -o/-O file from its size (Range; If-Range when pocket made the file). An interrupted -o download keeps its partial body in the file and its validators in $XDG_STATE_HOME/pocket/resume (default ~/.local/state/pocket/resume), never beside the file; the entry goes when the transfer ends."),
        ])
    }

    private static var verboseOptions: [Option] {
        Option.section(.verbose, [
            .flag("s", "silent", \.silent, "No progress bar and no error line."),
            .flag("S", "show-error", \.showError, "With -s, still print the error line."),
            .flag("v", "verbose", \.verbose, "Request and response heads and timings on stderr."),
            .string("w", "write-out", \.writeOut, "format", "Print FORMAT after each transfer (@FILE reads it); its variables:\n" + WriteOut.help),
        ])
    }

    private static var toolOptions: [Option] {
        Option.section(.curl, [
            .flag(nil, "next", \.nextMarker, "Start a new set of options for the URLs after it (-: too)."),
            .flag("Z", "parallel", \.parallel, "Run the transfers at once; each body is written whole, in the order they end."),
            .optionalNumber(nil, "parallel-max", \.parallelMax, "N", "With -Z, at most N transfers at once (default 50, 1 to 300).") { Int($0) },
            .flag("V", "version", \.version, "Print the version, the engine's features and protocols."),
            .string(nil, "generate-completion-script", \.completionShell, "bash|zsh|fish", "Print a completion script for the shell (README: The pocket command)."),
            .flag(nil, "generate-manpage", \.manpage, "Print pocket(1) in man(7) format."),
        ])
    }

    static let helpHeader = """
        OVERVIEW: Send requests and print the bodies (the default: `pocket URL...`).

        USAGE: pocket [fetch] <url>... [options] [--next [options] <url>...]

        ARGUMENTS:
          <url>   http:// or https:// URLs (without a scheme: http), fetched in order on
                  one client (keep-alive connections are reused across them).
        """

    /// The option sets of `arguments` (after `pocket` or `pocket fetch`),
    /// one per `--next`; nil for `--help`.
    static func parse(_ arguments: ArraySlice<String>) throws(CLIFailure) -> [FetchCommand]? {
        var rest = arguments
        var sets: [FetchCommand] = []
        repeat {
            var command = FetchCommand()
            guard let positional = try CommandLineOptions.parse(&rest, options: options, into: &command,
                                                                stopAt: ["--next", "-:"]) else {
                return nil
            }
            command.urls = positional
            sets.append(command)
        } while !rest.isEmpty
        if sets.contains(where: { $0.version || $0.completionShell != nil || $0.manpage }) { return sets }
        guard sets.contains(where: { !$0.urls.isEmpty }) else { throw CLIFailure(.usage, "missing the URL (pocket --help)") }
        for (i, set) in sets.enumerated() where set.urls.isEmpty {
            throw CLIFailure(.usage, "the option set \(i + 1) (after --next) has no URL")
        }
        return sets
    }

    /// One command per URL of this set, each with its own output.
    func transfers() -> [FetchCommand] {
        urls.enumerated().map { i, url in
            var one = self
            one.url = url
            one.urls = [url]
            one.output = nil
            one.remoteName = false
            if i < outputs.count {
                switch outputs[i] {
                case .file(let path): one.output = path
                case .remoteName: one.remoteName = true
                }
            }
            return one
        }
    }

    /// Reads `@FILE` (or `@-`: stdin) when `spec` starts with `@`, else returns it.
    static func loadText(_ spec: String) throws(CLIFailure) -> String {
        guard spec.hasPrefix("@") else { return spec }
        return String(decoding: try loadBytes(String(spec.dropFirst())), as: UTF8.self)
    }

    /// The bytes of a file, or of stdin for `-`.
    static func loadBytes(_ path: String) throws(CLIFailure) -> [UInt8] {
        let fd = path == "-" ? 0 : open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw CLIFailure(.localRead, "cannot read \(path): \(String(cString: strerror(errno)))") }
        defer { if fd != 0 { close(fd) } }
        var out: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let n = buf.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n >= 0 else { throw CLIFailure(.localRead, "cannot read \(path): \(String(cString: strerror(errno)))") }
            if n == 0 { return out }
            out += buf[..<n]
        }
    }
}
