#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A base URL and the named pipes under it (AeroGear's `AGPipeline`).
///
/// ```swift
/// let todo = PocketPipeline(baseURL: URL(string: "https://todo.example.com/api")!, client: client)
/// let projects = todo.pipe(Project.self, name: "projects") { $0.timeout = .seconds(20) }
/// let tasks = todo.pipe(Task.self, name: "tasks") { $0.endpoint = "v2/tasks" }
/// todo.pipe(named: "projects", as: Project.self)   // the same pipe, found by name
/// ```
public final class PocketPipeline: Sendable {
    /// What every pipe's endpoint is joined to.
    public let baseURL: URL
    /// The client every pipe sends with.
    public let client: PocketClient
    private let pipes = Lock<[String: any Sendable]>([:])

    /// A pipeline sending with `client` under `baseURL`.
    public init(baseURL: URL, client: PocketClient) {
        self.baseURL = baseURL
        self.client = client
    }

    /// Creates the pipe `name` for `Model` records, configured by
    /// `configure`, and keeps it under that name (replacing an earlier one).
    @discardableResult
    public func pipe<Model: Codable & Sendable>(_ type: Model.Type, name: String,
                                                 _ configure: (inout PocketPipeConfiguration) -> Void = { _ in }) -> PocketPipe<Model> {
        var configuration = PocketPipeConfiguration(name: name)
        configure(&configuration)
        let pipe = PocketPipe<Model>(configuration: configuration, baseURL: baseURL, client: client)
        pipes.withLock { $0[configuration.name] = pipe }
        return pipe
    }

    /// The pipe kept under `name`, if there is one for `Model` records.
    public func pipe<Model: Codable & Sendable>(named name: String, as type: Model.Type = Model.self) -> PocketPipe<Model>? {
        pipes.withLock { $0[name] } as? PocketPipe<Model>
    }

    /// Forgets the pipe `name` (operations in flight go on); returns whether there was one.
    @discardableResult
    public func removePipe(named name: String) -> Bool {
        pipes.withLock { $0.removeValue(forKey: name) } != nil
    }

    /// The names of the pipes kept, sorted.
    public var pipeNames: [String] { pipes.withLock { $0.keys.sorted() } }
}

/// How a `PocketPipe` talks to its resource (AeroGear's `AGPipeConfig`).
///
/// ```swift
/// let projects = pipeline.pipe(Project.self, name: "projects") { config in
///     config.timeout = .seconds(20)
///     config.headers["X-Client"] = "todo"
/// }
/// ```
public struct PocketPipeConfiguration: Sendable {
    /// The pipe's name and its key in the pipeline.
    public var name: String
    /// The resource's path under the pipeline's base URL; nil (the default)
    /// uses `name`, as AGPipe does.
    public var endpoint: String?
    /// The JSON key of a record's id, `"id"` by default (AGPipe's `recordId`).
    /// `save` PUTs a record that has one and POSTs one that has none.
    public var recordIDKey = "id"
    /// Longest time one operation may take, 60 s by default (AGPipe's):
    /// past it the operation fails with `.totalTimeout` (`isTimeout`).
    /// The client's connect and read timeouts still apply within it.
    public var timeout: Duration = .seconds(60)
    /// Header fields sent with every operation of the pipe. Default none
    /// (the client's default headers still go).
    public var headers: PocketHeaders = [:]
    /// The `Authorization` sent with every operation (`try .bearer(token)`,
    /// `.basic(username:password:)`, `.token(_:)`); nil (the default) sends none.
    public var authorization: PocketAuthorization?
    /// Where next/previous page links are found: `Link` headers by default.
    public var paging: PocketPipePaging = .default
    /// Query parameters of the first page when `pages()` is given none
    /// (AeroGear's `parameterProvider`), e.g. `["limit": 20]`. Default none.
    public var pageParameters: [String: PocketParameterValue] = [:]
    /// Upload progress of every `save` (AGPipe's `setUploadProgressBlock`);
    /// nil by default. Use a closure handler: a `PocketProgressHandler.stream()`
    /// ends with the first operation.
    public var uploadProgress: PocketProgressHandler?

    /// A configuration named `name`, every other setting at its default.
    public init(name: String) {
        self.name = name
    }

    /// The path the pipe's requests go to.
    var resolvedEndpoint: String { endpoint ?? name }
}

/// A record that chooses its own request body for `PocketPipe.save` instead of
/// JSON. `PocketMultipartRecord` adopts it for records that carry files (sent as
/// multipart/form-data, with upload progress through
/// `PocketPipeConfiguration.uploadProgress`).
public protocol PocketPipeBodyProviding: Sendable {
    /// The body `save` sends for this record, and its `Content-Type`.
    func pipeRequestBody() throws -> (body: PocketRequestBody, contentType: String)
}
