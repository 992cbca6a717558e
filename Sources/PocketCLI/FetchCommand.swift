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

/// `pocket URL`: one request, curl's flags, Pocket's engine (the default
/// subcommand). The body goes to stdout as it arrives, or with `-o`/`-O` to a
/// file the engine writes itself.
struct FetchCommand: Sendable {
    /// The http:// or https:// URL (the one positional argument).
    var url = ""
    // The options, set by `parse` from `options` (defaults as curl's).
    var method: String?
    var headers: [String] = []
    var data: [String] = []
    var dataBinary: [String] = []
    var json: [String] = []
    var form: [String] = []
    var location = false
    var maxRedirs: Int = 50
    var output: String?
    var remoteName = false
    var continueAt: String?
    var include = false
    var dumpHeader: String?
    var head = false
    var maxTime: Double?
    var connectTimeout: Double?
    var retry: Int = 0
    var compressed = false
    var cacert: String?
    var cert: String?
    var key: String?
    var pinnedPublicKey: String?
    var insecure = false
    var fail = false
    var silent = false
    var showError = false
    var verbose = false
    var writeOut: String?
    // Network reach (README "Network reach"): proxies, Unix sockets, --resolve.
    var proxy: String?
    var proxyUser: String?
    var noProxy: String?
    var unixSocket: String?
    var resolve: [String] = []

    /// Every option of `pocket [fetch]`, in the order of the help.
    static var options: [CommandLineOption<FetchCommand>] { [
        .string("X", "request", \.method, "method", "The method (default GET; POST with data; HEAD with -I)."),
        .strings("H", "header", \.headers, "name: value", "A header field 'Name: value' (repeatable). 'Name:' removes a default field; 'Name;' sends it empty."),
        .strings("d", "data", \.data, "data", "Body data, POST, x-www-form-urlencoded (repeatable, joined with &). @FILE reads a file without CR/LF; @- stdin."),
        .strings(nil, "data-binary", \.dataBinary, "data|@file", "Body data as is. @FILE sends the file (streamed from disk); @- stdin."),
        .strings(nil, "json", \.json, "json|@file", "JSON body (@FILE, @- too); sets Content-Type and Accept to application/json."),
        .strings("F", "form", \.form, "name=content", "A multipart/form-data part (repeatable; POST): name=value, name=@FILE (a file part, streamed), name=<FILE (a field read from a file); ;type=MIME and ;filename=NAME after the value."),
        .flag("L", "location", \.location, "Follow redirects (301/302/303 turn POST into GET; 307/308 keep it), up to --max-redirs."),
        .number(nil, "max-redirs", \.maxRedirs, "N", "With -L, follow at most N redirects (default 50, as curl; -1: no limit but loops).") { Int($0) },
        .string("o", "output", \.output, "file", "Write the body to FILE (the engine writes it) instead of stdout."),
        .flag("O", "remote-name", \.remoteName, "Write the body to a file named like the URL's last path segment."),
        .string("C", "continue-at", \.continueAt, "-", "'-': resume the -o/-O file from its size (Range, If-Range)."),
        .flag("i", "include", \.include, "Print the status line and header fields before the body."),
        .string("D", "dump-header", \.dumpHeader, "file", "Write the response head to FILE ('-': stdout)."),
        .flag("I", "head", \.head, "Send HEAD and print the response head."),
        .optionalNumber("m", "max-time", \.maxTime, "seconds", "Give up after SECONDS for the whole request (exit 28).") { Double($0) },
        .optionalNumber(nil, "connect-timeout", \.connectTimeout, "seconds", "Give up connecting after SECONDS (default 10; exit 28).") { Double($0) },
        .number(nil, "retry", \.retry, "n", "Retry transient failures N times (timeouts, connect failures, 408, 429, 500, 502, 503, 504).") { Int($0) },
        .flag(nil, "compressed", \.compressed, "Ask for gzip/deflate and decode the body."),
        .string(nil, "cacert", \.cacert, "file", "Trust the CA certificates in this PEM file instead of the system store."),
        .string(nil, "cert", \.cert, "file", "Client certificate chain (PEM) for mutual TLS."),
        .string(nil, "key", \.key, "file", "Private key (PEM) of --cert (default: in the --cert file)."),
        .string(nil, "pinnedpubkey", \.pinnedPublicKey, "sha256//base64", "sha256//BASE64 pins of the server's public key, ';'-separated (exit 90 on mismatch)."),
        .flag("k", "insecure", \.insecure, "Skip certificate verification (throwaway test servers only)."),
        .flag("f", "fail", \.fail, "A status >= 400 is an error: no body output, exit 22."),
        .flag("s", "silent", \.silent, "No progress bar and no error line."),
        .flag("S", "show-error", \.showError, "With -s, still print the error line."),
        .flag("v", "verbose", \.verbose, "Request and response heads and timings on stderr."),
        .string("w", "write-out", \.writeOut, "format", "Print FORMAT after the transfer: %{http_code} %{time_total} ... (see README; @FILE reads it)."),
        .string("x", "proxy", \.proxy, "[http://][user:pass@]host[:port]", "Use this HTTP proxy (CONNECT for https); '' for none. Default: http_proxy, HTTPS_PROXY, ALL_PROXY as curl reads them."),
        .string(nil, "proxy-user", \.proxyUser, "user:password", "Basic credentials for the proxy."),
        .string(nil, "noproxy", \.noProxy, "list", "Hosts reached without the proxy: names (with subdomains), IPs, CIDR blocks, '*' (overrides NO_PROXY)."),
        .string(nil, "unix-socket", \.unixSocket, "path", "Connect to this Unix domain socket; the URL names the origin."),
        .strings(nil, "resolve", \.resolve, "host:port:addr[,addr]", "Connect to these addresses for host:port instead of resolving it (repeatable)."),
    ] }

    static let helpHeader = """
        OVERVIEW: Send one request and print the body (the default: `pocket URL`).

        USAGE: pocket [fetch] <url> [options]

        ARGUMENTS:
          <url>   The http:// or https:// URL (without a scheme: http).
        """

    /// The command for `arguments` (after `pocket` or `pocket fetch`); nil
    /// for `--help`.
    static func parse(_ arguments: ArraySlice<String>) throws(CLIFailure) -> FetchCommand? {
        var command = FetchCommand()
        guard let positional = try CommandLineOptions.parse(arguments, options: options, into: &command) else {
            return nil
        }
        guard let url = positional.first else { throw CLIFailure(.usage, "missing the URL (pocket --help)") }
        guard positional.count == 1 else {
            throw CLIFailure(.usage, "one URL only; unexpected '\(positional[1])'")
        }
        command.url = url
        return command
    }

    /// Runs the request; returns the exit status after printing the error line.
    func execute() async -> Int32 {
        signal(SIGPIPE, SIG_IGN) // a closed stdout is exit 23, not a signal
        var facts = TransferFacts(url: url)
        var format: WriteOut?
        var status = ExitStatus.success
        do {
            format = try writeOut.map { spec throws(CLIFailure) in try WriteOut(format: try Self.loadText(spec)) }
            try await perform(&facts)
        } catch {
            status = error.status
            facts.exitCode = status.code
            facts.errorMessage = error.message
            if !silent || showError { Output.diagnostic("pocket: \(error.message)\n") }
        }
        if let format { try? Output.stdout.write(format.render(facts)) }
        return status.code
    }

    // MARK: the transfer

    private func perform(_ facts: inout TransferFacts) async throws(CLIFailure) {
        let plan = try makePlan()
        facts.uploadBytes = plan.uploadBytes
        facts.filename = plan.destination?.path(percentEncoded: false)
        let client: PocketClient
        do {
            client = try PocketClient(configuration: plan.configuration)
        } catch let e as PocketError {
            throw CLIFailure(e)
        } catch {
            throw CLIFailure(.other, "cannot start the client: \(error)")
        }
        // As curl: not when the body itself goes to the same terminal (the two would interleave).
        let bodyToTerminal = plan.destination == nil && Output.stdout.isTerminal
        let bar = !silent && Output.stderr.isTerminal && !bodyToTerminal ? ProgressBar() : nil
        let transfer = FetchTransfer(command: self, plan: plan, client: client, progress: bar)
        let outcome: Result<Void, CLIFailure>
        do throws(CLIFailure) {
            try await attempts(transfer, plan: plan, bar: bar, &facts)
            outcome = .success(())
        } catch {
            outcome = .failure(error)
        }
        // Stop the engine's threads (shutdown joins them) before the process
        // exits: a loop thread still running its thread-exit handlers (e.g.
        // OpenSSL's per-thread random generators) while exit() runs is a
        // race, and LeakSanitizer saw it as a leak.
        try? await client.shutdown()
        try outcome.get()
    }

    /// The transfer, and its retries with curl's backoff (`--retry`).
    private func attempts(_ transfer: FetchTransfer, plan: FetchPlan, bar: ProgressBar?,
                          _ facts: inout TransferFacts) async throws(CLIFailure) {
        var attempt = 0
        while true {
            do {
                if verbose {
                    Output.diagnostic(HeadFormat.verboseRequest(plan.request, defaults: plan.configuration.defaultHeaders,
                                                                compressed: compressed, download: plan.destination != nil))
                }
                try await transfer.run(&facts, canRetry: attempt < retry)
                await bar?.finish()
                if verbose, let t = facts.timings { Output.diagnostic(HeadFormat.verboseTimings(t)) }
                return
            } catch let retryable as FetchTransfer.Retryable where attempt < retry {
                await bar?.finish()
                attempt += 1
                facts.retries = attempt
                // curl's backoff: 1 s, doubling, at most 10 minutes; a Retry-After in seconds wins.
                let delay = retryable.retryAfter ?? min(1 << min(attempt - 1, 10), 600)
                if !silent {
                    let left = retry - attempt
                    Output.diagnostic("pocket: transient problem: \(retryable.failure.message); "
                        + "retrying in \(delay) s (\(left) \(left == 1 ? "retry" : "retries") left)\n")
                }
                try? await Task.sleep(for: .seconds(delay))
            } catch let retryable as FetchTransfer.Retryable {
                await bar?.finish()
                throw retryable.failure
            } catch let failure as CLIFailure {
                await bar?.finish()
                throw failure
            } catch {
                await bar?.finish()
                throw CLIFailure(.other, "\(error)")
            }
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
