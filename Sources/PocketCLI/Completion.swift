#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
/// Shell completion scripts and the man page, made from the option table
/// (`FetchCommand.options`), so a new flag appears in both with no second
/// list to keep: `pocket --generate-completion-script bash|zsh|fish` and
/// `pocket --generate-manpage` (README, "The `pocket` command": completion and the man page).
enum Completion {
    static func script<Command>(_ shell: String, options: [CommandLineOption<Command>]) throws(CLIFailure) -> String {
        switch shell {
        case "bash": return bash(options)
        case "zsh": return zsh(options)
        case "fish": return fish(options)
        default: throw CLIFailure(.usage, "--generate-completion-script takes bash, zsh or fish, got '\(shell)'")
        }
    }

    /// Options whose value is a file get file completion.
    private static func takesFile<Command>(_ option: CommandLineOption<Command>) -> Bool {
        ["file", "dir", "data|@file", "json|@file", "data|file"].contains(option.valueName ?? "")
    }

    private static func bash<Command>(_ options: [CommandLineOption<Command>]) -> String {
        let words = options.flatMap { o in ["--" + o.long] + (o.short.map { ["-\($0)"] } ?? []) } + ["--help"]
        let files = options.filter(takesFile).flatMap { o in ["--" + o.long] + (o.short.map { ["-\($0)"] } ?? []) }
        let values = options.filter { $0.valueName != nil && !takesFile($0) }
            .flatMap { o in ["--" + o.long] + (o.short.map { ["-\($0)"] } ?? []) }
        return """
            # bash completion for pocket (pocket --generate-completion-script bash)
            _pocket() {
                local cur prev
                cur="${COMP_WORDS[COMP_CWORD]}"
                prev="${COMP_WORDS[COMP_CWORD-1]}"
                case "$prev" in
                    \(files.joined(separator: "|")))
                        COMPREPLY=($(compgen -f -- "$cur")); return ;;
                    \(values.joined(separator: "|")))
                        COMPREPLY=(); return ;;
                esac
                if [[ "$cur" == -* ]]; then
                    COMPREPLY=($(compgen -W "\(words.joined(separator: " "))" -- "$cur"))
                fi
            }
            complete -o default -F _pocket pocket

            """
    }

    private static func zsh<Command>(_ options: [CommandLineOption<Command>]) -> String {
        func escaped(_ s: String) -> String {
            s.split(separator: "\n").first.map(String.init)?.replacing("'", with: "'\\''")
                .replacing("[", with: "\\[").replacing("]", with: "\\]")
                .replacing(":", with: "\\:") ?? ""
        }
        var lines: [String] = []
        for o in options {
            let action = o.valueName == nil ? "" : ":\(o.valueName!.replacing(":", with: "")):\(takesFile(o) ? "_files" : " ")"
            let help = "[\(escaped(o.help))]"
            if let s = o.short {
                lines.append("    '(-\(s) --\(o.long))'{-\(s),--\(o.long)}'\(help)\(action)'")
            } else {
                lines.append("    '--\(o.long)\(help)\(action)'")
            }
        }
        return """
            #compdef pocket
            # zsh completion for pocket (pocket --generate-completion-script zsh)
            _arguments -s \\
            \(lines.joined(separator: " \\\n")) \\
                '*:url:_urls'

            """
    }

    private static func fish<Command>(_ options: [CommandLineOption<Command>]) -> String {
        var text = "# fish completion for pocket (pocket --generate-completion-script fish)\n"
        for o in options {
            var line = "complete -c pocket"
            if let s = o.short { line += " -s \(s)" }
            line += " -l \(o.long)"
            if o.valueName != nil { line += takesFile(o) ? " -r -F" : " -r" }
            let help = (o.help.split(separator: "\n").first.map(String.init) ?? "").replacing("'", with: "\\'")
            text += line + " -d '\(help)'\n"
        }
        return text
    }

    /// pocket(1) in man(7) format: the sections of the help, each option with its text.
    static func manpage<Command>(options: [CommandLineOption<Command>]) -> String {
        func roff(_ s: String) -> String {
            s.replacing("\\", with: "\\e").replacing("-", with: "\\-")
                .split(separator: "\n", omittingEmptySubsequences: false)
                .map { $0.hasPrefix(".") || $0.hasPrefix("'") ? "\\&" + $0 : String($0) }.joined(separator: "\n.br\n")
        }
        var text = """
            .TH POCKET 1 "" "pocket \(PocketVersion.number)" "User Commands"
            .SH NAME
            pocket \\- an HTTP/1.1 client with curl's flags, on Pocket's engine
            .SH SYNOPSIS
            .B pocket
            [options] \\fIurl\\fR... [\\fB\\-\\-next\\fR [options] \\fIurl\\fR...]
            .br
            .B pocket bench
            [options]
            .SH DESCRIPTION
            Fetches each URL in order on one client (keep\\-alive connections are reused across them) and writes
            the bodies to stdout or to files, as curl does. Differences from curl are listed in docs/CLI.md.

            """
        for category in OptionCategory.allCases {
            let section = options.filter { $0.category == category }
            guard !section.isEmpty else { continue }
            text += ".SH \(category.title.uppercased())\n"
            for o in section {
                var names = o.short.map { "\\fB\\-\($0)\\fR, " } ?? ""
                names += "\\fB\\-\\-\(roff(o.long))\\fR" + (o.valueName.map { " \\fI\(roff($0))\\fR" } ?? "")
                text += ".TP\n\(names)\n\(roff(o.help))\n"
            }
        }
        text += ".SH EXIT STATUS\n"
        for status in ExitStatus.all { text += ".TP\n.B \(status.code)\n\(roff(status.name))\n" }
        text += ".SH SEE ALSO\n.BR curl (1)\n"
        return text
    }
}
