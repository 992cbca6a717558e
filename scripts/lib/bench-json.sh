# Sourced by the benchmark scripts that write results for the charts
# (bench-scaling.sh, bench-peers.sh --json): one JSON object a line, each a
# run as `pocket bench report` reads it (docs/BENCHMARKS.md, "Reproducing everything").
#
#   json_machine                  {"cpus":…,"cpu_model":…,"kernel":…} of this machine
#   json_str TEXT                 TEXT as a JSON string literal
#   json_tag LINE FIELDS          the JSON object LINE with FIELDS ('"k":v,…') put first,
#                                 and today's "date" unless LINE or FIELDS has one
#   wrk_json OUT                  a run object of wrk's --latency output OUT (rps,
#                                 requests, errors, p50/p90/p99 and the curve it prints)

json_str() {
  local s=${1//\\/\\\\}
  s=${s//\"/\\\"}
  printf '"%s"' "$s"
}

json_machine() {
  printf '{"cpus":%s,"cpu_model":%s,"kernel":%s}' "$(nproc)" \
    "$(json_str "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')")" "$(json_str "$(uname -r)")"
}

json_tag() {
  local line=$1 fields=$2
  # Every run carries its day (the charts print it), unless it has one.
  case "$line$fields" in *'"date":'*) ;; *) fields="$fields,\"date\":\"$(date -u +%F)\"" ;; esac
  printf '{%s,%s\n' "$fields" "${line#\{}"
}

wrk_json() {
  local out=$1 p50 p75 p90 p99 rps reqs errs
  rps="$(awk '/^Requests\/sec:/ { print $2 }' "$out")"
  reqs="$(awk '/ requests in / { print $1 }' "$out")"
  errs="$(awk '/Non-2xx or 3xx responses:/ { n += $NF } /Socket errors:/ {
      for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+,?$/) { sub(",", "", $i); n += $i } } END { print n + 0 }' "$out")"
  p50="$(to_us "$(awk '$1 == "50%" { print $2 }' "$out")")"
  p75="$(to_us "$(awk '$1 == "75%" { print $2 }' "$out")")"
  p90="$(to_us "$(awk '$1 == "90%" { print $2 }' "$out")")"
  p99="$(to_us "$(awk '$1 == "99%" { print $2 }' "$out")")"
  printf '{"rps":%s,"requests":%s,"errors":%s,"p50_us":%s,"p90_us":%s,"p99_us":%s,' "${rps:-0}" "${reqs:-0}" "$errs" \
    "${p50:-null}" "${p90:-null}" "${p99:-null}"
  if [ -n "$p50" ] && [ -n "$p75" ] && [ -n "$p90" ] && [ -n "$p99" ]; then
    printf '"latency_percentiles":[[50,%s],[75,%s],[90,%s],[99,%s]],' "$p50" "$p75" "$p90" "$p99"
  fi
  printf '"client":"wrk"}\n'
}
