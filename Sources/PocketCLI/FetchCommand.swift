import ArgumentParser
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
struct FetchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fetch",
        abstract: "Send one request and print the body (the default: `pocket URL`).")

    @Argument(help: "The http:// or https:// URL.")
    var url: String

    @Option(name: [.customShort("X"), .customLong("request")],
            help: ArgumentHelp("The method (default GET; POST with data; HEAD with -I).",
                               valueName: "method"))
    var method: String?

    @Option(name: [.customShort("H"), .customLong("header")],
            help: ArgumentHelp("A header field 'Name: value' (repeatable). 'Name:' removes a default field; 'Name;' sends it empty.",
                               valueName: "name: value"))
    var headers: [String] = []

    @Option(name: [.customShort("d"), .customLong("data")],
            help: ArgumentHelp("Body data, POST, x-www-form-urlencoded (repeatable, joined with &). @FILE reads a file without CR/LF; @- stdin.",
                               valueName: "data"))
    var data: [String] = []

    @Option(name: .customLong("data-binary"),
            help: ArgumentHelp("Body data as is. @FILE sends the file (streamed from disk); @- stdin.",
                               valueName: "data|@file"))
    var dataBinary: [String] = []

    @Option(name: .customLong("json"),
            help: ArgumentHelp("JSON body (@FILE, @- too); sets Content-Type and Accept to application/json.",
                               valueName: "json|@file"))
    var json: [String] = []

    @Option(name: [.customShort("F"), .customLong("form")],
            help: ArgumentHelp("A multipart/form-data part (repeatable; POST): name=value, name=@FILE (a file part, streamed), name=<FILE (a field read from a file); ;type=MIME and ;filename=NAME after the value.",
                               valueName: "name=content"))
    var form: [String] = []

    @Flag(name: [.customShort("L"), .customLong("location")],
          help: "Follow redirects (301/302/303 turn POST into GET; 307/308 keep it), up to --max-redirs.")
    var location = false

    @Option(name: .customLong("max-redirs"), parsing: .unconditional,
            help: ArgumentHelp("With -L, follow at most N redirects (default 50, as curl; -1: no limit but loops).",
                               valueName: "N"))
    var maxRedirs: Int = 50

    @Option(name: [.customShort("o"), .customLong("output")],
            help: ArgumentHelp("Write the body to FILE (the engine writes it) instead of stdout.",
                               valueName: "file"))
    var output: String?

    @Flag(name: [.customShort("O"), .customLong("remote-name")],
          help: "Write the body to a file named like the URL's last path segment.")
    var remoteName = false

    @Option(name: [.customShort("C"), .customLong("continue-at")],
            help: ArgumentHelp("'-': resume the -o/-O file from its size (Range, If-Range).",
                               valueName: "-"))
    var continueAt: String?

    @Flag(name: [.customShort("i"), .customLong("include")], help: "Print the status line and header fields before the body.")
    var include = false

    @Option(name: [.customShort("D"), .customLong("dump-header")],
            help: ArgumentHelp("Write the response head to FILE ('-': stdout).",
                               valueName: "file"))
    var dumpHeader: String?

    @Flag(name: [.customShort("I"), .customLong("head")], help: "Send HEAD and print the response head.")
    var head = false

    @Option(name: [.customShort("m"), .customLong("max-time")],
            help: ArgumentHelp("Give up after SECONDS for the whole request (exit 28).",
                               valueName: "seconds"))
    var maxTime: Double?

    @Option(name: .customLong("connect-timeout"),
            help: ArgumentHelp("Give up connecting after SECONDS (default 10; exit 28).",
                               valueName: "seconds"))
    var connectTimeout: Double?

    @Option(name: .customLong("retry"),
            help: ArgumentHelp("Retry transient failures N times (timeouts, connect failures, 408, 429, 500, 502, 503, 504).",
                               valueName: "n"))
    var retry: Int = 0

    @Flag(name: .customLong("compressed"), help: "Ask for gzip/deflate and decode the body.")
    var compressed = false

    @Option(name: .customLong("cacert"),
            help: ArgumentHelp("Trust the CA certificates in this PEM file instead of the system store.",
                               valueName: "file"))
    var cacert: String?

    @Option(name: .customLong("cert"),
            help: ArgumentHelp("Client certificate chain (PEM) for mutual TLS.",
                               valueName: "file"))
    var cert: String?

    @Option(name: .customLong("key"),
            help: ArgumentHelp("Private key (PEM) of --cert (default: in the --cert file).",
                               valueName: "file"))
    var key: String?

    @Option(name: .customLong("pinnedpubkey"),
            help: ArgumentHelp("sha256//BASE64 pins of the server's public key, ';'-separated (exit 90 on mismatch).",
                               valueName: "sha256//base64"))
    var pinnedPublicKey: String?

    @Flag(name: [.customShort("k"), .customLong("insecure")],
          help: "Skip certificate verification (throwaway test servers only).")
    var insecure = false

    @Flag(name: [.customShort("f"), .customLong("fail")], help: "A status >= 400 is an error: no body output, exit 22.")
    var fail = false

    @Flag(name: [.customShort("s"), .customLong("silent")], help: "No progress bar and no error line.")
    var silent = false

    @Flag(name: [.customShort("S"), .customLong("show-error")], help: "With -s, still print the error line.")
    var showError = false

    @Flag(name: [.customShort("v"), .customLong("verbose")], help: "Request and response heads and timings on stderr.")
    var verbose = false

    @Option(name: [.customShort("w"), .customLong("write-out")],
            help: ArgumentHelp("Print FORMAT after the transfer: %{http_code} %{time_total} ... (see README; @FILE reads it).",
                               valueName: "format"))
    var writeOut: String?

    mutating func run() async throws {
        let status = await execute()
        if status != 0 { throw ExitCode(status) }
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
