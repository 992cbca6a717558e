#!/usr/bin/env bash
# Every public declaration of the shipped libraries has a doc comment
# (a public symbol without one fails CI). Dumps the package's
# symbol graphs (`swift package dump-symbol-graph`: the debug build, then
# one JSON per module and per module it extends), keeps the public symbols
# declared in the shipped library targets' sources, and lists those without
# a `///` comment of their own (one inherited from another module's
# protocol, e.g. the standard library's `description`, does not count).
# Exits 1 when any is missing.
#
#   scripts/check-doc-coverage.sh            # dump, then check
#   scripts/check-doc-coverage.sh --no-dump  # check the graphs dumped last
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/sanitizer.sh
# The library products (Package.swift), not test support, tools or benchmarks.
TARGETS="Pocket PocketTesting PocketHTTPTypes PocketOpenAPI PocketMetrics PocketTracing PocketServiceLifecycle PocketNIO"
if [ "${1:-}" != "--no-dump" ]; then
  swift package ${SANITIZER_FLAGS[@]+"${SANITIZER_FLAGS[@]}"} dump-symbol-graph --skip-synthesized-members >/dev/null
fi
GRAPHS="$(swift build ${SANITIZER_FLAGS[@]+"${SANITIZER_FLAGS[@]}"} --show-bin-path)/../symbolgraph"
python3 - "$GRAPHS" "$PWD" $TARGETS <<'PY'
import glob, json, os, sys

graphs, root, targets = sys.argv[1], sys.argv[2], sys.argv[3:]
missing, checked = {}, 0
for target in targets:
    source = os.path.join(root, "Sources", target) + os.sep
    paths = glob.glob(os.path.join(graphs, target + ".symbols.json")) + glob.glob(os.path.join(graphs, target + "@*.symbols.json"))
    if not any(p.endswith("/" + target + ".symbols.json") for p in paths):
        sys.exit(f"check-doc-coverage: no symbol graph for {target} in {graphs}")
    for path in paths:
        for symbol in json.load(open(path))["symbols"]:
            if symbol.get("accessLevel") not in ("public", "open"):
                continue
            uri = symbol.get("location", {}).get("uri", "")
            file = uri.removeprefix("file://")
            if not file.startswith(source):
                continue  # declared elsewhere (inherited, synthesized)
            checked += 1
            comment = symbol.get("docComment", {})
            lines = [l.get("text", "") for l in comment.get("lines", [])]
            # A comment inherited from another module's protocol (the standard
            # library's `description`, `encode(to:)`) says nothing of ours.
            if not "".join(lines).strip() or comment.get("module", target) != target:
                line = symbol["location"]["position"]["line"] + 1
                name = ".".join(symbol["pathComponents"])
                missing.setdefault(os.path.relpath(file, root), []).append((line, symbol["kind"]["displayName"], name))
if checked < 100:
    sys.exit(f"check-doc-coverage: only {checked} public symbols found; the symbol graphs look wrong")
total = sum(len(v) for v in missing.values())
for file in sorted(missing):
    for line, kind, name in sorted(set(missing[file])):
        print(f"{file}:{line}: {kind} {name} has no doc comment")
print(f"check-doc-coverage: {checked - total} of {checked} public declarations documented, {total} without")
sys.exit(1 if total else 0)
PY
