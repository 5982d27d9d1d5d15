// Element-wise cast kernels (gpu/cast/cast.hpp). A thread handles groups of 16 input bytes (4 fp32
// or 8 bf16/fp16 elements each); the lanes of a warp take consecutive vectors, so each load and
// store instruction of a warp covers one contiguous span (coalesced), and all of a thread's loads
// are issued before its arithmetic (under sr on the hw path, a span ahead: for_each_span). The
// arithmetic is one of
//   - lean: the mode-fixed rne / rtz / sr:R cast of every float format of <= 16 bits
//     (native::fast_cast_fp32_lean, sign handling fixed per kernel), with the rare inputs outside
//     its domain (inf, NaN) redone per group by fast_cast_fp32_fixed_inline; the few
//     inputs that need the native engine (fp32 subnormals into formats reaching below fp32's
//     range, zero into formats without zero) set a flag, and a second kernel redoes them;
//     sr:8 codes of 8-bit formats take the hw path's span kernel with the hw formula read as an
//     integer (sr_span_kernel with LeanSrCodes, lean_codes_sr);
//   - hw: e4m3fn / e5m2 codes and fake quantization under rne (overflow none, sat or satfinite)
//     and sr:R by the fp8 conversion instructions (gpu/cast/hw_cvt.hpp, sm_89+), which equal the
//     lean cast under rne + satfinite on every non-NaN input; where the policy's overflow code
//     differs it is the instruction's plus one, added by a per-byte flag; sr:R rounds on the fp32
//     value first (hw_codes_sr, its own kernel sr_span_kernel); NaN (and inf where needed) inputs
//     are redone per group;
//   - fast: fast_cast_fp32 for the other modes on formats with a range inside fp32's;
//   - generic: native::convert with the runtime descriptor.
// No kernel of the first two calls a function: a call anywhere in these loops (even on a path
// never taken) or a dynamically indexed register array costs every element register spills
// (measured on an H200: 305 -> 870-2000 us for 2^28 fp32 -> e4m3fn, bench/results).
// Layout: this file (path choice, the fast and generic kernels, the entry points);
// cast_span_paths.cu (the lean and hw kernels and their launchers); detail_*.cuh (what they share).
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <optional>
#include <string>
#include <type_traits>

#include "gpu/cast/cast.hpp"
#include "gpu/cast/detail_cast_args.cuh"
#include "gpu/cast/detail_cast_elements.cuh"
#include "gpu/cast/fast_cast.hpp"
#include "gpu/cast/hw_cast.hpp"
#include "gpu/cast/hw_cvt.hpp"
#include "gpu/cast/widen.hpp"
#include "gpu/common/cuda_check.hpp"
#include "gpu/common/launch.hpp"
#include "sim/common/error.hpp"
#include "sim/native/convert.hpp"
#include "sim/native/philox.hpp"

namespace exmy::gpu::cast_detail {
namespace {

// Out: uint8_t / uint16_t codes, or float for fake quantization (fast and generic paths).
template <CastInput In, typename Out, Path P>
__global__ void __launch_bounds__(kThreads)
    cast_kernel(const void* __restrict__ in_, std::size_t n, Out* __restrict__ out, CastArgs a) {
  using T = typename InputTraits<In>::T;
  constexpr int G = 16 / sizeof(T);  // elements per 16-byte input vector
  const T* in = static_cast<const T*>(in_);
  const bool sr = a.r.mode == RoundMode::sr;
  constexpr std::size_t kWarpSpan = 32 * kGroups * G;  // elements per warp and step
  const std::size_t lane = threadIdx.x % 32;
  const std::size_t tile = static_cast<std::size_t>(kThreads) * kGroups * G;
  for (std::size_t base =
           static_cast<std::size_t>(blockIdx.x) * tile + threadIdx.x / 32 * kWarpSpan;
       base < n; base += static_cast<std::size_t>(gridDim.x) * tile) {
    if (a.vector_ok && base + kWarpSpan <= n) {
      // The warp's whole span is in range: every group is one 16-byte load and one store.
      uint4 raw[kGroups];
#pragma unroll
      for (int u = 0; u < kGroups; ++u) {
        raw[u] = *reinterpret_cast<const uint4*>(in + base + (u * 32 + lane) * G);
      }
#pragma unroll
      for (int u = 0; u < kGroups; ++u) {
        const std::size_t idx = base + (u * 32 + lane) * G;
        const T* x = reinterpret_cast<const T*>(&raw[u]);
        Out res[G];
#pragma unroll
        for (int g = 0; g < G; g += 4) {
          // vector_ok includes offset % 4 == 0: elements idx + g .. + 3 are one Philox block.
          native::Philox4 b{};
          if (sr) b = native::philox_block(a.keys, a.stream, (a.offset + idx + g) >> 2);
#pragma unroll
          for (int k = 0; k < 4; ++k) {
            const std::uint32_t rand = sr ? native::sr_word(b.w[k], a.r.sr_bits) : 0u;
            const std::uint32_t code = cast_one<In, P>(a, x[g + k], rand);
            if constexpr (std::is_same_v<Out, float>) {
              res[g + k] = decode_one<P>(a, code);
            } else {
              res[g + k] = static_cast<Out>(code);
            }
          }
        }
        store_group(out + idx, res);
      }
    } else {
      // The ragged end (or unaligned pointers / offset): element by element, one copy of the
      // code so that the hot loop above stays small.
      const std::size_t end = base + kWarpSpan < n ? base + kWarpSpan : n;
#pragma unroll 1
      for (std::size_t i = base + lane; i < end; i += 32) {
        std::uint32_t rand = 0;
        if (sr) {
          rand = native::sr_word(sr_word_at(a, i), a.r.sr_bits);
        }
        const std::uint32_t code = cast_one<In, P>(a, in[i], rand);
        if constexpr (std::is_same_v<Out, float>) {
          out[i] = decode_one<P>(a, code);
        } else {
          out[i] = static_cast<Out>(code);
        }
      }
    }
  }
}

template <typename Code, Path P>
__global__ void __launch_bounds__(kThreads)
    decode_kernel(const Code* __restrict__ codes, std::size_t n, float* __restrict__ out,
                  CastArgs a) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    out[i] = decode_one<P>(a, codes[i]);
  }
}

// The mode-fixed lean path serves rounding r on format f.
bool lean_serves(const FloatFormat& f, const Rounding& r) {
  return native::fast_fixed_supported(f) && fast_mode_for(f, r) != FastMode::any;
}

// The hw path's constants for input type t, when the fp8 instructions compute the cast of f
// under r: f is e4m3fn or e5m2, the device runs the instructions, and
//   - r is rne, and the policy's code equals the instruction's (rne + satfinite) on every
//     non-NaN input magnitude below some m0 and is that code plus one from m0 up to inf, both
//     signs (overflow none: m0 is the smallest magnitude whose rounding overflows, e4m3fn 0x7E ->
//     0x7F NaN, e5m2 0x7B -> 0x7C inf; sat: m0 = inf; satfinite: no m0); ovf_add sets the top bit
//     of |x| + ovf_add (of each 16-bit lane) exactly from m0 up (0 without m0). The search
//     assumes what it checks at m0 and inf (rounding is monotone in the magnitude);
//   - or r is sr:R with R <= 21 - M, and the overflow code is +-max (sat, satfinite: ovf_add 0)
//     or +-(max + 1) (none: 2^31 - ovf_add is the smallest rounded magnitude y past max, from
//     which hw_codes_sr sends a vector to the rare path); inf inputs take the rare path. Its other
//     constants come from the FastCastPlan.
// Returns ovf_add, or nothing when the path does not apply.
std::optional<std::uint32_t> hw_plan(const FloatFormat& f, const Rounding& r, CastInput t) {
  const bool e4m3 = f == formats::e4m3fn;
  if (!e4m3 && f != formats::e5m2) return std::nullopt;
  // sr: R <= 21 - M keeps hw_codes_sr's sums inside one binade (lean takes R up to 23 - M).
  const bool sr = fast_mode_for(f, r) == FastMode::sr && r.sr_bits <= 21 - f.man_bits;
  if (r.mode != RoundMode::rne && !sr) return std::nullopt;
  if (!hw_fp8_available()) return std::nullopt;
  const auto max = static_cast<std::uint32_t>(f.max_code());
  const auto sign_bit = static_cast<std::uint32_t>(f.sign_bit());
  if (sr) {
    const auto pos = static_cast<std::uint32_t>(native::overflow_result(f, r, false).code);
    const auto neg = static_cast<std::uint32_t>(native::overflow_result(f, r, true).code);
    if (pos == max + 1 && neg == ((max + 1) | sign_bit)) {
      return 0x80000000u - (native::bits_of(native::to_float(f, max)) + 1u);
    }
    if (pos == max && neg == (max | sign_bit)) return 0u;
    return std::nullopt;
  }
  const FloatFormat from = t == CastInput::fp32   ? formats::fp32
                           : t == CastInput::bf16 ? formats::bf16
                                                  : formats::fp16;
  const std::uint32_t inf = t == CastInput::fp32   ? 0x7F800000u
                            : t == CastInput::bf16 ? 0x7F80u
                                                   : 0x7C00u;
  const std::uint32_t sign = t == CastInput::fp32 ? 0x80000000u : 0x8000u;
  const Rounding sat{RoundMode::rne, 0, Overflow::satfinite};
  const auto code = [&](std::uint32_t x, const Rounding& rr) {
    return static_cast<std::uint32_t>(native::convert(from, f, rr, x).code);
  };
  const auto plus_one = [&](std::uint32_t m) {
    return code(m, r) == code(m, sat) + 1 && code(m | sign, r) == code(m | sign, sat) + 1;
  };
  if (code(inf, r) == code(inf, sat) && code(inf | sign, r) == code(inf | sign, sat)) {
    return 0u;  // satfinite: the instruction's codes throughout
  }
  if (!plus_one(inf)) return std::nullopt;
  std::uint32_t lo = 0, hi = inf;  // code(hi) differs, code(lo) = code(0) does not
  while (hi - lo > 1) {
    const std::uint32_t mid = lo + (hi - lo) / 2;
    (code(mid, r) != code(mid, sat) ? hi : lo) = mid;
  }
  if (!plus_one(hi)) return std::nullopt;
  return t == CastInput::fp32 ? 0x80000000u - hi : (0x8000u - hi) * 0x00010001u;
}

void check_params(const CastParams& p) {
  const Rounding& r = p.rounding;
  if (r.mode == RoundMode::sr && (r.sr_bits < 1 || r.sr_bits > 32)) {
    throw InputError("cast: sr_bits must be in 1..32 for stochastic rounding, got " +
                     std::to_string(r.sr_bits));
  }
  code_bytes(p.to);
  if (p.path == CastPath::fast && !fast_cast_supported(p.to) && !lean_serves(p.to, r)) {
    throw InputError(
        "cast: the fast path needs rne, rtz or sr:R with R <= 23 - M (any float format of at "
        "most 16 bits but signed formats without subnormals), or a signed format with "
        "subnormals and a range inside fp32's for the other modes");
  }
}

// The arithmetic of a cast: the lean path for rne / rtz / sr:R on every format it serves (fake
// quantization needs formats whose values are fp32 values), fast_cast_fp32 for the other modes
// on formats with a range inside fp32's, else (or when asked) the native engine.
// hw_ovf_add receives hw_plan's constant when the hw path is chosen (its bisection runs once).
Path choose_path(const CastParams& p, bool fake, CastInput t, std::uint32_t* hw_ovf_add = nullptr) {
  if (p.path == CastPath::generic) return Path::generic;
  if (const auto h = hw_plan(p.to, p.rounding, t)) {
    if (hw_ovf_add != nullptr) *hw_ovf_add = *h;
    return Path::hw;
  }
  if (lean_serves(p.to, p.rounding) && (!fake || fast_cast_supported(p.to))) return Path::lean;
  if (fast_cast_supported(p.to)) return Path::fast;
  return Path::generic;
}

CastArgs make_args(const CastParams& p, CastInput in_type, bool vector_ok, Path path,
                   std::uint32_t hw_ovf_add = 0) {
  CastArgs a{};
  a.plan = path != Path::generic ? make_fast_cast_plan(p.to, p.rounding) : FastCastPlan{};
  a.from = in_type == CastInput::fp32   ? formats::fp32
           : in_type == CastInput::bf16 ? formats::bf16
                                        : formats::fp16;
  a.to = p.to;
  a.r = p.rounding;
  a.keys = native::philox_keys(p.seed);
  a.offset = p.index_offset;
  a.stream = p.stream;
  a.vector_ok = vector_ok;
  a.hw_ovf_add = hw_ovf_add;
  return a;
}

// The vector path's preconditions: 16-byte aligned pointers, and an index offset that keeps
// each group of 4 elements on one Philox block.
bool vector_ok(const void* in, const void* out, const CastParams& p) {
  return aligned16(in, out) && p.index_offset % 4 == 0;
}

template <CastInput In, typename Out>
void launch_cast(const void* in, std::size_t n, Out* out, const CastArgs& a, Path path,
                 cudaStream_t s) {
  if constexpr (!std::is_same_v<Out, std::uint16_t>) {
    if (path == Path::hw) {
      launch_hw_path(in, In, n, out, a, s);
      return;
    }
  }
  if (path == Path::lean) {
    launch_lean_path(in, In, n, out, a, s);
    return;
  }
  const unsigned grid = grid_for(n, kGroups * 16 / sizeof(typename InputTraits<In>::T));
  if (path == Path::generic) {
    cast_kernel<In, Out, Path::generic><<<grid, kThreads, 0, s>>>(in, n, out, a);
  } else {
    cast_kernel<In, Out, Path::fast><<<grid, kThreads, 0, s>>>(in, n, out, a);
  }
  cuda_check_launch("cast kernel launch");
}

template <typename Out>
void dispatch_input(const void* in, CastInput t, std::size_t n, Out* out, const CastArgs& a,
                    Path path, cudaStream_t s) {
  switch (t) {
    case CastInput::fp32:
      launch_cast<CastInput::fp32>(in, n, out, a, path, s);
      break;
    case CastInput::bf16:
      launch_cast<CastInput::bf16>(in, n, out, a, path, s);
      break;
    case CastInput::fp16:
      launch_cast<CastInput::fp16>(in, n, out, a, path, s);
      break;
  }
}

}  // namespace
}  // namespace exmy::gpu::cast_detail

namespace exmy::gpu {

using namespace cast_detail;

std::size_t code_bytes(const FloatFormat& f) {
  const int bits = f.total_bits();
  if (bits <= 8) return 1;
  if (bits <= 16) return 2;
  throw InputError("cast: target format has " + std::to_string(bits) +
                   " bits; GPU casts produce codes of at most 16 bits");
}

std::size_t input_bytes(CastInput t) {
  return t == CastInput::fp32 ? 4 : 2;
}

bool cast_uses_fast_path(const CastParams& p) {
  return choose_path(p, false, CastInput::fp32) != Path::generic;
}

void cast_codes(const void* in, CastInput in_type, std::size_t n, void* codes,
                const CastParams& params, CUstream_st* stream) {
  check_params(params);
  if (n == 0) return;
  std::uint32_t hw_ovf_add = 0;
  const Path path = choose_path(params, false, in_type, &hw_ovf_add);
  const CastArgs a = make_args(params, in_type, vector_ok(in, codes, params), path, hw_ovf_add);
  if (code_bytes(params.to) == 1) {
    dispatch_input(in, in_type, n, static_cast<std::uint8_t*>(codes), a, path, stream);
  } else {
    dispatch_input(in, in_type, n, static_cast<std::uint16_t*>(codes), a, path, stream);
  }
}

void cast_fake_quant(const void* in, CastInput in_type, std::size_t n, float* out,
                     const CastParams& params, CUstream_st* stream) {
  check_params(params);
  if (n == 0) return;
  std::uint32_t hw_ovf_add = 0;
  const Path path = choose_path(params, true, in_type, &hw_ovf_add);
  const CastArgs a = make_args(params, in_type, vector_ok(in, out, params), path, hw_ovf_add);
  dispatch_input(in, in_type, n, out, a, path, stream);
}

void decode_codes(const void* codes, const FloatFormat& f, std::size_t n, float* out,
                  CUstream_st* stream) {
  CastParams p;
  p.to = f;
  const std::size_t bytes = code_bytes(f);
  if (n == 0) return;
  // Field moves where every value of f is an fp32 value, else native::to_float.
  const bool fast = fast_cast_supported(f);
  const CastArgs a = make_args(p, CastInput::fp32, false, fast ? Path::fast : Path::generic);
  const unsigned grid = grid_for(n, 1);
  if (bytes == 1) {
    const auto* c = static_cast<const std::uint8_t*>(codes);
    if (fast) {
      decode_kernel<std::uint8_t, Path::fast><<<grid, kThreads, 0, stream>>>(c, n, out, a);
    } else {
      decode_kernel<std::uint8_t, Path::generic><<<grid, kThreads, 0, stream>>>(c, n, out, a);
    }
  } else {
    const auto* c = static_cast<const std::uint16_t*>(codes);
    if (fast) {
      decode_kernel<std::uint16_t, Path::fast><<<grid, kThreads, 0, stream>>>(c, n, out, a);
    } else {
      decode_kernel<std::uint16_t, Path::generic><<<grid, kThreads, 0, stream>>>(c, n, out, a);
    }
  }
  cuda_check_launch("decode kernel launch");
}

}  // namespace exmy::gpu
