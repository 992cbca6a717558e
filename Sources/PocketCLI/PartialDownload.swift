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
/// expect: the partial body in FILE itself, plus `.FILE.pocket-resume` next
/// to it (the library's `PocketResumeData` as JSON: the validators, so the resume
/// sends `If-Range` and a changed resource restarts instead of splicing).
/// A FILE without the sidecar (made by curl, or copied) resumes from its
/// size without validators.
struct PartialDownload {
    let destination: URL

    var sidecar: URL {
        destination.deletingLastPathComponent().appending(path: ".\(destination.lastPathComponent).pocket-resume")
    }

    /// Where the partial body waits while the engine appends to it.
    var temporary: URL {
        destination.deletingLastPathComponent().appending(path: ".\(destination.lastPathComponent).pocket-partial")
    }

    private func path(_ url: URL) -> String { url.path(percentEncoded: false) }

    /// For `-C -`: nil when FILE is absent or empty (a plain download), else
    /// FILE moved to the temporary name and the resume data for it.
    func resumeData(for request: PocketRequest) throws(CLIFailure) -> PocketResumeData? {
        var st = stat()
        guard stat(path(destination), &st) == 0, st.st_size > 0 else { return nil }
        let size = Int(st.st_size)
        var saved: PocketResumeData?
        if let json = FileManager.default.contents(atPath: path(sidecar)),
           let data = try? JSONDecoder().decode(PocketResumeData.self, from: json), data.bytesReceived == size {
            saved = data
        }
        guard rename(path(destination), path(temporary)) == 0 else {
            throw CLIFailure(.localWrite, "cannot resume \(path(destination)): \(String(cString: strerror(errno)))")
        }
        return PocketResumeData(request: request, destination: destination, partialFile: temporary, bytesReceived: size,
                          etag: saved?.etag, lastModified: saved?.lastModified, totalBytes: saved?.totalBytes)
    }

    /// After a failure: the partial body back into FILE and its validators
    /// into the sidecar, for the next `-C -`.
    func keep(_ data: PocketResumeData) {
        guard rename(path(data.temporaryFile), path(destination)) == 0 else { return }
        var st = stat()
        var saved = data
        if stat(path(destination), &st) == 0 { saved.bytesReceived = Int(st.st_size) }
        saved.temporaryFile = temporary
        if let json = try? JSONEncoder().encode(saved) {
            _ = FileManager.default.createFile(atPath: path(sidecar), contents: json)
        }
    }

    /// Puts a partial file moved aside by `resumeData(for:)` back.
    func restore() {
        if access(path(temporary), F_OK) == 0 { _ = rename(path(temporary), path(destination)) }
    }

    func discardSidecar() { unlink(path(sidecar)) }
}
