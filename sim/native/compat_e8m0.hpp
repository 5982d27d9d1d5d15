// Other libraries' fp32 -> e8m0fnu conversions, transcribed as rules on the fp32 bit pattern so
// that exmy can reproduce them bit for bit (`exmy cast e8m0fnu --compat torch|ml_dtypes`,
// sim/format/compat.hpp), and the dispatch of every compat cast. exmy's own conversion
// (native::convert) is sections 2-4 of docs/SEMANTICS.md; these differ from it where section 12
// says. Host and device.
#pragma once

#include <cstdint>

#include "sim/native/compat_amd_ocp.hpp"
#include "sim/native/hd.hpp"

namespace exmy::native {

// PyTorch 2.11 `c10::detail::fp8e8m0fnu_from_fp32_value` (c10/util/Float8_e8m0fnu.h; the same
// function serves CPU and CUDA tensors). It reads only the exponent field e and the mantissa
// field m of the fp32 bits, never the sign:
//   e == 255 (inf, NaN)  -> 0xFF;
//   otherwise the guard bit g = m bit 22, the round bit = m bit 21, sticky = m bits 20..0, and
//   the "lsb" = (e > 0): round up (e + 1) when g and (round or sticky or lsb).
// So +-0 -> 0x00; a normal |x| = 1.m * 2^(e - 127) goes to e + 1 when m >= 2^22 (|x| >= 1.5 *
// 2^(e-127)), else e, and e = 254 rounding up gives 0xFF (NaN); an fp32 subnormal goes to 0x01
// when m > 2^22 (|x| > 2^-127) and to 0x00 otherwise (g alone does not round up: lsb = 0).
EXMY_HD constexpr std::uint8_t e8m0_from_fp32_torch(std::uint32_t u) {
  const std::uint32_t e = (u >> 23) & 0xFFu;
  if (e == 0xFFu) return 0xFF;
  const bool g = (u & 0x00400000u) != 0;
  const bool rest = (u & 0x003FFFFFu) != 0;  // round bit or sticky bits
  const bool lsb = e > 0;
  return static_cast<std::uint8_t>(e + ((g && (rest || lsb)) ? 1u : 0u));
}

// ml_dtypes 0.6 `ConvertImpl<float, float8_e8m0fnu, kSaturate = false, kTruncate = false>`
// (ml_dtypes/include/float8.h; what `x.astype(ml_dtypes.float8_e8m0fnu)` runs):
//   inf and NaN of either sign -> 0xFF (e8m0fnu's infinity() and quiet_NaN() are both 0xFF);
//   +-0 -> 0xFF (the target has no zero and kSaturate is false: quiet_NaN);
//   negative nonzero -> 0xFF (unsigned target, kSaturate false);
//   positive: the value is normalised to 1.m * 2^k and rounded to nearest even at the e8m0 grid
//   with a biased exponent base k + 126 (the implicit bit adds the last 1):
//     k >= -126 (fp32 normal): shift 23, the kept bit is the implicit 1 (odd), so the result is
//       e + 1 when m >= 2^22, else e; a result above 0xFE (e = 254 rounded up) is 0xFF;
//     k = -127 (fp32 subnormal with field bit 22 set): shift 24, kept bit 0: 0x01 when the field
//       exceeds 2^22 (|x| > 2^-127), 0x00 at exactly 2^-127;
//     k <= -128: shift 25 drops everything: 0x00.
// Positive inputs give the torch rule's codes; signs and zeros do not (section 12).
EXMY_HD constexpr std::uint8_t e8m0_from_fp32_ml_dtypes(std::uint32_t u) {
  const std::uint32_t a = u & 0x7FFFFFFFu;
  if (a >= 0x7F800000u || a == 0 || (u >> 31) != 0) return 0xFF;
  const std::uint32_t e = a >> 23;
  const std::uint32_t m = a & 0x007FFFFFu;
  if (e == 0) return m > 0x00400000u ? 0x01 : 0x00;
  const std::uint32_t code = e + (m >= 0x00400000u ? 1u : 0u);
  return static_cast<std::uint8_t>(code > 0xFEu ? 0xFFu : code);
}

// The element-wise compat casts (registered by name in sim/format/compat.cpp). amd_*: AMD
// gfx950's OCP conversions (sim/native/compat_amd_ocp.hpp) at scale exponent 0, nearest-even,
// the form every door without the scale and seed options runs (the CLI's `--scale-exp` and
// `--sr-seed` are cli/cmd_cast_amd.cpp's).
enum class CompatCast : std::uint8_t {
  e8m0_torch,
  e8m0_ml_dtypes,
  amd_e4m3,
  amd_e5m2,
  amd_e2m3,
  amd_e3m2,
  amd_e2m1,
};

// The code of fp32 bits u under compat cast c.
EXMY_HD std::uint32_t compat_cast_fp32(CompatCast c, std::uint32_t u) {
  switch (c) {
    case CompatCast::e8m0_torch:
      return e8m0_from_fp32_torch(u);
    case CompatCast::e8m0_ml_dtypes:
      return e8m0_from_fp32_ml_dtypes(u);
    default: {
      const auto t =
          static_cast<AmdOcp>(static_cast<int>(c) - static_cast<int>(CompatCast::amd_e4m3));
      return amd_ocp_encode(t, AmdWide::fp32, u, 0);
    }
  }
}

}  // namespace exmy::native
