import Foundation
import XCTest
@testable import Pocket
import PocketTestSupport

/// AGPipe's save of a payload with file parts: a `PocketMultipartRecord` goes out
/// as multipart/form-data, read back by an independent parser.
final class PipeMultipartTests: XCTestCase {
    struct Project: Codable, PocketMultipartRecord, Equatable {
        var id: Int?
        var title: String
        var tags: [String]
        var archived: Bool
        var note: String?
        var logo: URL?
        var fileParts: [String: PocketFilePart] {
            var parts: [String: PocketFilePart] = ["notes": .data(Data("ünïcode notes".utf8), fileName: "notes.txt")]
            if let logo { parts["logo"] = .file(logo) }
            return parts
        }
        enum CodingKeys: String, CodingKey { case id, title, tags, archived, note, logo }
    }

    func testSavingARecordWithFilePartsSendsMultipartWithProgress() async throws {
        let server = try TestServer()
        let client = try makeClient()
        defer { server.shutdown() }
        let logo = FileManager.default.temporaryDirectory.appending(path: "pocket-logo-\(UUID().uuidString).png")
        let logoBytes = BytePattern.bytes(seed: 6, range: 0..<300_000)
        try Data(logoBytes).write(to: logo)
        defer { try? FileManager.default.removeItem(at: logo) }

        server.route("/api/projects") { request in
            guard let form = try? IndependentMultipartParser.parse(request.body, contentType: request.header("Content-Type") ?? "") else {
                return .text("not multipart", status: 400)
            }
            let fields = Dictionary(uniqueKeysWithValues: form.parts.filter { $0.filename == nil }.map {
                ($0.name, String(decoding: $0.data ?? Data(), as: UTF8.self))
            })
            let tags = (try? JSONDecoder().decode([String].self, from: Data((fields["tags"] ?? "").utf8))) ?? []
            let json = try! JSONEncoder().encode(Project(id: 7, title: fields["title"] ?? "?", tags: tags,
                                                         archived: fields["archived"] == "true", note: fields["note"]))
            return .response(status: 201, headers: [("Content-Type", "application/json")], body: Array(json))
        }
        let (updates, progress) = PocketProgressHandler.stream(interval: .milliseconds(1))
        let pipeline = PocketPipeline(baseURL: URL(string: server.url("/api"))!, client: client)
        let projects = pipeline.pipe(Project.self, name: "projects") { $0.uploadProgress = progress }

        let saved = try await projects.save(Project(title: "Hello World", tags: ["a", "b"], archived: true, logo: logo))
        XCTAssertEqual(saved.id, 7)
        XCTAssertEqual(saved.tags, ["a", "b"])
        XCTAssertTrue(saved.archived)

        let sent = try XCTUnwrap(server.receivedRequests.last)
        XCTAssertEqual(sent.method, "POST")
        XCTAssertTrue(sent.header("Content-Type")?.hasPrefix("multipart/form-data; boundary=") == true)
        let form = try IndependentMultipartParser.parse(sent.body, contentType: sent.header("Content-Type")!)
        XCTAssertEqual(form.defects, [])
        XCTAssertEqual(form.parts.map(\.name), ["archived", "tags", "title", "logo", "notes"],
                       "text fields in key order (nil note and the file's URL left out), then the files")
        XCTAssertEqual(form.parts[0].data.map { String(decoding: $0, as: UTF8.self) }, "true")
        XCTAssertEqual(form.parts[1].data.map { String(decoding: $0, as: UTF8.self) }, #"["a","b"]"#)
        XCTAssertEqual(form.parts[2].data.map { String(decoding: $0, as: UTF8.self) }, "Hello World")
        XCTAssertEqual(form.parts[3].filename, logo.lastPathComponent)
        XCTAssertEqual(form.parts[3].header("Content-Type"), "image/png")
        XCTAssertEqual(form.parts[3].sha256, SHA256Digest.hex(logoBytes))
        XCTAssertEqual(form.parts[4].filename, "notes.txt")
        XCTAssertEqual(form.parts[4].data, Data("ünïcode notes".utf8))

        var last: PocketTransferProgress?
        for await update in updates where update.direction == .upload { last = update }
        XCTAssertEqual(last?.bytes, sent.body.count, "upload progress ends at the form's size")
        XCTAssertEqual(last?.total, sent.body.count, "every part's size was known: the form had a total")
        try await client.shutdown()
    }

    func testMTPocketSendFileDataUploadsOnePartAndCallsSuccess() async throws {
        let server = try TestServer()
        let client = try makeClient { $0.baseURL = URL(string: server.url("/"))! }
        defer { server.shutdown() }
        server.route("/photos") { _ in .text("stored", status: 201) }
        let jpeg = Data(BytePattern.bytes(seed: 1, range: 0..<50_000))
        let outcome = AsyncStream<String>.makeStream()
        client.sendFileData(jpeg, fileName: "test.jpg", formField: "files[]", mimeType: nil,
                            with: try client.request(.get, "photos"),
                            success: { response in outcome.continuation.yield("success \(response.status) \(response.text)") },
                            failure: { error, _ in outcome.continuation.yield("failure \(error)") })
        var results = outcome.stream.makeAsyncIterator()
        let result = await results.next()
        XCTAssertEqual(result, "success 201 stored")
        let sent = try XCTUnwrap(server.receivedRequests.last)
        XCTAssertEqual(sent.method, "POST", "a GET template becomes a POST upload")
        let form = try IndependentMultipartParser.parse(sent.body, contentType: try XCTUnwrap(sent.header("Content-Type")))
        XCTAssertEqual(form.parts.count, 1)
        XCTAssertEqual(form.parts[0].name, "files[]")
        XCTAssertEqual(form.parts[0].filename, "test.jpg")
        XCTAssertEqual(form.parts[0].header("Content-Type"), "image/jpeg", "inferred from the name")
        XCTAssertEqual(form.parts[0].sha256, SHA256Digest.hex(Array(jpeg)))
        try await client.shutdown()
    }
}
