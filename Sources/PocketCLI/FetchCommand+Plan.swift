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

/// What the flags ask for, checked and built once before the first attempt.
struct FetchPlan: Sendable {
    var configuration: PocketClient.Configuration
    var request: PocketRequest
    /// `-o`/`-O`: the file the engine writes.
    var destination: URL?
    /// `-C -`.
    var resume: Bool
    /// Request body bytes (for -w's size_upload).
    var uploadBytes: Int
}

extension FetchCommand {
    /// Checks the flags and builds the client configuration and the request.
    func makePlan() throws(CLIFailure) -> FetchPlan {
        // As curl: a URL without a scheme is http; `http:/host` and
        // `http:///host` are repaired to `http://host`; -G puts the data in the query.
        var url = Self.repaired(self.url)
        if get && !data.isEmpty {
            let query = try joinedData().map { String(decoding: $0, as: UTF8.self) } ?? ""
            let fragment = url.firstIndex(of: "#").map { String(url[$0...]) } ?? ""
            url = String(url.prefix { $0 != "#" })
            url += (url.contains("?") ? "&" : "?") + query + fragment
        }
        if let upload = uploadFile, upload != "-", url.hasSuffix("/") {
            url += upload.split(separator: "/").last.map(String.init) ?? upload
        }
        // FoundationEssentials' URL(string:) percent-encodes a space or a
        // control byte even in the host, where it is never valid: refuse them
        // there (as full Foundation and curl do); in the path they are encoded.
        let authority = url.split(separator: "://", maxSplits: 1).last?
            .prefix { $0 != "/" && $0 != "?" && $0 != "#" } ?? ""
        guard !authority.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value == 0x7f }),
              let parsed = URL(string: url), let scheme = parsed.scheme?.lowercased(), parsed.host() != nil else {
            throw CLIFailure(.url, "malformed URL '\(self.url)'")
        }
        guard scheme == "http" || scheme == "https" else {
            throw CLIFailure(.url, "unsupported scheme '\(scheme)' in '\(self.url)' (http and https only)")
        }
        if let c = continueAt, c != "-" {
            throw CLIFailure(.usage, "-C takes '-' (resume from the output file's size), got '\(c)'")
        }
        if continueAt != nil && (output ?? "-") == "-" && !remoteName { throw CLIFailure(.usage, "-C - needs -o FILE or -O") }
        if include && ((output ?? "-") != "-" || remoteName) {
            throw CLIFailure(.usage, "-i writes the head to stdout; with -o/-O use -D FILE")
        }
        if retry < 0 { throw CLIFailure(.usage, "--retry needs N >= 0") }
        let hasData = (!data.isEmpty && !get) || !json.isEmpty
        if head && (hasData || !form.isEmpty) {
            throw CLIFailure(.usage, "-I sends HEAD, which has no body; drop -d/--data-binary/--json/-F")
        }
        if hasData && !form.isEmpty { throw CLIFailure(.usage, "-F builds a multipart body; it cannot be mixed with -d/--data-binary/--json") }
        if uploadFile != nil && (hasData || !form.isEmpty) {
            throw CLIFailure(.usage, "-T uploads a file as the body; it cannot be mixed with -d/--json/-F")
        }
        if maxRedirs < -1 { throw CLIFailure(.usage, "--max-redirs needs N >= -1") }

        var configuration = PocketClient.Configuration()
        configuration.maxConnectionsPerOrigin = 1
        // As curl: a 3xx is the answer unless -L; loops are caught whatever the limit.
        configuration.redirects = location || locationTrusted ? PocketRedirectPolicy(maxHops: maxRedirs == -1 ? Int.max : maxRedirs) : .disabled
        configuration.decompression = compressed
        configuration.timeouts.total = try maxTime.map { s throws(CLIFailure) in try Self.duration(s, "-m") }
        if let s = connectTimeout { configuration.timeouts.connect = try Self.duration(s, "--connect-timeout") }
        configuration.tls.caFile = cacert
        configuration.tls.certificateChainFile = cert
        configuration.tls.privateKeyFile = key
        configuration.tls.insecureSkipVerification = insecure
        if let pins = pinnedPublicKey {
            configuration.tls.pinnedPublicKeys = pins.split(separator: ";")
                .map { String($0).trimmingWhitespace() }
            guard configuration.tls.pinnedPublicKeys.allSatisfy({ $0.hasPrefix("sha256//") }) else {
                throw CLIFailure(.usage, "--pinnedpubkey takes sha256//BASE64 pins separated by ';'")
            }
        }
        try applyReach(to: &configuration, url: parsed)
        for path in [cacert, cert, key].compactMap({ $0 }) where access(path, R_OK) != 0 {
            throw CLIFailure(.localRead, "cannot read \(path): \(String(cString: strerror(errno)))")
        }

        var request = PocketRequest(method: .get, url: parsed)
        var uploadBytes = 0
        if hasData {
            request.method = .post
            let (body, length, contentType) = try makeBody()
            request.body = body
            uploadBytes = length
            request.headers["Content-Type"] = contentType
            if !json.isEmpty { request.headers["Accept"] = "application/json" }
        }
        if !form.isEmpty {
            let multipart = try makeForm()
            request.method = .post
            request.body = .multipart(multipart)
            do {
                uploadBytes = try multipart.encodedLength() ?? 0
            } catch {
                throw CLIFailure(error)
            }
        }
        if let upload = uploadFile {
            request.method = .put
            if upload == "-" {
                let bytes = try Self.loadBytes("-")
                request.body = .bytes(Data(bytes))
                uploadBytes = bytes.count
            } else {
                var st = stat()
                guard stat(upload, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG, access(upload, R_OK) == 0 else {
                    throw CLIFailure(.localRead, "-T: cannot read \(upload): \(String(cString: strerror(errno == 0 ? EINVAL : errno)))")
                }
                request.body = .file(URL(filePath: upload))
                uploadBytes = Int(st.st_size)
            }
        }
        if head { request.method = .head }
        if let m = method { request.method = PocketMethod(m) }
        if let agent = userAgent { try Self.apply(header: "User-Agent: \(agent)", to: &request.headers, defaults: &configuration.defaultHeaders) }
        if let referer { request.headers["Referer"] = referer }
        for line in headers { try Self.apply(header: line, to: &request.headers, defaults: &configuration.defaultHeaders) }
        request.authentication = try authentication()

        var destination: URL?
        let directory = outputDir ?? FileManager.default.currentDirectoryPath
        if let output, output != "-" { // -o -: stdout, as with curl
            destination = output.hasPrefix("/") || outputDir == nil ? URL(filePath: output)
                : URL(filePath: directory).appending(path: output)
        } else if remoteName {
            let name = parsed.lastPathComponent
            guard !name.isEmpty, name != "/" else {
                throw CLIFailure(.localWrite, "-O: the URL \(self.url) has no file name in its path; use -o FILE")
            }
            destination = URL(filePath: directory).appending(path: name)
        }
        if let destination, createDirs {
            try Self.makeDirectories(destination.deletingLastPathComponent().path(percentEncoded: false))
        }
        if compressed && destination != nil && !request.headers.contains("Accept-Encoding") {
            // A download asks for identity (resumable by Range) unless told
            // otherwise: --compressed says otherwise (decoded, not resumable).
            request.headers["Accept-Encoding"] = "gzip, deflate"
        }
        // -b name=value strings: one Cookie field, joined with ';' as curl
        // joins them, unless -H set a Cookie field (curl then drops them).
        if let line = cookieStrings, !request.headers.contains("Cookie") {
            request.headers.add(name: "Cookie", value: line)
        }
        return FetchPlan(configuration: configuration, request: request, destination: destination,
                         resume: continueAt != nil, uploadBytes: uploadBytes)
    }

    /// The request body of -d, --data-raw, --data-binary, --data-urlencode
    /// and --json: a file body for a lone `--data-binary @FILE` / `--json
    /// @FILE` (streamed from disk, never in memory), else the bytes joined as
    /// curl joins them.
    private func makeBody() throws(CLIFailure) -> (PocketRequestBody, Int, String) {
        let formType = "application/x-www-form-urlencoded"
        var lone: String?
        if data.count + json.count == 1 {
            if case .binary(let d)? = data.first { lone = d } else { lone = json.first }
        }
        if let only = lone, only.hasPrefix("@"), only != "@-" {
            let path = String(only.dropFirst())
            var st = stat()
            guard stat(path, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG, access(path, R_OK) == 0 else {
                throw CLIFailure(.localRead, "cannot read \(path): \(String(cString: strerror(errno == 0 ? EINVAL : errno)))")
            }
            return (.file(URL(filePath: path)), Int(st.st_size), json.isEmpty ? formType : "application/json")
        }
        var bytes = get ? [] : try joinedData() ?? []
        for d in json { bytes += d.hasPrefix("@") ? try Self.loadBytes(String(d.dropFirst())) : Array(d.utf8) }
        return (.bytes(Data(bytes)), bytes.count, json.isEmpty ? formType : "application/json")
    }

    /// The -d family's parts joined with `&` in command-line order, or nil for none.
    func joinedData() throws(CLIFailure) -> [UInt8]? {
        guard !data.isEmpty else { return nil }
        var parts: [[UInt8]] = []
        for part in data {
            switch part {
            case .ascii(let d) where d.hasPrefix("@"):
                parts.append(try Self.loadBytes(String(d.dropFirst())).filter { $0 != 0x0A && $0 != 0x0D })
            case .binary(let d) where d.hasPrefix("@"):
                parts.append(try Self.loadBytes(String(d.dropFirst())))
            case .ascii(let d), .raw(let d), .binary(let d):
                parts.append(Array(d.utf8))
            case .urlencode(let d):
                parts.append(try Self.urlencoded(d))
            }
        }
        return Array(parts.joined(separator: [0x26])) // '&', as curl joins -d parts
    }

    /// One --data-urlencode part, curl's forms: `content` and `=content`
    /// encode content; `name=content` keeps name; `@file` and `name@file`
    /// encode a file's bytes.
    static func urlencoded(_ spec: String) throws(CLIFailure) -> [UInt8] {
        func encode(_ bytes: [UInt8]) -> [UInt8] { // as curl: space is '+'
            var out: [UInt8] = []
            let hex = Array("0123456789ABCDEF".utf8)
            for b in bytes {
                switch b {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                     UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                     UInt8(ascii: "~"):
                    out.append(b)
                default:
                    out += b == 0x20 ? [UInt8(ascii: "+")] : [UInt8(ascii: "%"), hex[Int(b >> 4)], hex[Int(b & 15)]]
                }
            }
            return out
        }
        let eq = spec.firstIndex(of: "="), at = spec.firstIndex(of: "@")
        if let at, eq == nil || at < eq! {
            let name = spec[..<at]
            let content = encode(try loadBytes(String(spec[spec.index(after: at)...])))
            return name.isEmpty ? content : Array(name.utf8) + [UInt8(ascii: "=")] + content
        }
        guard let eq else { return encode(Array(spec.utf8)) }
        let name = spec[..<eq]
        let content = encode(Array(spec[spec.index(after: eq)...].utf8))
        return name.isEmpty ? content : Array(name.utf8) + [UInt8(ascii: "=")] + content
    }

    /// curl's repair of a URL typed with one or three slashes (`http:/host`)
    /// and a URL without a scheme (http).
    static func repaired(_ url: String) -> String {
        for scheme in ["http:", "https:"] where url.lowercased().hasPrefix(scheme) {
            let rest = url.dropFirst(scheme.count)
            let slashes = rest.prefix { $0 == "/" }.count
            if slashes >= 1 && slashes != 2 { return scheme + "//" + rest.dropFirst(slashes) }
        }
        return url.contains("://") ? url : "http://" + url
    }

    /// `mkdir -p path` (--create-dirs).
    static func makeDirectories(_ path: String) throws(CLIFailure) {
        var built = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/") {
            built += "/" + component
            if mkdir(built, 0o755) != 0 && errno != EEXIST {
                throw CLIFailure(.localWrite, "--create-dirs: cannot create \(built): \(String(cString: strerror(errno)))")
            }
        }
    }

    /// The -F parts, curl's way: `name=value` a field, `name=@FILE` a file
    /// part (name and type from the file unless `;filename=`/`;type=` say),
    /// `name=<FILE` a field with the file's content; `;type=` and
    /// `;filename=` may follow any of them.
    private func makeForm() throws(CLIFailure) -> PocketMultipartForm {
        var multipart = PocketMultipartForm()
        for spec in form {
            guard let eq = spec.firstIndex(of: "="), eq != spec.startIndex else {
                throw CLIFailure(.usage, "-F '\(spec)': expected name=content")
            }
            let name = String(spec[..<eq])
            var pieces = spec[spec.index(after: eq)...].split(separator: ";", omittingEmptySubsequences: false).map(String.init)
            var content = pieces.removeFirst()
            var type: String?, fileName: String?
            // A ';' is part of the content unless what follows is a known modifier.
            while let next = pieces.first {
                let trimmed = next.trimmingWhitespace()
                if trimmed.hasPrefix("type=") {
                    type = String(trimmed.dropFirst(5))
                } else if trimmed.hasPrefix("filename=") {
                    var quoted = Substring(trimmed.dropFirst(9))
                    if quoted.count >= 2, quoted.hasPrefix("\""), quoted.hasSuffix("\"") { quoted = quoted.dropFirst().dropLast() }
                    fileName = String(quoted)
                } else {
                    content += ";" + next
                }
                pieces.removeFirst()
            }
            if content.hasPrefix("@") {
                let path = String(content.dropFirst())
                var st = stat()
                guard stat(path, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG, access(path, R_OK) == 0 else {
                    throw CLIFailure(.localRead, "-F \(name): cannot read \(path): \(String(cString: strerror(errno == 0 ? EINVAL : errno)))")
                }
                multipart.addFile(name, at: URL(filePath: path), fileName: fileName, contentType: type)
            } else {
                let value = content.hasPrefix("<") ? try Self.loadBytes(String(content.dropFirst())) : Array(content.utf8)
                if type != nil || fileName != nil {
                    multipart.addData(name, Data(value), fileName: fileName, contentType: type)
                } else {
                    multipart.addField(name, String(decoding: value, as: UTF8.self))
                }
            }
        }
        return multipart
    }

    /// `Name: value` adds (replacing the body's Content-Type), `Name:` removes a
    /// field the client would send by default, `Name;` sends it with an empty value.
    static func apply(header line: String, to headers: inout PocketHeaders, defaults: inout PocketHeaders) throws(CLIFailure) {
        let colon = line.firstIndex(of: ":")
        let semicolon = line.firstIndex(of: ";")
        if let semicolon, colon == nil || semicolon < colon!, line[line.index(after: semicolon)...].allSatisfy({ $0 == " " }) {
            let name = String(line[..<semicolon])
            guard !name.isEmpty else { throw CLIFailure(.usage, "-H '\(line)': no field name") }
            headers.remove(name)
            headers.add(name: name, value: "")
            return
        }
        guard let colon else { throw CLIFailure(.usage, "-H '\(line)': expected 'Name: value'") }
        let name = String(line[..<colon])
        let value = line[line.index(after: colon)...].trimmingWhitespace()
        guard !name.isEmpty, !name.contains(" ") else { throw CLIFailure(.usage, "-H '\(line)': expected 'Name: value'") }
        if value.isEmpty {
            headers.remove(name)
            defaults.remove(name)
            return
        }
        if name.lowercased() == "content-type" || name.lowercased() == "accept" { headers.remove(name) }
        headers.add(name: name, value: value)
    }

    static func duration(_ seconds: Double, _ flag: String) throws(CLIFailure) -> Duration {
        guard seconds.isFinite, seconds > 0, seconds < 1e9 else {
            throw CLIFailure(.usage, "\(flag) needs a number of seconds > 0, got \(seconds)")
        }
        return .milliseconds(Int64((seconds * 1000).rounded(.up)))
    }
}

extension FetchCommand {
    /// -x/--proxy, --proxy-user, --noproxy, --unix-socket and --resolve.
    func applyReach(to configuration: inout PocketClient.Configuration, url: URL) throws(CLIFailure) {
        do {
            if let proxy {
                configuration.proxy = proxy.isEmpty ? .direct : try PocketProxy(proxy)
            } else if proxyUser != nil {
                // Credentials for the environment's proxy, as curl applies them.
                let env = ProcessInfo.processInfo.environment
                let https = url.scheme?.lowercased() == "https"
                let names = https ? ["https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"] : ["http_proxy", "all_proxy", "ALL_PROXY"]
                if let value = names.lazy.compactMap({ env[$0] }).first(where: { !$0.isEmpty }) {
                    configuration.proxy = try PocketProxy(value)
                }
            }
        } catch {
            throw CLIFailure(error)
        }
        if var proxy = configuration.proxy, !proxy.isDirect {
            // --proxy-user, else the proxy URL's own user and password, answer
            // the proxy as --proxy-basic (curl's default), --proxy-digest or
            // --proxy-anyauth say, and go to that proxy only.
            var credential = proxy.username.map { PocketCredential(username: $0, password: proxy.password ?? "") }
            if let proxyUser {
                let colon = proxyUser.firstIndex(of: ":") ?? proxyUser.endIndex
                credential = PocketCredential(username: String(proxyUser[..<colon]),
                                              password: colon < proxyUser.endIndex ? String(proxyUser[proxyUser.index(after: colon)...]) : "")
            }
            if let credential {
                proxy.username = nil
                proxy.password = nil
                configuration.proxy = proxy
                configuration.handling.proxyAuthentication = try proxyAuthentication(credential, proxy: proxy)
            }
        }
        if [proxyBasic, proxyDigest, proxyAnyauth].filter({ $0 }).count > 1 {
            throw CLIFailure(.usage, "give one of --proxy-basic, --proxy-digest and --proxy-anyauth")
        }
        if let noProxy { configuration.noProxy = noProxy.split(separator: ",").map(String.init) }
        configuration.unixSocketPath = unixSocket
        for entry in resolve {
            do {
                configuration.addressOverrides.append(try PocketAddressOverride(entry))
            } catch {
                throw CLIFailure(.usage, "--resolve: \(error.message)")
            }
        }
    }
}
