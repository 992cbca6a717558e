#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Parsing of the `Retry-After` field (RFC 9110 §10.2.3): either a number of
/// seconds or an HTTP-date.
enum RetryAfter {
    /// The wait `value` asks for, measured from `now`; nil when it is neither
    /// form. A date in the past means zero.
    static func delay(_ value: String, now: Date) -> Duration? {
        let trimmed = String(value.drop(while: { $0 == " " || $0 == "\t" }).reversed()
            .drop(while: { $0 == " " || $0 == "\t" }).reversed())
        if !trimmed.isEmpty, trimmed.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) {
            // Huge digit strings saturate rather than failing.
            guard let seconds = Int64(trimmed) else { return .seconds(Int64.max / 1_000_000_000_000) }
            return .seconds(seconds)
        }
        guard let date = httpDate(trimmed) else { return nil }
        let seconds = date.timeIntervalSince(now)
        return seconds <= 0 ? .zero : .milliseconds(Int64((seconds * 1000).rounded(.up)))
    }

    private static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]

    /// IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), and the obsolete RFC 850
    /// (`Sunday, 06-Nov-94 08:49:37 GMT`) and asctime (`Sun Nov  6 08:49:37 1994`)
    /// forms recipients must accept (RFC 9110 §5.6.7).
    static func httpDate(_ text: String) -> Date? {
        let parts = text.split(whereSeparator: { $0 == " " || $0 == "," }).map(String.init)
        var day: Int?, month: Int?, year: Int?, time: [Int]?
        if parts.count == 6, parts[5] == "GMT" {
            // IMF-fixdate: Sun 06 Nov 1994 08:49:37 GMT
            day = Int(parts[1]); month = monthIndex(parts[2]); year = Int(parts[3]); time = clock(parts[4])
        } else if parts.count == 4, parts[3] == "GMT" {
            // RFC 850: Sunday 06-Nov-94 08:49:37 GMT
            let dmy = parts[1].split(separator: "-").map(String.init)
            guard dmy.count == 3, let yy = Int(dmy[2]) else { return nil }
            day = Int(dmy[0]); month = monthIndex(dmy[1]); time = clock(parts[2])
            // Two-digit years: RFC 9110 says a year more than 50 years ahead is in the past century.
            year = yy < 100 ? (yy < 70 ? 2000 + yy : 1900 + yy) : yy
        } else if parts.count == 5 {
            // asctime: Sun Nov 6 08:49:37 1994
            month = monthIndex(parts[1]); day = Int(parts[2]); time = clock(parts[3]); year = Int(parts[4])
        }
        guard let day, let month, let year, let time, (1...31).contains(day), year >= 1970 else { return nil }
        return date(year: year, month: month, day: day, hour: time[0], minute: time[1], second: time[2])
    }

    private static func monthIndex(_ s: String) -> Int? {
        months.firstIndex(of: s.lowercased()).map { $0 + 1 }
    }

    private static func clock(_ s: String) -> [Int]? {
        let hms = s.split(separator: ":").compactMap { Int($0) }
        guard hms.count == 3, (0...23).contains(hms[0]), (0...59).contains(hms[1]), (0...60).contains(hms[2]) else { return nil }
        return hms
    }

    /// Seconds since 1970 of a UTC civil date (days-from-civil, no calendar object).
    private static func date(year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int) -> Date {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        let days = era * 146_097 + doe - 719_468
        return Date(timeIntervalSince1970: TimeInterval(days * 86_400 + hour * 3600 + minute * 60 + second))
    }
}
