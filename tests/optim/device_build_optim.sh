#!/usr/bin/env bash
# Builds only the optimizer GPU binaries with nvcc directly (no CMake, none of the other areas'
# kernels): the RapidCheck GPU properties, the optimizer GPU tests, the benchmark, the torch
# cross-check driver and the exhaustive codebook-search test. Incremental (an object is rebuilt
# when its source or any header under sim/, gpu/, tests/ is newer) and at most JOBS (default 2)
# compilers at a time, for the shared 2-core build machine.
# Usage: tests/optim/device_build_optim.sh OUTDIR [DEPS_PREFIX]   (DEPS_PREFIX e.g. .devdeps/usr)
set -euo pipefail
cd "$(dirname "$0")/../.."
out=$1
deps=${2:-/usr}
jobs=${JOBS:-2}
mkdir -p "$out/obj"
inc="-I. -I$deps/include"
defs="-DEXMY_VERSION=\"0.1.0\" -DEXMY_GIT_SHA=\"$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)\""
cxx="-std=c++20 -O2 -ffp-contract=off -fno-fast-math"
nv="-std=c++20 -O3 -arch=sm_90 --fmad=false --expt-relaxed-constexpr -Xcompiler=-ffp-contract=off"
sim="sim/optim/torch_adam_sgd.cpp sim/optim/bnb8.cpp sim/optim/stable_adamw.cpp sim/optim/split_step.cpp
     sim/optim/loss_scale.cpp sim/optim/memory.cpp sim/optim/registry.cpp sim/format/codebook.cpp
     sim/io/npy.cpp"
stale() {  # object $1 of source $2
  [[ ! -f $1 || $2 -nt $1 ]] || find sim gpu tests -name '*.hpp' -newer "$1" | grep -q .
}
running=0
spawn() {
  if ((running >= jobs)); then wait -n; running=$((running - 1)); fi
  "$@" & running=$((running + 1))
}
o=$out/obj
obj() { echo "$o/$(echo "$1" | tr / _)${2:-}.o"; }
for f in $sim tests/main.cpp; do
  stale "$(obj $f)" "$f" && spawn g++ $cxx $inc $defs -DEXMY_HAVE_CUDA=1 -DEXMY_TEST_NEEDS_GPU=1 -c "$f" -o "$(obj $f)"
done
stale "$(obj tests/main.cpp _cpu)" tests/main.cpp && spawn g++ $cxx $inc $defs -c tests/main.cpp -o "$(obj tests/main.cpp _cpu)"
for f in tests/optim/test_torch_crosscheck_driver.cpp tests/optim/test_bnb8_search_exhaustive.cpp \
         gpu/common/runtime_nocuda.cpp; do
  stale "$(obj $f)" "$f" && spawn g++ $cxx -fopenmp $inc $defs -c "$f" -o "$(obj $f)"
done
kern="gpu/optim/optim_bnb8.cu gpu/optim/optim_split.cu gpu/optim/optim_stable_adamw.cu gpu/optim/optim_torch32.cu gpu/optim/optim_torch16.cu"
for f in $kern gpu/common/runtime.cu properties/gpu/optim_props.cu tests/gpu/optim16_test.cu \
         bench/bench_optim_gpu.cu; do
  stale "$(obj $f)" "$f" && spawn nvcc $nv $inc $defs -DEXMY_HAVE_CUDA=1 -c "$f" -o "$(obj $f)"
done
wait
simo=$(for f in $sim; do echo -n "$(obj $f) "; done)
kobj=$(for f in $kern gpu/common/runtime.cu; do echo -n "$(obj $f) "; done)
lib="-L$deps/lib/x86_64-linux-gnu"
nvcc -arch=sm_90 -o "$out/optim_props_gpu" "$(obj properties/gpu/optim_props.cu)" $kobj \
  "$(obj tests/main.cpp)" $simo $lib -lrapidcheck
nvcc -arch=sm_90 -o "$out/optim_gpu_test" "$(obj tests/gpu/optim16_test.cu)" $kobj \
  "$(obj tests/main.cpp)" $simo $lib -lrapidcheck
nvcc -arch=sm_90 -o "$out/bench_optim_gpu" "$(obj bench/bench_optim_gpu.cu)" $kobj $simo $lib \
  -lbenchmark -lpthread
g++ -o "$out/optim_xcheck" "$(obj tests/optim/test_torch_crosscheck_driver.cpp)" "$(obj tests/main.cpp _cpu)" \
  "$(obj gpu/common/runtime_nocuda.cpp)" $simo $lib -lrapidcheck
g++ -fopenmp -o "$out/bnb8_search_exhaustive" "$(obj tests/optim/test_bnb8_search_exhaustive.cpp)" \
  "$(obj tests/main.cpp _cpu)" "$(obj gpu/common/runtime_nocuda.cpp)" $simo $lib -lrapidcheck
echo "built $out/{optim_props_gpu,optim_gpu_test,bench_optim_gpu,optim_xcheck,bnb8_search_exhaustive}"
