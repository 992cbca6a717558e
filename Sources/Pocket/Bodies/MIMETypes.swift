/// The MIME type a multipart file part gets from its file name's extension.
///
/// A small built-in table of common types (no system database is read, so
/// the result is the same on every machine); anything else is
/// `application/octet-stream` (RFC 7578 §4.4: the default for files).
enum MIMETypes {
    static let fallback = "application/octet-stream"

    /// The type for `fileName`'s extension (case-insensitive), or the fallback.
    static func type(forFileName fileName: String) -> String {
        guard let dot = fileName.lastIndex(of: "."), dot != fileName.startIndex else { return fallback }
        let ext = fileName[fileName.index(after: dot)...].lowercased()
        return table[ext] ?? fallback
    }

    private static let table: [String: String] = [
        // text
        "txt": "text/plain", "text": "text/plain", "log": "text/plain", "md": "text/markdown",
        "csv": "text/csv", "tsv": "text/tab-separated-values", "html": "text/html", "htm": "text/html",
        "css": "text/css", "xml": "application/xml", "ics": "text/calendar",
        // data
        "json": "application/json", "jsonl": "application/jsonl", "ndjson": "application/x-ndjson",
        "js": "text/javascript", "mjs": "text/javascript", "yaml": "application/yaml", "yml": "application/yaml",
        "pdf": "application/pdf", "wasm": "application/wasm", "bin": "application/octet-stream",
        // archives
        "zip": "application/zip", "gz": "application/gzip", "tgz": "application/gzip", "tar": "application/x-tar",
        "bz2": "application/x-bzip2", "xz": "application/x-xz", "zst": "application/zstd", "7z": "application/x-7z-compressed",
        // images
        "png": "image/png", "jpg": "image/jpeg", "jpeg": "image/jpeg", "gif": "image/gif", "webp": "image/webp",
        "svg": "image/svg+xml", "ico": "image/vnd.microsoft.icon", "bmp": "image/bmp", "tif": "image/tiff",
        "tiff": "image/tiff", "avif": "image/avif", "heic": "image/heic",
        // audio and video
        "mp3": "audio/mpeg", "wav": "audio/wav", "ogg": "audio/ogg", "oga": "audio/ogg", "flac": "audio/flac",
        "m4a": "audio/mp4", "aac": "audio/aac", "opus": "audio/opus", "mp4": "video/mp4", "m4v": "video/mp4",
        "webm": "video/webm", "mov": "video/quicktime", "mkv": "video/x-matroska", "avi": "video/x-msvideo",
        // documents and fonts
        "doc": "application/msword", "xls": "application/vnd.ms-excel", "ppt": "application/vnd.ms-powerpoint",
        "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        "pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
        "odt": "application/vnd.oasis.opendocument.text", "rtf": "application/rtf", "epub": "application/epub+zip",
        "woff": "font/woff", "woff2": "font/woff2", "ttf": "font/ttf", "otf": "font/otf",
    ]
}
