// swift-tools-version:6.0
// Pocket's peers for scripts/bench-peers.sh: AsyncHTTPClient and URLSession
// (FoundationNetworking) run by the same benchmark loop and report as
// pocket-bench (PocketBenchKit, from the package two levels up), so they take
// the same flags and print the same JSON. A package of its own, so the main
// package never depends on AsyncHTTPClient. Not part of CI (its first build
// takes minutes).
import Foundation
import PackageDescription

// A path dependency's identity is its directory's name, which depends on
// where the repository was cloned.
let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()
let rootIdentity = root.lastPathComponent.lowercased()

let package = Package(
    name: "PocketPeers",
    platforms: [.macOS(.v13)],
    dependencies: [
        .package(path: root.path),
        .package(url: "https://github.com/swift-server/async-http-client", exact: "1.37.0"),
    ],
    targets: [
        .executableTarget(name: "ahc-bench", dependencies: [
            .product(name: "_PocketBenchKit", package: rootIdentity),
            .product(name: "AsyncHTTPClient", package: "async-http-client"),
        ]),
        .executableTarget(name: "urlsession-bench", dependencies: [
            .product(name: "_PocketBenchKit", package: rootIdentity),
        ]),
    ]
)
