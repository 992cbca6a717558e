import Pocket
import PocketBenchKit

/// What `-w` can show about the transfer (known parts; the rest are zero).
struct TransferFacts: Sendable {
    var url: String
    var status: Int?
    var minorVersion = 1
    var headers = PocketHeaders()
    var headBytes = 0
    var bodyBytes = 0
    var uploadBytes = 0
    var timings: PocketTimings?
    var filename: String?
    var retries = 0
    var exitCode: Int32 = 0
    var errorMessage = ""
}

/// `-w/--write-out FORMAT`: text with `%{variable}` replaced, `%%` for `%`,
/// and `\n`, `\r`, `\t`, `\\` escapes; `@FILE` reads the format from a file
/// (`@-`: stdin). Variables are curl's names; times in seconds with six
/// decimals, sizes in bytes, speeds in bytes per second:
///
/// | variable | value |
/// |---|---|
/// | `http_code`, `response_code` | status code, `000` when there was no response |
/// | `http_version` | `1.1` or `1.0` |
/// | `time_namelookup` | name resolution (0 for numeric hosts and reused connections) |
/// | `time_connect` | until the TCP connection was up (name lookup + connect) |
/// | `time_appconnect` | until the TLS handshake was done (0 for http) |
/// | `time_pretransfer` | until the request could be sent (appconnect, or connect for http) |
/// | `time_starttransfer` | until the first response byte |
/// | `time_total` | until the last body byte |
/// | `size_download` | body bytes received (decoded with `--compressed`) |
/// | `size_upload` | request body bytes |
/// | `size_header` | response head bytes (status line and fields) |
/// | `speed_download`, `speed_upload` | size / time_total |
/// | `num_connects` | 1 when the request opened a connection, else 0 |
/// | `num_retries` | attempts made again by `--retry` |
/// | `content_type` | the response's `Content-Type` |
/// | `url`, `url_effective` | the URL |
/// | `filename_effective` | the file written by `-o`/`-O` |
/// | `exitcode` | pocket's exit status |
/// | `errormsg` | the error line (empty on success) |
///
/// An unknown variable is an error at start (exit 64), not a silent blank.
struct WriteOut: Sendable {
    enum Piece: Sendable {
        case text(String)
        case variable(String)
    }

    let pieces: [Piece]

    static let variables: Set<String> = [
        "http_code", "response_code", "http_version", "time_namelookup", "time_connect", "time_appconnect",
        "time_pretransfer", "time_starttransfer", "time_total", "size_download", "size_upload", "size_header",
        "speed_download", "speed_upload", "num_connects", "num_retries", "content_type", "url", "url_effective",
        "filename_effective", "exitcode", "errormsg",
    ]

    /// Parses FORMAT; throws a usage failure for an unknown variable or an unclosed `%{`.
    init(format: String) throws(CLIFailure) {
        var pieces: [Piece] = []
        var text = ""
        var chars = Array(format)[...]
        while let c = chars.popFirst() {
            if c == "%" {
                if chars.first == "%" {
                    chars.removeFirst()
                    text.append("%")
                } else if chars.first == "{" {
                    chars.removeFirst()
                    guard let close = chars.firstIndex(of: "}") else {
                        throw CLIFailure(.usage, "-w: unclosed %{ in '\(format)'")
                    }
                    let name = String(chars[..<close])
                    guard WriteOut.variables.contains(name) else {
                        throw CLIFailure(.usage, "-w: unknown variable %{\(name)}")
                    }
                    chars = chars[chars.index(after: close)...]
                    if !text.isEmpty { pieces.append(.text(text)) }
                    text = ""
                    pieces.append(.variable(name))
                } else {
                    text.append("%")
                }
            } else if c == "\\", let next = chars.first, let escaped = ["n": "\n", "r": "\r", "t": "\t", "\\": "\\"][next] {
                chars.removeFirst()
                text += escaped
            } else {
                text.append(c)
            }
        }
        if !text.isEmpty { pieces.append(.text(text)) }
        self.pieces = pieces
    }

    func render(_ facts: TransferFacts) -> String {
        pieces.map { piece in
            switch piece {
            case .text(let t): return t
            case .variable(let name): return WriteOut.value(name, facts)
            }
        }.joined()
    }

    static func value(_ name: String, _ f: TransferFacts) -> String {
        let t = f.timings ?? PocketTimings()
        func seconds(_ d: Duration) -> Double {
            let (s, atto) = d.components
            return Double(s) + Double(atto) / 1e18
        }
        func time(_ d: Duration) -> String { fmt(seconds(d), 6) }
        let total = seconds(t.total)
        switch name {
        case "http_code", "response_code":
            guard let s = f.status else { return "000" }
            return s < 100 ? String(repeating: "0", count: 3 - String(s).count) + String(s) : String(s)
        case "http_version": return f.status == nil ? "0" : "1.\(f.minorVersion)"
        case "time_namelookup": return time(t.dns)
        case "time_connect": return time(t.dns + t.connect)
        // Through a proxy tunnel, as curl: connect is the proxy's TCP
        // connect; appconnect and pretransfer include the CONNECT exchange.
        case "time_appconnect": return t.tls > .zero ? time(t.dns + t.connect + t.tunnel + t.tls) : fmt(0, 6)
        case "time_pretransfer": return time(t.dns + t.connect + t.tunnel + t.tls)
        case "time_starttransfer": return time(t.firstByte)
        case "time_total": return time(t.total)
        case "size_download": return String(f.bodyBytes)
        case "size_upload": return String(f.uploadBytes)
        case "size_header": return String(f.headBytes)
        case "speed_download": return total > 0 ? String(Int(Double(f.bodyBytes) / total)) : "0"
        case "speed_upload": return total > 0 ? String(Int(Double(f.uploadBytes) / total)) : "0"
        case "num_connects": return f.timings.map { $0.reusedConnection ? "0" : "1" } ?? "0"
        case "num_retries": return String(f.retries)
        case "content_type": return f.headers["Content-Type"] ?? ""
        case "url", "url_effective": return f.url
        case "filename_effective": return f.filename ?? ""
        case "exitcode": return String(f.exitCode)
        case "errormsg": return f.errorMessage
        default: return ""
        }
    }
}
