// The lean and hw paths of gpu/cast/cast.hpp (the file comment of gpu/cast/cast.cu describes
// them): kernels over whole warp spans (lean_kernel, hw_kernel, the pipelined sr_span_kernel), the
// element-wise tail past the last span, the lean path's engine fix-up pass, and their launchers.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "gpu/cast/detail_cast_args.cuh"
#include "gpu/cast/detail_cast_elements.cuh"
#include "gpu/cast/detail_span_codes.cuh"
#include "gpu/cast/fast_cast.hpp"
#include "gpu/cast/hw_cvt.hpp"
#include "gpu/common/cuda_check.hpp"
#include "gpu/common/launch.hpp"
#include "sim/native/convert.hpp"

namespace exmy::gpu::cast_detail {
namespace {

// The engine flag of lean casts whose format has no engine inputs (never written).
__device__ unsigned g_unused_engine_flag;

// The lean path: rne / rtz / sr:R on every float format of <= 16 bits. Out: uint8_t / uint16_t
// codes, or float for fake quantization (formats with decode_fast only). Covers whole warp spans
// only ([0, n) with n a multiple of kLeanWarpSpan, 16-byte aligned pointers, offset % 4 == 0): no
// bounds test in the body; lean_tail_kernel does the rest.
template <CastInput In, typename Out, FastMode Mode, bool Signed, bool NegZero>
__global__ void __launch_bounds__(kThreads)
    lean_kernel(const void* __restrict__ in_, std::size_t n, Out* __restrict__ out, CastArgs a) {
  using T = typename InputTraits<In>::T;
  constexpr int G = 16 / sizeof(T);  // elements per 16-byte input vector
  constexpr int KG = kLeanElems / G;
  constexpr bool sr = Mode == FastMode::sr;
  const T* in = static_cast<const T*>(in_);
  for_each_span<T, KG, false>(in, n, [&](const uint4(&raw)[KG], std::size_t base) {
#pragma unroll
    for (int u = 0; u < KG; ++u) {
      const std::size_t idx = vector_index<T>(base, u);
      std::uint32_t words[G];
#pragma unroll
      for (int g = 0; g < G; g += 4) {
        // offset % 4 == 0: elements idx + g .. + 3 are one Philox block.
        native::Philox4 b{};
        if constexpr (sr) b = sr_block(a, idx + g, 0);
#pragma unroll
        for (int k = 0; k < 4; ++k) words[g + k] = sr ? native::sr_word(b.w[k], a.r.sr_bits) : 0u;
      }
      Out res[G];
      bool rare = false;
#pragma unroll
      for (int g = 0; g < G; ++g) {
        const std::uint32_t x = widen_input_nan_free<In>(lane_of<T>(raw[u], g));
        res[g] = lean_one<In, Out, Mode, Signed, NegZero>(a, x, words[g]);
        rare |= !native::fast_lean_domain(a.plan, x);
      }
      if (rare) {
        // Inputs outside the lean domain (inf, NaN, engine inputs). Unrolled, so the register
        // arrays stay statically indexed; keeping raw[] live to here also makes the compiler
        // issue all KG loads first (without it, ptxas sank loads 5..8 below the first groups'
        // arithmetic).
#pragma unroll
        for (int g = 0; g < G; ++g) {
          const std::uint32_t x = widen_input<In>(lane_of<T>(raw[u], g));
          if (!native::fast_lean_domain(a.plan, x))
            res[g] = rare_one<In, Out, Mode>(a, x, words[g]);
        }
      }
      store_group(out + idx, res);
    }
  });
}

// The lean path element by element over [first, n): the tail past the last whole warp span, or
// every element when the pointers or the offset rule out the vector kernel.
template <CastInput In, typename Out, FastMode Mode>
__global__ void __launch_bounds__(kThreads)
    lean_tail_kernel(const void* __restrict__ in_, std::size_t first, std::size_t n,
                     Out* __restrict__ out, CastArgs a) {
  using T = typename InputTraits<In>::T;
  const T* in = static_cast<const T*>(in_);
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = first + static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < n; i += stride) {
    std::uint32_t rand = 0;
    if constexpr (Mode == FastMode::sr) {
      rand = native::sr_word(sr_word_at(a, i), a.r.sr_bits);
    }
    out[i] = rare_one<In, Out, Mode>(a, widen_input<In>(in[i]), rand);
  }
}

// The hw path under rne over whole warp spans (as lean_kernel; the tail takes lean_tail_kernel,
// whose results are the same). Out: uint8_t codes, or float for fake quantization (the codes
// decoded by fast_decode_fp32_lean, as the lean path does). Inputs outside the path's domain
// (NaN; inf in fake quantization) are redone per vector by rare_one.
template <CastInput In, HwFp8 F, typename Out>
__global__ void __launch_bounds__(kThreads)
    hw_kernel(const void* __restrict__ in_, std::size_t n, Out* __restrict__ out, CastArgs a) {
  using T = typename InputTraits<In>::T;
  constexpr int G = 16 / sizeof(T);  // elements per 16-byte input vector
  constexpr int KG = kLeanElems / G;
  constexpr bool fake = std::is_same_v<Out, float>;
  // The smallest |x| (fp32 bits) of the rare path: NaN, and inf in fake quantization.
  constexpr std::uint32_t kRareFrom = fake ? 0x7F800000u : 0x7F800001u;
  const T* in = static_cast<const T*>(in_);
  for_each_span<T, KG, false>(in, n, [&](const uint4(&raw)[KG], std::size_t base) {
#pragma unroll
    for (int u = 0; u < KG; ++u) {
      const std::size_t idx = vector_index<T>(base, u);
      const std::uint32_t w[4] = {raw[u].x, raw[u].y, raw[u].z, raw[u].w};
      std::uint32_t res[G / 4];
      std::uint32_t rare = 0;
      hw_vector_rne<In, F, fake>(w, a.hw_ovf_add, res, rare);
      constexpr std::uint32_t kTop = In == CastInput::fp32 ? 0x80000000u : 0x80008000u;
      const bool any_rare = (rare & kTop) != 0;
      if constexpr (fake) {
        float vals[G];
#pragma unroll
        for (int g = 0; g < G; ++g) {
          vals[g] = native::fast_decode_fp32_lean(a.plan, (res[g / 4] >> (8 * (g % 4))) & 0xFFu);
        }
        if (any_rare) {
#pragma unroll
          for (int g = 0; g < G; ++g) {
            const std::uint32_t x = widen_input<In>(lane_of<T>(raw[u], g));
            if ((x & 0x7FFFFFFFu) >= kRareFrom)
              vals[g] = rare_one<In, float, FastMode::rne>(a, x, 0u);
          }
        }
        store_group(out + idx, vals);
      } else {
        if (any_rare) {
#pragma unroll
          for (int g = 0; g < G; ++g) {
            const std::uint32_t x = widen_input<In>(lane_of<T>(raw[u], g));
            if ((x & 0x7FFFFFFFu) >= kRareFrom) {
              const std::uint32_t code = rare_one<In, std::uint8_t, FastMode::rne>(a, x, 0u);
              const int sh = 8 * (g % 4);
              res[g / 4] = (res[g / 4] & ~(0xFFu << sh)) | (code << sh);
            }
          }
        }
        store_codes<G>(out + idx, res);
      }
    }
  });
}

// sr:R over whole warp spans (pipelined, for_each_span), the arithmetic from Codes: the hw path
// (HwSrCodes) or the lean path's 8-bit formats under sr:8 (LeanSrCodes). A span's codes are all
// computed before any is stored, with no branch in between, so that the compiler can overlap one
// vector's Philox rounds (multiplier pipe) with another's rounding (integer and fp32 pipes). The
// thread's Philox blocks (offset + base) / 4 + lane G/4 + 32 u G/4 + j share their high counter
// word unless the span crosses a multiple of 2^32 blocks, so one philox_prefix serves them all; a
// span that does cross, and a vector with a rare element (hw_codes_sr: NaN, inf, |x| too large
// for its constants), are redone by rare_one afterwards with the words drawn again in full.
// Codes::codes<In>(v, j) gives the four codes of elements 4j .. 4j + 3 of the 16-byte vector v
// (widening them itself: the hw path finds two 16-bit elements' magic numbers at once) and raises
// `top`; Codes::rare(top) sends the vector to the rare path. On the hw path R is compiled in (8,
// the common sr:8: the word's top byte is added by one LEA.HI) or read from the arguments (RC = 0).
// Out as for hw_kernel.
template <CastInput In, typename Codes, typename Out>
__global__ void __launch_bounds__(kThreads, 2)
    sr_span_kernel(const void* __restrict__ in_, std::size_t n, Out* __restrict__ out, CastArgs a) {
  using T = typename InputTraits<In>::T;
  constexpr int G = 16 / sizeof(T);  // elements per 16-byte input vector
  constexpr int KG = kLeanElems / G;
  constexpr int kBlocksPerVector = G / 4;
  constexpr bool fake = std::is_same_v<Out, float>;
  const typename Codes::Consts c = Codes::consts(a);
  const T* in = static_cast<const T*>(in_);
  const auto body_fn = [&](const uint4(&raw)[KG], std::size_t base) {
    const SpanWords<T> sw(a, base);
    std::uint32_t rare = sw.crosses ? ~0u : 0u;  // bit u: vector u is redone
    std::uint32_t res[KG][kBlocksPerVector];
#pragma unroll
    for (int u = 0; u < KG; ++u) {
      std::uint32_t top = 0;
#pragma unroll
      for (int j = 0; j < kBlocksPerVector; ++j) {
        const native::Philox4 b = sw.block(a, u, j);
        res[u][j] = Codes::template codes<In>(a, raw[u], j, b.w, c, top);
      }
      if (Codes::rare(top, c)) rare |= 1u << u;
    }
    // The rare path's result of element 4j + k of vector u at idx (a code, or its value). The
    // input is read again (keeping raw[] live through the span cost spills).
    const auto rare_elem = [&](std::size_t idx, int j, int k, const native::Philox4& b,
                               auto out_tag) {
      const std::uint32_t x = widen_input<In>(in[idx + 4 * j + k]);
      return rare_one<In, decltype(out_tag), FastMode::sr>(a, x,
                                                           native::sr_word(b.w[k], a.r.sr_bits));
    };
    if constexpr (fake) {
#pragma unroll
      for (int u = 0; u < KG; ++u) {
        const std::size_t idx = vector_index<T>(base, u);
        float vals[G];
        if ((rare >> u) & 1u) {
#pragma unroll
          for (int j = 0; j < kBlocksPerVector; ++j) {
            const native::Philox4 b = sr_block(a, idx, j);
#pragma unroll
            for (int k = 0; k < 4; ++k) vals[4 * j + k] = rare_elem(idx, j, k, b, float{});
          }
        } else {
#pragma unroll
          for (int g = 0; g < G; ++g) {
            vals[g] =
                native::fast_decode_fp32_lean(a.plan, (res[u][g / 4] >> (8 * (g % 4))) & 0xFFu);
          }
        }
        store_group(out + idx, vals);
      }
    } else {
      if (rare != 0) {
#pragma unroll
        for (int u = 0; u < KG; ++u) {
          if (((rare >> u) & 1u) == 0) continue;
          const std::size_t idx = vector_index<T>(base, u);
#pragma unroll
          for (int j = 0; j < kBlocksPerVector; ++j) {
            const native::Philox4 b = sr_block(a, idx, j);
            std::uint32_t w = 0;
#pragma unroll
            for (int k = 0; k < 4; ++k) {
              w |= static_cast<std::uint32_t>(rare_elem(idx, j, k, b, std::uint8_t{})) << (8 * k);
            }
            res[u][j] = w;
          }
        }
      }
#pragma unroll
      for (int u = 0; u < KG; ++u) store_codes<G>(out + vector_index<T>(base, u), res[u]);
    }
  };
  for_each_span<T, KG, true>(in, n, body_fn);
}

// The lean path's second pass: when the first flagged an input that needs the native engine,
// every such input is converted again by native::convert (every block returns at once otherwise).
template <CastInput In, typename Out>
__global__ void __launch_bounds__(kThreads)
    engine_fixup_kernel(const void* __restrict__ in_, std::size_t n, Out* __restrict__ out,
                        CastArgs a) {
  if (*a.engine_flag == 0) return;
  using T = typename InputTraits<In>::T;
  const T* in = static_cast<const T*>(in_);
  const bool sr = a.r.mode == RoundMode::sr;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    const std::uint32_t u = widen_input<In>(in[i]);
    if (!native::fast_needs_engine(a.plan, u)) continue;
    const std::uint32_t rand = sr ? native::sr_word(sr_word_at(a, i), a.r.sr_bits) : 0u;
    constexpr FloatFormat kFp32 = formats::fp32;  // a value: device code cannot bind the global
    const std::uint32_t code = generic_convert(kFp32, a.to, a.r, u, rand);
    if constexpr (std::is_same_v<Out, float>) {
      out[i] = native::to_float(a.to, code);
    } else {
      out[i] = static_cast<Out>(code);
    }
  }
}

// Launches a lean or hw kernel over `body` elements (whole warp spans): a grid by size, or for a
// Pipelined kernel (for_each_span) its shared memory and a resident grid.
template <CastInput In, bool Pipelined, auto Kernel, typename Out>
void launch_spans(const void* in, std::size_t body, Out* out, const CastArgs& a, cudaStream_t s) {
  constexpr int KG = kLeanElems / (16 / sizeof(typename InputTraits<In>::T));
  unsigned grid = grid_for(body, kLeanElems);
  std::size_t smem = 0;
  if constexpr (Pipelined) {
    smem = span_stage_bytes<KG>();
    grid = resident_grid<Kernel>(smem, grid);
  }
  Kernel<<<grid, kThreads, smem, s>>>(in, body, out, a);
  cuda_check_launch("cast kernel launch");
}

// The elements [body, n) past the last whole warp span, element by element.
template <CastInput In, typename Out, FastMode Mode>
void launch_lean_tail(const void* in, std::size_t body, std::size_t n, Out* out, const CastArgs& a,
                      cudaStream_t s) {
  if (body < n) {
    lean_tail_kernel<In, Out, Mode><<<grid_for(n - body, 1), kThreads, 0, s>>>(in, body, n, out, a);
    cuda_check_launch("cast tail kernel launch");
  }
}

// Where the lean path's sr:8 goes through sr_span_kernel (lean_codes_sr): 8-bit formats whose
// inputs below the normal range round to subnormals inside fp32's normal range (below_round), with
// a zero (lean domain from 0) and no engine inputs; and unsigned formats whose normal range covers
// fp32's with fp32's bias (e8m0fnu: every fp32 normal input is a normal of f). The rest keeps
// lean_kernel.
bool lean_sr_span_ok(const CastArgs& a) {
  const FastCastPlan& p = a.plan;
  const FloatFormat& f = p.f;
  const bool below = p.below_round && p.lean_lo == 0 && p.slow_span == 0;
  const bool covers = !f.is_signed && f.emin() + 127 <= 0 && p.cbias == 0;
  // (8 bits hold M <= 7, so R = 8 <= 21 - M, lean_codes_sr's bound, always holds.)
  return a.r.mode == RoundMode::sr && a.r.sr_bits == 8 && f.total_bits() <= 8 && (below || covers);
}

template <CastInput In, typename Out, FastMode Mode>
void launch_lean_mode(const void* in, std::size_t n, Out* out, const CastArgs& a, cudaStream_t s) {
  const FloatFormat& f = a.plan.f;
  // Whole warp spans through the vector kernel where the pointers and offset allow it.
  const std::size_t body = a.vector_ok ? n / kLeanWarpSpan * kLeanWarpSpan : 0;
  if constexpr (Mode == FastMode::sr && std::is_same_v<Out, std::uint8_t>) {
    if (body > 0 && lean_sr_span_ok(a)) {
      if (a.plan.lean_lo != 0) {
        launch_spans<In, true, sr_span_kernel<In, LeanSrCodes<false, false, 8, true>, Out>>(
            in, body, out, a, s);
      } else if (!f.is_signed) {
        launch_spans<In, true, sr_span_kernel<In, LeanSrCodes<false, false, 8>, Out>>(in, body, out,
                                                                                      a, s);
      } else if (f.has_neg_zero()) {
        launch_spans<In, true, sr_span_kernel<In, LeanSrCodes<true, true, 8>, Out>>(in, body, out,
                                                                                    a, s);
      } else {
        launch_spans<In, true, sr_span_kernel<In, LeanSrCodes<true, false, 8>, Out>>(in, body, out,
                                                                                     a, s);
      }
      launch_lean_tail<In, Out, Mode>(in, body, n, out, a, s);
      return;
    }
  }
  if (body > 0) {
    if (!f.is_signed) {
      launch_spans<In, false, lean_kernel<In, Out, Mode, false, false>>(in, body, out, a, s);
    } else if (f.has_neg_zero()) {
      launch_spans<In, false, lean_kernel<In, Out, Mode, true, true>>(in, body, out, a, s);
    } else {
      launch_spans<In, false, lean_kernel<In, Out, Mode, true, false>>(in, body, out, a, s);
    }
  }
  launch_lean_tail<In, Out, Mode>(in, body, n, out, a, s);
}

// The lean path, with the engine fix-up pass where the format has engine inputs at all (a flag
// in stream-ordered scratch memory, so that concurrent casts on other streams do not share it).
template <CastInput In, typename Out>
void launch_lean(const void* in, std::size_t n, Out* out, CastArgs a, cudaStream_t s) {
  const bool engine = a.plan.slow_span != 0;
  unsigned* flag = nullptr;
  if (engine) {
    cuda_check(cudaMallocAsync(reinterpret_cast<void**>(&flag), sizeof(unsigned), s),
               "cast: engine flag");
    cuda_check(cudaMemsetAsync(flag, 0, sizeof(unsigned), s), "cast: engine flag");
  } else {
    // Never written: no input needs the engine. A valid address all the same.
    cuda_check(cudaGetSymbolAddress(reinterpret_cast<void**>(&flag), g_unused_engine_flag),
               "cast: flag symbol");
  }
  a.engine_flag = flag;
  switch (fast_mode_for(a.plan, a.r)) {
    case FastMode::rne:
      launch_lean_mode<In, Out, FastMode::rne>(in, n, out, a, s);
      break;
    case FastMode::rtz:
      launch_lean_mode<In, Out, FastMode::rtz>(in, n, out, a, s);
      break;
    default:
      launch_lean_mode<In, Out, FastMode::sr>(in, n, out, a, s);
      break;
  }
  if (engine) {
    // A one-wave grid: its blocks only read the flag when no input needed the engine (a grid
    // sized by n cost ~250 us of block launches for 2^28 elements on an H200).
    const unsigned fix_grid = static_cast<unsigned>(
        std::min<std::size_t>(grid_for(n, 4), static_cast<std::size_t>(sm_count()) * 8));
    engine_fixup_kernel<In, Out><<<fix_grid, kThreads, 0, s>>>(in, n, out, a);
    cuda_check_launch("cast engine fix-up launch");
    cuda_check(cudaFreeAsync(flag, s), "cast: engine flag");
  }
}

// The hw path: whole warp spans by hw_kernel, the rest by the lean path's tail kernel (the same
// results). e4m3fn and e5m2 have no engine inputs, so no fix-up pass.
template <CastInput In, typename Out>
void launch_hw(const void* in, std::size_t n, Out* out, CastArgs a, cudaStream_t s) {
  cuda_check(cudaGetSymbolAddress(reinterpret_cast<void**>(&a.engine_flag), g_unused_engine_flag),
             "cast: flag symbol");
  const bool sr = a.r.mode == RoundMode::sr;
  const std::size_t body = a.vector_ok ? n / kLeanWarpSpan * kLeanWarpSpan : 0;
  if (body > 0) {
    const bool e4m3 = a.plan.f == formats::e4m3fn;
    if (sr) {
      const bool r8 = a.r.sr_bits == 8;
      if (e4m3 && r8) {
        launch_spans<In, true, sr_span_kernel<In, HwSrCodes<HwFp8::e4m3, 8>, Out>>(in, body, out, a,
                                                                                   s);
      } else if (e4m3) {
        launch_spans<In, true, sr_span_kernel<In, HwSrCodes<HwFp8::e4m3, 0>, Out>>(in, body, out, a,
                                                                                   s);
      } else if (r8) {
        launch_spans<In, true, sr_span_kernel<In, HwSrCodes<HwFp8::e5m2, 8>, Out>>(in, body, out, a,
                                                                                   s);
      } else {
        launch_spans<In, true, sr_span_kernel<In, HwSrCodes<HwFp8::e5m2, 0>, Out>>(in, body, out, a,
                                                                                   s);
      }
    } else if (e4m3) {
      launch_spans<In, false, hw_kernel<In, HwFp8::e4m3, Out>>(in, body, out, a, s);
    } else {
      launch_spans<In, false, hw_kernel<In, HwFp8::e5m2, Out>>(in, body, out, a, s);
    }
  }
  if (body < n) {
    const unsigned grid = grid_for(n - body, 1);
    if (sr) {
      lean_tail_kernel<In, Out, FastMode::sr><<<grid, kThreads, 0, s>>>(in, body, n, out, a);
    } else {
      lean_tail_kernel<In, Out, FastMode::rne><<<grid, kThreads, 0, s>>>(in, body, n, out, a);
    }
    cuda_check_launch("cast tail kernel launch");
  }
}

// f(std::integral_constant<CastInput, T>) for the input type t.
template <class F>
void for_input(CastInput t, F&& f) {
  switch (t) {
    case CastInput::fp32:
      f(std::integral_constant<CastInput, CastInput::fp32>{});
      break;
    case CastInput::bf16:
      f(std::integral_constant<CastInput, CastInput::bf16>{});
      break;
    case CastInput::fp16:
      f(std::integral_constant<CastInput, CastInput::fp16>{});
      break;
  }
}

}  // namespace

void launch_lean_path(const void* in, CastInput t, std::size_t n, std::uint8_t* out,
                      const CastArgs& a, cudaStream_t s) {
  for_input(t, [&](auto in_type) { launch_lean<decltype(in_type)::value>(in, n, out, a, s); });
}
void launch_lean_path(const void* in, CastInput t, std::size_t n, std::uint16_t* out,
                      const CastArgs& a, cudaStream_t s) {
  for_input(t, [&](auto in_type) { launch_lean<decltype(in_type)::value>(in, n, out, a, s); });
}
void launch_lean_path(const void* in, CastInput t, std::size_t n, float* out, const CastArgs& a,
                      cudaStream_t s) {
  for_input(t, [&](auto in_type) { launch_lean<decltype(in_type)::value>(in, n, out, a, s); });
}
void launch_hw_path(const void* in, CastInput t, std::size_t n, std::uint8_t* out,
                    const CastArgs& a, cudaStream_t s) {
  for_input(t, [&](auto in_type) { launch_hw<decltype(in_type)::value>(in, n, out, a, s); });
}
void launch_hw_path(const void* in, CastInput t, std::size_t n, float* out, const CastArgs& a,
                    cudaStream_t s) {
  for_input(t, [&](auto in_type) { launch_hw<decltype(in_type)::value>(in, n, out, a, s); });
}

}  // namespace exmy::gpu::cast_detail
