// Internal to gpu/quant/*.cu: the launch sequence of quantize for one target kind K, a template
// that each quantize_<kind>.cu instantiates for its K only (so every code kernel is compiled in
// one translation unit): the single-pass kernel, or absmax, state and an element kernel.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "gpu/cast/cast.hpp"
#include "gpu/common/cuda_check.hpp"
#include "gpu/common/launch.hpp"
#include "gpu/quant/detail_args.cuh"
#include "gpu/quant/detail_code_kernels.cuh"
#include "gpu/quant/detail_launch.cuh"
#include "gpu/quant/detail_mx_e2m1.cuh"
#include "gpu/quant/detail_nvfp4.cuh"
#include "gpu/quant/detail_tensor_sr8.cuh"
#include "gpu/quant/quantize.hpp"

namespace exmy::gpu::quant_detail {
namespace {

// The single-pass kernel: one block per tile (measured fastest on H200 for the int8 / float / MX
// targets), except the fast codebook path, whose blocks copy the 32 KiB bucket table first: one
// wave of blocks over several tiles each, the next tile's load overlapping the current one.
template <CastInput In, Kind K, bool Fast>
void run_fused(const void* x, const QArgs& a, const QuantizedOut& o, const std::uint32_t* tab,
               bool vec, cudaStream_t s) {
  const std::uint64_t tiles = tile_count(a);
  if constexpr (K == Kind::codebook && Fast) {
    fused_group_kernel<In, K, Fast, true>
        <<<persistent_blocks(fused_group_kernel<In, K, Fast, true>, tiles), kThreads, 0, s>>>(
            x, o.codes, o.state, o.scale_codes, tab, vec, a);
    return;
  }
  if constexpr (K == Kind::mx && Fast) {
    // One instantiation per block-scaled path (MxRun): with every path in one kernel, OCP MX
    // e4m3fn ran 484 -> 516 us once e2m1fn's software run joined it (H200, 2^28 fp32).
    const dim3 grid(blocks_for(tiles, 1));
    switch (mx_run_of(a)) {
      case MxRun::lean:
        if (nvfp4_fast_ok(a)) {  // NVFP4 by its own kernel (detail_nvfp4.cuh)
          launch_nvfp4<In>(x, a, o.codes, o.scale_codes, vec, s);
          return;
        }
        fused_group_kernel<In, K, Fast, false, MxRun::lean>
            <<<grid, kThreads, 0, s>>>(x, o.codes, o.state, o.scale_codes, tab, vec, a);
        return;
      case MxRun::ocp_hw:
        fused_group_kernel<In, K, Fast, false, MxRun::ocp_hw>
            <<<grid, kThreads, 0, s>>>(x, o.codes, o.state, o.scale_codes, tab, vec, a);
        return;
      case MxRun::ocp_sw:
        if (mx_e2m1_ok(a)) {  // e2m1fn by its magic-number rounding (detail_mx_e2m1.cuh)
          mx_e2m1_kernel<In><<<grid, kThreads, 0, s>>>(x, o.codes, o.scale_codes, vec, a);
          return;
        }
        fused_group_kernel<In, K, Fast, false, MxRun::ocp_sw>
            <<<grid, kThreads, 0, s>>>(x, o.codes, o.state, o.scale_codes, tab, vec, a);
        return;
      default:
        break;
    }
  }
  fused_group_kernel<In, K, Fast, false>
      <<<blocks_for(tiles, 1), kThreads, 0, s>>>(x, o.codes, o.state, o.scale_codes, tab, vec, a);
}

// Tensor-wise codes: one wave of blocks, each run's successor loaded while it is quantized.
// Float targets of the fp8 instruction (QArgs::flt_hw) take its kernels (FltHw).
template <CastInput In, Kind K, bool Fast, FltHw H = FltHw::none>
void run_tensor_codes(const void* x, const QArgs& a, const QuantizedOut& o,
                      const std::uint32_t* tab, bool vec, cudaStream_t s) {
  if constexpr (K == Kind::flt && Fast && H == FltHw::none) {
    // sr:8 by the instruction: the span kernel of detail_tensor_sr8.cuh (H200: this kernel's
    // sr:8 code pass ~540 us against the cast kernels' 380 us for the same bytes).
    if (tensor_sr8_ok(a, vec)) {
      launch_tensor_sr8<In>(x, a, o.codes, o.state, s);
      return;
    }
    switch (a.flt_hw) {
      case FltHw::e4m3_rne:
        run_tensor_codes<In, K, Fast, FltHw::e4m3_rne>(x, a, o, tab, vec, s);
        return;
      case FltHw::e4m3_sr:
        run_tensor_codes<In, K, Fast, FltHw::e4m3_sr>(x, a, o, tab, vec, s);
        return;
      case FltHw::e5m2_rne:
        run_tensor_codes<In, K, Fast, FltHw::e5m2_rne>(x, a, o, tab, vec, s);
        return;
      case FltHw::e5m2_sr:
        run_tensor_codes<In, K, Fast, FltHw::e5m2_sr>(x, a, o, tab, vec, s);
        return;
      default:
        break;
    }
  }
  const std::uint64_t tiles = tile_count(a);
  tensor_element_kernel<In, K, Fast, H>
      <<<persistent_blocks(tensor_element_kernel<In, K, Fast, H>, tiles), kThreads, 0, s>>>(
          x, o.codes, o.state, tab, vec, a);
}

template <CastInput In, Kind K>
void run_quantize(const void* x, const QArgs& a, const quant::Options& opt, const QuantizedOut& o,
                  cudaStream_t s) {
  if (a.n == 0) return;
  const bool vec = aligned16(x) && aligned16(o.codes);
  const bool fast = fast_path(a);
  const std::uint64_t tiles = tile_count(a);
  std::uint32_t* tab = nullptr;
  if (K == Kind::codebook && fast) tab = build_cb_table(a, s);
  if (single_pass(a, opt)) {
    if (fast) {
      run_fused<In, K, true>(x, a, o, tab, vec, s);
    } else {
      run_fused<In, K, false>(x, a, o, tab, vec, s);
    }
    cuda_check_launch("quantize kernel launch");
    if (tab != nullptr) cuda_check(cudaFreeAsync(tab, s), "cudaFreeAsync");
    return;
  }
  // amax into the state array (as bits), or into scratch for mx.
  std::uint32_t* amax = reinterpret_cast<std::uint32_t*>(o.state);
  void* scratch = nullptr;
  if (a.kind == Kind::mx) {
    cuda_check(cudaMallocAsync(&scratch, a.groups * 4, s), "cudaMallocAsync");
    amax = static_cast<std::uint32_t*>(scratch);
  }
  run_amax(x, In, amax, a, s);
  run_state(amax, o.state, o.scale_codes, a, s);
  if (a.transpose) {
    if constexpr (K != Kind::mx) {
      if (fast && transpose_fast_ok(a, x, o.codes)) {
        const dim3 grid(static_cast<unsigned>((a.cols + kTT - 1) / kTT),
                        static_cast<unsigned>((a.rows + kTR - 1) / kTR));
        transpose_fast_kernel<In, K><<<grid, kThreads, 0, s>>>(x, o.codes, o.state, tab, a);
        cuda_check_launch("quantize kernel launch");
        if (tab != nullptr) cuda_check(cudaFreeAsync(tab, s), "cudaFreeAsync");
        return;
      }
    }
    const dim3 grid(static_cast<unsigned>((a.cols + 31) / 32),
                    static_cast<unsigned>((a.rows + 31) / 32));
    transpose_kernel<In, K><<<grid, kThreads, 0, s>>>(x, o.codes, o.state, o.scale_codes, a);
  } else if constexpr (K != Kind::mx) {  // mx without transpose is always single pass
    if (a.groups == 1) {
      if (fast) {
        run_tensor_codes<In, K, true>(x, a, o, tab, vec, s);
      } else {
        run_tensor_codes<In, K, false>(x, a, o, tab, vec, s);
      }
    } else if (a.col && fast && col_vec_ok(a, x) &&
               (reinterpret_cast<std::uintptr_t>(o.codes) & 7u) == 0) {
      const std::uint64_t rpb = col_rows_per_block(a);
      const dim3 grid = col_vec_grid(a, rpb);
      col_element_kernel<In, K><<<grid, kThreads, 0, s>>>(x, o.codes, o.state, tab, rpb, a);
    } else {
      element_kernel<In, K>
          <<<blocks_for(tiles, 1), kThreads, 0, s>>>(x, o.codes, o.state, o.scale_codes, vec, a);
    }
  }
  cuda_check_launch("quantize kernel launch");
  if (tab != nullptr) cuda_check(cudaFreeAsync(tab, s), "cudaFreeAsync");
  if (scratch != nullptr) cuda_check(cudaFreeAsync(scratch, s), "cudaFreeAsync");
}

// run_quantize for the input type `in`.
template <Kind K>
void run_quantize_for_input(const void* x, CastInput in, const QArgs& a, const quant::Options& opt,
                            const QuantizedOut& o, cudaStream_t s) {
  switch (in) {
    case CastInput::fp32:
      run_quantize<CastInput::fp32, K>(x, a, opt, o, s);
      break;
    case CastInput::bf16:
      run_quantize<CastInput::bf16, K>(x, a, opt, o, s);
      break;
    case CastInput::fp16:
      run_quantize<CastInput::fp16, K>(x, a, opt, o, s);
      break;
  }
}

}  // namespace
}  // namespace exmy::gpu::quant_detail
