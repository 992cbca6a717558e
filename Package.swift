// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "Pocket",
    products: [
        .library(name: "Pocket", targets: ["Pocket"]),
        .executable(name: "pocket-bench", targets: ["pocket-bench"]),
        // The curl-like command-line tool (and `pocket bench`).
        .executable(name: "pocket", targets: ["PocketCLI"]),
        // The benchmark loop and report, shared with the peers in Benchmarks/Peers.
        .library(name: "PocketBenchKit", targets: ["PocketBenchKit"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift", from: "0.2.0"),
        // Logging middleware (`LoggingMiddleware`): the server ecosystem's logging API.
        .package(url: "https://github.com/apple/swift-log", exact: "1.16.2"),
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
        // OpenSSL glue for the TLS side of the test server (test support only).
        .target(name: "CPocketTestTLS", linkerSettings: [.linkedLibrary("ssl"), .linkedLibrary("crypto")]),
        // In-process loopback servers for tests (not a product).
        .target(name: "PocketTestSupport", dependencies: ["CPocketTestTLS"]),
        // A small epoll server the benchmark starts when no --url is given.
        .target(name: "CPocketBenchServer", cSettings: [.define("_GNU_SOURCE")], linkerSettings: [.linkedLibrary("z")]),
        // Benchmark loop, HDR latencies, report: no Pocket in it (the peers use it too).
        .target(name: "PocketBenchKit", dependencies: [.product(name: "Histogram", package: "hdrhistogram-swift")]),
        // Pocket as a benchmark client and the embedded server (pocket-bench and `pocket bench`).
        .target(name: "PocketBench", dependencies: ["Pocket", "PocketBenchKit", "CPocketBenchServer"]),
        .executableTarget(name: "pocket-bench", dependencies: ["PocketBench", "PocketBenchKit"]),
        // `pocket bench`'s TLS scenario serves from the test support's TLS server.
        .executableTarget(name: "PocketCLI", dependencies: [
            "Pocket", "PocketBench", "PocketBenchKit", "CPocketBenchServer", "PocketTestSupport",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ]),
        // Schema validation + mapping vs JSONDecoder (docs/BENCHMARKS.md).
        .executableTarget(name: "schema-bench", dependencies: ["Pocket"]),
        .testTarget(name: "CHTTPEngineTests", dependencies: ["CHTTPEngine"]),
        .testTarget(name: "PocketTests", dependencies: ["Pocket", "PocketTestSupport", "CHTTPEngine", .product(name: "Logging", package: "swift-log")],
                    // Schema files found by name (SchemaQuickStartTests).
                    resources: [.copy("Schemas")]),
        // Runs the built `pocket` binary (next to the test bundle) against the test server.
        .testTarget(name: "PocketCLITests", dependencies: ["PocketTestSupport", "CPocketBenchServer"]),
        // The charts and the HTML report: parsed as XML, drawn by rsvg-convert.
        .testTarget(name: "PocketBenchKitTests", dependencies: ["PocketBenchKit"]),
    ]
)
