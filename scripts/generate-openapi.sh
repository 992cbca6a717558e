#!/usr/bin/env bash
# Regenerates the OpenAPI client of the integration tests
# (Tests/PocketIntegrationTests/Generated/) from OpenAPI/openapi.yaml with
# swift-openapi-generator 1.14.3, built once in .build-openapi-gen/ (a
# scratch package of its own, so the generator and its dependencies —
# OpenAPIKit, Yams, swift-argument-parser — never enter Pocket's package
# graph: every build, CI's included, would compile them; the committed
# output costs nothing).
# Run it after changing the spec and commit what it writes.
set -euo pipefail
cd "$(dirname "$0")/.."
tool=.build-openapi-gen
mkdir -p "$tool"
cat > "$tool/Package.swift" <<'PKG'
// swift-tools-version:6.0
import PackageDescription
let package = Package(name: "openapi-gen", dependencies: [
    .package(url: "https://github.com/apple/swift-openapi-generator", exact: "1.14.3"),
], targets: [])
PKG
swift build --package-path "$tool" --product swift-openapi-generator
dir=Tests/PocketIntegrationTests
rm -f "$dir"/Generated/*.swift
"$tool/.build/debug/swift-openapi-generator" generate \
  --config "$dir/OpenAPI/openapi-generator-config.yaml" \
  --output-directory "$dir/Generated" \
  "$dir/OpenAPI/openapi.yaml"
echo "generated: $(ls "$dir/Generated" | tr '\n' ' ')"
