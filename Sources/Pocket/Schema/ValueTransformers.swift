#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The built-in transformers. Every `PocketSchemaRegistry` starts with them
/// registered: `{date_iso8601}`, `{url}`, `{number}`, `{int}`, `{string}`.
public enum PocketValueTransformers {
    /// `{date_iso8601}` ⇄ `Date`: RFC 3339 / ISO 8601 date-times such as
    /// `2015-03-22T10:53:24Z`, `2015-03-22T10:53:24.250+02:00` or `…+0200`.
    /// Written back in UTC with `Z`, with milliseconds only when the date has them.
    public struct ISO8601Date: PocketValueTransformer {
        /// The transformer (it has no settings).
        public init() {}
        /// Response direction; throws when the value does not convert.
        public func value(from json: PocketJSONValue) throws -> Date {
            guard let s = json.string, let date = ISO8601.parse(s) else {
                throw TransformError("Can't create Date from string '\(json.string ?? "\(json)")'")
            }
            return date
        }
        /// Request direction.
        public func json(from value: Date) throws -> PocketJSONValue {
            guard let text = ISO8601.format(value) else {
                throw TransformError("Can't write Date \(value.timeIntervalSince1970) s after 1970 as an RFC 3339 date-time")
            }
            return .string(text)
        }
    }

    /// `{url}` ⇄ `URL`: an absolute or relative URL string.
    public struct URLString: PocketValueTransformer {
        /// The transformer (it has no settings).
        public init() {}
        /// Response direction; throws when the value does not convert.
        public func value(from json: PocketJSONValue) throws -> URL {
            guard let s = json.string, !s.isEmpty, let url = URL(string: s) else {
                throw TransformError("Can't create URL from string '\(json.string ?? "")'")
            }
            return url
        }
        /// Request direction.
        public func json(from value: URL) throws -> PocketJSONValue { .string(value.absoluteString) }
    }

    /// `{number}` ⇄ `Double`: a number, or a string holding one (`"4.5"`),
    /// as some APIs send amounts.
    public struct Number: PocketValueTransformer {
        /// The transformer (it has no settings).
        public init() {}
        /// The JSON types it reads.
        public var acceptedTypes: PocketJSONTypes { [.number, .string] }
        /// Response direction; throws when the value does not convert.
        public func value(from json: PocketJSONValue) throws -> Double {
            if let d = json.double { return d }
            if let s = json.string, let d = Double(s), d.isFinite { return d }
            throw TransformError("Can't create a number from string '\(json.string ?? "")'")
        }
        /// Request direction.
        public func json(from value: Double) throws -> PocketJSONValue {
            value.rounded() == value && abs(value) < 9.2e18 ? .int(Int(value)) : .double(value)
        }
    }

    /// `{int}` ⇄ `Int`: an integral number, or a string holding one (`"42"`).
    public struct Integer: PocketValueTransformer {
        /// The transformer (it has no settings).
        public init() {}
        /// The JSON types it reads.
        public var acceptedTypes: PocketJSONTypes { [.number, .string] }
        /// Response direction; throws when the value does not convert.
        public func value(from json: PocketJSONValue) throws -> Int {
            if let i = json.int { return i }
            if let s = json.string, let i = Int(s) { return i }
            throw TransformError("Can't create an integer from \(json.typeName) \(json)")
        }
        /// Request direction.
        public func json(from value: Int) throws -> PocketJSONValue { .int(value) }
    }

    /// `{string}` ⇄ `String`: a string, or a number or boolean as text (`42` → `"42"`).
    public struct Text: PocketValueTransformer {
        /// The transformer (it has no settings).
        public init() {}
        /// The JSON types it reads.
        public var acceptedTypes: PocketJSONTypes { [.string, .number, .bool] }
        /// Response direction; throws when the value does not convert.
        public func value(from json: PocketJSONValue) throws -> String {
            switch json {
            case let .string(s): return s
            case let .bool(b): return b ? "true" : "false"
            default: return json.description
            }
        }
        /// Request direction.
        public func json(from value: String) throws -> PocketJSONValue { .string(value) }
    }
}

/// RFC 3339 date-times without a formatter: digits read by hand, days from
/// the civil calendar by arithmetic (proleptic Gregorian, as RFC 3339 says).
enum ISO8601 {
    static func parse(_ s: String) -> Date? {
        var s = s
        return s.withUTF8 { parse(bytes: $0) }
    }

    static func parse(bytes b: UnsafeBufferPointer<UInt8>) -> Date? {
        // yyyy-MM-ddTHH:mm:ss
        guard b.count >= 19, b[4] == UInt8(ascii: "-"), b[7] == UInt8(ascii: "-"),
              b[10] == UInt8(ascii: "T") || b[10] == UInt8(ascii: "t") || b[10] == 0x20,
              b[13] == UInt8(ascii: ":"), b[16] == UInt8(ascii: ":"),
              let year = digits(b, 0, 4), let month = digits(b, 5, 2), let day = digits(b, 8, 2),
              let hour = digits(b, 11, 2), let minute = digits(b, 14, 2), let second = digits(b, 17, 2),
              (1...12).contains(month), day >= 1, day <= CivilDate.daysIn(month: month, year: year),
              hour < 24, minute < 60, second < 61
        else { return nil }
        var i = 19
        var fraction = 0.0
        if i < b.count, b[i] == UInt8(ascii: ".") || b[i] == UInt8(ascii: ",") {
            i += 1
            var scale = 0.1
            let start = i
            while i < b.count, b[i] &- UInt8(ascii: "0") < 10 {
                fraction += Double(b[i] - UInt8(ascii: "0")) * scale
                scale /= 10
                i += 1
            }
            guard i > start else { return nil }
        }
        guard i < b.count else { return nil } // RFC 3339 requires an offset
        var offset = 0
        switch b[i] {
        case UInt8(ascii: "Z"), UInt8(ascii: "z"):
            i += 1
        case UInt8(ascii: "+"), UInt8(ascii: "-"):
            let sign = b[i] == UInt8(ascii: "-") ? -1 : 1
            i += 1
            guard let oh = digits(b, i, 2), oh < 24 else { return nil }
            i += 2
            if i < b.count, b[i] == UInt8(ascii: ":") { i += 1 }
            var om = 0
            if i < b.count {
                guard let m = digits(b, i, 2), m < 60 else { return nil }
                om = m
                i += 2
            }
            offset = sign * (oh * 3600 + om * 60)
        default:
            return nil
        }
        guard i == b.count else { return nil }
        let days = CivilDate.daysSinceEpoch(year: year, month: month, day: day)
        let seconds = days * 86400 + hour * 3600 + minute * 60 + min(second, 59) - offset
        return Date(timeIntervalSince1970: Double(seconds) + fraction)
    }

    /// Years 0000–9999 only (RFC 3339's four digits); nil outside them.
    static func format(_ date: Date) -> String? {
        let t = date.timeIntervalSince1970
        guard t.isFinite, t >= -62_167_219_200, t < 253_402_300_800 else { return nil }
        var whole = t.rounded(.down)
        var millis = Int(((t - whole) * 1000).rounded())
        if millis == 1000 { whole += 1; millis = 0 }
        let total = Int(whole)
        let days = total >= 0 ? total / 86400 : (total - 86399) / 86400
        let secs = total - days * 86400
        let (y, m, d) = CivilDate.date(daysSinceEpoch: days)
        var s = pad(y, 4) + "-" + pad(m, 2) + "-" + pad(d, 2) + "T"
        s += pad(secs / 3600, 2) + ":" + pad(secs / 60 % 60, 2) + ":" + pad(secs % 60, 2)
        if millis != 0 { s += "." + pad(millis, 3) }
        return s + "Z"
    }

    private static func pad(_ v: Int, _ width: Int) -> String {
        let s = String(v)
        return s.count >= width ? s : String(repeating: "0", count: width - s.count) + s
    }

    private static func digits(_ b: UnsafeBufferPointer<UInt8>, _ at: Int, _ n: Int) -> Int? {
        guard at + n <= b.count else { return nil }
        var v = 0
        for k in at..<(at + n) {
            let d = b[k] &- UInt8(ascii: "0")
            guard d < 10 else { return nil }
            v = v * 10 + Int(d)
        }
        return v
    }
}
