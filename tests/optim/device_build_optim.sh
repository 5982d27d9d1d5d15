#!/usr/bin/env bash
# Builds only the optimizer GPU binaries with nvcc directly (no CMake, none of the other areas'
# kernels): the RapidCheck GPU properties, the benchmark and the torch cross-check driver.
# Usage: tests/optim/device_build_optim.sh OUTDIR [DEPS_PREFIX]   (DEPS_PREFIX e.g. .devdeps/usr)
set -euo pipefail
cd "$(dirname "$0")/../.."
out=$1
deps=${2:-/usr}
mkdir -p "$out/obj"
inc="-I. -I$deps/include"
defs="-DEXMY_VERSION=\"0.1.0\" -DEXMY_GIT_SHA=\"$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)\""
cxx="-std=c++20 -O2 -ffp-contract=off -fno-fast-math"
nv="-std=c++20 -O3 -arch=sm_90 --fmad=false --expt-relaxed-constexpr -Xcompiler=-ffp-contract=off"
sim="sim/optim/torch_adam_sgd.cpp sim/optim/bnb8.cpp sim/optim/stable_adamw.cpp sim/optim/split_step.cpp
     sim/optim/loss_scale.cpp sim/optim/memory.cpp sim/format/codebook.cpp sim/io/npy.cpp"
pids=()
for f in $sim tests/main.cpp; do
  o=$out/obj/$(echo "$f" | tr / _).o
  g++ $cxx $inc $defs -DEXMY_HAVE_CUDA=1 -DEXMY_TEST_NEEDS_GPU=1 -c "$f" -o "$o" & pids+=($!)
done
g++ $cxx $inc $defs -c tests/main.cpp -o "$out/obj/main_cpu.o" & pids+=($!)
g++ $cxx $inc $defs -c tests/optim/test_torch_crosscheck_driver.cpp -o "$out/obj/driver.o" & pids+=($!)
g++ $cxx $inc $defs -c gpu/runtime_nocuda.cpp -o "$out/obj/runtime_nocuda.o" & pids+=($!)
for f in gpu/optim_kernels.cu gpu/runtime.cu properties/gpu/optim_props.cu bench/bench_optim_gpu.cu; do
  o=$out/obj/$(echo "$f" | tr / _).o
  nvcc $nv $inc $defs -DEXMY_HAVE_CUDA=1 -c "$f" -o "$o" & pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
o=$out/obj
simo=$(for f in $sim; do echo -n "$o/$(echo "$f" | tr / _).o "; done)
lib="-L$deps/lib/x86_64-linux-gnu"
nvcc -arch=sm_90 -o "$out/optim_props_gpu" $o/properties_gpu_optim_props.cu.o $o/gpu_optim_kernels.cu.o \
  $o/gpu_runtime.cu.o $o/tests_main.cpp.o $simo $lib -lrapidcheck
nvcc -arch=sm_90 -o "$out/bench_optim_gpu" $o/bench_bench_optim_gpu.cu.o $o/gpu_optim_kernels.cu.o \
  $o/gpu_runtime.cu.o $simo $lib -lbenchmark -lpthread
g++ -o "$out/optim_xcheck" $o/driver.o $o/main_cpu.o $o/runtime_nocuda.o $simo $lib -lrapidcheck
echo "built $out/optim_props_gpu $out/bench_optim_gpu $out/optim_xcheck"
