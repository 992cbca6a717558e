#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// One line or bar colour of a chart, named in its legend.
struct ChartSeries {
    var name: String
    var colour: String
    var dash: String? = nil
}

/// The frame every chart shares: title, an optional note under it, the plot
/// area, the axes with their labels, and the legend below.
private struct Frame {
    static let width = 760.0
    static let left = 84.0, right = 24.0, plotHeight = 260.0
    let top: Double
    let legendRows: [[(ChartSeries, Double)]] // items with their x
    var plotWidth: Double { Frame.width - Frame.left - Frame.right }
    var bottom: Double { top + Frame.plotHeight }
    var height: Double { bottom + 58 + Double(legendRows.count) * 20 + 8 }

    init(series: [ChartSeries], notes: Int) {
        top = 44 + Double(notes) * 16
        var rows: [[(ChartSeries, Double)]] = [[]]
        var x = Frame.left
        for s in series {
            let w = 26 + Double(s.name.count) * 7 + 20
            if x + w > Frame.width - Frame.right, !rows[rows.count - 1].isEmpty {
                rows.append([])
                x = Frame.left
            }
            rows[rows.count - 1].append((s, x))
            x += w
        }
        legendRows = rows
    }

    func drawHead(_ svg: inout SVGDocument, title: String, notes: [String]) {
        svg.text(title, x: Frame.left, y: 24, size: 16, weight: "bold", attributes: [("class", "chart-title")])
        for (i, note) in notes.enumerated() {
            svg.text(note, x: Frame.left, y: 42 + Double(i) * 16, size: 12, fill: "#444444", attributes: [("class", "chart-note")])
        }
    }

    /// Horizontal grid lines and tick labels of the y axis, and both axis labels.
    func drawAxes(_ svg: inout SVGDocument, y: Axis, yTick: (Double) -> String, yLabel: String, xLabel: String) {
        svg.open("g", [("class", "y-axis")])
        for t in y.ticks {
            let py = bottom - y.fraction(t) * Frame.plotHeight
            svg.line(Frame.left, py, Frame.left + plotWidth, py, stroke: t == y.lower ? "#333333" : "#e2e2e2")
            svg.text(yTick(t), x: Frame.left - 6, y: py + 4, size: 11, anchor: "end", attributes: [("class", "tick")])
        }
        svg.close("g")
        svg.line(Frame.left, top, Frame.left, bottom, stroke: "#333333")
        svg.text(yLabel, x: 18, y: top + Frame.plotHeight / 2, size: 12, anchor: "middle", rotate: -90,
                 attributes: [("class", "axis-label"), ("data-axis", "y")])
        svg.text(xLabel, x: Frame.left + plotWidth / 2, y: bottom + 40, size: 12, anchor: "middle",
                 attributes: [("class", "axis-label"), ("data-axis", "x")])
    }

    func drawLegend(_ svg: inout SVGDocument, lines: Bool) {
        svg.open("g", [("class", "legend")])
        for (r, row) in legendRows.enumerated() {
            let y = bottom + 62 + Double(r) * 20
            for (s, x) in row {
                svg.open("g", [("class", "legend-item"), ("data-series", s.name)])
                if lines {
                    svg.line(x, y - 4, x + 20, y - 4, stroke: s.colour, width: 2.5, dash: s.dash)
                } else {
                    svg.element("rect", [("x", n(x)), ("y", n(y - 10)), ("width", "14"), ("height", "12"), ("fill", s.colour)])
                }
                svg.text(s.name, x: x + 26, y: y, size: 12)
                svg.close("g")
            }
        }
        svg.close("g")
    }
}

/// Grouped vertical bars: one group per category (connection counts), one
/// bar per series (clients), the value written above each bar.
struct BarChart {
    /// `data-chart`: `rps`, `p99`, `rss`.
    var kind: String
    var scenario: String
    var title: String
    var notes: [String] = []
    var yLabel: String
    var xLabel: String
    var categories: [String]
    var series: [ChartSeries]
    /// `values[series][category]`, nil: no bar.
    var values: [[Double?]]
    var label: (Double) -> String = compact
    var logScale = false

    func svg() -> String {
        let frame = Frame(series: series, notes: notes.count)
        var svg = SVGDocument(width: Frame.width, height: frame.height)
        frame.drawHead(&svg, title: title, notes: notes)
        let all = values.flatMap { $0.compactMap { $0 } }
        let y = logScale && (all.min() ?? 0) > 0
            ? Axis.logarithmic(from: all.min()!, to: all.max()!) : Axis.linear(upTo: all.max() ?? 1)
        frame.drawAxes(&svg, y: y, yTick: label, yLabel: yLabel, xLabel: xLabel)

        let groupWidth = frame.plotWidth / Double(max(categories.count, 1))
        let barWidth = min(56, groupWidth * 0.8 / Double(max(series.count, 1)))
        let used = barWidth * Double(series.count)
        for (c, category) in categories.enumerated() {
            let gx = Frame.left + groupWidth * Double(c)
            svg.text(category, x: gx + groupWidth / 2, y: frame.bottom + 18, size: 12, anchor: "middle",
                     attributes: [("class", "category")])
        }
        for (s, one) in series.enumerated() {
            svg.open("g", [("class", "series"), ("data-series", one.name)])
            for (c, category) in categories.enumerated() {
                guard let v = values[s][c] else { continue }
                let x = Frame.left + groupWidth * Double(c) + (groupWidth - used) / 2 + barWidth * Double(s)
                let h = max(y.fraction(v), 0) * Frame.plotHeight
                svg.element("rect", [("class", "bar"), ("data-category", category), ("data-value", dataValue(v)),
                                     ("x", n(x + 1)), ("y", n(frame.bottom - h)), ("width", n(barWidth - 2)),
                                     ("height", n(h)), ("fill", one.colour)])
                svg.text(label(v), x: x + barWidth / 2, y: frame.bottom - h - 4, size: barWidth < 30 ? 9 : 11,
                         anchor: "middle", attributes: [("class", "value")])
            }
            svg.close("g")
        }
        frame.drawLegend(&svg, lines: false)
        return svg.render(title: title, attributes: [("class", "chart"), ("data-chart", kind), ("data-scenario", scenario)])
    }
}

/// Latency by percentile, HdrHistogram's plot: x is 1/(1-p) on a log axis
/// (50%, 90%, 99%, 99.9%, … equally spaced), y the latency (log when the
/// curves span more than 20×).
struct PercentileChart {
    struct Curve {
        var series: ChartSeries
        var points: [(percent: Double, micros: Double)]
    }

    var scenario: String
    var title: String
    var notes: [String] = []
    var curves: [Curve]

    /// log10(1/(1-p)): 0 at 0%, 1 at 90%, 2 at 99%, …
    static func position(_ percent: Double) -> Double { -log10(max(1 - percent / 100, 1e-7)) }

    func svg() -> String {
        let frame = Frame(series: curves.map(\.series), notes: notes.count)
        var svg = SVGDocument(width: Frame.width, height: frame.height)
        frame.drawHead(&svg, title: title, notes: notes)
        let drawn = curves.map { c in c.points.filter { $0.percent < 100 && $0.micros > 0 } }
        let values = drawn.flatMap { $0.map(\.micros) }
        let lo = values.min() ?? 1, hi = values.max() ?? 10
        let y = hi / lo > 20 ? Axis.logarithmic(from: lo, to: hi) : Axis.linear(upTo: hi)
        frame.drawAxes(&svg, y: y, yTick: latencyLabel, yLabel: "latency\(y.log ? " (log scale)" : "")",
                       xLabel: "percentile (log scale of 1/(1-p), as HdrHistogram plots)")

        // Up to the decade of the rightmost point (99.9% is 3.0000000000000004, not past 3).
        let maxX = max(2, min(5, ceil((drawn.flatMap { $0.map { PercentileChart.position($0.percent) } }.max() ?? 2) - 1e-9)))
        func px(_ percent: Double) -> Double { Frame.left + PercentileChart.position(percent) / maxX * frame.plotWidth }
        svg.open("g", [("class", "x-axis")])
        for (p, name) in [(0.0, "0%"), (50, "50%"), (90, "90%"), (99, "99%"), (99.9, "99.9%"), (99.99, "99.99%"),
                          (99.999, "99.999%")] where PercentileChart.position(p) <= maxX + 1e-9 {
            let x = px(p)
            if p > 0 { svg.line(x, frame.top, x, frame.bottom, stroke: "#e2e2e2") }
            svg.line(x, frame.bottom, x, frame.bottom + 4, stroke: "#333333")
            svg.text(name, x: x, y: frame.bottom + 18, size: 11, anchor: "middle", attributes: [("class", "tick")])
        }
        svg.close("g")

        for (curve, points) in zip(curves, drawn) {
            svg.open("g", [("class", "series"), ("data-series", curve.series.name)])
            let coords = points.map { (px($0.percent), frame.bottom - y.fraction($0.micros) * Frame.plotHeight) }
            if coords.count > 1 {
                var a = [("points", coords.map { "\(n($0.0)),\(n($0.1))" }.joined(separator: " ")), ("fill", "none"),
                         ("stroke", curve.series.colour), ("stroke-width", "2.5"), ("stroke-linejoin", "round")]
                if let d = curve.series.dash { a.append(("stroke-dasharray", d)) }
                svg.element("polyline", a)
            }
            for (p, c) in zip(points, coords) {
                svg.element("circle", [("class", "point"), ("data-percent", dataValue(p.percent)),
                                       ("data-value", dataValue(p.micros)), ("cx", n(c.0)), ("cy", n(c.1)), ("r", "3"),
                                       ("fill", curve.series.colour)])
            }
            svg.close("g")
        }
        frame.drawLegend(&svg, lines: true)
        return svg.render(title: title, attributes: [("class", "chart"), ("data-chart", "latency"),
                                                     ("data-scenario", scenario)])
    }
}
