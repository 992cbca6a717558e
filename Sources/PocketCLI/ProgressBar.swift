import Pocket
import PocketBenchKit

/// The progress line on stderr (only when stderr is a terminal, and not
/// with `-s`): percent, bar, rate and time left when the total is known;
/// bytes and rate when it is not. Redrawn in place with `\r` at the
/// engine's progress interval (100 ms); `finish()` ends the line. Reports
/// reach the drawing task through `PocketProgressHandler.stream()`, so a terminal
/// that blocks (scroll lock, a slow link) never holds the engine's loop.
final class ProgressBar: Sendable {
    private struct State {
        var direction: PocketTransferProgress.Direction?
        var start: ContinuousClock.Instant?
        var drawn = false
        var lastWidth = 0
        /// When the last report was drawn (an upload's end starts the download's clock).
        var last: ContinuousClock.Instant?
    }

    private let state: Lock<State>
    private let output: Output

    /// A bar whose clock starts now (the rate counts from the request's start).
    init(output: Output = .stderr) {
        self.output = output
        state = Lock(State(start: .now))
    }

    private let drawer = Lock<Task<Void, Never>?>(nil)

    /// A handler for one request (both directions are drawn).
    func handler() -> PocketProgressHandler {
        let (updates, handler) = PocketProgressHandler.stream()
        let task = Task { [self] in
            for await p in updates { self.draw(p) }
        }
        drawer.withLock { $0 = task }
        return handler
    }

    func draw(_ p: PocketTransferProgress) {
        let now = ContinuousClock.now
        let line: String? = state.withLock { s in
            var lead = "\r"
            if s.direction == .upload && p.direction == .download {
                // The upload's line stays as it ended (100%); an answer with
                // no body draws nothing more, and the download's rate counts
                // from the upload's end, not from its own first report.
                guard p.bytes > 0 else { return nil }
                s.start = s.last
                s.lastWidth = 0
                lead = "\n"
            }
            s.direction = p.direction
            let start = s.start ?? now
            s.start = start
            s.last = now
            let line = ProgressBar.line(p, elapsed: now - start)
            let pad = max(0, s.lastWidth - line.count)
            s.lastWidth = line.count
            s.drawn = true
            return lead + line + String(repeating: " ", count: pad)
        }
        if let line { try? output.write(line) }
    }

    /// Lets the drawing catch up with the request's last report (it has
    /// ended; at most a second), then ends the line if anything was drawn.
    func finish() async {
        if let task = drawer.withLock({ t in defer { t = nil }; return t }) {
            let limit = Task {
                try? await Task.sleep(for: .seconds(1))
                task.cancel()
            }
            await task.value
            limit.cancel()
        }
        let drawn = state.withLock { s in
            defer { s = State(start: .now) }
            return s.drawn
        }
        if drawn { try? output.write("\n") }
    }

    /// One progress line, e.g.
    /// ` 42% [########            ] 4.2 MB of 10.0 MB  12.3 MB/s  ETA 0:00:05 ↓`.
    static func line(_ p: PocketTransferProgress, elapsed: Duration) -> String {
        let (s, atto) = elapsed.components
        let seconds = Double(s) + Double(atto) / 1e18
        let rate = seconds > 0 ? Double(p.bytes) / seconds : 0
        let arrow = p.direction == .upload ? "up" : "down"
        guard let total = p.total, total > 0, let percent = p.percent else {
            return "\(arrow) \(size(p.bytes))  \(size(Int(rate)))/s"
        }
        let width = 20
        let filled = min(width, percent * width / 100)
        let bar = String(repeating: "#", count: filled) + String(repeating: " ", count: width - filled)
        var eta = "--:--:--"
        if rate > 0 {
            let left = Int((Double(total - p.bytes) / rate).rounded(.up))
            eta = clock(max(0, left))
        }
        let pct = String(percent)
        return "\(arrow) \(String(repeating: " ", count: 3 - min(3, pct.count)))\(pct)% [\(bar)] \(size(p.bytes)) of \(size(total))  \(size(Int(rate)))/s  ETA \(eta)"
    }

    /// Bytes in B, kB, MB, GB (powers of 1000, one decimal).
    static func size(_ n: Int) -> String {
        let v = Double(n)
        if v < 1000 { return "\(n) B" }
        if v < 1e6 { return "\(fixedPoint(v / 1e3, 1)) kB" }
        if v < 1e9 { return "\(fixedPoint(v / 1e6, 1)) MB" }
        return "\(fixedPoint(v / 1e9, 1)) GB"
    }

    static func clock(_ seconds: Int) -> String {
        func two(_ v: Int) -> String { v < 10 ? "0\(v)" : "\(v)" }
        return "\(seconds / 3600):\(two(seconds / 60 % 60)):\(two(seconds % 60))"
    }
}
