#!/usr/bin/env bash
# Builds the GPU binaries here (sm_90, Release) and packs them for the GPU machine, so that a
# device call spends its time running, not compiling (the machine starts bare each time):
#   scripts/pack-device-binaries.sh [build-dir]        (default build-cuda)
# then pass carry: ["build-libs", "build-carry"] and, on the device,
#   export LD_LIBRARY_PATH=$PWD/build-libs:$LD_LIBRARY_PATH
#   mkdir -p /tmp/b && tar xJf build-carry/build-pack.tar.xz -C /tmp/b
#   /tmp/b/exmy_test_gpu; /tmp/b/exmy_test_properties_gpu; /tmp/b/exmy verify-cuda --depth full
#   /tmp/b/exmy_test_backend_gpu; /tmp/b/exmy verify --backend /tmp/b/libexmy_backend_cvt_cuda.so ...
# The binaries are stripped and xz-packed because the carry limit is 64 MiB (unpacked they are
# about 70 MB: each holds sm_90 code and compute_90 PTX). build-libs/ holds the shared libraries
# the binaries need that the GPU machine lacks (MPFR, GMP, libgomp, Google Benchmark).
set -euo pipefail
cd "$(dirname "$0")/.."
B=${1:-build-cuda}
# EXMY_PACK_TARGETS overrides the list (the carry limit is 64 MiB with the tracked tree: a call
# that needs only some binaries packs only those).
targets=${EXMY_PACK_TARGETS:-"exmy_test_gpu exmy_test_properties_gpu exmy exmy_test_quant bench_gpu_quant bench_optim_gpu bench_gemm_emulation exmy_test_backend_gpu"}
# Backend plugins (examples/): shared libraries, packed beside the binaries that load them.
plugins=${EXMY_PACK_PLUGINS-"exmy_backend_cvt_cuda exmy_backend_reference"}
cmake -S . -B "$B" -DCMAKE_BUILD_TYPE=Release -DEXMY_CUDA_ARCHS=90 >/dev/null
# shellcheck disable=SC2086
cmake --build "$B" -j2 --target $targets $plugins
rm -rf build-strip build-carry
mkdir -p build-strip build-carry build-libs
for t in $targets; do
  f=$(find "$B" -type f -name "$t" -perm -u+x | head -1)
  [ -n "$f" ] && cp "$f" build-strip/
done
for p in $plugins; do
  f=$(find "$B" -type f -name "lib$p.so" | head -1)
  [ -n "$f" ] && cp "$f" build-strip/
done
strip build-strip/*
tar cJf build-carry/build-pack.tar.xz -C build-strip .
for lib in libmpfr.so.6 libgmp.so.10 libgomp.so.1 libbenchmark.so.1debian; do
  cp -L "/lib/x86_64-linux-gnu/$lib" build-libs/
done
du -sh build-carry build-libs
