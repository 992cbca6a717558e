#!/usr/bin/env bash
# CI's check of the gateway example (Examples/Gateway): builds it (debug by
# default, GATEWAY_CONFIG=release for the build scripts/bench-gateway.sh
# measures) as its own package, or, with POCKET_GATEWAY_EXAMPLE=1 (as CI
# runs it), as a target of this package's build, which then compiles Pocket
# and swift-nio once for both (end of Package.swift). Then it
# sends one request through each variant on loopback: the
# `static` gateway is the downstream of the `pocket`, `pocket-bare`, `ahc`
# (not in the build inside Pocket's package), `floor` and `nio-floor` ones. Every gateway is started here and stopped by
# its PID.
#
#   scripts/gateway-smoke.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/processes.sh
. scripts/lib/sanitizer.sh

BASE_PORT="${BASE_PORT:-18395}"
CONFIG="${GATEWAY_CONFIG:-debug}"
if [ "${POCKET_GATEWAY_EXAMPLE:-}" = 1 ]; then
  # The package's own .build: its flags (a sanitizer in CI).
  where=(${SANITIZER_FLAGS[@]+"${SANITIZER_FLAGS[@]}"})
else
  where=(--package-path Examples/Gateway)
fi
swift build -c "$CONFIG" "${where[@]}" --product gateway
BIN="$(swift build -c "$CONFIG" "${where[@]}" --show-bin-path)/gateway"
TMP="$(mktemp -d /tmp/pocket-gateway-smoke.XXXXXX)"
PIDS=()
cleanup() {
  if ((${#PIDS[@]})); then stop_pids "${PIDS[@]}"; fi
  rm -rf "$TMP"
}
trap cleanup EXIT

start() { # variant port
  spawn_bg "$BIN" --client "$1" --port "$2" --downstream "http://127.0.0.1:$BASE_PORT/" >"$TMP/$1.log" 2>&1
  PIDS+=("$SPAWNED_PID")
}

answer() { # port -> the body, once the gateway answers (up to 10 s)
  local body
  for _ in $(seq 100); do
    if body="$(curl -fsS "http://127.0.0.1:$1/" 2>/dev/null)"; then echo "$body"; return 0; fi
    sleep 0.1
  done
  return 1
}

ENTRIES=("static $BASE_PORT" "pocket $((BASE_PORT + 1))" "pocket-bare $((BASE_PORT + 3))" \
  "floor $((BASE_PORT + 4))" "nio-floor $((BASE_PORT + 5))")
# Inside Pocket's build the gateway has no AsyncHTTPClient arm (end of
# Package.swift); the example's own package has it.
if [ "${POCKET_GATEWAY_EXAMPLE:-}" = 1 ]; then
  echo "gateway-smoke: ahc: not in this build (the package in Examples/Gateway builds it)"
else
  ENTRIES+=("ahc $((BASE_PORT + 2))")
fi
for entry in "${ENTRIES[@]}"; do
  read -r variant port <<<"$entry"
  start "$variant" "$port"
done
for entry in "${ENTRIES[@]}"; do
  read -r variant port <<<"$entry"
  body="$(answer "$port")" || { echo "gateway-smoke: the $variant gateway did not answer"; cat "$TMP/$variant.log"; exit 1; }
  [ "$body" = "Hello, World!" ] || { echo "gateway-smoke: the $variant gateway answered '$body'"; exit 1; }
  echo "gateway-smoke: $variant: $body"
done
