#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Response text in the charset of its `Content-Type` (RFC 9110 §8.3.2).
enum TextCharset {
    /// The lowercased `charset` parameter of a media type, quotes removed.
    static func parameter(of contentType: String?) -> String? {
        guard let contentType else { return nil }
        for part in contentType.split(separator: ";").dropFirst() {
            let kv = part.split(separator: "=", maxSplits: 1)
            guard kv.count == 2, trimmed(kv[0]).lowercased() == "charset" else { continue }
            var v = trimmed(kv[1])
            if v.count >= 2, v.hasPrefix("\""), v.hasSuffix("\"") { v = String(v.dropFirst().dropLast()) }
            return v.isEmpty ? nil : v.lowercased()
        }
        return nil
    }

    /// `s` without leading and trailing spaces and tabs (HTTP's OWS).
    static func trimmed(_ s: Substring) -> String {
        String(s.drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }

    /// Windows-1252's 0x80–0x9F (the rest is Latin-1); 0 marks the five unassigned bytes.
    private static let cp1252High: [UInt16] = [
        0x20AC, 0, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021, 0x02C6, 0x2030, 0x0160, 0x2039, 0x0152, 0, 0x017D, 0,
        0, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013, 0x2014, 0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0, 0x017E, 0x0178,
    ]

    static func decode(_ body: Data, charset: String?) throws -> String {
        func invalid() -> PocketError {
            PocketError(.unsupportedCharset, "response body is not valid \(charset ?? "utf-8")")
        }
        switch charset ?? "utf-8" {
        case "utf-8", "utf8":
            guard let s = String(validating: body, as: UTF8.self) else { throw invalid() }
            return s
        case "us-ascii", "ascii":
            guard !body.contains(where: { $0 >= 0x80 }) else { throw invalid() }
            return String(decoding: body, as: UTF8.self)
        case "iso-8859-1", "latin1", "iso_8859-1", "l1":
            return String(String.UnicodeScalarView(body.map { Unicode.Scalar($0) }))
        case "windows-1252", "cp1252":
            var scalars = String.UnicodeScalarView()
            for b in body {
                if (0x80...0x9F).contains(b) {
                    let u = cp1252High[Int(b) - 0x80]
                    guard u != 0, let scalar = Unicode.Scalar(u) else { throw invalid() }
                    scalars.append(scalar)
                } else {
                    scalars.append(Unicode.Scalar(b))
                }
            }
            return String(scalars)
        case "utf-16", "utf-16le", "utf-16be":
            guard body.count % 2 == 0 else { throw invalid() }
            var bytes = Array(body)
            var little = charset == "utf-16le"
            if charset == "utf-16", bytes.count >= 2 {
                if bytes[0] == 0xFF && bytes[1] == 0xFE { little = true; bytes.removeFirst(2) }
                else if bytes[0] == 0xFE && bytes[1] == 0xFF { bytes.removeFirst(2) }
            }
            let units = stride(from: 0, to: bytes.count, by: 2).map { i in
                little ? UInt16(bytes[i]) | UInt16(bytes[i + 1]) << 8 : UInt16(bytes[i]) << 8 | UInt16(bytes[i + 1])
            }
            guard let s = String(validating: units, as: UTF16.self) else { throw invalid() }
            return s
        default:
            throw PocketError(.unsupportedCharset, "charset \(charset!) is not supported (utf-8, us-ascii, iso-8859-1, windows-1252, utf-16)")
        }
    }
}
