// swift-tools-version:6.0
// libFuzzer targets for Pocket's Swift parsers and encoders.
// Built and run by fuzz/run.sh (targets `multipart`, `schema`, `cookies`, `auth`,
// `cache_headers` and `reach`; see
// docs/FUZZING.md) in release with -enable-testing and
// -sanitize=fuzzer,address. Each executable defines <Target>_main, the
// `main` SwiftPM links, which starts libFuzzer's driver (FuzzDriver).
import PackageDescription

let package = Package(
    name: "PocketFuzz",
    // Named: a path package is otherwise known by its folder's name.
    dependencies: [.package(name: "Pocket", path: "../..")],
    targets: [
        .target(name: "FuzzAllocations"),
        .target(name: "FuzzDriver", dependencies: ["FuzzAllocations"]),
        .executableTarget(name: "FuzzMultipart", dependencies: ["FuzzDriver", .product(name: "Pocket", package: "Pocket")]),
        .executableTarget(name: "FuzzSchema", dependencies: ["FuzzDriver", .product(name: "Pocket", package: "Pocket")]),
        .executableTarget(name: "FuzzCookies", dependencies: ["FuzzDriver", .product(name: "Pocket", package: "Pocket")]),
        .executableTarget(name: "FuzzAuth", dependencies: ["FuzzDriver", .product(name: "Pocket", package: "Pocket")]),
        .executableTarget(name: "FuzzCacheHeaders", dependencies: ["FuzzDriver", .product(name: "Pocket", package: "Pocket")]),
        .executableTarget(name: "FuzzReach", dependencies: ["FuzzDriver", .product(name: "Pocket", package: "Pocket")]),
    ]
)
