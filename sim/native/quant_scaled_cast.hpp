// Scaled casts of fp32 values into a float format (FP8 / ExMy), in the variants users compare
// against (docs/SEMANTICS.md 7.4). Per-element pieces shared by sim/quant/ and gpu/.
//
//   absmax (SwitchBack float8cast): state a = absmax; y = absmax_scale(x, a, fmax, order);
//                                    code = convert(y); x^ = RN32(RN32(a * v) * RN32(1 / fmax))
//   te   (TransformerEngine delayed/current scaling): state s = scale;
//          s = RN32(RN32(fmax / amax) / 2^margin), or the previous scale when amax is 0 or not
//          finite; code = convert(RN32(x * s), satfinite); x^ = RN32(v * RN32(1 / s))
//   torchao (float8 training): state s = scale;
//          s = RN32(fmax / max(amax, RN32(1e-12))) [clamped to <= 65504 for fp16 sources];
//          code = convert(clamp(RN32(x * s), -fmax, fmax)); x^ = RN32(v / s)
#pragma once

#include <cstdint>

#include "sim/native/convert.hpp"
#include "sim/native/float_format.hpp"
#include "sim/native/hd.hpp"
#include "sim/native/quant_fp32.hpp"
#include "sim/native/quant_int8.hpp"
#include "sim/native/rounding.hpp"

namespace exmy::native {

enum class CastVariant : std::uint8_t { absmax, te, torchao };

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

// torchao.float8 amax_to_scale: fmax / clamp(amax, min=EPS) in fp32, EPS = 1e-12 as an fp32
// constant (torch.clamp converts the Python float to the tensor's dtype), then clamped to fp16's
// max when the source tensor is fp16. clamp(NaN) is NaN (torch semantics): a NaN amax gives NaN.
inline constexpr float kTorchaoEps = 1e-12f;
EXMY_HD float torchao_scale(float amax, float fmax, bool fp16_source) {
  float a = amax;
  if (!is_nan32(a) && a < kTorchaoEps) a = kTorchaoEps;
  float s = rn32_div(fmax, a);
  if (fp16_source && !is_nan32(s) && s > 65504.0f) s = 65504.0f;
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
