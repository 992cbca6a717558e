/// The charts of a results set, per scenario: requests/s bars by connection
/// count and client; the latency percentile curves; and, when a scenario ran
/// at three or more connection counts (the scaling run), p99 and peak RSS
/// bars with the memory per connection stated beside them, and the memory
/// per connection at each count. The requests/s
/// chart also carries each client's `note`; a client that was `skipped` is
/// named, with the reason, on every chart of its scenario. A fixed-rate
/// scenario (every run has `offered`: `--rate`) gets no requests/s chart,
/// since its clients answer at the rate they were offered; its latency
/// chart carries the notes instead.
public struct ResultCharts {
    /// One chart: its SVG text and the file name it is written under.
    public struct Chart: Sendable {
        /// The scenario drawn.
        public var scenario: String
        /// `rps`, `latency`, `p99`, `rss`, `memory`.
        public var kind: String
        /// The standalone SVG document.
        public var svg: String
        /// `<scenario>-<kind>.svg`, the scenario in lower case, other characters as `-`.
        public var fileName: String { "\(slug(scenario))-\(kind).svg" }
    }

    /// What is drawn.
    public let results: BenchResults

    /// The charts of `results`.
    public init(_ results: BenchResults) { self.results = results }

    /// Every chart, scenario by scenario in the order of the runs.
    public var charts: [Chart] { results.scenarios.flatMap { charts(scenario: $0.name, groups: $0.groups) } }

    func charts(scenario: String, groups: [BenchResults.Group]) -> [Chart] {
        let clients = ordered(groups.map(\.client))
        let counts = Array(Set(groups.map(\.connections))).sorted()
        func colour(_ g: BenchResults.Group) -> String {
            Palette.colour(client: g.client, index: clients.firstIndex(of: g.client) ?? 0)
        }
        // One bar series per client name drawn (a label may tell two builds of one client apart).
        let names = ordered(groups.map(\.displayName))
        let barSeries = names.map { name in ChartSeries(name: name, colour: colour(groups.first { $0.displayName == name }!)) }
        func values(_ figure: (BenchResults.Group) -> Double?) -> [[Double?]] {
            names.map { name in counts.map { c in groups.first { $0.displayName == name && $0.connections == c }.flatMap(figure) } }
        }
        let categories = counts.map { "\($0)" }
        let failing = groups.filter { $0.failures > 0 }
        // Every chart says when and where its runs ran.
        let provenance = Self.provenance(groups.flatMap(\.runs))
        var rpsNotes: [String] = provenance
        if !failing.isEmpty {
            rpsNotes.append("ERRORS: " + failing.map { "\($0.seriesName) \($0.failures) failed" }.joined(separator: ", "))
        }
        let repetitions = Set(groups.map(\.runs.count))
        if let r = repetitions.max(), r > 1 { rpsNotes.append("medians of \(r) repetitions") }
        let notRun = results.skipped(scenario: scenario).flatMap { s in
            wrapped("not run: \(s.displayName) (\(s.connections.map { "c=\($0)" }.joined(separator: ", "))): \(s.reason)")
        }
        for name in names {
            let runs = groups.filter { $0.displayName == name }.flatMap(\.runs)
            for note in ordered(runs.compactMap(\.note)) { rpsNotes += wrapped("\(name): \(note)") }
        }

        var out: [Chart] = []
        let fixedRate = !groups.isEmpty && groups.allSatisfy { $0.runs.allSatisfy { $0.offered != nil } }
        if !fixedRate {
            let rps = BarChart(kind: "rps", scenario: scenario, title: "\(scenario): requests/s (higher is better)",
                               notes: rpsNotes + notRun, yLabel: "requests/s", xLabel: "concurrent connections",
                               categories: categories, series: barSeries, values: values { $0.rps })
            out.append(Chart(scenario: scenario, kind: "rps", svg: rps.svg()))
        }

        if counts.count >= 3 {
            let p99 = BarChart(kind: "p99", scenario: scenario, title: "\(scenario): p99 latency (lower is better)",
                               notes: provenance, yLabel: "p99 latency", xLabel: "concurrent connections", categories: categories,
                               series: barSeries, values: values(\.p99Micros), label: latencyLabel)
            if p99.values.contains(where: { $0.contains { $0 != nil } }) {
                out.append(Chart(scenario: scenario, kind: "p99", svg: p99.svg()))
            }
            let rss = BarChart(kind: "rss", scenario: scenario, title: "\(scenario): peak RSS (lower is better)",
                               notes: provenance + memoryPerConnection(groups, names: names), yLabel: "peak RSS (MiB)",
                               xLabel: "concurrent connections", categories: categories, series: barSeries,
                               values: values { $0.peakRSSKiB.map { $0 / 1024 } })
            if rss.values.contains(where: { $0.contains { $0 != nil } }) {
                out.append(Chart(scenario: scenario, kind: "rss", svg: rss.svg()))
            }
            // Memory per connection at each count above the fewest: what one
            // more connection costs, without the process's fixed part.
            let lo = counts[0]
            let perConnection = BarChart(
                kind: "memory", scenario: scenario, title: "\(scenario): memory per connection (lower is better)",
                notes: provenance + ["(peak RSS at c connections - at \(lo)) / (c - \(lo))"], yLabel: "KiB per connection",
                xLabel: "concurrent connections", categories: counts.dropFirst().map { "\($0)" }, series: barSeries,
                values: names.map { name in
                    let rss = { (c: Int) in groups.first { $0.displayName == name && $0.connections == c }?.peakRSSKiB }
                    return counts.dropFirst().map { c in rss(lo).flatMap { a in rss(c).map { ($0 - a) / Double(c - lo) } } }
                })
            if perConnection.values.contains(where: { $0.contains { $0 != nil } }) {
                out.append(Chart(scenario: scenario, kind: "memory", svg: perConnection.svg()))
            }
        }

        var curves: [PercentileChart.Curve] = []
        var withoutLatency: [String] = []
        for name in names {
            for g in groups.filter({ $0.displayName == name }).sorted(by: { $0.connections < $1.connections }) {
                let points = g.curve
                if points.isEmpty {
                    withoutLatency.append(g.seriesName)
                    continue
                }
                let dash = Palette.dashes[(counts.firstIndex(of: g.connections) ?? 0) % Palette.dashes.count]
                curves.append(.init(series: ChartSeries(name: g.seriesName, colour: colour(g), dash: dash), points: points))
            }
        }
        if !curves.isEmpty {
            // A fixed-rate scenario's notes are here (it has no requests/s chart).
            var notes: [String] = fixedRate ? rpsNotes : provenance
            if !withoutLatency.isEmpty { notes += wrapped("no latency measured: " + withoutLatency.joined(separator: ", ")) }
            notes += notRun
            let chart = PercentileChart(scenario: scenario, title: "\(scenario): latency by percentile (lower is better)",
                                        notes: notes, curves: curves)
            out.append(Chart(scenario: scenario, kind: "latency", svg: chart.svg()))
        }
        return out
    }

    /// "measured 2026-11-28 on 2 CPUs, AMD EPYC, Linux 6.18.44": the days
    /// and machines `runs` carry (none when they carry neither).
    static func provenance(_ runs: [BenchRun]) -> [String] {
        let dates = Set(runs.compactMap(\.date)).sorted()
        let machines = ordered(runs.compactMap(\.machine)).map(\.summary).filter { !$0.isEmpty }
        guard !dates.isEmpty || !machines.isEmpty else { return [] }
        var text = "measured"
        if let first = dates.first, let last = dates.last { text += first == last ? " \(first)" : " \(first) to \(last)" }
        if !machines.isEmpty { text += " on " + machines.joined(separator: "; ") }
        return wrapped(text)
    }

    /// "Pocket 22.1 KiB/connection", from the peak RSS at the fewest and the
    /// most connections: (RSS(max) - RSS(min)) / (max - min).
    func memoryPerConnection(_ groups: [BenchResults.Group], names: [String]) -> [String] {
        let parts: [String] = names.compactMap { name in
            let g = groups.filter { $0.displayName == name && $0.peakRSSKiB != nil }.sorted { $0.connections < $1.connections }
            guard let a = g.first, let b = g.last, b.connections > a.connections else { return nil }
            let perConnection = (b.peakRSSKiB! - a.peakRSSKiB!) / Double(b.connections - a.connections)
            return "\(name) \(fixedPoint(perConnection, 1)) KiB"
        }
        guard !parts.isEmpty, let lo = groups.map(\.connections).min(), let hi = groups.map(\.connections).max() else { return [] }
        return ["memory per connection, (peak RSS at \(hi) - at \(lo)) / \(hi - lo) connections:", parts.joined(separator: ", ")]
    }
}

/// A note as lines of at most `width` characters, broken between words (a
/// chart is 760 px wide: about 95 characters of its 12 px note text); a word
/// longer than a line stays whole.
func wrapped(_ text: String, width: Int = 95) -> [String] {
    var lines: [String] = []
    var line = ""
    for word in text.split(separator: " ") {
        if !line.isEmpty, line.count + 1 + word.count > width {
            lines.append(line)
            line = ""
        }
        line += (line.isEmpty ? "" : " ") + word
    }
    if !line.isEmpty { lines.append(line) }
    return lines
}

/// The elements in the order they first appear, once each.
func ordered<T: Hashable>(_ items: [T]) -> [T] {
    var seen = Set<T>()
    return items.filter { seen.insert($0).inserted }
}

/// A file-name-safe form of a scenario name: "plain HTTP" → "plain-http".
func slug(_ s: String) -> String {
    s.lowercased().split { !($0.isASCII && ($0.isLetter || $0.isNumber)) }.joined(separator: "-")
}
