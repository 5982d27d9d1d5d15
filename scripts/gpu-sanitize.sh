#!/usr/bin/env bash
# compute-sanitizer over a Catch2 GPU test binary, one process per test case, several at once
# (the GPU is shared; each case gets its own time limit), so the whole suite is covered within a
# bounded time instead of one serial run that the tool's 10-100x slowdown never finishes:
#   scripts/gpu-sanitize.sh TOOL BINARY OUTDIR [PER_CASE_TIMEOUT_S=480] [JOBS=8] [TAGS]
# TOOL: memcheck | racecheck | synccheck | initcheck. Writes OUTDIR/<tool>-<binary>.tsv (case,
# exit, seconds, the tool's summary, Catch2's verdict) and the per-case logs as a .tar.gz; exits 1 if any case reports an error.
# Exit 124 in the table is a case stopped by its time limit (inconclusive, not a finding).
set -uo pipefail
tool=$1 bin=$2 out=$3 limit=${4:-480} jobs=${5:-8} tags=${6:-}
name=$(basename "$bin")
mkdir -p "$out/logs-$tool-$name"
extra=()
[ "$tool" = memcheck ] && extra+=(--leak-check full)
# Child processes (the CLI tests run `exmy` itself) are followed too.
extra+=(--target-processes all)
"$bin" --list-test-names-only $tags 2>/dev/null | sed '/^$/d' | grep -v "test cases" > "$out/cases-$name.txt"
export tool bin out limit name
export EXTRA="${extra[*]}"
run_case() {
  c=$1
  safe=$(printf '%s' "$c" | tr -c 'A-Za-z0-9_.-' '_' | cut -c1-80)
  log="$out/logs-$tool-$name/$safe.log"
  t0=$(date +%s)
  # Catch2 takes a test name; escape its special characters ([ ] , *) with a backslash.
  esc=$(printf '%s' "$c" | sed 's/[][,*]/\\&/g')
  # shellcheck disable=SC2086
  timeout "$limit" compute-sanitizer --tool "$tool" $EXTRA --error-exitcode 99 \
    "$bin" "$esc" > "$log" 2>&1
  rc=$?
  t1=$(date +%s)
  summary=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$log" | tail -1 | sed 's/^=* *//')
  # Catch2's own verdict: proves the case ran (a filter that matched nothing would pass too).
  verdict=$(grep -E "^All tests passed|^test cases:" "$log" | tail -1)
  printf '%s\t%d\t%d\t%s\t%s\n' "$c" "$rc" "$((t1 - t0))" "$summary" "$verdict"
}
export -f run_case
tr '\n' '\0' < "$out/cases-$name.txt" | xargs -0 -P "$jobs" -I{} bash -c 'run_case "$@"' _ {} \
  > "$out/$tool-$name.tsv"
sort -o "$out/$tool-$name.tsv" "$out/$tool-$name.tsv"
cat "$out/$tool-$name.tsv"
# One archive for the logs (the device tool returns a bounded number of files).
tar czf "$out/logs-$tool-$name.tar.gz" -C "$out" "logs-$tool-$name" && rm -rf "$out/logs-$tool-$name"
awk -F'\t' '$2 != 0 && $2 != 124 {bad=1} END {exit bad}' "$out/$tool-$name.tsv"
