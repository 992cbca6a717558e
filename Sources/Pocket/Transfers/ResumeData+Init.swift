#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension PocketResumeData {
    /// Resume data for a partial file made elsewhere (by another tool, or an
    /// earlier run that kept only the file), e.g. `pocket -C -`: the resume
    /// asks for the bytes from `temporaryFile`'s size on (its size when the
    /// download starts, whatever `bytesReceived` says; it becomes
    /// `temporaryFile`). Without `etag` or
    /// `lastModified` there is no `If-Range`, so the server cannot tell a
    /// changed resource: pass the validators whenever they are known.
    public init(request: PocketRequest, destination: URL, partialFile: URL, bytesReceived: Int,
                etag: String? = nil, lastModified: String? = nil, totalBytes: Int? = nil) {
        self.request = request
        self.destination = destination
        self.temporaryFile = partialFile
        self.bytesReceived = bytesReceived
        self.etag = etag
        self.lastModified = lastModified
        self.totalBytes = totalBytes
    }
}
