import Foundation
import XCTest
@testable import Pocket
import PocketTesting

/// A pipe (AGPipe) running over the stub transport: the same pipe code, no network.
final class StubPipeTests: XCTestCase {
    struct Project: Codable, Sendable, Equatable {
        var id: Int?
        var title: String
    }

    func testPipeReadsSavesAndRemovesAgainstTheStub() async throws {
        let stub = PocketStubTransport()
        stub.stub(.get, "/api/projects", .json(#"[{"id":1,"title":"one"},{"id":2,"title":"two"}]"#))
        stub.stub(.get, "/api/projects/{id}", .json(#"{"id":2,"title":"two"}"#))
        stub.stub(.post, "/api/projects", .status(503), .json(#"{"id":3,"title":"three"}"#, status: 201))
        stub.stub(.delete, "/api/projects/{id}", .status(204))
        let clock = RecordingClock()
        let client = try clientWith {
            $0.transport = stub
            $0.clock = clock
            $0.retry = PocketRetryPolicy(backoff: .fixed(.milliseconds(10)), nonIdempotent: .always)
        }
        let pipeline = PocketPipeline(baseURL: URL(string: "http://todo.invalid/api")!, client: client)
        let projects = pipeline.pipe(Project.self, name: "projects")
        let all = try await projects.read()
        XCTAssertEqual(all.map(\.title), ["one", "two"])
        let two = try await projects.read(id: 2)
        XCTAssertEqual(two, Project(id: 2, title: "two"))
        let saved = try await projects.save(Project(id: nil, title: "three"))
        XCTAssertEqual(saved, Project(id: 3, title: "three"))
        try await projects.remove(id: 3)
        XCTAssertEqual(stub.requests.map { "\($0.method) \($0.url.path())" },
                       ["GET /api/projects", "GET /api/projects/2", "POST /api/projects", "POST /api/projects", "DELETE /api/projects/3"])
        XCTAssertEqual(clock.recordedSleeps, [.milliseconds(10)], "the pipe's POST was retried by the client's policy")
        XCTAssertEqual(String(decoding: stub.requests[2].body?.data ?? Data(), as: UTF8.self), #"{"title":"three"}"#)
    }
}
