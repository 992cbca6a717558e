#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Pocket
import PocketBenchKit

/// What `-w` can show about the transfer (known parts; the rest are zero).
struct TransferFacts: Sendable {
    /// url_effective: the URL last fetched.
    var url: String
    /// The URL as given.
    var givenURL: String
    /// The final response's head bytes (size_download subtracts them).
    var finalHeadBytes = 0
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
    /// The transfer's place among the invocation's URLs (0 first).
    var index = 0
    var method = "GET"
    /// Redirects followed (-L).
    var redirects = 0
    /// time_redirect: from the start of the transfer to the start of its
    /// final request, every redirect step before it (zero without one).
    var redirectTime: Duration = .zero
    /// The transfer was the first on its client (no connection to reuse yet).
    var firstOnClient = false

    init(url: String) {
        self.url = url
        givenURL = url
    }
}

/// `-w/--write-out FORMAT`: text with `%{variable}` replaced, `%%` for `%`,
/// and `\n`, `\r`, `\t`, `\\` escapes; `@FILE` reads the format from a file
/// (`@-`: stdin). Variables are curl's names with curl's meanings (`help`
/// lists them; the help prints it). An unknown variable is warned about
/// once on stderr and left out; the transfer goes on, as with curl.
struct WriteOut: Sendable {
    enum Piece: Sendable {
        case text(String)
        case variable(String)
    }

    let pieces: [Piece]

    /// The variables and what they show (`pocket --help verbose` prints them).
    static let described: [(String, String)] = [
        ("http_code, response_code", "status code, 000 when there was no response"),
        ("http_version", "1.1 or 1.0 (0 without a response)"),
        ("url", "the URL as given"),
        ("url_effective", "the URL last fetched (where -L led)"),
        ("num_redirects", "redirects followed"),
        ("scheme", "http or https (of url_effective)"),
        ("method", "the request method"),
        ("content_type", "the response's Content-Type"),
        ("size_download", "body bytes as received on the connection (before --compressed decoding)"),
        ("size_upload", "request body bytes"),
        ("size_header", "response head bytes, every hop's"),
        ("speed_download, speed_upload", "size / time_total, bytes per second"),
        ("time_namelookup", "seconds until the name was resolved (0 for numeric hosts and reused connections)"),
        ("time_connect", "until the TCP connection was up"),
        ("time_appconnect", "until the TLS handshake was done (0 for http)"),
        ("time_pretransfer", "until the request could be sent"),
        ("time_starttransfer", "until the first response byte"),
        ("time_redirect", "the redirect steps (-L) before the final request started, 0 without redirects"),
        ("time_total", "until the last body byte, redirect steps included"),
        ("remote_ip, remote_port", "the address and port the connection went to"),
        ("local_port", "the connection's local port"),
        ("num_connects", "1 when the transfer opened a connection, 0 when it reused one"),
        ("num_retries", "attempts made again by --retry"),
        ("filename_effective", "the file written by -o/-O"),
        ("urlnum", "the URL's index among the invocation's (0 first)"),
        ("exitcode", "the transfer's exit status"),
        ("errormsg", "the error line (empty on success)"),
        ("json", "all of the above as one JSON object"),
        ("header_json", "the response fields as JSON: lowercased name to a list of values"),
        ("stdout, stderr", "write what follows to stdout / stderr"),
    ]

    /// The help's text for -w.
    static var help: String {
        described.map { names, meaning in
            names.split(separator: ",").map { "%{\($0.trimmingWhitespace())}" }.joined(separator: ", ") + ": " + meaning
        }.joined(separator: "\n")
    }

    static let variables: Set<String> = Set(described.flatMap { $0.0.split(separator: ",").map { $0.trimmingWhitespace() } })


    /// Parses FORMAT; an unknown variable is warned about and dropped; an
    /// unclosed `%{` is text, as curl prints it.
    init(format: String) throws(CLIFailure) {
        var pieces: [Piece] = []
        var text = ""
        var chars = Array(format)[...]
        while let c = chars.popFirst() {
            if c == "%" {
                if chars.first == "%" {
                    chars.removeFirst()
                    text.append("%")
                } else if chars.first == "{", let close = chars.firstIndex(of: "}") {
                    let name = String(chars[chars.index(after: chars.startIndex)..<close])
                    chars = chars[chars.index(after: close)...]
                    guard WriteOut.variables.contains(name) else {
                        Output.diagnostic("pocket: unknown --write-out variable: '\(name)'\n")
                        continue
                    }
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

    /// Writes the rendered format: to `sink` (stdout) until a `%{stderr}`.
    func render(_ facts: TransferFacts, to sink: TransferSink) {
        var toStderr = false
        for piece in pieces {
            let text: String
            switch piece {
            case .text(let t): text = t
            case .variable("stderr"): toStderr = true; continue
            case .variable("stdout"): toStderr = false; continue
            case .variable(let name): text = WriteOut.value(name, facts)
            }
            if toStderr { Output.diagnostic(text) } else { try? sink.write(Array(text.utf8)) }
        }
    }

    /// The text of FORMAT for `facts` (stdout parts only).
    func render(_ facts: TransferFacts) -> String {
        pieces.map { piece in
            switch piece {
            case .text(let t): return t
            case .variable(let name): return WriteOut.value(name, facts)
            }
        }.joined()
    }

    /// Body bytes on the connection: the bytes read for the final response
    /// less its head (so gzip counts compressed), else the bytes written.
    static func wireBody(_ f: TransferFacts) -> Int {
        guard let t = f.timings, t.bytesReceived > 0 else { return f.bodyBytes }
        return max(0, t.bytesReceived - f.finalHeadBytes)
    }

    static func value(_ name: String, _ f: TransferFacts) -> String {
        let t = f.timings ?? PocketTimings()
        func seconds(_ d: Duration) -> Double {
            let (s, atto) = d.components
            return Double(s) + Double(atto) / 1e18
        }
        func time(_ d: Duration) -> String { fixedPoint(seconds(d), 6) }
        let total = seconds(t.total + f.redirectTime)
        switch name {
        case "http_code", "response_code":
            guard let s = f.status else { return "000" }
            return s < 100 ? String(repeating: "0", count: 3 - String(s).count) + String(s) : String(s)
        case "http_version": return f.status == nil ? "0" : "1.\(f.minorVersion)"
        case "time_namelookup": return time(t.dns)
        case "time_connect": return time(t.dns + t.connect)
        // Through a proxy tunnel, as curl: connect is the proxy's TCP
        // connect; appconnect and pretransfer include the CONNECT exchange.
        case "time_appconnect": return t.tls > .zero ? time(t.dns + t.connect + t.tunnel + t.tls) : fixedPoint(0, 6)
        case "time_pretransfer": return time(t.dns + t.connect + t.tunnel + t.tls)
        case "time_starttransfer": return time(t.firstByte)
        // As curl: time_redirect covers the steps before the final request;
        // time_total runs from the start, those steps included.
        case "time_redirect": return time(f.redirectTime)
        case "time_total": return time(t.total + f.redirectTime)
        case "size_download": return String(wireBody(f))
        case "size_upload": return String(f.uploadBytes)
        case "size_header": return String(f.headBytes)
        case "speed_download": return total > 0 ? String(Int(Double(wireBody(f)) / total)) : "0"
        case "speed_upload": return total > 0 ? String(Int(Double(f.uploadBytes) / total)) : "0"
        case "num_connects":
            // A chain of redirects that started on a new client opened a connection for its first hop.
            return f.timings.map { !$0.reusedConnection || (f.redirects > 0 && f.firstOnClient) ? "1" : "0" } ?? "0"
        case "num_retries": return String(f.retries)
        case "num_redirects": return String(f.redirects)
        case "content_type": return f.headers["Content-Type"] ?? ""
        case "url": return f.givenURL
        case "url_effective": return f.url
        case "scheme": return f.status == nil ? "" : String(f.url.prefix { $0 != ":" }).uppercased()
        case "method": return f.method
        case "urlnum": return String(f.index)
        case "filename_effective": return f.filename ?? ""
        case "exitcode": return String(f.exitCode)
        case "errormsg": return f.errorMessage
        case "remote_ip": return f.timings?.remoteAddress ?? ""
        case "remote_port": return String(f.timings?.remotePort ?? 0)
        case "local_port": return String(f.timings?.localPort ?? 0)
        case "json": return json(f)
        case "header_json": return headerJSON(f.headers)
        default: return ""
        }
    }

    /// `%{json}`: every variable, numbers as numbers, as curl writes it.
    static func json(_ f: TransferFacts) -> String {
        let numbers: Set<String> = ["http_code", "response_code", "num_redirects", "num_connects", "num_retries",
                                    "size_download", "size_upload", "size_header", "speed_download", "speed_upload",
                                    "exitcode", "urlnum", "remote_port", "local_port"]
        let names = variables.subtracting(["json", "header_json", "stdout", "stderr"]).sorted()
        let fields = names.map { name -> String in
            let v = value(name, f)
            if name.hasPrefix("time_") || (numbers.contains(name) && Int(v) != nil) {
                return "\"\(name)\":\(name == "http_code" || name == "response_code" ? String(Int(v) ?? 0) : v)"
            }
            return "\"\(name)\":\(jsonString(v))"
        }
        return "{" + fields.joined(separator: ",") + "}"
    }

    /// `%{header_json}`: `{"name":["value",...],...}`, names lowercased, in first-seen order.
    static func headerJSON(_ headers: PocketHeaders) -> String {
        var order: [String] = []
        var values: [String: [String]] = [:]
        for field in headers {
            let name = field.name.lowercased()
            if values[name] == nil { order.append(name) }
            values[name, default: []].append(field.value)
        }
        // curl's layout: one field per line.
        return "{" + order.map { name in
            jsonString(name) + ":[" + values[name]!.map(jsonString).joined(separator: ",") + "]"
        }.joined(separator: ",\n") + (order.isEmpty ? "}" : "\n}")
    }
}
