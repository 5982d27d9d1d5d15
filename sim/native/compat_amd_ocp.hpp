// AMD gfx950 (MI355) OCP FP8/FP6/FP4 conversions with a block scale, as AMD's host model defines
// them (`exmy cast FORMAT --compat amd-gfx950`, docs/SEMANTICS.md 12.1). Written from the text of
// AMD's header amd_hip_ocp_host.hpp (ROCm/rocm-systems, projects/clr/hipamd/include/hip/
// amd_detail, commit 20d6c1cc712766af36177f31e2131d3ea2576950: fcbx::from_float, from_float_sr,
// to_float) and of amd_hip_ocp_fp.hpp (commit 0e2eede0f1aa173a16f652dd17afabae965934c6: which
// encoding each `__amd_cvt_*_scale` function passes, and how it packs), on exmy's own rounding
// routine (native::round_pack); none of AMD's code is used. Host and device.
//
// The model, per target t in {e4m3 (OCP E4M3), e5m2, e2m3, e3m2, e2m1}, source s in {fp32, fp16,
// bf16} and scale exponent X (the E8M0 scale code minus 127 as an int8; X = -128 is the NaN
// scale, code 0xFF):
//   encode x (the "Mx" encodings: the scale divides):
//     x NaN or X = -128  -> t's NaN pattern with x's sign: e4m3 S.1111.111, e5m2 S.11111.10,
//                           and for the formats without NaN the all-ones magnitude (+-max: e2m1
//                           S.11.1 = +-6, e2m3 +-7.5, e3m2 +-28), zeros and infinities included;
//     x = +-inf          -> e4m3 S.1111.111 (NaN), e5m2 +-max (S.11110.11), FP6/FP4 +-max;
//     x = +-0            -> +-0;
//     otherwise x / 2^X rounded once (no fp32 intermediate) to t: nearest-even, or with a seed w
//       the stochastic rule of section 3.1 with R = (source mantissa bits) - M random bits, the
//       top R bits of w (w >> (32 - R)): fp32 23 - M, fp16 10 - M, bf16 7 - M; finite overflow
//       gives NaN for e4m3 and +-max for the others (e5m2 never produces its infinity).
//   decode code c to d in {fp32, fp16, bf16} (x 2^X, nearest-even, overflow -> inf):
//     c NaN (e4m3 S.1111.111; e5m2 S.11111.mm, mm != 0) or X = -128 -> d's NaN with c's sign;
//     e5m2 S.11110.11 (+-57344, the largest finite) -> +-inf: the host model recognises an
//       e5m2 infinity by the pattern its saturating encoder writes for one (`inf<E5M2Mx, true>`);
//     e5m2 S.11111.00 (the OCP infinity) -> +-2^16 * 2^X, as a finite value of exponent 16;
//     +-0 -> +-0; otherwise the value times 2^X rounded to d.
//   For d = fp16 and bf16 the host model builds its zero, infinity and NaN results by a value
//   conversion of their bit patterns (`(T)pattern` with T = _Float16 / __bf16): the results are
//   the numbers 0x0000, 0x8000, 0x7C00/0xFC00 (0x7F80/0xFF80), 0x7FFF/0xFFFF rounded to d, e.g.
//   an fp8 NaN decodes to fp16 32768.0 (0x7800) and -0 to +32768.0. Every such path (a NaN or
//   infinity code, the NaN scale, a zero code, an overflow, a value below half d's smallest
//   subnormal) is modelled so; fp32 results are bit patterns (`F32`), as intended.
// Packed forms (amd_hip_ocp_fp.hpp): fp8x2 = lo | hi << 8, fp4x2 = lo | hi << 4, the x2/x32
// stochastic forms take one seed for the whole group (every element uses the same w).
#pragma once

#include <cstdint>

#include "sim/native/convert.hpp"
#include "sim/native/float_format.hpp"
#include "sim/native/hd.hpp"

namespace exmy::native {

enum class AmdOcp : std::uint8_t { e4m3, e5m2, e2m3, e3m2, e2m1 };
enum class AmdWide : std::uint8_t { fp32, fp16, bf16 };

inline constexpr std::int8_t kAmdScaleNan = -128;

// (Local constexpr copies: device code may not refer to a host namespace-scope object.)
EXMY_HD constexpr FloatFormat amd_ocp_format(AmdOcp t) {
  constexpr FloatFormat k[5] = {formats::e4m3fn, formats::e5m2, formats::e2m3fn, formats::e3m2fn,
                                formats::e2m1fn};
  return k[static_cast<int>(t)];
}

EXMY_HD constexpr FloatFormat amd_wide_format(AmdWide w) {
  constexpr FloatFormat k[3] = {formats::fp32, formats::fp16, formats::bf16};
  return k[static_cast<int>(w)];
}

// The code of the source value with fp32 bits u (fp16 and bf16 sources widened exactly; their
// mantissa width only sets R) divided by 2^scale; `sr` selects the stochastic rule with seed w.
EXMY_HD std::uint32_t amd_ocp_encode(AmdOcp t, AmdWide src, std::uint32_t u, std::int8_t scale,
                                     bool sr = false, std::uint32_t seed = 0) {
  const FloatFormat f = amd_ocp_format(t);
  const bool neg = (u >> 31) != 0;
  const std::uint32_t s = neg ? static_cast<std::uint32_t>(f.sign_bit()) : 0u;
  const std::uint32_t a = u & 0x7FFFFFFFu;
  const auto nan_pattern = [&]() -> std::uint32_t {
    if (t == AmdOcp::e4m3) return s | 0x7Fu;
    if (t == AmdOcp::e5m2) return s | 0x7Eu;
    return s | static_cast<std::uint32_t>(f.max_code());  // no NaN: the all-ones magnitude
  };
  if (a > 0x7F800000u || scale == kAmdScaleNan) return nan_pattern();
  if (a == 0x7F800000u) {
    return t == AmdOcp::e4m3 ? (s | 0x7Fu) : (s | static_cast<std::uint32_t>(f.max_code()));
  }
  if (a == 0) return s;
  constexpr FloatFormat kFp32 = formats::fp32;
  Unpacked v = unpack(kFp32, u);
  v.exp -= scale;  // exact: the division by 2^X moves the exponent only
  Rounding r;
  r.overflow = t == AmdOcp::e4m3 ? Overflow::none : Overflow::satfinite;
  std::uint32_t rand = 0;
  if (sr) {
    r.mode = RoundMode::sr;
    r.sr_bits = amd_wide_format(src).man_bits - f.man_bits;
    rand = seed >> (32 - r.sr_bits);
  }
  return static_cast<std::uint32_t>(round_pack(f, r, neg, v.exp, v.sig, false, rand).code);
}

namespace amd_detail {
// The host model's `(T)pattern` for T = _Float16 / __bf16: the integer's value rounded to d.
EXMY_HD std::uint32_t value_of_pattern(const FloatFormat& d, std::uint32_t pattern) {
  if (pattern == 0) return 0;
  const int lz = clz64(pattern);
  const std::uint64_t sig = static_cast<std::uint64_t>(pattern) << lz;
  return static_cast<std::uint32_t>(round_pack(d, Rounding{}, false, 63 - lz, sig, false, 0).code);
}
}  // namespace amd_detail

// The bits (fp32, or fp16/bf16 in the low half) of code c of t times 2^scale in d.
EXMY_HD std::uint32_t amd_ocp_decode(AmdOcp t, AmdWide dst, std::uint32_t c, std::int8_t scale) {
  const FloatFormat f = amd_ocp_format(t);
  const FloatFormat d = amd_wide_format(dst);
  const bool neg = (c & f.sign_bit()) != 0;
  const std::uint32_t mag = c & static_cast<std::uint32_t>(f.magnitude_mask());
  const std::uint32_t dsign = neg ? static_cast<std::uint32_t>(d.sign_bit()) : 0u;
  // The special results: fp32 by bit pattern; fp16/bf16 by the value of the pattern.
  const auto special = [&](std::uint32_t pattern) -> std::uint32_t {
    return dst == AmdWide::fp32 ? pattern : amd_detail::value_of_pattern(d, pattern);
  };
  const std::uint32_t d_nan = dst == AmdWide::fp32
                                  ? (dsign | 0x7FC00000u)
                                  : (dsign | static_cast<std::uint32_t>(d.magnitude_mask()));
  const std::uint32_t d_inf = dsign | static_cast<std::uint32_t>(d.exp_all_ones() << d.man_bits);
  const bool is_nan = (t == AmdOcp::e4m3 && mag == 0x7Fu) || (t == AmdOcp::e5m2 && mag > 0x7Cu);
  if (is_nan || scale == kAmdScaleNan) return special(d_nan);
  if (t == AmdOcp::e5m2 && mag == 0x7Bu) return special(d_inf);
  if (mag == 0) return special(dsign);
  // Finite (e5m2's 0x7C as 2^16): the value times 2^scale, rounded once into d.
  const int M = f.man_bits;
  const int e = static_cast<int>(mag >> M);
  const std::uint32_t m = mag & static_cast<std::uint32_t>(f.man_mask());
  const std::uint64_t t_int = e != 0 ? ((std::uint64_t{1} << M) | m) : m;
  const int q = (e != 0 ? e : 1) - f.bias - M + scale;  // value = t_int * 2^q
  const int lz = clz64(t_int);
  const std::uint64_t sig = t_int << lz;
  const int exp = q + 63 - lz;
  const Encoded r = round_pack(d, Rounding{}, neg, exp, sig, false, 0);
  const std::uint32_t code = static_cast<std::uint32_t>(r.code);
  const std::uint32_t rmag = code & static_cast<std::uint32_t>(d.magnitude_mask());
  if (rmag == (d_inf & static_cast<std::uint32_t>(d.magnitude_mask()))) return special(d_inf);
  // Results below half d's smallest subnormal are the host model's makezero (the pattern's
  // value); a result rounded to zero from at least half of it keeps its sign as bits.
  if (rmag == 0 && exp < d.emin() - d.man_bits - 1) return special(dsign);
  return code;
}

// The packed layouts of amd_hip_ocp_fp.hpp: element 0 in the low bits.
EXMY_HD constexpr std::uint32_t amd_pack_fp8x2(std::uint32_t lo, std::uint32_t hi) {
  return (lo & 0xFFu) | ((hi & 0xFFu) << 8);
}
EXMY_HD constexpr std::uint32_t amd_pack_fp4x2(std::uint32_t lo, std::uint32_t hi) {
  return (lo & 0xFu) | ((hi & 0xFu) << 4);
}

// The elements one seed serves in the stochastic forms: fp8 1 (__amd_cvt_float_to_fp8_sr_scale),
// fp4 2 (__amd_cvt_floatx2_to_fp4x2_sr_scale), fp6 32 (the x32 forms).
EXMY_HD constexpr int amd_sr_group(AmdOcp t) {
  return t == AmdOcp::e4m3 || t == AmdOcp::e5m2 ? 1 : t == AmdOcp::e2m1 ? 2 : 32;
}

}  // namespace exmy::native
