import Foundation

/// Parses a `multipart/form-data` body with Python 3's `email` package in a
/// subprocess: an implementation that shares nothing with Pocket's encoder,
/// so a test checks the bytes the way a real server would read them.
/// (`python3` comes from `scripts/setup.sh`.)
public enum IndependentMultipartParser {
    public struct Part: Decodable, Sendable {
        /// Header fields as received (names as sent, values UTF-8).
        public var headers: [[String]]
        /// `name` and `filename` of Content-Disposition, unquoted.
        public var name: String
        public var filename: String?
        public var length: Int
        public var sha256: String
        /// The content, base64, for parts up to 64 KiB.
        public var content: String?
        public var defects: [String]

        public func header(_ name: String) -> String? {
            headers.first { $0[0].lowercased() == name.lowercased() }?[1]
        }

        public var data: Data? { content.flatMap { Data(base64Encoded: $0) } }
    }

    public struct Form: Decodable, Sendable {
        public var multipart: Bool
        public var defects: [String]
        public var parts: [Part]
    }

    private static let script = #"""
import sys, json, base64, hashlib, email.parser, email.policy
raw = open(sys.argv[1], 'rb').read()
msg = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
    b'Content-Type: ' + sys.argv[2].encode() + b'\r\nMIME-Version: 1.0\r\n\r\n' + raw)
def text(v):
    return None if v is None else str(v).encode('utf-8', 'surrogateescape').decode('utf-8')
out = {'multipart': msg.is_multipart(), 'defects': [type(d).__name__ for d in msg.defects], 'parts': []}
for part in (msg.iter_parts() if msg.is_multipart() else []):
    body = part.get_payload(decode=True) or b''
    out['parts'].append({
        'headers': [[k, text(v)] for k, v in part.raw_items()],
        'name': text(part.get_param('name', header='content-disposition')),
        'filename': text(part.get_param('filename', header='content-disposition')),
        'length': len(body), 'sha256': hashlib.sha256(body).hexdigest(),
        'content': base64.b64encode(body).decode() if len(body) <= 65536 else None,
        'defects': [type(d).__name__ for d in part.defects],
    })
print(json.dumps(out))
"""#

    /// Parses `body` sent with `contentType`.
    public static func parse(_ body: [UInt8], contentType: String) throws -> Form {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("pocket-mp-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let bodyFile = dir.appendingPathComponent("body"), scriptFile = dir.appendingPathComponent("parse.py")
        try Data(body).write(to: bodyFile)
        try Data(script.utf8).write(to: scriptFile)
        let (result, _) = try ChildProcess.run("/usr/bin/env", ["python3", scriptFile.path, bodyFile.path, contentType])
        guard result.status == 0 else {
            throw NSError(domain: "python3", code: Int(result.status),
                          userInfo: [NSLocalizedDescriptionKey: result.stderrText])
        }
        return try JSONDecoder().decode(Form.self, from: result.stdout)
    }
}
