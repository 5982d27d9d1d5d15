#!/usr/bin/env bash
# Issue 15's CPU rows in one go: bench_native_cast (C++, with CPFloat when built), the Python
# peers (torch, ml_dtypes, CPFloat through ctypes) and the whole-process CLI row, then
# bench/results/DATE-cpu-cast-peers.{md,json} via cpu_peers_report.py.
# Needs build-cpu built with EXMY_BENCH=ON (scripts/fetch-cpfloat.sh first for CPFloat) and a
# Python with torch, ml_dtypes and the exmy package (pip install .); PYTHON names it.
# Usage: bench/peers/cpu_peers_all.sh [OUTDIR] [--before DIR] [--notes NOTES.md]
#        (OUTDIR holds the raw JSON; --before: native/peers/cli.json of an earlier tree)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
py=${PYTHON:-python3}
out=$root/build-cpu/cpu-peers
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --before|--notes) extra+=("$1" "$2"); shift 2 ;;
    *) out=$1; shift ;;
  esac
done
date=${EXMY_RESULTS_DATE:-$(date -u +%Y-%m-%d)}
mkdir -p "$out"
"$root/build-cpu/bench/bench_native_cast" --benchmark_filter='memcpy|fast|8bit|16bit|cpfloat' \
  --benchmark_min_time=0.1 --benchmark_repetitions=7 --benchmark_report_aggregates_only=true \
  --benchmark_out="$out/native.json" --benchmark_out_format=json | tee "$out/native.txt"
"$py" "$root/bench/peers/cpu_cast_vs_peers.py" --sizes 20,22,26 --reps 7 \
  --json "$out/peers.json" --md "$out/peers.md"
"$py" "$root/bench/peers/cpu_cli_vs_copy.py" --log2n 26 --reps 5 --json "$out/cli.json"
"$py" "$root/bench/peers/cpu_peers_report.py" --native "$out/native.json" --peers "$out/peers.json" \
  --cli "$out/cli.json" "${extra[@]}" --md "$root/bench/results/$date-cpu-cast-peers.md" \
  --json "$root/bench/results/$date-cpu-cast-peers.json"
