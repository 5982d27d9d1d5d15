#!/usr/bin/env bash
# Hardware counters of the single-pass MX / NVFP4 kernels (Nsight Compute), for the speed work of
# the redesign issue. Usage on the device: scripts/diag/ncu_quant.sh /tmp/b/bench_gpu_quant
set -u
B=$1
for f in 'quant/nvfp4-torchao/fp32$' 'quant/mx/fp32/e4m3fn/rne$' 'copy/fp32'; do
  echo "=== $f"
  ncu --clock-control none -k regex:'fused_group|copy|Copy' --launch-skip 2 --launch-count 1 \
      --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
      --section MemoryWorkloadAnalysis --section InstructionStats \
      "$B" --benchmark_filter="$f" --benchmark_min_time=0.001 2>&1 |
    grep -E "fused_group|Throughput|Duration|Registers|Achieved Occupancy|Theoretical Occupancy|Block Limit|Stall|Warp Cycles|Issued|Executed Ipc|L1/TEX Hit|L2 Hit|Mem Busy|Max Bandwidth|Dynamic|Waves|One or More|No Eligible" | head -45
done
