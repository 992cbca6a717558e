/// One flag or option of a `pocket` command: its names, its help line and
/// what it sets. Each command lists its options in one table (`FetchCommand.
/// options`); `CommandLineOptions.parse` reads arguments against it and
/// `help` prints it.
///
/// A hand-written parser rather than swift-argument-parser: the argument
/// parser's reflection (Mirror over the command, type lookups by mangled
/// name) made it about 2 MB of the peak RSS of a `pocket URL` that should
/// stay within 1.25× curl's (docs/BENCHMARKS.md, "The pocket command beside
/// curl"). curl's own syntax is the model: `-sS`, `-o FILE`, `-oFILE`,
/// `--output FILE`, `--output=FILE`, repeatable options, `--` ends them; an
/// option's value is the next argument whatever it starts with (`-o -`,
/// `--max-redirs -1`).
struct CommandLineOption<Command> {
    var short: Character?
    var long: String
    /// The value's name in the help (`file`, `seconds`); nil for a flag.
    var valueName: String?
    var help: String
    /// Applies the option's value ("" for a flag) to the command.
    var apply: (inout Command, String) throws(CLIFailure) -> Void

    /// A flag: sets `key` to true.
    static func flag(_ short: Character?, _ long: String, _ key: WritableKeyPath<Command, Bool>,
                     _ help: String) -> Self {
        Self(short: short, long: long, valueName: nil, help: help) { command, _ throws(CLIFailure) in
            command[keyPath: key] = true
        }
    }

    /// An option with a string value (the last one given wins).
    static func string(_ short: Character?, _ long: String, _ key: WritableKeyPath<Command, String?>,
                       _ valueName: String, _ help: String) -> Self {
        Self(short: short, long: long, valueName: valueName, help: help) { command, value throws(CLIFailure) in
            command[keyPath: key] = value
        }
    }

    /// A repeatable option: each value is appended.
    static func strings(_ short: Character?, _ long: String, _ key: WritableKeyPath<Command, [String]>,
                        _ valueName: String, _ help: String) -> Self {
        Self(short: short, long: long, valueName: valueName, help: help) { command, value throws(CLIFailure) in
            command[keyPath: key].append(value)
        }
    }

    /// An option with a number: `parse` makes it, nil for a malformed one.
    static func number<N>(_ short: Character?, _ long: String, _ key: WritableKeyPath<Command, N>,
                          _ valueName: String, _ help: String, _ parse: @escaping (String) -> N?) -> Self {
        Self(short: short, long: long, valueName: valueName, help: help) { command, value throws(CLIFailure) in
            guard let n = parse(value) else {
                throw CLIFailure(.usage, "--\(long): '\(value)' is not a valid \(valueName)")
            }
            command[keyPath: key] = n
        }
    }

    /// As `number`, for an option that is nil unless given.
    static func optionalNumber<N>(_ short: Character?, _ long: String, _ key: WritableKeyPath<Command, N?>,
                                  _ valueName: String, _ help: String, _ parse: @escaping (String) -> N?) -> Self {
        number(short, long, key, valueName, help) { parse($0).map { Optional($0) } }
    }
}

enum CommandLineOptions {
    /// Applies `arguments` to `command` through `options`; returns the
    /// positional arguments in order. `-h`/`--help` returns nil (print the
    /// help). An unknown option or a missing value is a `.usage` failure.
    static func parse<Command>(_ arguments: ArraySlice<String>, options: [CommandLineOption<Command>],
                               into command: inout Command) throws(CLIFailure) -> [String]? {
        var positional: [String] = []
        var rest = arguments
        var optionsEnded = false
        func value(for name: String) throws(CLIFailure) -> String {
            guard let next = rest.popFirst() else { throw CLIFailure(.usage, "\(name) needs a value") }
            return next
        }
        while let argument = rest.popFirst() {
            if optionsEnded || argument == "-" || !argument.hasPrefix("-") {
                positional.append(argument)
            } else if argument == "--" {
                optionsEnded = true
            } else if argument == "-h" || argument == "--help" {
                return nil
            } else if argument.hasPrefix("--") {
                let body = argument.dropFirst(2)
                let name = body.prefix { $0 != "=" }
                let inline = name.endIndex < body.endIndex ? String(body[body.index(after: name.endIndex)...]) : nil
                guard let option = options.first(where: { $0.long == name }) else {
                    throw CLIFailure(.usage, "unknown option '--\(name)' (pocket --help lists them)")
                }
                if option.valueName == nil {
                    if inline != nil { throw CLIFailure(.usage, "--\(name) takes no value") }
                    try option.apply(&command, "")
                } else {
                    let given: String
                    if let inline { given = inline } else { given = try value(for: "--\(name)") }
                    try option.apply(&command, given)
                }
            } else {
                // A group of short options: flags, then at most one option
                // whose value is the rest of the group or the next argument.
                var group = argument.dropFirst()
                while let letter = group.popFirst() {
                    guard let option = options.first(where: { $0.short == letter }) else {
                        throw CLIFailure(.usage, "unknown option '-\(letter)' (pocket --help lists them)")
                    }
                    if option.valueName == nil {
                        try option.apply(&command, "")
                    } else {
                        let given: String
                        if group.isEmpty { given = try value(for: "-\(letter)") } else { given = String(group) }
                        try option.apply(&command, given)
                        break
                    }
                }
            }
        }
        return positional
    }

    /// The help text: `header`, then one entry per option.
    static func help<Command>(_ header: String, options: [CommandLineOption<Command>]) -> String {
        var text = header + "\n\nOPTIONS:\n"
        for option in options {
            var names = option.short.map { "-\($0), " } ?? "    "
            names += "--" + option.long + (option.valueName.map { " <\($0)>" } ?? "")
            text += "  " + names + "\n" + wrap(option.help, indent: 8) + "\n"
        }
        return text + "  -h, --help\n        Show this help.\n"
    }

    /// `text` in lines of at most 80 columns, each indented by `indent`.
    private static func wrap(_ text: String, indent: Int) -> String {
        let pad = String(repeating: " ", count: indent)
        var lines: [String] = []
        var line = ""
        for word in text.split(separator: " ") {
            if !line.isEmpty && indent + line.count + 1 + word.count > 80 {
                lines.append(pad + line)
                line = ""
            }
            line += (line.isEmpty ? "" : " ") + word
        }
        if !line.isEmpty { lines.append(pad + line) }
        return lines.joined(separator: "\n")
    }
}
