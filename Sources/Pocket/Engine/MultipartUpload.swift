#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
internal import CHTTPEngine
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A multipart form as the engine sends it (`PK_BODY_SEGMENTS`): one buffer
/// with every in-memory byte (part heads, fields, data parts, delimiters),
/// the open files, one pump for the stream parts, and the segment array over
/// them. Made at submit, closed at `on_done`: the engine borrows all of it
/// in between. Memory is the in-memory parts, never the files or streams.
final class MultipartUpload {
    private var memory: UnsafeMutableRawBufferPointer?
    private var segments: UnsafeMutableBufferPointer<pk_body_segment>
    private var fds: [Int32] = []
    private var spans: [MultipartLayout.Span]
    /// Per segment: the pump iterator of a stream segment.
    private var streamOfSegment: [Int: Int] = [:]
    /// Feeds the stream parts, in order; nil when there are none.
    let pump: BodyPump?
    /// True when a stream part has no length: the body goes out chunked.
    let chunked: Bool
    /// The body's length (meaningless when `chunked`).
    let length: Int

    /// Lays the form out and opens its files. Throws `.invalidMultipartForm`
    /// or `.fileReadFailed` (nothing stays open then).
    init(_ form: PocketMultipartForm) throws(PocketError) {
        let layout = try MultipartEncoding.layout(form)
        spans = layout.spans
        segments = .allocate(capacity: max(1, layout.segments.count))
        if !layout.memory.isEmpty {
            let m = UnsafeMutableRawBufferPointer.allocate(byteCount: layout.memory.count, alignment: 1)
            layout.memory.withUnsafeBytes { m.copyMemory(from: $0) }
            memory = m
        }
        var streams: [StreamSource] = []
        var chunked = false, total = 0
        var fileLength: [Int: Int] = [:]
        do {
            for (i, segment) in layout.segments.enumerated() {
                var s = pk_body_segment(kind: Int32(PK_SEG_MEMORY.rawValue), data: nil, fd: -1, offset: 0, len: 0)
                switch segment {
                case .bytes(let r):
                    s.data = UnsafeRawPointer(memory!.baseAddress! + r.lowerBound)
                    s.len = UInt64(r.count)
                case .file(let path):
                    let (fd, size) = try Self.open(path)
                    fds.append(fd)
                    fileLength[i] = size
                    s.kind = Int32(PK_SEG_FILE.rawValue)
                    s.fd = fd
                    s.len = UInt64(size)
                case let .stream(source, length):
                    streamOfSegment[i] = streams.count
                    streams.append(source)
                    s.kind = Int32(PK_SEG_STREAM.rawValue)
                    s.len = length.map(UInt64.init) ?? UInt64.max // PK_SEG_UNKNOWN_LEN
                    if length == nil { chunked = true }
                }
                if s.len != UInt64.max { total += Int(s.len) }
                (segments.baseAddress! + i).initialize(to: s)
            }
        } catch {
            pump = nil
            self.chunked = false
            length = 0
            close()
            throw error
        }
        for k in spans.indices where spans[k].length == nil { spans[k].length = fileLength[spans[k].segment] }
        segmentCount = layout.segments.count
        // Iterators only now that nothing can fail: dropping an unused one
        // can end its sequence (AsyncStream does), and a failed send must
        // leave the form's streams as they were.
        pump = streams.isEmpty ? nil : BodyPump(streams.map { $0.makeNext() })
        self.chunked = chunked
        length = total
    }

    private(set) var segmentCount = 0
    var segmentArray: UnsafePointer<pk_body_segment>? { UnsafePointer(segments.baseAddress) }

    private static func open(_ path: String) throws(PocketError) -> (Int32, Int) {
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        var st = stat()
        guard fd >= 0, fstat(fd, &st) == 0 else {
            let e = errno
            if fd >= 0 { Glibc.close(fd) }
            throw PocketError(.fileReadFailed, "cannot open the multipart file \(path): \(String(cString: strerror(e)))",
                              systemError: e)
        }
        return (fd, Int(st.st_size))
    }

    /// The part being sent when the engine is at `sent` bytes of segment
    /// `segment` (loop thread, from a progress report).
    func part(segment: Int, sent: Int) -> PocketPartProgress? {
        guard !spans.isEmpty else { return nil }
        func started(_ s: MultipartLayout.Span) -> Bool { s.segment < segment || (s.segment == segment && s.offset <= sent) }
        let k = spans.lastIndex(where: started) ?? 0
        let span = spans[k]
        var bytes = 0
        if started(span) {
            if span.segment == segment {
                bytes = min(sent - span.offset, span.length ?? Int.max)
            } else if let length = span.length {
                bytes = length
            } else if let stream = streamOfSegment[span.segment] {
                bytes = pump?.produced.withLock { $0[stream] } ?? 0 // complete: all it produced went out
            }
        }
        return PocketPartProgress(index: k, count: spans.count, name: span.name, bytes: bytes, total: span.length)
    }

    /// Frees the buffer and segments, closes the files, stops the pump. Once.
    func close() {
        pump?.stop()
        for fd in fds { Glibc.close(fd) }
        fds = []
        memory?.deallocate()
        memory = nil
        segments.deallocate()
        segments = UnsafeMutableBufferPointer(start: nil, count: 0)
    }
}
