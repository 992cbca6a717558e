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

/// Where an interrupted `-o FILE` download waits for `-C -`, as curl users
/// expect: the partial body in FILE itself. Its validators (ETag,
/// Last-Modified: the resume sends `If-Range`, so a changed resource is
/// never spliced) go to a state file outside FILE's directory,
/// `$XDG_STATE_HOME/pocket/resume/` (default `~/.local/state/pocket/resume/`),
/// named by a hash of FILE's path; it is removed when a transfer to FILE
/// ends well. Nothing of Pocket's is left beside the user's file. A FILE
/// without state (made by curl, or copied) resumes from its size without
/// validators.
struct PartialDownload {
    let destination: URL

    /// The folder of the state files.
    static var stateDirectory: String {
        let env = ProcessInfo.processInfo.environment
        if let state = env["XDG_STATE_HOME"], state.hasPrefix("/") { return state + "/pocket/resume" }
        return (env["HOME"] ?? "/tmp") + "/.local/state/pocket/resume"
    }

    /// This file's state file: FNV-1a of the absolute path, then the name.
    var stateFile: String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in path(destination).utf8 { hash = (hash ^ UInt64(b)) &* 0x100_0000_01b3 }
        let hex = String(hash, radix: 16)
        return Self.stateDirectory + "/" + String(repeating: "0", count: 16 - hex.count) + hex + "-"
            + String(destination.lastPathComponent.prefix(100)) + ".json"
    }

    private func path(_ url: URL) -> String { url.path(percentEncoded: false) }

    /// For `-C -`: nil when FILE is absent or empty (a plain download), else
    /// its size and the validators saved for it when they match that size.
    func resumePoint() -> (offset: Int, saved: PocketResumeData?)? {
        var st = stat()
        guard stat(path(destination), &st) == 0, st.st_size > 0 else { return nil }
        let size = Int(st.st_size)
        var saved: PocketResumeData?
        if let json = FileManager.default.contents(atPath: stateFile),
           let data = try? JSONDecoder().decode(PocketResumeData.self, from: json), data.bytesReceived == size {
            saved = data
        }
        return (size, saved)
    }

    /// After a failed download: the partial body back into FILE and its
    /// validators into the state file, for the next `-C -`.
    func keep(_ data: PocketResumeData) {
        guard rename(path(data.temporaryFile), path(destination)) == 0 else { return }
        var st = stat()
        guard stat(path(destination), &st) == 0 else { return }
        save(data, size: Int(st.st_size))
    }

    /// Records `data`'s validators for FILE at `size` bytes (nothing to
    /// record without a validator).
    func save(_ data: PocketResumeData, size: Int) {
        guard data.etag != nil || data.lastModified != nil else { return discardState() }
        var saved = data
        saved.bytesReceived = size
        try? FileManager.default.createDirectory(atPath: Self.stateDirectory, withIntermediateDirectories: true)
        if let json = try? JSONEncoder().encode(saved) {
            _ = FileManager.default.createFile(atPath: stateFile, contents: json)
        }
    }

    func discardState() { unlink(stateFile) }
}
