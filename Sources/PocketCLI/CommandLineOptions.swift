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
    /// The help line, made only when a help is printed (the -w option's
    /// lists every variable; a transfer never needs it).
    var help: String { makeHelp() }
    private var makeHelp: () -> String
    /// Applies the option's value ("" for a flag) to the command.
    var apply: (inout Command, String) throws(CLIFailure) -> Void
    /// The help section (curl's `--help category`); `section` sets it.
    var category: OptionCategory = .misc

    init(short: Character?, long: String, valueName: String?, help: @autoclosure @escaping () -> String,
         apply: @escaping (inout Command, String) throws(CLIFailure) -> Void) {
        self.short = short
        self.long = long
        self.valueName = valueName
        self.makeHelp = help
        self.apply = apply
    }

    /// `options`, each in help section `category`: a command's table is a
    /// list of sections, and a new flag is one line in its section.
    static func section(_ category: OptionCategory, _ options: [Self]) -> [Self] {
        options.map { option in
            var option = option
            option.category = category
            return option
        }
    }

    /// A flag: sets `key` to true.
    static func flag(_ short: Character?, _ long: String, _ key: WritableKeyPath<Command, Bool>,
                     _ help: @autoclosure @escaping () -> String) -> Self {
        Self(short: short, long: long, valueName: nil, help: help()) { command, _ throws(CLIFailure) in
            command[keyPath: key] = true
        }
    }

    /// An option with a string value (the last one given wins).
    static func string(_ short: Character?, _ long: String, _ key: WritableKeyPath<Command, String?>,
                       _ valueName: String, _ help: @autoclosure @escaping () -> String) -> Self {
        Self(short: short, long: long, valueName: valueName, help: help()) { command, value throws(CLIFailure) in
            command[keyPath: key] = value
        }
    }

    /// A repeatable option: each value is appended.
    static func strings(_ short: Character?, _ long: String, _ key: WritableKeyPath<Command, [String]>,
                        _ valueName: String, _ help: @autoclosure @escaping () -> String) -> Self {
        Self(short: short, long: long, valueName: valueName, help: help()) { command, value throws(CLIFailure) in
            command[keyPath: key].append(value)
        }
    }

    /// A repeatable option kept with others in one ordered list: `make` wraps the value.
    static func strings<T>(_ short: Character?, _ long: String, _ key: WritableKeyPath<Command, [T]>,
                           _ valueName: String, _ help: @autoclosure @escaping () -> String, _ make: @escaping (String) -> T) -> Self {
        Self(short: short, long: long, valueName: valueName, help: help()) { command, value throws(CLIFailure) in
            command[keyPath: key].append(make(value))
        }
    }

    /// A repeatable flag that appends `value` to an ordered list.
    static func flag<T>(_ short: Character?, _ long: String, _ key: WritableKeyPath<Command, [T]>,
                        _ help: @autoclosure @escaping () -> String, _ value: T) -> Self {
        Self(short: short, long: long, valueName: nil, help: help()) { command, _ throws(CLIFailure) in
            command[keyPath: key].append(value)
        }
    }

    /// An option with a number: `parse` makes it, nil for a malformed one.
    static func number<N>(_ short: Character?, _ long: String, _ key: WritableKeyPath<Command, N>,
                          _ valueName: String, _ help: @autoclosure @escaping () -> String, _ parse: @escaping (String) -> N?) -> Self {
        Self(short: short, long: long, valueName: valueName, help: help()) { command, value throws(CLIFailure) in
            guard let n = parse(value) else {
                throw CLIFailure(.usage, "--\(long): '\(value)' is not a valid \(valueName)")
            }
            command[keyPath: key] = n
        }
    }

    /// As `number`, for an option that is nil unless given.
    static func optionalNumber<N>(_ short: Character?, _ long: String, _ key: WritableKeyPath<Command, N?>,
                                  _ valueName: String, _ help: @autoclosure @escaping () -> String, _ parse: @escaping (String) -> N?) -> Self {
        number(short, long, key, valueName, help()) { parse($0).map { Optional($0) } }
    }
}

/// The help sections, as curl's `--help category` names them.
enum OptionCategory: String, CaseIterable, Sendable {
    case http, post, upload, output, connection, dns, proxy, auth, tls, retry, verbose, curl, misc

    var title: String {
        switch self {
        case .http: "HTTP and HTTPS protocol"
        case .post: "HTTP POST (request bodies)"
        case .upload: "Upload (-T)"
        case .output: "Filesystem output"
        case .connection: "Low level networking"
        case .dns: "Name resolution"
        case .proxy: "Proxies"
        case .auth: "Authentication"
        case .tls: "TLS/SSL"
        case .retry: "Retries and resume"
        case .verbose: "Output, progress and -w"
        case .curl: "The tool: several URLs, --next, --parallel, version"
        case .misc: "Miscellaneous"
        }
    }
}

enum CommandLineOptions {
    /// Applies `arguments` to `command` through `options`; returns the
    /// positional arguments in order. `-h`/`--help` returns nil (print the
    /// help). An unknown option or a missing value is a `.usage` failure.
    static func parse<Command>(_ arguments: ArraySlice<String>, options: [CommandLineOption<Command>],
                               into command: inout Command) throws(CLIFailure) -> [String]? {
        var rest = arguments
        return try parse(&rest, options: options, into: &command, stopAt: [])
    }

    /// As above, stopping after an argument in `stopAt` (curl's `--next`):
    /// `arguments` keeps what follows it.
    static func parse<Command>(_ arguments: inout ArraySlice<String>, options: [CommandLineOption<Command>],
                               into command: inout Command, stopAt: [String]) throws(CLIFailure) -> [String]? {
        var positional: [String] = []
        var rest = arguments
        defer { arguments = rest }
        var optionsEnded = false
        func value(for name: String) throws(CLIFailure) -> String {
            guard let next = rest.popFirst() else { throw CLIFailure(.usage, "\(name) needs a value") }
            return next
        }
        while let argument = rest.popFirst() {
            if optionsEnded || argument == "-" || !argument.hasPrefix("-") {
                positional.append(argument)
            } else if stopAt.contains(argument) {
                break
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

    /// The help text: `header`, then one entry per option, under a title
    /// per category when the options have more than one (only `category`'s
    /// options when given).
    static func help<Command>(_ header: String, options: [CommandLineOption<Command>],
                              category: OptionCategory? = nil) -> String {
        var text = header + "\n"
        let categories = OptionCategory.allCases.filter { c in options.contains { $0.category == c } }
        for c in categories where category == nil || category == c {
            text += categories.count > 1 ? "\n\(c.title.uppercased()) (--help \(c.rawValue)):\n" : "\nOPTIONS:\n"
            for option in options where option.category == c {
                var names = option.short.map { "-\($0), " } ?? "    "
                names += "--" + option.long + (option.valueName.map { " <\($0)>" } ?? "")
                text += "  " + names + "\n" + wrap(option.help, indent: 8) + "\n"
            }
        }
        return text + (category == nil ? "\n  -h, --help [category]\n        Show this help (one category's options).\n" : "")
    }

    /// `text` in lines of at most 80 columns, each indented by `indent`.
    static func wrap(_ text: String, indent: Int) -> String {
        let pad = String(repeating: " ", count: indent)
        var lines: [String] = []
        for paragraph in text.split(separator: "\n", omittingEmptySubsequences: false) {
            var line = ""
            for word in paragraph.split(separator: " ") {
                if !line.isEmpty && indent + line.count + 1 + word.count > 80 {
                    lines.append(pad + line)
                    line = ""
                }
                line += (line.isEmpty ? "" : " ") + word
            }
            lines.append(pad + line)
        }
        return lines.joined(separator: "\n")
    }
}
