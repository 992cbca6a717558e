#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// `pocket`: curl's habits on Pocket's engine. `pocket URL...` fetches (the
/// default subcommand, also `pocket fetch URL...`); `pocket bench` benchmarks.
@main
enum PocketCommand {
    static let help = """
        OVERVIEW: An HTTP/1.1 client with curl's flags, on Pocket's engine.

        USAGE: pocket <url>... [options]       prints the bodies on stdout (the options below)
               pocket fetch <url>... [options] the same
               pocket bench [options]          benchmarks an embedded loopback server or --url
                                               (pocket bench --help)
               pocket --help <category>        one group of options:
        \(CommandLineOptions.wrap(categories, indent: 39))

        EXIT STATUS:
        \(ExitStatus.all.map { "  \($0.code)\t\($0.name)" }.joined(separator: "\n"))
        """

    /// The help sections `pocket --help CATEGORY` knows.
    private static var categories: String {
        OptionCategory.allCases.filter { c in FetchCommand.options.contains { $0.category == c } }
            .map(\.rawValue).joined(separator: ", ")
    }

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
            status = await fetch(ArraySlice(["--help"] + arguments.dropFirst()), help: rootHelp)
        default:
            status = await fetch(arguments, help: rootHelp)
        }
        exit(status)
    }

    /// The root help: the commands, then fetch's options.
    static var rootHelp: String {
        help + "\n\n" + CommandLineOptions.help(FetchCommand.helpHeader, options: FetchCommand.options)
    }

    /// `pocket [fetch] ARGS`: the transfers' exit status; `help` on
    /// `--help`, one section for `--help CATEGORY`.
    private static func fetch(_ arguments: ArraySlice<String>, help: String) async -> Int32 {
        if let h = arguments.firstIndex(where: { $0 == "--help" || $0 == "-h" }), h + 1 < arguments.endIndex {
            let name = arguments[h + 1]
            if let category = OptionCategory(rawValue: name) {
                try? Output.stdout.write(CommandLineOptions.help("pocket --help \(category.rawValue): \(category.title)",
                                                                 options: FetchCommand.options, category: category))
                return 0
            }
            if !name.hasPrefix("-") {
                return usage(CLIFailure(.usage, "unknown help category '\(name)'; the categories: \(categories)"))
            }
        }
        do {
            guard let sets = try FetchCommand.parse(arguments) else {
                try? Output.stdout.write(help)
                return 0
            }
            if sets.contains(where: \.version) {
                try? Output.stdout.write(PocketVersion.text)
                return 0
            }
            if let shell = sets.compactMap(\.completionShell).first {
                try Output.stdout.write(try Completion.script(shell, options: FetchCommand.options))
                return 0
            }
            if sets.contains(where: \.manpage) {
                try Output.stdout.write(Completion.manpage(options: FetchCommand.options))
                return 0
            }
            return await FetchRun(sets: sets).execute()
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
