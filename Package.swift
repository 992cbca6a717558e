// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "Pocket",
    products: [
        // What users import.
        .library(name: "Pocket", targets: ["Pocket"]),
        // Test doubles for users' own tests (PocketStubTransport, PocketStubResponse),
        // kept out of the library the way SwiftNIO ships NIOTestUtils.
        .library(name: "PocketTesting", targets: ["PocketTesting"]),
        // The curl-like command-line tool (and `pocket bench`). Links no test support
        // (PocketCLITests/LinkMapTests checks the built binary).
        .executable(name: "pocket", targets: ["PocketCLI"]),
        // The benchmark CLI of scripts/bench-*.sh.
        .executable(name: "pocket-bench", targets: ["pocket-bench"]),
        // Not API: the benchmark loop and report, a product only because the peers
        // (Benchmarks/Peers: AsyncHTTPClient, URLSession) are a package of their own,
        // so that AsyncHTTPClient never enters this package's graph, and SwiftPM lets
        // another package depend on products only (never on a bare target, and a
        // target's sources must lie inside its own package).
        .library(name: "PocketBenchKit", targets: ["PocketBenchKit"]),
    ],
    dependencies: [
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift", from: "0.2.0"),
        // Logging middleware (`LoggingMiddleware`): the server ecosystem's logging API.
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    ],
    targets: [
        // The C engine: sockets, epoll, parser, pool, TLS (OpenSSL), content
        // decoding (zlib; libdeflate for small whole gzip bodies).
        .target(
            name: "CHTTPEngine",
            cSettings: [.define("_GNU_SOURCE")],
            // OpenSSL is linked like zlib (ldd and SBOM scanners see it); a
            // TLS setting that does not load fails pk_engine_create.
            linkerSettings: [
                .linkedLibrary("z"),
                .linkedLibrary("deflate"),
                .linkedLibrary("ssl"),
                .linkedLibrary("crypto"),
                .linkedLibrary("pthread"),
            ]
        ),
        // What users import.
        .target(name: "Pocket", dependencies: ["CHTTPEngine", .product(name: "Logging", package: "swift-log")]),
        // Test doubles for users' tests (the PocketTesting product); Pocket's public
        // API plus its package-level Lock.
        .target(name: "PocketTesting", dependencies: ["Pocket"]),
        // OpenSSL glue for the TLS side of the test server (test support only).
        .target(name: "CPocketTestTLS", linkerSettings: [.linkedLibrary("ssl"), .linkedLibrary("crypto")]),
        // In-process loopback servers for tests (not a product).
        .target(name: "PocketTestSupport", dependencies: ["CPocketTestTLS"]),
        // A small epoll server (plain or TLS, with a certificate it makes at start)
        // the benchmark starts when no --url is given.
        .target(name: "CPocketBenchServer", cSettings: [.define("_GNU_SOURCE")],
                linkerSettings: [.linkedLibrary("z"), .linkedLibrary("ssl"), .linkedLibrary("crypto")]),
        // Benchmark loop, HDR latencies, report: no Pocket in it (the peers use it too).
        .target(name: "PocketBenchKit", dependencies: [.product(name: "Histogram", package: "hdrhistogram-swift")]),
        // Pocket as a benchmark client and the embedded server (pocket-bench and `pocket bench`).
        .target(name: "PocketBench", dependencies: ["Pocket", "PocketBenchKit", "CPocketBenchServer"]),
        .executableTarget(name: "pocket-bench", dependencies: ["PocketBench", "PocketBenchKit"]),
        // `pocket bench`'s scenarios, TLS included, serve from CPocketBenchServer. Its
        // command line is parsed by hand (CommandLineOptions.swift): swift-argument-
        // parser's reflection was about 2 MB of `pocket URL`'s peak RSS.
        .executableTarget(name: "PocketCLI", dependencies: [
            "Pocket", "PocketBench", "PocketBenchKit", "CPocketBenchServer",
        ]),
        // Schema validation + mapping vs JSONDecoder (docs/BENCHMARKS.md).
        .executableTarget(name: "schema-bench", dependencies: ["Pocket"]),
        // The response cache's fresh hit and 304 against a network GET (docs/BENCHMARKS.md).
        .executableTarget(name: "cache-bench", dependencies: ["Pocket"]),
        .testTarget(name: "CHTTPEngineTests", dependencies: ["CHTTPEngine"]),
        .testTarget(name: "PocketTests", dependencies: ["Pocket", "PocketTesting", "PocketTestSupport", "CHTTPEngine", .product(name: "Logging", package: "swift-log")],
                    // Schema files found by name (SchemaQuickStartTests).
                    resources: [.copy("Schemas")]),
        // Runs the built `pocket` binary (next to the test bundle) against the test server.
        .testTarget(name: "PocketCLITests", dependencies: ["PocketTestSupport", "CPocketBenchServer"]),
        // The charts and the HTML report: parsed as XML, drawn by rsvg-convert.
        .testTarget(name: "PocketBenchKitTests", dependencies: ["PocketBenchKit"]),
    ]
)
