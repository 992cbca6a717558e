#!/usr/bin/env bash
# The two harnesses of the tenth session's request-path notes
# (docs/BENCHMARKS.md, "Tenth session"): builds them in a temporary package
# beside this repository's Pocket (release) and runs them on core 1; each
# line is the second-lowest of four measured rounds.
#   docs/runs/2026-11-26/path-harness/run.sh
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../../.." && pwd)"
work="$(mktemp -d /tmp/pocket-path-harness.XXXXXX)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/Sources/engaged" "$work/Sources/floor"
cp "$here/engaged-path.swift" "$work/Sources/engaged/main.swift"
cp "$here/handoff-floor.swift" "$work/Sources/floor/main.swift"
cp "$here/handoff-floor-start.swift" "$work/Sources/floor/start.swift"
cat > "$work/Package.swift" <<PKG
// swift-tools-version:6.0
import PackageDescription
let package = Package(name: "path-harness", platforms: [.macOS(.v15)],
  dependencies: [.package(path: "$root")],
  targets: [.executableTarget(name: "engaged", dependencies: [.product(name: "Pocket", package: "$(basename "$root")")]),
            .executableTarget(name: "floor")])
PKG
(cd "$work" && swift build -c release >"$work/build.log" 2>&1) || { cat "$work/build.log"; exit 1; }
for t in 1 64; do
  for p in none r m mre; do
    echo "TASKS=$t $(cd "$work" && TASKS=$t taskset -c 1 .build/release/engaged "${p/none/}" | sort -k2 -n | sed -n 2p)"
  done
done
for n in 64 1; do (cd "$work" && taskset -c 1 .build/release/floor "$n" | sort -k2 -n | sed -n 2p); done
