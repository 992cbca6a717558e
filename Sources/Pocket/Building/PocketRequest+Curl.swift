#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension PocketRequest {
    /// A `curl` command line that sends this request, for debugging: method,
    /// URL, header fields and body, each shell-quoted for a POSIX shell.
    ///
    /// ```swift
    /// print(request.curlCommand())
    /// // curl -X POST 'http://127.0.0.1:8080/items' -H 'Content-Type: application/json' --data-binary '{"name":"pocket"}'
    /// ```
    ///
    /// A text body is inlined; a binary one is written as `printf` octal
    /// escapes piped into `--data-binary @-`; a file body is `@path`; a
    /// stream cannot be shown, so it appears as a `# body: stream` comment;
    /// a multipart form becomes curl's `-F` options (text fields and file
    /// parts; others are listed in a trailing comment).
    /// Fields named in `redacting` (any case) show `<redacted>` instead of
    /// their value; none are redacted by default, so the command replays as is.
    public func curlCommand(redacting: Set<String> = []) -> String {
        curlCommand(defaults: [:], redacting: redacting)
    }

    func curlCommand(defaults: PocketHeaders, compressed: Bool = false, timeouts: PocketTimeouts? = nil,
                     insecure: Bool = false, redacting: Set<String>) -> String {
        let redacted = Set(redacting.map { $0.lowercased() })
        var words = ["curl"]
        var pipeFrom: String?
        var trailer: String?
        if method == .head {
            words.append("--head")
        } else if method != .get || body != nil {
            words += ["-X", Self.quote(method.rawValue)]
        }
        if let socket = target.unixPath ?? unixSocketPath { words += ["--unix-socket", Self.quote(socket)] }
        // curl has no http+unix URLs: the socket goes in --unix-socket, the origin is localhost.
        let shown = target.unixPath == nil ? url.absoluteString
            : "\(target.https ? "https" : "http")://localhost\(target.pathAndQuery)"
        words.append(Self.quote(shown))
        if compressed { words.append("--compressed") }
        if insecure { words.append("--insecure") }
        if let connect = timeouts?.connect { words += ["--connect-timeout", Self.seconds(connect)] }
        if let total = timeouts?.total { words += ["--max-time", Self.seconds(total)] }
        var fields = defaults
        for field in headers.fields where fields.contains(field.name) { fields.remove(field.name) }
        for field in headers.fields { fields.add(name: field.name, value: field.value) }
        if case .multipart(let form)? = body?.source, fields["Content-Type"] == form.contentType {
            fields.remove("Content-Type")   // curl's -F writes its own boundary
        }
        for field in fields.fields {
            let value = redacted.contains(field.name.lowercased()) ? "<redacted>" : field.value
            words += ["-H", Self.quote("\(field.name): \(value)")]
        }
        if expectContinue != nil, body != nil { words += ["-H", Self.quote("Expect: 100-continue")] }
        switch body?.source {
        case nil:
            break
        case .bytes(let data)?:
            if let text = String(validating: data, as: UTF8.self), !text.utf8.contains(0) {
                words += ["--data-binary", Self.quote(text)]
            } else {
                pipeFrom = "printf '" + data.map { "\\" + String($0, radix: 8) }.joined() + "'"
                words += ["--data-binary", "@-"]
            }
        case let .file(path, offset, length)?:
            if offset == 0, length == nil {
                words += ["--data-binary", Self.quote("@" + path)]
            } else {
                let count = length.map { " count=\($0)" } ?? ""
                pipeFrom = "dd if=\(Self.quote(path)) bs=1 skip=\(offset)\(count) 2>/dev/null"
                words += ["--data-binary", "@-"]
            }
        case .stream?:
            trailer = "# body: stream (one-shot, not shown)"
        case .multipart(let form)?:
            var hidden: [String] = []
            for part in form.parts {
                words += Self.curlFormArguments(part, hidden: &hidden)
            }
            if !hidden.isEmpty { trailer = "# parts not shown: " + hidden.joined(separator: ", ") }
        }
        var command = words.joined(separator: " ")
        if let pipeFrom { command = pipeFrom + " | " + command }
        if let trailer { command += " " + trailer }
        return command
    }

    /// curl's `-F`/`--form-string` for one part. A text field is inlined,
    /// a file part is `@path` with its file name and type; parts held in
    /// memory with a file name, binary data and streams cannot be written
    /// on a command line and are listed in `hidden`.
    static func curlFormArguments(_ part: PocketMultipartForm.Part, hidden: inout [String]) -> [String] {
        var options = ""
        if let fileName = part.fileName { options += ";filename=\"\(fileName)\"" }
        if let type = part.contentType { options += ";type=\(type)" }
        switch part.content {
        case .bytes(let data):
            if part.fileName == nil, let text = String(validating: data, as: UTF8.self), !text.utf8.contains(0) {
                return ["--form-string", quote("\(part.name)=\(text)")]
            }
            hidden.append("'\(part.name)' (\(data.count) bytes in memory)")
            return []
        case .file(let path):
            return ["-F", quote("\(part.name)=@\(path)\(options)")]
        case .stream:
            hidden.append("'\(part.name)' (a stream)")
            return []
        }
    }

    /// `text` in single quotes, each `'` written as `'\''`.
    static func quote(_ text: String) -> String {
        "'" + text.replacing("'", with: "'\\''") + "'"
    }

    private static func seconds(_ d: Duration) -> String {
        let (s, atto) = d.components
        let ms = atto / 1_000_000_000_000_000
        return ms == 0 ? "\(s)" : "\(s).\(String(ms + 1000).dropFirst())"
    }
}

extension PocketClient {
    /// The `curl` command line this client would send `request` as: the
    /// request's own fields plus the client's default headers,
    /// `--compressed` when decompression is on, its connect and total
    /// timeouts, and `--insecure` when verification is off. Credentials are
    /// shown unless named in `redacting`.
    public func curlCommand(for request: PocketRequest, redacting: Set<String> = []) -> String {
        let tls = request.tls ?? configuration.tls
        let acceptEncoding = configuration.decompression && !request.headers.contains("Accept-Encoding")
            && !configuration.defaultHeaders.contains("Accept-Encoding")
        return request.curlCommand(defaults: configuration.defaultHeaders, compressed: acceptEncoding,
                                   timeouts: request.timeouts ?? configuration.timeouts,
                                   insecure: request.url.scheme?.lowercased() == "https" && tls.insecureSkipVerification,
                                   redacting: redacting)
    }
}
