#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A base URL and the named pipes under it (AeroGear's `AGPipeline`).
///
/// ```swift
/// let todo = Pipeline(baseURL: URL(string: "https://todo.example.com/api")!, client: client)
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
