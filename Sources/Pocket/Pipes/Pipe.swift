#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A REST resource of `Model` records (AeroGear's `AGPipe`): read them all,
/// one, or those matching parameters; save (create or update) and remove
/// them; page through long lists; cancel whatever is in flight.
///
/// ```swift
/// let pipeline = PocketPipeline(baseURL: URL(string: "https://todo.example.com/api")!, client: client)
/// let projects = pipeline.pipe(Project.self, name: "projects")
/// var project = try await projects.save(Project(title: "Hello World"))   // POST /projects
/// project.title = "Hello Update World!"
/// project = try await projects.save(project)                             // PUT /projects/{id}
/// let all = try await projects.read()                                    // GET /projects
/// try await projects.remove(project)                                     // DELETE /projects/{id}
/// ```
///
/// Records travel as JSON. Every operation sends the pipe's headers and
/// authorization, runs under its timeout, and fails with `PocketError`: a
/// status outside 2xx or a body that is not JSON (`.unacceptableStatus`,
/// `.unacceptableContentType`, with head and body), a body that does not
/// decode as `Model` (`.decodingFailed`, naming the JSON path), a record
/// without an id where one is needed (`.missingRecordID`), or `.cancelled`
/// after `cancel()`.
public final class PocketPipe<Model: Codable & Sendable>: Sendable {
    /// The settings the pipe was made with.
    public let configuration: PocketPipeConfiguration
    /// The resource's URL: the pipeline's base URL joined with the endpoint
    /// (the base URL itself when they do not make a URL; every operation
    /// then fails with the reason).
    public let url: URL
    private let urlProblem: PocketError?
    let client: PocketClient
    private let operations = PipeOperations()

    init(configuration: PocketPipeConfiguration, baseURL: URL, client: PocketClient) {
        self.configuration = configuration
        self.client = client
        do {
            url = try URLResolution.resolve(configuration.resolvedEndpoint, base: baseURL, extraQuery: "")
            urlProblem = nil
        } catch let error as PocketError {
            url = baseURL
            urlProblem = error
        } catch {
            url = baseURL
            urlProblem = PocketError(.invalidURL, "\(error)")
        }
    }

    // MARK: Reading

    /// Every record: `GET endpoint`. With body paging, the records are the
    /// array at its `items` key; otherwise the body is the array.
    public func read() async throws -> [Model] {
        try await read(params: [:])
    }

    /// The records matching `params`: `GET endpoint?name=value…` (AGPipe's
    /// `readWithParams:`), encoded with the client's `queryEncoding`.
    public func read(params: [String: PocketParameterValue]) async throws -> [Model] {
        try await readPage(at: collectionURL(adding: params)).items
    }

    /// One record: `GET endpoint/id` (the id percent-encoded as one path segment).
    public func read(id: some CustomStringConvertible & Sendable) async throws -> Model {
        let recordURL = try recordURL(id.description)
        return try await operations.run { [self] in
            try await send(.get, recordURL, body: nil).decode(Model.self)
        }
    }

    // MARK: Writing

    /// Creates or updates `record` and returns the server's version of it
    /// (with its id). A record without an id (its `recordIDKey` missing,
    /// null or empty) is POSTed to the endpoint; one with an id is PUT to
    /// `endpoint/id`. A PUT answered with no body returns `record` as sent.
    /// A record that is `PocketPipeBodyProviding` chooses its own body.
    public func save(_ record: Model) async throws -> Model {
        let id = try Self.recordID(of: record, key: configuration.recordIDKey)
        let (method, target) = try id.map { (PocketMethod.put, try recordURL($0)) } ?? (.post, try collectionURL())
        let body: (PocketRequestBody, String)
        if let custom = record as? any PocketPipeBodyProviding {
            body = try custom.pipeRequestBody()
        } else {
            body = (try PocketRequestBody.json(record), "application/json")
        }
        return try await operations.run { [self] in
            let response = try await send(method, target, body: body, progress: configuration.uploadProgress)
            if response.body.isEmpty && method == .put { return record }
            return try response.decode(Model.self)
        }
    }

    /// Deletes `record`: `DELETE endpoint/id`. Throws `.missingRecordID`
    /// when it has no id (nothing is sent).
    public func remove(_ record: Model) async throws {
        guard let id = try Self.recordID(of: record, key: configuration.recordIDKey) else {
            throw PocketError(.missingRecordID, "cannot remove a \(Model.self) without \"\(configuration.recordIDKey)\"")
        }
        try await remove(id: id)
    }

    /// Deletes the record with this id: `DELETE endpoint/id`.
    public func remove(id: some CustomStringConvertible & Sendable) async throws {
        let recordURL = try recordURL(id.description)
        // Nothing is read from a DELETE's answer: any 2xx will do, whatever its type.
        _ = try await operations.run { [self] in try await send(.delete, recordURL, body: nil, validation: .status()) }
    }

    // MARK: Cancelling

    /// Makes every operation of this pipe in flight now fail with
    /// `.cancelled` (AGPipe's `cancel`). A request the server already
    /// received may still take effect there. Later operations run normally.
    public func cancel() {
        operations.cancelAll()
    }

    /// Operations in flight now.
    public var operationsInFlight: Int { operations.count }

    // MARK: Internals

    /// Sends one operation's request with the pipe's settings; the response
    /// must pass `validation`: by default 2xx and, when it has a body, JSON.
    func send(_ method: PocketMethod, _ target: URL, body: (PocketRequestBody, String)?,
              progress: PocketProgressHandler? = nil, validation: PocketValidation = PocketValidation()) async throws -> PocketResponse {
        var request = PocketRequest(method: method, url: target)
        request.headers["Accept"] = "application/json"
        if let (payload, contentType) = body {
            request.body = payload
            request.headers["Content-Type"] = contentType
        }
        if let authorization = configuration.authorization { request.headers.authorize(authorization) }
        request.headers.merge(configuration.headers)
        var timeouts = client.configuration.timeouts
        timeouts.total = min(timeouts.total ?? configuration.timeout, configuration.timeout)
        timeouts.read = timeouts.read.map { min($0, configuration.timeout) }
        request.timeouts = timeouts
        request.validation = validation
        return try await client.send(request, progress: progress)
    }

    /// The endpoint's URL with `params` as its query.
    func collectionURL(adding params: [String: PocketParameterValue] = [:]) throws -> URL {
        if let urlProblem { throw urlProblem }
        return try PipeRequests.url(url, adding: params, encoding: client.configuration.queryEncoding)
    }

    /// GETs one page of the list and finds its neighbours.
    func readPage(at target: URL) async throws -> PocketPage<Model> {
        try await operations.run { [self] in
            let response = try await send(.get, target, body: nil)
            return try page(from: response, at: target)
        }
    }

    private func page(from response: PocketResponse, at target: URL) throws -> PocketPage<Model> {
        let base = response.url ?? target
        switch configuration.paging {
        case let .linkHeader(next, previous):
            let links = response.headers.values(for: "Link")
            var prev = LinkHeader.target(rel: previous, in: links)
            if prev == nil, previous.lowercased() == "prev" { prev = LinkHeader.target(rel: "previous", in: links) }
            return PocketPage(items: try response.decode([Model].self), next: Self.resolve(LinkHeader.target(rel: next, in: links), base),
                        previous: Self.resolve(prev, base), response: response, pipe: self)
        case let .headers(next, previous):
            return PocketPage(items: try response.decode([Model].self), next: Self.resolve(response.headers[next], base),
                        previous: Self.resolve(response.headers[previous], base), response: response, pipe: self)
        case let .body(next, previous, items):
            let json = try response.decode(PocketParameterValue.self)
            var records = response
            if let items {
                guard let list = json.value(at: items) else {
                    throw PocketError(.decodingFailed, "the page has no \"\(items)\" key", response: response.head, body: response.body)
                }
                records.body = try JSONEncoder().encode(list)
            }
            return PocketPage(items: try records.decode([Model].self), next: try link(json.value(at: next), base),
                        previous: try link(json.value(at: previous), base), response: response, pipe: self)
        }
    }

    /// A page link in a body: a URL string, or query parameters for `base`.
    private func link(_ value: PocketParameterValue?, _ base: URL) throws -> URL? {
        switch value {
        case .string(let s): return Self.resolve(s, base)
        case .dictionary(let params) where !params.isEmpty:
            return try PipeRequests.url(base, adding: params, encoding: client.configuration.queryEncoding, replacing: true)
        default: return nil
        }
    }

    private static func resolve(_ reference: String?, _ base: URL) -> URL? {
        guard let reference, !reference.isEmpty else { return nil }
        return URL(string: reference, relativeTo: base)?.absoluteURL
    }

    private func recordURL(_ id: String) throws -> URL {
        if let urlProblem { throw urlProblem }
        guard !id.isEmpty else { throw PocketError(.missingRecordID, "an empty record id for \(url.absoluteString)") }
        return try URLResolution.resolve(PercentEncoding.pathSegment(id), base: url, extraQuery: "")
    }

    /// The record's id as a URL segment value, or nil when it has none.
    static func recordID(of record: Model, key: String) throws -> String? {
        guard let json = try PocketRequestBody.json(record).data,
              case .dictionary(let fields) = try JSONDecoder().decode(PocketParameterValue.self, from: json) else { return nil }
        return fields[key]?.recordID
    }
}

/// The URLs a pipe sends to, built with the request-building helpers.
enum PipeRequests {
    /// `url` with `params` added to its query (`encoding`); with `replacing`,
    /// fields of the same names already there are dropped first (a body's
    /// `{"page": 3}` moves the current page's `page=2`).
    static func url(_ url: URL, adding params: [String: PocketParameterValue], encoding: PocketQueryEncoding,
                    replacing: Bool = false) throws -> URL {
        let query = encoding.encode(params)
        guard !query.isEmpty else { return url }
        var kept: [Substring] = []
        if let existing = url.query(percentEncoded: true), !existing.isEmpty {
            let names = params.keys.map { PercentEncoding.encode($0) }
            kept = existing.split(separator: "&").filter { field in
                guard replacing else { return true }
                let name = field.prefix { $0 != "=" }
                return !names.contains { name == $0 || name.hasPrefix($0 + "%5B") || name.hasPrefix($0 + "[") }
            }
        }
        var c = URLComponents(url: url, resolvingAgainstBaseURL: true)
        c?.percentEncodedQuery = (kept.map(String.init) + [query]).joined(separator: "&")
        guard let result = c?.url else { throw PocketError(.invalidURL, "cannot add \(query) to \(url.absoluteString)") }
        return result
    }
}

/// The operations of one pipe in flight, so `cancel()` reaches all of them.
final class PipeOperations: Sendable {
    private struct State {
        var next: UInt64 = 0
        var running: [UInt64: @Sendable () -> Void] = [:]
    }

    private let state = Lock(State())

    /// Runs `work` as its own task, cancellable by `cancelAll()` and by
    /// cancelling the caller. An operation cancelled either way fails with
    /// `.cancelled`, even if its response had already arrived.
    func run<T: Sendable>(_ work: @escaping @Sendable () async throws -> T) async throws -> T {
        let task = Task { try await work() }
        let id = state.withLock { s -> UInt64 in
            s.next += 1
            s.running[s.next] = { task.cancel() }
            return s.next
        }
        defer { _ = state.withLock { $0.running.removeValue(forKey: id) } }
        let result = await withTaskCancellationHandler { await task.result } onCancel: { task.cancel() }
        if task.isCancelled {
            throw PocketError(.cancelled, "the pipe's operation was cancelled")
        }
        return try result.get()
    }

    /// Cancels every operation running now.
    func cancelAll() {
        let cancels = state.withLock { Array($0.running.values) }
        for cancel in cancels { cancel() }
    }

    /// Operations running now.
    var count: Int { state.withLock { $0.running.count } }
}

/// Where a pipe finds the next and previous pages of a list (AeroGear's
/// `AGPageConfig` metadata locations).
public enum PocketPipePaging: Sendable, Hashable {
    /// RFC 8288 `Link` header fields: the targets of the links whose `rel`
    /// is `next` and `previous` (defaults `"next"` and `"prev"`; `"previous"`
    /// is also accepted for the latter). The default: it is the standard,
    /// used by GitHub's API among many.
    case linkHeader(next: String = "next", previous: String = "prev")
    /// Header fields of their own whose values are the page URLs (absolute,
    /// or relative like `?page=3`), e.g. AeroGear's `AG-Links-Next`.
    case headers(next: String, previous: String)
    /// Keys in a JSON object body (dot-separated paths such as
    /// `"paging.next"`). A value is a URL string (absolute or relative) or an
    /// object of query parameters to set on the current page's URL; null or
    /// missing means there is no such page. The records are the array at
    /// `items` (a key path; nil: the body itself is the array).
    case body(next: String, previous: String, items: String?)

    /// `Link` headers with `rel="next"` and `rel="prev"`.
    public static let `default` = PocketPipePaging.linkHeader()
}
