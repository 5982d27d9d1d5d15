#!/usr/bin/env bash
# Builds the libFuzzer targets of fuzz/ (clang, ASan + UBSan, -DEXMY_FUZZ=ON) and runs each for
# SECONDS seconds (default 60) from the seed corpus fuzz/corpus/<target> (read only; new inputs go
# to BUILD/corpus/<target>). Prints one line per target: runs, seconds, coverage, corpus size.
# Exits non-zero on the first crash, leak or sanitizer report (libFuzzer writes the input to
# BUILD/crash-*).
#   scripts/fuzz.sh [SECONDS] [BUILD_DIR]      (targets: FUZZ_TARGETS="npy_header number ...")
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-60}"
build="${2:-build-fuzz}"
targets="${FUZZ_TARGETS:-npy_header format_name number rounding state_json codebook options accum_model gemm_profile}"
jobs="${JOBS:-2}"
if ! command -v clang++ >/dev/null; then
  echo "fuzz.sh: clang++ not found (libFuzzer needs clang; Debian: apt-get install clang)" >&2
  exit 2
fi
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi
CC=clang CXX=clang++ cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DEXMY_FUZZ=ON \
  -DEXMY_CUDA=OFF -DEXMY_TESTS=OFF -DEXMY_BENCH=OFF "${launcher[@]}" >/dev/null
cmake --build "$build" -j"$jobs" --target exmy_fuzz
printf '%-12s %12s %8s %8s %8s\n' target runs seconds cov corpus
for t in $targets; do
  work="$build/corpus/$t"
  mkdir -p "$work"
  log="$build/fuzz_$t.log"
  (cd "$build" && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    "./fuzz/fuzz_$t" -max_total_time="$secs" -print_final_stats=1 -max_len=4096 -timeout=10 \
    -rss_limit_mb=2048 "corpus/$t" "$OLDPWD/fuzz/corpus/$t" >"fuzz_$t.log" 2>&1) || {
    echo "fuzz_$t FAILED (see $log)"; tail -40 "$log"; exit 1; }
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  took=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log")
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  corp=$(ls "$work" | wc -l)
  printf '%-12s %12s %8s %8s %8s\n' "$t" "$runs" "$took" "$cov" "$corp"
done
