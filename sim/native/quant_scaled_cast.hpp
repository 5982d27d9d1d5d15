// Scaled casts of fp32 values into a float format (FP8 / ExMy), in the variants users compare
// against (docs/SEMANTICS.md 7.4). Per-element pieces shared by sim/quant/ and gpu/.
//
//   absmax (SwitchBack float8cast): state a = absmax; y = absmax_scale(x, a, fmax, order);
//                                    code = convert(y); x^ = RN32(RN32(a * v) * RN32(1 / fmax))
//   te   (TransformerEngine delayed/current scaling): state s = scale;
//          s = RN32(RN32(fmax / amax) / 2^margin), or the previous scale when amax is 0 or not
//          finite; code = convert(RN32(x * s), satfinite); x^ = RN32(v * RN32(1 / s))
//   torchao (float8 training): state s = scale;
//          s = RN32(RN64(fmax / max(amax, 1e-12))) [switches: fp16 clamp, power-of-two];
//          code = convert(clamp(RN32(x * s), -fmax, fmax)); x^ = RN32(v / s)
//   te_current (TransformerEngine 2.x current scaling): s = te_current_scale(amax); cast and
//          dequantization as te
#pragma once

#include <cstdint>

#include "sim/native/convert.hpp"
#include "sim/native/float_format.hpp"
#include "sim/native/hd.hpp"
#include "sim/native/quant_fp32.hpp"
#include "sim/native/quant_int8.hpp"
#include "sim/native/rounding.hpp"

namespace exmy::native {

enum class CastVariant : std::uint8_t {
  absmax,      // SwitchBack float8cast
  te,          // TransformerEngine _default_sf_compute (delayed-scaling formula)
  torchao,     // torchao.float8
  te_current,  // TransformerEngine 2.x current scaling (compute_scale_from_amax)
  ocp,         // MX: the OCP Microscaling v1.0 arithmetic (exact scaling)
  deepgemm,    // 2-D blocks: DeepGEMM's casts (sim/native/quant_block2d.hpp)
};

// The target format's largest finite value as fp32 (448 for e4m3fn, 57344 for e5m2). Formats
// wider than fp32's range are not scaled-cast targets.
EXMY_HD float format_max32(const FloatFormat& f) {
  return to_float(f, f.max_code());
}

// Rounds fp32 y into f once (SEMANTICS 2) with the given rounding; `rand` is the sr word.
EXMY_HD Encoded cast_fp32(const FloatFormat& f, float y, const Rounding& r, std::uint32_t rand) {
  constexpr FloatFormat kFp32 = formats::fp32;  // local copy, usable in device code
  return convert(kFp32, f, r, bits_of(y), rand);
}

// TransformerEngine's _default_sf_compute: sf = (fmax / amax) / 2^margin in fp32, keeping
// `prev_scale` when amax <= 0 or amax is not finite (NaN included).
EXMY_HD float te_scale(float amax, float fmax, int margin, float prev_scale) {
  if (!(amax > 0.0f) || !is_finite32(amax)) return prev_scale;
  // 2^-margin as an exact fp32 power of two (margin in [-126, 126]).
  const float pow2 = float_of(static_cast<std::uint32_t>(127 + margin) << 23);
  return rn32_div(rn32_div(fmax, amax), pow2);
}

// TransformerEngine 2.x current scaling, recipe_common.cuh compute_scale_from_amax: amax below
// `epsilon` (amax_epsilon, default 0) is raised to it; amax inf, NaN or 0 gives scale 1;
// otherwise s = RN32(fmax / amax) (__fdiv_rn), an infinite s becomes FLT_MAX, and with `pow2`
// (force_pow_2_scales) the mantissa bits are cleared (s is never subnormal here: that would need
// amax > fmax * 2^126 > FLT_MAX for every FP8 format).
EXMY_HD float te_current_scale(float amax, float fmax, bool pow2, float epsilon) {
  if (amax < epsilon) amax = epsilon;
  if (!is_finite32(amax) || amax == 0.0f) return 1.0f;
  float s = rn32_div(fmax, amax);
  if (!is_finite32(s)) s = float_of(0x7F7FFFFFu);  // FLT_MAX
  if (pow2) s = float_of(bits_of(s) & 0xFF800000u);
  return s;
}

// torchao.float8 amax_to_scale (torchao >= 0.8): amax is upcast to fp64, clamped to
// EPS = 1e-12 (an fp64 constant), res = fmax / amax in fp64, then rounded to fp32:
//   s = RN32(RN64(fmax / max(amax, 1e-12))).
// For amax >= 1e-12 (an fp32 value) the double rounding is innocuous, s = RN32(fmax / amax); below,
// s is the constant RN32(RN64(fmax / 1e-12)). A NaN amax gives NaN (torch.clamp keeps NaN).
// Switches: `fp16_clamp` (torchao <= 0.5 for fp16 sources: s = min(s, 65504)); `pow2`
// (round_scales_to_power_of_2: s = 2^floor(log2 s), taken exactly from s's exponent field).
inline constexpr double kTorchaoEps = 1e-12;
EXMY_HD float torchao_scale(float amax, float fmax, bool fp16_clamp, bool pow2 = false) {
  if (is_nan32(amax)) return amax;
  float s;
  if (static_cast<double>(amax) < kTorchaoEps) {
    s = static_cast<float>(static_cast<double>(fmax) / kTorchaoEps);
  } else {
    s = rn32_div(fmax, amax);
  }
  if (fp16_clamp && s > 65504.0f) s = 65504.0f;
  if (pow2 && is_finite32(s) && s > 0.0f) {
    // Clear the mantissa of a normal s; a subnormal s keeps only its leading bit.
    std::uint32_t b = bits_of(s);
    if ((b >> 23) != 0) {
      b &= 0xFF800000u;
    } else {
      b = std::uint32_t{1} << (31 - static_cast<int>(clz64(std::uint64_t{b}) - 32));
    }
    s = float_of(b);
  }
  return s;
}

// Quantize one element with scale factor s (te / torchao): y = RN32(x * s), then the cast with
// overflow satfinite (te: CUDA __NV_SATFINITE; torchao: clamp to [-fmax, fmax] then cast, which
// gives the same codes for every rounding that cannot leave [-fmax, fmax] after clamping).
EXMY_HD Encoded scaled_cast_mul(const FloatFormat& f, float x, float s, RoundMode mode, int sr_bits,
                                std::uint32_t rand) {
  const Rounding r{mode, sr_bits, Overflow::satfinite};
  return cast_fp32(f, rn32_mul(x, s), r, rand);
}

// Dequantization of one code v (decoded exactly to fp32 by the caller's format) with state s.
EXMY_HD float dequant_te(float v, float s) {
  return rn32_mul(v, rn32_div(1.0f, s));
}
EXMY_HD float dequant_torchao(float v, float s) {
  return rn32_div(v, s);
}

}  // namespace exmy::native
