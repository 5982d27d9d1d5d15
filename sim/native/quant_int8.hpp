// Absmax scaling onto a grid of +-Q and the rounding to int8 (SwitchBack eq. 1:
// q = round(127 / absmax * x)); docs/SEMANTICS.md 7.3. Per-element pieces shared by the CPU
// reference (sim/quant/) and the CUDA kernels (gpu/): both must call exactly these.
#pragma once

#include <cstdint>

#include "sim/native/convert.hpp"
#include "sim/native/hd.hpp"
#include "sim/native/quant_fp32.hpp"
#include "sim/native/round_step.hpp"
#include "sim/native/rounding.hpp"
#include "sim/native/sfu_sm90.hpp"

namespace exmy::native {

// The fp32 operation order of y = Q * x / a (a = the group's absmax, Q = 127 for int8 or the
// target format's max for absmax-scaled float casts). Each name lists its roundings:
enum class ScaleOrder : std::uint8_t {
  div_mul,    // y = RN32(Q * RN32(x / a))           SwitchBack quantize_rowwise / _columnwise
  recip_mul,  // y = RN32(Q * RN32(x * RN32(1 / a))) SwitchBack quantize_global (absmax_inv)
  mul_recip,  // y = RN32(x * RN32(Q / a))           one multiply per element
  // `--compat triton`: SwitchBack's Triton quantize_rowwise/_columnwise as Triton compiles them:
  // y = RN32(Q * div.full.f32(x, a)) (Triton's fp32 `/`; docs/SEMANTICS.md 7.3, 17.2)
  div_full_mul,
  // `--compat bnb-cuda` (int8) and LLM.int8(): bitsandbytes' kInt8VectorQuant as compiled with
  // --use_fast_math: y = x ⊗ftz (127 ⊗ftz rcp.approx.ftz(a)), `val * __fdividef(127, absmax)`
  // (docs/SEMANTICS.md 7.3, 17.2)
  fdividef_mul,
};

// y for one element. a == 0 (all-zero group) is handled by the caller (codes 0, state 0), never
// here; otherwise every NaN/Inf follows IEEE fp32 arithmetic (e.g. a = inf: finite x give 0,
// x = +-inf gives NaN).
EXMY_HD float absmax_scale(float x, float a, float Q, ScaleOrder order, const SfuTables& t = {}) {
  switch (order) {
    case ScaleOrder::div_full_mul:
      return rn32_mul(Q, sfu_div_full_f(t, x, a));
    case ScaleOrder::fdividef_mul:
      return ftz_mul(x, sfu_div_approx_ftz_f(t, Q, a));
    case ScaleOrder::div_mul:
      return rn32_mul(Q, rn32_div(x, a));
    case ScaleOrder::recip_mul:
      return rn32_mul(Q, rn32_mul(x, rn32_div(1.0f, a)));
    case ScaleOrder::mul_recip:
      return rn32_mul(x, rn32_div(Q, a));
  }
  return 0.0f;
}

// Largest int8 code magnitude: SwitchBack and LLM.int8() use the symmetric range [-127, 127].
inline constexpr int kInt8Max = 127;

struct Int8Encoded {
  std::int8_t code = 0;
  std::uint32_t flags = 0;  // exmy::flag bits: inexact, overflow (saturated), invalid (NaN)
};

// Rounds the fp32 value y to an integer with r.mode (rne = llrint's default; sr:R with the R-bit
// word `rand`, as SEMANTICS 2/3.1 with quantum 1), then saturates to [-127, 127] whatever
// r.overflow says (int8 has no inf). NaN -> 0 with `invalid`; +-inf -> +-127 with `overflow`.
// -0 and values rounding to 0 give 0 (int8 has no -0).
EXMY_HD Int8Encoded round_to_int8(float y, const Rounding& r, std::uint32_t rand = 0) {
  const std::uint32_t b = bits_of(y);
  const bool neg = (b >> 31) != 0;
  const std::uint32_t mag = b & 0x7FFFFFFFu;
  if (mag > 0x7F800000u) return {0, flag::invalid};
  // |y| >= 2^8 saturates under every mode (the largest code is 127 < 2^8); inf included.
  if (mag >= 0x43800000u) {
    return {static_cast<std::int8_t>(neg ? -kInt8Max : kInt8Max), flag::overflow | flag::inexact};
  }
  if (mag == 0) return {0, 0};
  // |y| = sig * 2^(exp - 63) with sig normalised, as the native engine's Unpacked.
  constexpr FloatFormat kFp32 = formats::fp32;  // a local copy: device code may not
  const Unpacked u = unpack(kFp32, b);          // refer to the host preset object
  // sig split at the units bit (round_step.hpp), then rounded to the integer t.
  const int s = 63 - u.exp;  // bits of sig below the units bit; >= 56 since |y| < 2^8
  const QuantumSplit split = split_at_quantum(u.sig, s, false);
  const bool inexact = split_inexact(split);
  std::uint64_t t = round_quantum(split, neg, r, rand);
  std::uint32_t flags = inexact ? flag::inexact : 0;
  if (t > static_cast<std::uint64_t>(kInt8Max)) {
    t = kInt8Max;
    flags |= flag::overflow | flag::inexact;
  }
  const int v = static_cast<int>(t);
  return {static_cast<std::int8_t>(neg ? -v : v), flags};
}

// Dequantization of one int8 code with absmax state a (SwitchBack dequantize_rowwise:
// max_val * x * inv_127): x^ = RN32(RN32(a * q) * RN32(1 / Q)).
EXMY_HD float dequant_absmax(float q_value, float a, float Q) {
  return rn32_mul(rn32_mul(a, q_value), rn32_div(1.0f, Q));
}

}  // namespace exmy::native
