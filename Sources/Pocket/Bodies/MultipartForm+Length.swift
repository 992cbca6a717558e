#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

extension PocketMultipartForm {
    /// The bytes the form's body would have if sent now: part heads,
    /// contents and delimiters, with file parts at their current size
    /// (`stat`). Nil when a stream part has no length (the form goes out
    /// chunked). Throws `.invalidMultipartForm` for a form that cannot be
    /// sent, `.fileReadFailed` for a file part that cannot be read.
    public func encodedLength() throws(PocketError) -> Int? {
        let layout = try MultipartEncoding.layout(self)
        var total = 0
        for segment in layout.segments {
            switch segment {
            case .bytes(let range):
                total += range.count
            case .file(let path):
                var st = stat()
                guard stat(path, &st) == 0 else {
                    let e = errno
                    throw PocketError(.fileReadFailed, "cannot read \(path): \(String(cString: strerror(e)))", systemError: e)
                }
                total += Int(st.st_size)
            case .stream(_, let length):
                guard let length else { return nil }
                total += length
            }
        }
        return total
    }
}
