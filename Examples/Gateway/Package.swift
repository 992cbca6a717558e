// swift-tools-version:6.0
// A Hummingbird 2 gateway: for each request it calls a downstream HTTP
// service through Pocket (tracing, metrics and a retry policy on) or
// through AsyncHTTPClient, or answers by itself (the floor: what
// Hummingbird alone costs). Measured by scripts/bench-gateway.sh, built and
// smoke-tested by scripts/gateway-smoke.sh. A package of its own, so
// Hummingbird and AsyncHTTPClient never enter the graph of a package that
// depends on Pocket. (CI builds these same sources as a target of Pocket's
// own build, POCKET_GATEWAY_EXAMPLE=1 at the end of Pocket's Package.swift,
// to compile Pocket and swift-nio once; keep the two target lists alike.)
import Foundation
import PackageDescription

// A path dependency's identity is its directory's name, which depends on
// where the repository was cloned.
let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()
let rootIdentity = root.lastPathComponent.lowercased()

let package = Package(
    name: "PocketGateway",
    platforms: [.macOS(.v14)],
    dependencies: [
        .package(path: root.path),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
    ],
    targets: [
        .executableTarget(name: "gateway", dependencies: [
            .product(name: "Pocket", package: rootIdentity),
            .product(name: "PocketMetrics", package: rootIdentity),
            .product(name: "PocketTracing", package: rootIdentity),
            .product(name: "PocketNIO", package: rootIdentity),
            .product(name: "Hummingbird", package: "hummingbird"),
            .product(name: "AsyncHTTPClient", package: "async-http-client"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            .product(name: "HTTPTypes", package: "swift-http-types"),
            "CFloorClient",
        ]),
        // A probe, not a client: the `floor` variant (FloorGateway.swift;
        // `nio-floor`, NIOFloorGateway.swift, is the same on NIO's loops).
        .target(name: "CFloorClient"),
    ]
)
