#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// `pocket`: curl's habits on Pocket's engine. `pocket URL` fetches (the
/// default subcommand, also `pocket fetch URL`); `pocket bench` benchmarks.
@main
enum PocketCommand {
    static let help = """
        OVERVIEW: An HTTP/1.1 client with curl's flags, on Pocket's engine.

        USAGE: pocket <url> [options]          prints the body on stdout (the options below)
               pocket fetch <url> [options]    the same
               pocket bench [options]          benchmarks an embedded loopback server or --url
                                               (pocket bench --help)

        EXIT STATUS:
        \(ExitStatus.all.map { "  \($0.code)\t\($0.name)" }.joined(separator: "\n"))
        """

    static func main() async {
        let arguments = CommandLine.arguments.dropFirst()
        let status: Int32
        switch arguments.first {
        case "bench" where arguments.dropFirst().first == "report":
            do {
                status = try BenchReportCommand.parse(arguments.dropFirst(2))?.run() ?? 0
            } catch {
                status = usage(error)
            }
        case "bench":
            do {
                status = try await BenchCommand.parse(arguments.dropFirst()).run()
            } catch {
                status = usage(error)
            }
        case "fetch":
            status = await fetch(arguments.dropFirst(), help: CommandLineOptions.help(FetchCommand.helpHeader,
                                                                                      options: FetchCommand.options))
        case "help":
            status = await fetch(["--help"], help: rootHelp)
        default:
            status = await fetch(arguments, help: rootHelp)
        }
        exit(status)
    }

    /// The root help: the commands, then fetch's options.
    static var rootHelp: String {
        help + "\n\n" + CommandLineOptions.help(FetchCommand.helpHeader, options: FetchCommand.options)
    }

    /// `pocket [fetch] ARGS`: the request's exit status; `help` on `--help`.
    private static func fetch(_ arguments: ArraySlice<String>, help: String) async -> Int32 {
        do {
            guard let command = try FetchCommand.parse(arguments) else {
                try? Output.stdout.write(help)
                return 0
            }
            return await command.execute()
        } catch {
            return usage(error)
        }
    }

    /// Prints a command-line error (exit 64).
    private static func usage(_ failure: CLIFailure) -> Int32 {
        Output.diagnostic("pocket: \(failure.message)\n")
        return failure.status.code
    }
}
