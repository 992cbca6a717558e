import Foundation
import XCTest
@testable import Pocket
import PocketTestSupport

/// A multipart upload through the request's life: Expect: 100-continue, an
/// early final response, cancellation. Files opened for a form are closed
/// whichever way it ends.
final class MultipartLifecycleTests: XCTestCase {
    private var server: TestServer!
    private var directory: URL!

    override func setUpWithError() throws {
        let server = try TestServer()
        server.keepsRequestBodies = false
        server.route("/form") { r in .text("\(r.bodyLength) \(r.bodySHA256)") }
        server.route("/small-only", respondsBeforeBody: true) { _ in .text("too large", status: 413) }
        self.server = server
        directory = try temporaryDirectory("pocket-mpl", shuttingDown: server)
    }

    private func bigForm(_ size: Int) throws -> PocketMultipartForm {
        let file = directory.appendingPathComponent("big-\(size).bin")
        XCTAssertTrue(FileManager.default.createFile(atPath: file.path, contents: Data(BytePattern.bytes(seed: 1, range: 0..<size))))
        var form = PocketMultipartForm()
        form.addField("a", "b")
        form.addFile("big", at: file)
        return form
    }

    func testExpectContinueThenTheWholeForm() async throws {
        let form = try bigForm(2 << 20)
        var request = PocketRequest(method: .put, url: url(server, "/form"), body: .multipart(form))
        request.expectContinue = .seconds(5)
        let r = try await makeClient().send(request)
        XCTAssertEqual(r.status, 200)
        let received = try XCTUnwrap(server.receivedRequests.last)
        XCTAssertEqual(received.header("Expect"), "100-continue")
        XCTAssertEqual(r.text, "\(received.bodyLength) \(received.bodySHA256)")
        XCTAssertGreaterThan(received.bodyLength, 2 << 20)
        XCTAssertEqual(received.header("Content-Length"), String(received.bodyLength))
    }

    func testEarlyFinalResponseStopsTheFormAndClosesItsFiles() async throws {
        let form = try bigForm(48 << 20)
        let client = try makeClient()
        let r = try await client.send(PocketRequest(method: .post, url: url(server, "/small-only"), body: .multipart(form)))
        XCTAssertEqual(r.status, 413)
        XCTAssertLessThan(r.timings.bytesSent, 48 << 20, "the upload stopped early")
        // The form's file is closed (the connection was not pooled either).
        let settled = await eventually { self.openFormFiles().isEmpty }
        XCTAssertTrue(settled, "still open: \(openFormFiles())")
    }

    func testCancellingAFormWithAStreamThatNeverEnds() async throws {
        var form = try bigForm(1 << 20)
        form.addStream("endless", AsyncStream<Data> { c in c.yield(Data("x".utf8)) }, length: nil) // never finishes
        let client = try makeClient()
        let request = PocketRequest(method: .post, url: url(server, "/form"), body: .multipart(form))
        let task = Task { try await client.send(request) }
        let started = await eventually { !self.openFormFiles().isEmpty && self.server.openConnections > 0 }
        XCTAssertTrue(started, "the form's file is open while it is sent")
        task.cancel()
        await assertPocketError(.cancelled) { try await task.value }
        let settled = await eventually { self.openFormFiles().isEmpty }
        XCTAssertTrue(settled, "still open: \(openFormFiles())")
    }

    /// Descriptors of this process open on files of the test's directory.
    private func openFormFiles() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []).compactMap {
            try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\($0)")
        }.filter { $0.hasPrefix(directory.path) }
    }
}
