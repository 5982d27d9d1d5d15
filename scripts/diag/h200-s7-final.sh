#!/usr/bin/env bash
# Final device call of the session of 2026-12-02 (17:00-20:00 UTC), on an H200, on the merged
# tree's binaries (built on the build machine for sm_90 and carried: build-carry-final/,
# build-libs/): the GPU tests of every path this session's branches changed, then the quantizer
# and 8-bit optimizer benchmarks with copy and the torch-arithmetic AdamW in the same process,
# torch's own fused AdamW on 2^26 fp32 parameters in the same call, and the blockwise FP8 split-K
# model on the GPU (`exmy gemm --device cuda` against `--device cpu`, bit for bit).
set -u
cd "$(dirname "$0")/../.."
END=${END:-500}
# shellcheck source=scripts/diag/lib.sh
source scripts/diag/lib.sh
export LD_LIBRARY_PATH=$root/build-libs:${LD_LIBRARY_PATH:-}
mkdir -p /tmp/b && tar xJf build-carry-final/build-pack.tar.xz -C /tmp/b
T=/tmp/b/exmy_test_gpu
export EXMY_CLI=/tmp/b/exmy EXMY=/tmp/b/exmy EXMY_TEST_GPU=$T EXMY_SRC=$root
D=300 bg_run t_quant "$T" "[gpu][quant]"
D=300 bg_run t_cast "$T" "[gpu][cast],[gpu][gemm],[gpu][layer]"
for k in 0 1 2; do
  EXMY_TEST_SHARD=$k/3 EXMY_TEST_ONLY=ademamix8bit,adamw8bit,lion8bit,rmsprop8bit D=300 \
    bg_run t_step$k "$T" "exmy step --device cuda*"
done
# The split-K model of blockwise FP8 GEMMs through the CUDA emulation kernel (16x16x25600,
# 1x128 x 1x128 tiles: the recorded H200 launch, S = 9 parts of 24 + 8 k-blocks), both outputs.
(
  cd build-carry-final/in || exit 1
  for acc in "hw:k=32,frac=13,inter=13,chunk=128,promote=product,split=9,tile=128,fill" \
    cublas-sm90-h200; do
    for o in fp32 bf16; do
      for dev in cpu cuda; do
        timeout -k 3 120 /tmp/b/exmy gemm --a a.npy --b b.npy --a-format e4m3fn --b-format e4m3fn \
          --block-scale-a sa.npy --block-scale-b sb.npy --block-scale-format fp32 --block-a 1x128 \
          --block-b 1x128 --out-format $o --accum "$acc" --device $dev --out /tmp/v/c_${o}_$dev.npy
      done
      cmp /tmp/v/c_${o}_cpu.npy /tmp/v/c_${o}_cuda.npy && echo "splitk $acc $o: cpu == cuda"
    done
  done
) >/tmp/v/splitk.log 2>&1
el "splitk done"
wait_jobs
el "tests done"
for f in /tmp/v/t_*.log; do echo "=== $f"; tail -4 "$f"; done
bm() {
  local n=$1
  shift
  timeout -k 3 "$(($(left) - 10))" "$@" --benchmark_min_time=0.05 --benchmark_repetitions=3 \
    --benchmark_report_aggregates_only=true --benchmark_out="/tmp/v/$n.json" \
    --benchmark_out_format=json >"/tmp/v/$n.log" 2>&1
  el "$n rc $?"
}
bm optim /tmp/b/bench_optim_gpu '--benchmark_filter=BM_(adamw_torch|adamw8bit|ademamix8bit|lion8bit)'
bm quant /tmp/b/bench_gpu_quant '--benchmark_filter=copy|quant/|bnb4|nf4|fp4'
# torch's fused AdamW (torch.optim.AdamW(fused=True)), 2^26 fp32 parameters, CUDA events, median
# of 20 steps after 5 warm-up steps: the anchor of issue 33's 8-bit target, in this call.
timeout -k 3 60 python3 - >/tmp/v/torch_fused.log 2>&1 <<'PY'
import torch
n = 1 << 26
p = torch.nn.Parameter(torch.randn(n, device="cuda"))
p.grad = torch.randn(n, device="cuda")
opt = torch.optim.AdamW([p], lr=1e-3, fused=True)
ts = []
for i in range(25):
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record(); opt.step(); b.record(); torch.cuda.synchronize()
    if i >= 5: ts.append(a.elapsed_time(b) * 1000)
ts.sort()
print(torch.__version__, "fused AdamW us median", ts[len(ts) // 2], "min", ts[0])
PY
el "torch fused rc $?"
cat /tmp/v/torch_fused.log
stop_packer
el "all done"
