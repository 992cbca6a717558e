import ArgumentParser

/// `pocket`: curl's habits on Pocket's engine. `pocket URL` fetches (the
/// default subcommand); `pocket bench` benchmarks.
@main
struct PocketCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pocket",
        abstract: "An HTTP/1.1 client with curl's flags, on Pocket's engine.",
        discussion: """
            pocket URL [flags] prints the body on stdout (see `pocket fetch --help` for the flags).
            pocket bench [flags] benchmarks an embedded loopback server or --url.

            Exit status:
            \(ExitStatus.all.map { "  \($0.code)\t\($0.name)" }.joined(separator: "\n"))
            """,
        subcommands: [FetchCommand.self, BenchCommand.self],
        defaultSubcommand: FetchCommand.self)
}
