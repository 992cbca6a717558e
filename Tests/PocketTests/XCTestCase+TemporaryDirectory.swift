import Foundation
import XCTest
import PocketTestSupport

extension XCTestCase {
    /// A new directory under the system temp dir, removed at teardown,
    /// after `server` (if any) is shut down.
    func temporaryDirectory(_ prefix: String, shuttingDown server: TestServer? = nil) throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        addTeardownBlock {
            server?.shutdown()
            try? FileManager.default.removeItem(at: directory)
        }
        return directory
    }
}
