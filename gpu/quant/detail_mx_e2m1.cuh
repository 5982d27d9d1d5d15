// Internal to gpu/quant/quantize_block_scaled.cu: the OCP MX single pass with e2m1fn elements
// under rne (fused_group_kernel's structure, one kernel of its own). sm_90 has no e2m1
// conversion (cvt ... e2m1x2 needs sm_100a), and the lean software cast of MxRun::ocp_sw (the
// exponent shift, fast_mx's range condition, fast_cast_fp32_lean's two rounding branches and
// overflow select per element) kept the pass at 653 us against 484 us for e4m3fn's instruction
// (H200, 2^28 fp32, bench/results/2026-12-02-h200-quant-roofline-s7.md). Here each element is
// one multiplication, one clamp and one magic-number addition (e2m1_magnitude):
//   u  = min(RN32(|x| * 2^-X), 6)   2^-X an fp32 number for every scale code below 0xFF (2^-127
//                                   is subnormal); the product is exact unless |u| < 2^-126, which
//                                   rounds to code 0 whatever its last bits; clamping at the
//                                   largest value 6 is rne then satfinite (every |u| > 6 rounds to
//                                   6 or to 8, which saturates to 6);
//   e  = max(2^floor(log2 u), 1)    the binade of u, or e2m1's emin (1) below it;
//   mg = e * 2^22                   the fp32 ulp of [mg, 2 mg) is e / 2, e2m1's grid step at e;
//   t  = RN32(mg + u)               u rounded to that grid, ties to even (u < 2e <= mg 2^-21);
//   T  = bits(t) - bits(mg)         the rounded u in grid steps, in [0, 4];
//   code magnitude = T + 2 log2(e)  (the binade's first code is 2 log2 e; at most 7, +-6); the
//                                   sign is x's (e2m1fn keeps -0).
// Checked on the host against native::mx_element before it went in: all 2^32 fp32 patterns but
// inf and NaN under scale code 127, and every 4099th under 14 other codes (0 to 254): 0
// mismatches. The GPU tests of tests/gpu/quantize_speed_paths_test.cpp compare the kernel.
// That is native::mx_element's rounding (x * 2^-X exactly, rne, satfinite) for every finite x
// with a finite scale. A run with an inf or NaN element, and every run of a NaN scale, is
// recomputed by the native path after the store (mx_fixup, as MxRun::ocp_sw does).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "gpu/quant/detail_args.cuh"
#include "gpu/quant/detail_code_kernels.cuh"
#include "gpu/quant/detail_element.cuh"
#include "gpu/quant/detail_fast_element.cuh"
#include "gpu/quant/detail_input_words.cuh"
#include "sim/native/quant_mx.hpp"

namespace exmy::gpu::quant_detail {
namespace {

// 2^-X for the E8M0 scale code c < 0xFF (X = c - 127), as fp32 bits: 2^(127 - c).
__device__ __forceinline__ float e2m1_inv_scale(std::uint8_t c) {
  return native::float_of(c <= 253 ? static_cast<std::uint32_t>(254 - c) << 23 : 0x00400000u);
}

// The e2m1 magnitude code (0..7) of |x| bits `mag` (finite) times inv = 2^-X: the file comment's
// formula.
__device__ __forceinline__ std::uint32_t e2m1_magnitude(std::uint32_t mag, float inv) {
  const float u = fminf(__fmul_rn(native::float_of(mag), inv), 6.0f);
  const std::uint32_t e = max(native::bits_of(u) & 0x7F800000u, 0x3F800000u);  // >= 1.0
  const std::uint32_t mg = e + (22u << 23);
  const std::uint32_t t = native::bits_of(__fadd_rn(native::float_of(mg), u));
  // 2 log2(e) = (bits(e) - bits(1.0)) >> 22.
  return t - mg + ((e - 0x3F800000u) >> 22);
}

// The codes of one run under the block's scale code mxs (not NaN), packed little-endian four to
// a word (c[k] at byte k % 4 of word k / 4); returns the largest |x| bits of the run.
template <CastInput In>
__device__ __forceinline__ std::uint32_t e2m1_run(std::uint8_t mxs, const std::uint32_t* w,
                                                  std::uint32_t (&packed)[kRun / 4]) {
  const float inv = e2m1_inv_scale(mxs);
  std::uint32_t top = 0;
#pragma unroll
  for (int q = 0; q < kRun / 4; ++q) {
    std::uint32_t v = 0;
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const std::uint32_t xb = exact_bits<In>(w, 4 * q + k);
      const std::uint32_t mag = xb & 0x7FFFFFFFu;
      top = max(top, mag);
      const std::uint32_t c = e2m1_magnitude(mag, inv) | ((xb >> 28) & 0x8u);
      v |= c << (8 * k);
    }
    packed[q] = v;
  }
  return top;
}

// Stores a run's codes (packed as e2m1_run gives them) at element base: 16 bytes, or as 4-bit
// pairs 8 bytes (sim/native/pack4.hpp: element 2i in the low nibble); the partial last run and
// unaligned pointers byte by byte.
__device__ __forceinline__ void e2m1_store(std::uint8_t* out, std::uint64_t base, std::uint64_t n,
                                           bool vec, bool packed4,
                                           const std::uint32_t (&v)[kRun / 4]) {
  if (vec && base + kRun <= n) {
    if (packed4) {
      // Bytes (c0, c1, c2, c3) of a word -> nibbles c0 | c1 << 4 (byte 0), c2 | c3 << 4 (byte 1).
      std::uint32_t h[kRun / 4];
#pragma unroll
      for (int q = 0; q < kRun / 4; ++q) {
        const std::uint32_t m = (v[q] | (v[q] >> 4)) & 0x00FF00FFu;
        h[q] = (m & 0xFFu) | ((m >> 8) & 0xFF00u);
      }
      *reinterpret_cast<uint2*>(out + base / 2) =
          make_uint2(h[0] | (h[1] << 16), h[2] | (h[3] << 16));
    } else {
      *reinterpret_cast<uint4*>(out + base) = make_uint4(v[0], v[1], v[2], v[3]);
    }
    return;
  }
  std::uint8_t c[kRun];
#pragma unroll
  for (int k = 0; k < kRun; ++k) c[k] = static_cast<std::uint8_t>(v[k / 4] >> (8 * (k % 4)));
  if (packed4) {
    store_run_packed4(out, base, n, false, c);
  } else {
    store_run(out, base, n, false, c);
  }
}

// fused_group_kernel<In, mx, Fast> for OCP MX e2m1fn under rne: contiguous groups of G = 16 S
// elements (S = 2^k threads), one block per tile, held to 3 resident blocks per SM for fp32 and
// bf16 inputs as the other OCP MX kernels.
template <CastInput In>
__global__ void __launch_bounds__(kThreads, In != CastInput::fp16 ? 3 : 1)
    mx_e2m1_kernel(const void* __restrict__ x, std::uint8_t* __restrict__ codes,
                   std::uint8_t* __restrict__ mx_scales, bool vec,
                   const __grid_constant__ QArgs a) {
  __shared__ std::uint32_t warp_max[2][kThreads / 32];
  int parity = 0;
  const int S = static_cast<int>(a.G / kRun);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * kTile;
  const std::uint64_t mine = static_cast<std::uint64_t>(threadIdx.x) * kRun;
  for (std::uint64_t tile = static_cast<std::uint64_t>(blockIdx.x) * kTile; tile < a.n;
       tile += stride) {
    const std::uint64_t base = tile + mine;
    std::uint32_t w[InT<In>::kWords];
    load_words<In>(x, base, a.n, vec, w);
    const std::uint32_t acc =
        group_absmax(run_absmax<In>(w, a.p.nan), S, lane, warp, warp_max, parity);
    const std::uint8_t mxs = scale_code_of(a, native::float_of(acc));
    if (base < a.n) {
      if ((threadIdx.x & (S - 1)) == 0) mx_scales[base >> a.G_shift] = mxs;
      std::uint32_t v[kRun / 4];
      const std::uint32_t top = e2m1_run<In>(mxs, w, v);
      e2m1_store(codes, base, a.n, vec, a.packed4, v);
      if (mxs == native::kE8m0Nan || top >= 0x7F800000u) {
        mx_fixup<In>(a, x, codes, base, mxs, 0xFFFFu);
      }
    }
  }
}

// Whether mx_e2m1_kernel runs the fast single pass of a (run_fused's MxRun::ocp_sw case).
inline bool mx_e2m1_ok(const QArgs& a) {
  return a.p.fmt == formats::e2m1fn && a.p.mode == RoundMode::rne &&
         a.p.rule == native::ScaleRule::mx;
}

}  // namespace
}  // namespace exmy::gpu::quant_detail
