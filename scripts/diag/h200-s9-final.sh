#!/usr/bin/env bash
# Final device call of the session of 2026-12-03: the merged tree (h/tile's fast tile quantizer,
# h/lmB) on an H200: the tile benchmarks beside copy/fp32 in one process first (GPU otherwise
# idle), then the tile tests and every [gpu][quant] test. Binaries built on the build machine for
# sm_90 and carried as one xz pack (build-carry-s9/, build-libs/).
set -u
cd "$(dirname "$0")/../.."
END=${END:-300}
# shellcheck source=scripts/diag/lib.sh
source scripts/diag/lib.sh
export LD_LIBRARY_PATH=$root/build-libs:${LD_LIBRARY_PATH:-}
mkdir -p /tmp/b && tar xJf build-carry-s9/build-pack.tar.xz -C /tmp/b
python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)" 2>&1
D=110 bg_run bench_tile /tmp/b/bench_gpu_quant --benchmark_filter='copy/fp32|quant/tile' \
  --benchmark_min_time=0.05 --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
wait_jobs
el "bench done"
grep -E "_median" /tmp/v/bench_tile.log
bg_run t_tile /tmp/b/exmy_test_gpu "[block2d],[nvfp4_2d]"
bg_run t_quant /tmp/b/exmy_test_gpu "[gpu][quant]"
wait_jobs
el "tests done"
for f in /tmp/v/t_*.log; do echo "=== $f"; tail -4 "$f"; done
stop_packer
el "all done"
