#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// SVG as text: the few elements the charts draw, attributes escaped, and
/// the `class`/`data-*` attributes that tests read back (`chart`, `bar`,
/// `series`, `point`, `axis-label`, `legend-item`). No scripts, no external
/// references: the output is a standalone `.svg` file or inline in XHTML.
struct SVGDocument {
    let width: Double
    let height: Double
    private(set) var body = ""

    init(width: Double, height: Double) {
        self.width = width
        self.height = height
    }

    /// The whole `<svg>` element; `attributes` go on it (`class`, `data-chart`, …).
    func render(title: String, attributes: [(String, String)]) -> String {
        var head = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(n(width))\" height=\"\(n(height))\""
            + " viewBox=\"0 0 \(n(width)) \(n(height))\" font-family=\"DejaVu Sans, Verdana, sans-serif\""
        for (k, v) in attributes { head += " \(k)=\"\(escapeXML(v))\"" }
        head += ">\n<title>\(escapeXML(title))</title>\n"
        head += "<rect x=\"0\" y=\"0\" width=\"\(n(width))\" height=\"\(n(height))\" fill=\"#ffffff\"/>\n"
        return head + body + "</svg>\n"
    }

    mutating func open(_ name: String, _ attributes: [(String, String)] = []) {
        body += "<\(name)\(attrs(attributes))>\n"
    }

    mutating func close(_ name: String) { body += "</\(name)>\n" }

    mutating func element(_ name: String, _ attributes: [(String, String)]) {
        body += "<\(name)\(attrs(attributes))/>\n"
    }

    mutating func line(_ x1: Double, _ y1: Double, _ x2: Double, _ y2: Double, stroke: String, width: Double = 1,
                       dash: String? = nil) {
        var a = [("x1", n(x1)), ("y1", n(y1)), ("x2", n(x2)), ("y2", n(y2)), ("stroke", stroke), ("stroke-width", n(width))]
        if let dash { a.append(("stroke-dasharray", dash)) }
        element("line", a)
    }

    /// Text; `anchor` is start, middle or end; `rotate` degrees about (x, y).
    mutating func text(_ s: String, x: Double, y: Double, size: Double = 12, anchor: String = "start",
                       weight: String? = nil, fill: String = "#222222", rotate: Double? = nil,
                       attributes: [(String, String)] = []) {
        var a = [("x", n(x)), ("y", n(y)), ("font-size", n(size)), ("text-anchor", anchor), ("fill", fill)]
        if let weight { a.append(("font-weight", weight)) }
        if let rotate { a.append(("transform", "rotate(\(n(rotate)) \(n(x)) \(n(y)))")) }
        body += "<text\(attrs(a + attributes))>\(escapeXML(s))</text>\n"
    }

    private func attrs(_ a: [(String, String)]) -> String {
        a.map { " \($0.0)=\"\(escapeXML($0.1))\"" }.joined()
    }
}

/// A coordinate in SVG: two decimals at most, no trailing zeros.
func n(_ v: Double) -> String {
    var s = fixedPoint(v, 2)
    while s.hasSuffix("0") { s.removeLast() }
    if s.hasSuffix(".") { s.removeLast() }
    return s == "-0" ? "0" : s
}

/// Text for XML content and attribute values.
public func escapeXML(_ s: String) -> String {
    var out = ""
    for c in s.unicodeScalars {
        switch c {
        case "&": out += "&amp;"
        case "<": out += "&lt;"
        case ">": out += "&gt;"
        case "\"": out += "&quot;"
        case "'": out += "&#39;"
        default:
            // Control characters are not allowed in XML 1.0 at all.
            if c.value < 0x20 && c != "\n" && c != "\t" { out += "?" } else { out.unicodeScalars.append(c) }
        }
    }
    return out
}

/// A value in the JSON's own precision, for `data-value` attributes that
/// tests compare with the results file.
func dataValue(_ v: Double) -> String { fixedPoint(v, 3) }

/// 138054 → "138k", 3394 → "3.4k", 587 → "587", 12.25 → "12.3".
func compact(_ v: Double) -> String {
    let a = abs(v)
    if a >= 1e6 { return trimmed(v / 1e6, a >= 1e7 ? 0 : 1) + "M" }
    if a >= 1e3 { return trimmed(v / 1e3, a >= 1e4 ? 0 : 1) + "k" }
    if a >= 100 || a == 0 { return fixedPoint(v, 0) }
    return trimmed(v, a >= 10 ? 1 : 2)
}

private func trimmed(_ v: Double, _ decimals: Int) -> String {
    var s = fixedPoint(v, decimals)
    if s.contains(".") {
        while s.hasSuffix("0") { s.removeLast() }
        if s.hasSuffix(".") { s.removeLast() }
    }
    return s
}

/// Microseconds as a latency label: "850 µs", "1.2 ms", "21 ms", "1.5 s".
func latencyLabel(_ us: Double) -> String {
    if us >= 1e6 { return trimmed(us / 1e6, 1) + " s" }
    if us >= 1e3 { return trimmed(us / 1e3, us >= 1e4 ? 0 : 1) + " ms" }
    return trimmed(us, us >= 10 ? 0 : 1) + " µs"
}

/// An axis from `lower` to `upper` with tick values, linear or log10.
struct Axis {
    var lower: Double
    var upper: Double
    var log: Bool
    var ticks: [Double]

    /// 0 to a round number above `maxValue`, 4–6 ticks.
    static func linear(upTo maxValue: Double) -> Axis {
        let top = maxValue > 0 ? maxValue * 1.08 : 1
        let raw = top / 5
        let mag = pow(10, floor(log10(raw)))
        let step = [1.0, 2, 2.5, 5, 10].map { $0 * mag }.first { $0 >= raw } ?? 10 * mag
        let upper = ceil(top / step) * step
        return Axis(lower: 0, upper: upper, log: false, ticks: stride(from: 0, through: upper + step / 2, by: step).map { $0 })
    }

    /// Powers of ten (and 2×, 5× between when the range is small) around the values.
    static func logarithmic(from minValue: Double, to maxValue: Double) -> Axis {
        let lo = pow(10, floor(log10(max(minValue, 1e-9))))
        let hi = pow(10, ceil(log10(max(maxValue, lo * 10))))
        var ticks: [Double] = []
        var d = lo
        let decades = log10(hi / lo)
        while d <= hi * 1.0001 {
            ticks.append(d)
            if decades <= 3 && d < hi * 0.999 { ticks.append(2 * d); ticks.append(5 * d) }
            d *= 10
        }
        return Axis(lower: lo, upper: hi, log: true, ticks: ticks.filter { $0 <= hi * 1.0001 })
    }

    /// Where `v` falls, 0 (lower) … 1 (upper).
    func fraction(_ v: Double) -> Double {
        if log { return (log10(max(v, lower)) - log10(lower)) / (log10(upper) - log10(lower)) }
        return (v - lower) / (upper - lower)
    }
}

/// Colours by client, so a client looks the same in every chart; dashes by
/// connection count within a client (the solid line is the first count).
enum Palette {
    static let byClient: [String: String] = [
        "pocket": "#d1495b", "wrk": "#555555", "libcurl": "#2e86ab", "ahc": "#edae49", "urlsession": "#66a182",
    ]
    static let others = ["#8d6cab", "#00798c", "#b5651d", "#30638e", "#a8a8a8", "#6b4226"]
    static let dashes: [String?] = [nil, "6 3", "2 3", "10 3 2 3", "1 2"]

    static func colour(client: String, index: Int) -> String {
        byClient[client] ?? others[index % others.count]
    }
}
