// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "Pocket",
    products: [
        .library(name: "Pocket", targets: ["Pocket"]),
        .executable(name: "pocket-bench", targets: ["pocket-bench"]),
    ],
    dependencies: [
        // Logging middleware (`LoggingMiddleware`): the server ecosystem's logging API.
        .package(url: "https://github.com/apple/swift-log", exact: "1.16.2"),
    ],
    targets: [
        // The C engine: sockets, epoll, parser, pool, TLS (OpenSSL), content
        // decoding (zlib; libdeflate for small whole gzip bodies).
        .target(
            name: "CHTTPEngine",
            cSettings: [.define("_GNU_SOURCE")],
            // No ssl/crypto: pk_tls.c opens them with dlopen on first https use.
            linkerSettings: [
                .linkedLibrary("z"),
                .linkedLibrary("deflate"),
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
        .target(name: "CPocketBenchServer", cSettings: [.define("_GNU_SOURCE")]),
        .executableTarget(name: "pocket-bench", dependencies: ["Pocket", "CPocketBenchServer"]),
        .testTarget(name: "CHTTPEngineTests", dependencies: ["CHTTPEngine"]),
        .testTarget(name: "PocketTests", dependencies: ["Pocket", "PocketTestSupport", "CHTTPEngine", .product(name: "Logging", package: "swift-log")]),
    ]
)
