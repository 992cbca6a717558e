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
        // Not API (hence the underscore, as SwiftNIO marks its internal products):
        // the benchmark loop and report, a product only because the peers
        // (Benchmarks/Peers: AsyncHTTPClient, URLSession) are a package of their own,
        // so that AsyncHTTPClient never enters this package's graph, and SwiftPM lets
        // another package depend on products only (never on a bare target, and a
        // target's sources must lie inside its own package).
        .library(name: "_PocketBenchKit", targets: ["PocketBenchKit"]),
        // Integrations, one product each, so that the core `Pocket` library
        // keeps its short dependency list (README "Install" lists each with
        // its reason). A product's dependencies are built only when it is used.
        // swift-http-types interop: send `HTTPRequest`, get `HTTPResponse`.
        .library(name: "PocketHTTPTypes", targets: ["PocketHTTPTypes"]),
        // A swift-openapi-runtime `ClientTransport` (under generated clients).
        .library(name: "PocketOpenAPI", targets: ["PocketOpenAPI"]),
        // swift-metrics counters, timers and gauges (a middleware, opt-in).
        .library(name: "PocketMetrics", targets: ["PocketMetrics"]),
        // swift-distributed-tracing client spans and context propagation.
        .library(name: "PocketTracing", targets: ["PocketTracing"]),
        // The client as a swift-service-lifecycle `Service`.
        .library(name: "PocketServiceLifecycle", targets: ["PocketServiceLifecycle"]),
        // Response bodies as SwiftNIO `ByteBuffer`s, written once (no `Data`).
        .library(name: "PocketNIO", targets: ["PocketNIO"]),
    ],
    dependencies: [
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift", from: "0.2.0"),
        // Logging middleware (`LoggingMiddleware`): the server ecosystem's logging API.
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        // For the integration products only (the core does not import them).
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-openapi-runtime", from: "1.13.4"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.7.3"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        // PocketNIO only, and of it NIOCore only (ByteBuffer, the async sequence producer).
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
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
                // The stub resolver (res_nsend) of DNS replica sets: in libc since
                // glibc 2.34, in libresolv before.
                .linkedLibrary("resolv"),
                .linkedLibrary("uring"),
            ]
        ),
        // libpsl (Debian libpsl-dev), as curl uses it: the cookie store's
        // public-suffix rule, with the list Debian's publicsuffix package keeps
        // current (Sources/Pocket/Cookies). Linked like OpenSSL and zlib.
        .systemLibrary(name: "CLibPSL"),
        // What users import.
        .target(name: "Pocket", dependencies: ["CHTTPEngine", "CLibPSL", .product(name: "Logging", package: "swift-log")]),
        // Integrations: each its own target on Pocket's public API.
        .target(name: "PocketHTTPTypes", dependencies: ["Pocket", .product(name: "HTTPTypes", package: "swift-http-types")]),
        .target(name: "PocketOpenAPI", dependencies: [
            "Pocket", "PocketHTTPTypes",
            .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
            .product(name: "HTTPTypes", package: "swift-http-types"),
        ]),
        .target(name: "PocketMetrics", dependencies: ["Pocket", .product(name: "CoreMetrics", package: "swift-metrics")]),
        .target(name: "PocketTracing", dependencies: ["Pocket", .product(name: "Tracing", package: "swift-distributed-tracing")]),
        .target(name: "PocketServiceLifecycle", dependencies: [
            "Pocket", .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        ]),
        .target(name: "PocketNIO", dependencies: ["Pocket", .product(name: "NIOCore", package: "swift-nio")]),
        // Test doubles for users' tests (the PocketTesting product); Pocket's public
        // API plus its package-level Lock.
        .target(name: "PocketTesting", dependencies: ["Pocket"]),
        // OpenSSL glue for the TLS side of the test server (test support only).
        .target(name: "CPocketTestTLS", linkerSettings: [.linkedLibrary("ssl"), .linkedLibrary("crypto")]),
        // In-process loopback servers for tests (not a product).
        .target(name: "PocketTestSupport", dependencies: ["CPocketTestTLS"]),
        // A small epoll server (plain or TLS, with a certificate it makes at start)
        // the benchmark starts when no --url is given.
        .target(name: "CPocketBenchServer", path: "Benchmarks/CPocketBenchServer", cSettings: [.define("_GNU_SOURCE")],
                linkerSettings: [.linkedLibrary("z"), .linkedLibrary("ssl"), .linkedLibrary("crypto")]),
        // Instruction counters of `pocket-bench --count`: perf_event_open, or callgrind's client requests.
        .target(name: "CPocketBenchCount", path: "Benchmarks/CPocketBenchCount"),
        // Benchmark loop, HDR latencies, report: no Pocket in it (the peers use it too).
        .target(name: "PocketBenchKit", dependencies: ["CPocketBenchCount", .product(name: "Histogram", package: "hdrhistogram-swift")],
                path: "Benchmarks/PocketBenchKit"),
        // Pocket as a benchmark client and the embedded server (pocket-bench and `pocket bench`).
        .target(name: "PocketBench", dependencies: ["Pocket", "PocketBenchKit", "CPocketBenchServer", "CPocketBenchCount"],
                path: "Benchmarks/PocketBench"),
        // --integrations bootstraps in-memory backends (MetricsTestKit, InMemoryTracing).
        .executableTarget(name: "pocket-bench", dependencies: [
            "PocketBench", "PocketBenchKit", "Pocket", "PocketMetrics", "PocketTracing",
            .product(name: "CoreMetrics", package: "swift-metrics"), .product(name: "MetricsTestKit", package: "swift-metrics"),
            .product(name: "Tracing", package: "swift-distributed-tracing"),
            .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
        ], path: "Benchmarks/pocket-bench"),
        // `pocket bench`'s scenarios, TLS included, serve from CPocketBenchServer. Its
        // command line is parsed by hand (CommandLineOptions.swift): swift-argument-
        // parser's reflection was about 2 MB of `pocket URL`'s peak RSS.
        // pocket.order: the link order of its functions (scripts/build-cli.sh).
        .executableTarget(name: "PocketCLI", dependencies: [
            "Pocket", "PocketBench", "PocketBenchKit", "CPocketBenchServer",
        ], exclude: ["pocket.order"]),
        // Schema validation + mapping vs JSONDecoder (docs/BENCHMARKS.md).
        .executableTarget(name: "schema-bench", dependencies: ["Pocket"], path: "Benchmarks/schema-bench"),
        // The response cache's fresh hit and 304 against a network GET (docs/BENCHMARKS.md).
        .executableTarget(name: "cache-bench", dependencies: ["Pocket"], path: "Benchmarks/cache-bench"),
        .testTarget(name: "CHTTPEngineTests", dependencies: ["CHTTPEngine"]),
        .testTarget(name: "PocketTests", dependencies: ["Pocket", "PocketTesting", "PocketTestSupport", "CHTTPEngine", .product(name: "Logging", package: "swift-log")],
                    // Schema files found by name (SchemaQuickStartTests).
                    resources: [.copy("Schemas")]),
        // Runs the built `pocket` binary (next to the test bundle) against the test server.
        .testTarget(name: "PocketCLITests", dependencies: ["PocketTestSupport", "CPocketBenchServer"]),
        // The integration products against the in-process test server; the
        // OpenAPI client in it was generated once and committed (Generated/).
        .testTarget(name: "PocketIntegrationTests", dependencies: [
            "Pocket", "PocketTestSupport", "PocketHTTPTypes", "PocketOpenAPI", "PocketMetrics", "PocketTracing",
            "PocketServiceLifecycle", "PocketNIO",
            .product(name: "HTTPTypes", package: "swift-http-types"),
            .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
            .product(name: "CoreMetrics", package: "swift-metrics"),
            .product(name: "MetricsTestKit", package: "swift-metrics"),
            .product(name: "Tracing", package: "swift-distributed-tracing"),
            .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            .product(name: "NIOCore", package: "swift-nio"),
        ], exclude: ["OpenAPI"]),
        // The charts and the HTML report: parsed as XML, drawn by rsvg-convert.
        .testTarget(name: "PocketBenchKitTests", dependencies: ["PocketBenchKit"]),
    ]
)

// `swift package generate-documentation --target Pocket` (the catalog in
// Sources/Pocket/Pocket.docc). The plugin's package brings executables of
// its own (snippet-extract, SymbolKit) that every `swift build` compiles;
// the sanitizer runs below, which make no documentation, leave it out.
if Context.environment["POCKET_SANITIZER_CORE"] != "1" {
    package.dependencies.append(.package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"))
}

// CI's sanitizer runs (scripts/ci-sanitized.sh) build the library, the tool
// and their tests: the integration products, their tests and the benchmark
// kit's tests, which hold no code of the request path, stay in the plain run
// (scripts/test.sh). PocketMetrics and PocketTracing stay: `pocket-bench`
// (whose command line the CLI tests check) links them, and they are small.
// POCKET_SANITIZER_CORE=1 selects this smaller graph.
if Context.environment["POCKET_SANITIZER_CORE"] == "1" {
    let integrations: Set<String> = [
        "PocketHTTPTypes", "PocketOpenAPI", "PocketServiceLifecycle", "PocketNIO",
        "PocketIntegrationTests", "PocketBenchKitTests", "schema-bench", "cache-bench",
    ]
    package.targets.removeAll { integrations.contains($0.name) }
    package.products.removeAll { integrations.contains($0.name) }
}

// CI builds the gateway example (Examples/Gateway, a package of its own that
// users build alone) inside this graph, so that Pocket, swift-nio and the
// other packages both use are compiled once (scripts/gateway-smoke.sh).
// POCKET_GATEWAY_EXAMPLE=1 adds its target and Hummingbird; the sanitizer
// runs leave it out. Its AsyncHTTPClient arm, the benchmark's peer, is left
// out too: that package's TLS stack (BoringSSL) and HTTP/2 would be about a
// third of a cold CI build. Examples/Gateway's own build has it
// (scripts/bench-gateway.sh).
if Context.environment["POCKET_GATEWAY_EXAMPLE"] == "1" && Context.environment["POCKET_SANITIZER_CORE"] != "1" {
    package.dependencies += [
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
    ]
    package.targets += [
        .executableTarget(name: "gateway", dependencies: [
            "Pocket", "PocketMetrics", "PocketTracing", "PocketNIO", "CFloorClient",
            .product(name: "Hummingbird", package: "hummingbird"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            .product(name: "HTTPTypes", package: "swift-http-types"),
        ], path: "Examples/Gateway/Sources/gateway", swiftSettings: [.define("GATEWAY_WITHOUT_AHC")]),
        .target(name: "CFloorClient", path: "Examples/Gateway/Sources/CFloorClient"),
    ]
}

// scripts/check-doc-snippets.sh compiles every Swift block of the README and
// the DocC articles as one module on this package's own build, so only the
// blocks are compiled: POCKET_DOC_SNIPPETS=1 adds that module (its sources
// are written to .build-snippets/Snippets by the script).
if Context.environment["POCKET_DOC_SNIPPETS"] == "1" && Context.environment["POCKET_SANITIZER_CORE"] != "1" {
    package.targets.append(.target(name: "DocSnippets", dependencies: [
        "Pocket", "PocketTesting", "PocketHTTPTypes", "PocketOpenAPI", "PocketMetrics", "PocketTracing",
        "PocketServiceLifecycle", "PocketNIO",
        .product(name: "Logging", package: "swift-log"),
        .product(name: "HTTPTypes", package: "swift-http-types"),
        .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
        .product(name: "Metrics", package: "swift-metrics"),
        .product(name: "Tracing", package: "swift-distributed-tracing"),
        .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        .product(name: "NIOCore", package: "swift-nio"),
    ], path: ".build-snippets/Snippets"))
}
