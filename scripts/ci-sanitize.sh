#!/usr/bin/env bash
# The sanitizer job: a host-only build (no CUDA) with AddressSanitizer + UndefinedBehaviorSanitizer
# (every report aborts), then the CLI tests (tests/cli: cast, table, the issue-16 hostile-input
# cases, which run the sanitized exmy executable) and the input-validation unit tests
# (tests/format: NPY headers, the number parser, state.json, output sets, codebook files).
#   scripts/ci-sanitize.sh [BUILD_DIR]     (default build-asan; JOBS=2)
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build-asan}"
jobs="${JOBS:-2}"
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi
san="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
# -O1, as the sanitizers' documentation recommends: the same reports as -O3 (no fast math, no
# contraction either way) at about half the compile time, which dominates this job.
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=None -DEXMY_CUDA=OFF -DEXMY_BENCH=OFF \
  -DEXMY_EXAMPLES=OFF -DCMAKE_CXX_FLAGS="-O1 $san" -DCMAKE_C_FLAGS="-O1 $san" \
  -DCMAKE_EXE_LINKER_FLAGS="$san" "${launcher[@]}" >/dev/null
cmake --build "$build" -j"$jobs" --target exmy exmy_test_cli exmy_test_format
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:strict_string_checks=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export EXMY_CLI="$PWD/$build/cli/exmy"
# The tests' committed data (tests/support/source_tree.hpp), as ctest passes it.
export EXMY_SOURCE_DIR="$PWD"
# Sanitizer reports of the exmy runs inside the CLI tests go to their stderr files, which the
# tests check; a report makes exmy exit with neither 0 nor 2, so the test fails.
# From the tests' build folder, as ctest runs them (their data paths are relative to it).
(cd "$build/tests" && ./exmy_test_cli && ./exmy_test_format)
echo "ci-sanitize: clean"
