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

/// The transfers of one `pocket` invocation: every URL of every option set
/// (`--next`), in order, or with `-Z` at once. They share clients (one per
/// distinct client configuration, usually one), so a keep-alive connection
/// opened for one URL serves the next, as curl reuses its connections.
/// The exit status is the last transfer's, as curl's.
struct FetchRun: Sendable {
    let sets: [FetchCommand]

    var transfers: [FetchCommand] { sets.flatMap { $0.transfers() } }
    var parallel: Bool { sets.contains { $0.parallel } }
    var parallelMax: Int { sets.compactMap(\.parallelMax).last ?? 50 }

    func execute() async -> Int32 {
        signal(SIGPIPE, SIG_IGN) // a closed stdout is exit 23, not a signal
        if let bad = sets.compactMap(\.parallelMax).first(where: { !(1...300).contains($0) }) {
            Output.diagnostic("pocket: --parallel-max takes 1 to 300, got \(bad)\n")
            return ExitStatus.usage.code
        }
        let clients = ClientCache(connectionsPerOrigin: parallel ? parallelMax : 1)
        let cookies = CookieRun(sets: sets) // -b files read now, -c files written at the end
        let all = transfers
        var last = ExitStatus.success
        if parallel {
            last = await withTaskGroup(of: (Int, ExitStatus).self) { group in
                var next = 0, results: [Int: ExitStatus] = [:]
                func start(_ i: Int) {
                    group.addTask { (i, await Self.perform(all[i], index: i, clients: clients, cookies: cookies, buffered: true)) }
                }
                while next < min(parallelMax, all.count) { start(next); next += 1 }
                while let (i, status) = await group.next() {
                    results[i] = status
                    if next < all.count { start(next); next += 1 }
                }
                // The last failure in URL order (-Z ends transfers in any order).
                return (0..<all.count).compactMap { results[$0] }.last { $0 != .success } ?? .success
            }
        } else {
            for (i, transfer) in all.enumerated() {
                last = await Self.perform(transfer, index: i, clients: clients, cookies: cookies, buffered: false)
            }
        }
        await clients.shutdown()
        cookies.save() // as curl: also after a failed transfer
        return last.code
    }

    /// One URL: its plan, its attempts, its -w line; the error line on stderr.
    static func perform(_ command: FetchCommand, index: Int, clients: ClientCache, cookies: CookieRun,
                        buffered: Bool) async -> ExitStatus {
        var facts = TransferFacts(url: command.url)
        facts.index = index
        let sink = TransferSink(buffered: buffered)
        var format: WriteOut?
        var status = ExitStatus.success
        do throws(CLIFailure) {
            format = try command.writeOut.map { spec throws(CLIFailure) in try WriteOut(format: try FetchCommand.loadText(spec)) }
            var plan = try command.makePlan()
            if command.usesCookieStore { plan.configuration.cookies = cookies.store }
            if format != nil { facts.url = plan.request.url.absoluteString } // -w's url_effective, as curl writes it
            facts.method = plan.request.method.rawValue
            facts.uploadBytes = plan.uploadBytes
            facts.filename = plan.destination?.path(percentEncoded: false)
            let (client, fresh) = try clients.client(for: plan.configuration)
            facts.firstOnClient = fresh
            if command.verbose && fresh { Output.diagnostic(HeadFormat.verboseBackend(client.ioBackend)) }
            // As curl: not when the body itself goes to the same terminal (the two would interleave).
            let bodyToTerminal = plan.destination == nil && Output.stdout.isTerminal
            let bar = !command.silent && !buffered && Output.stderr.isTerminal && !bodyToTerminal ? ProgressBar() : nil
            let transfer = FetchTransfer(command: command, plan: plan, client: client, progress: bar, sink: sink)
            try await attempts(transfer, bar: bar, cookies: cookies, &facts)
        } catch {
            status = error.status
            facts.exitCode = status.code
            facts.errorMessage = error.message
        }
        try? sink.flush()
        if status != .success && (!command.silent || command.showError) {
            Output.diagnostic("pocket: \(facts.errorMessage)\n")
        }
        if let format { format.render(facts, to: sink) }
        try? sink.flush()
        return status
    }

    /// The transfer, and its retries as `FetchTransfer.retryPolicy` says (`--retry`).
    private static func attempts(_ transfer: FetchTransfer, bar: ProgressBar?, cookies: CookieRun,
                                 _ facts: inout TransferFacts) async throws(CLIFailure) {
        let command = transfer.command, plan = transfer.plan
        var attempt = 0
        while true {
            do {
                if command.verbose {
                    Output.diagnostic(HeadFormat.verboseRequest(cookies.displayed(plan.request), defaults: plan.configuration.defaultHeaders,
                                                                compressed: command.compressed, download: plan.destination != nil))
                }
                try await transfer.run(&facts, canRetry: attempt < command.retry)
                await bar?.finish()
                if command.verbose, let t = facts.timings { Output.diagnostic(HeadFormat.verboseTimings(t)) }
                return
            } catch let retryable as FetchTransfer.Retryable where attempt < command.retry {
                await bar?.finish()
                attempt += 1
                facts.retries = attempt
                // The retry policy's wait: its backoff (curl's), or the server's Retry-After.
                var generator = SystemRandomNumberGenerator()
                let wait = switch retryable.decision {
                case .retryAfter(let d): d
                default: FetchTransfer.retryPolicy(command).backoff.delay(forRetry: attempt, using: &generator)
                }
                let delay = Double(wait.components.seconds) + Double(wait.components.attoseconds) / 1e18
                if !command.silent {
                    let left = command.retry - attempt
                    Output.diagnostic("pocket: transient problem: \(retryable.failure.message); "
                        + "retrying in \(delay == delay.rounded() ? String(Int(delay)) : String(delay)) s "
                        + "(\(left) \(left == 1 ? "retry" : "retries") left)\n")
                }
                try? await Task.sleep(for: .milliseconds(Int64(max(0, delay) * 1000)))
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
}

/// The clients of one invocation, one per distinct configuration (the TLS
/// files, timeouts, decompression and default headers the flags set), made
/// on first use and shut down at the end.
final class ClientCache: Sendable {
    /// What the flags set in a client's configuration. Compared, never
    /// hashed or described: String(describing:)'s reflection and String
    /// hashing's Unicode tables cost the command pages of peak RSS.
    private struct Key: Equatable {
        var tls: PocketTLSConfiguration
        var timeouts: PocketTimeouts
        var decompression: Bool
        var headers: [String]
        var cookies: Bool
    }

    private let clients = Lock<[(key: Key, client: PocketClient)]>([])
    private let connectionsPerOrigin: Int

    init(connectionsPerOrigin: Int) { self.connectionsPerOrigin = connectionsPerOrigin }

    /// The client for `configuration`, and whether it was made for this call.
    func client(for configuration: PocketClient.Configuration) throws(CLIFailure) -> (PocketClient, Bool) {
        var configuration = configuration
        configuration.maxConnectionsPerOrigin = connectionsPerOrigin
        let key = Key(tls: configuration.tls, timeouts: configuration.timeouts, decompression: configuration.decompression,
                      headers: configuration.defaultHeaders.map { "\($0.name): \($0.value)" },
                      cookies: configuration.cookies != nil)
        return try clients.withLock { (clients: inout [(key: Key, client: PocketClient)]) throws(CLIFailure) -> (PocketClient, Bool) in
            if let known = clients.first(where: { $0.key == key }) { return (known.client, false) }
            do {
                let client = try PocketClient(configuration: configuration)
                clients.append((key, client))
                return (client, true)
            } catch let e as PocketError {
                throw CLIFailure(e)
            } catch {
                throw CLIFailure(.other, "cannot start the client: \(error)")
            }
        }
    }

    /// Stops the engines' threads (shutdown joins them) before the process
    /// exits: a loop thread still running its thread-exit handlers (e.g.
    /// OpenSSL's per-thread random generators) while exit() runs is a race,
    /// and LeakSanitizer saw it as a leak.
    func shutdown() async {
        let all = clients.withLock { c in defer { c = [] }; return c.map(\.client) }
        for client in all { try? await client.shutdown() }
    }
}
