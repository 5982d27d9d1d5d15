// NVIDIA Blackwell's stochastic-rounding conversions `cvt.rs.satfinite` (sm_100a / sm_103a; PTX
// ISA: cvt.rs{.relu}.satfinite.{f16x2,bf16x2}.f32 d, a, b, rbits and .{e4m3x4,e5m2x4,e2m1x4}.f32
// d, {a, b, e, f}, rbits), docs/SEMANTICS.md 12.2. Host and device.
//
// The rounding (PTX ISA, as Dao-AILab/quack's quack/rounding.py restates it, commit c8ec317): the
// element's K random bits are added, as an integer, to the top K bits discarded by truncation to
// the target; the carry out rounds away from zero. That is exmy's sr:K of section 3.1 (floor(f
// 2^K) + w >= 2^K; for results below the normal range the bits line up with the subnormal
// quantum, as quack's B200 probe found). K = 13 for f16 (the ISA asks for the top 3 bits of each
// 16-bit half of rbits to be 0; quack found sm_103a ignores them), 16 for bf16, 8 for e4m3, e5m2
// and e2m1. Overflow saturates (.satfinite: |x| above the largest finite, infinities included,
// gives +-max); NaN gives the positive all-ones pattern: f16/bf16 0x7FFF, e4m3 and e5m2 0x7F,
// e2m1 0x7 (+6.0: no NaN). Zeros keep their sign.
// Which rbits each element reads (PTX: the first source goes to the high bits of d):
//   f16x2:  d[31:16] = a with rbits[28:16], d[15:0] = b with rbits[12:0];
//   bf16x2: d[31:16] = a with rbits[31:16], d[15:0] = b with rbits[15:0];
//   f8x4:   d = {a, b, e, f} from bit 31 down; sm_100a: the element in d[8i+7:8i] reads rbits
//           byte i (quack, B200 probe); sm_103a: the elements of d bytes 0, 1, 2, 3 read rbits
//           bytes 1, 0, 3, 2, the odd ones (bytes 1 and 3 of d) bit-reversed (quack, B300);
//   e2m1x4: d[15:0] = {a, b, e, f} from bit 15 down; sm_103a: d nibbles 0, 1, 2, 3 read rbits
//           bytes 2, 0, 3, 1, odd nibbles bit-reversed (quack, B300); sm_100a: unprobed (quack),
//           modelled here as the f8x4 order (an assumption: no hardware result behind it).
// Not modelled: .relu, the f6x4 forms (e2m3x4, e3m2x4), ue8m0x4.
#pragma once

#include <cstdint>

#include "sim/native/convert.hpp"
#include "sim/native/float_format.hpp"
#include "sim/native/hd.hpp"

namespace exmy::native {

enum class CvtRsTarget : std::uint8_t { f16, bf16, e4m3, e5m2, e2m1 };
enum class CvtRsArch : std::uint8_t { sm100a, sm103a };

EXMY_HD constexpr FloatFormat cvt_rs_format(CvtRsTarget t) {
  // (Local constexpr copies: device code may not refer to a host namespace-scope object.)
  constexpr FloatFormat k[5] = {formats::fp16, formats::bf16, formats::e4m3fn, formats::e5m2,
                                formats::e2m1fn};
  return k[static_cast<int>(t)];
}

// K, the random bits one element uses.
EXMY_HD constexpr int cvt_rs_bits(CvtRsTarget t) {
  return t == CvtRsTarget::f16 ? 13 : t == CvtRsTarget::bf16 ? 16 : 8;
}

// One element: fp32 bits u rounded with its K random bits r (low K bits used).
EXMY_HD std::uint32_t cvt_rs_element(CvtRsTarget t, std::uint32_t u, std::uint32_t r) {
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) {  // NaN: the positive all-ones pattern
    return t == CvtRsTarget::f16 || t == CvtRsTarget::bf16 ? 0x7FFFu
           : t == CvtRsTarget::e2m1                        ? 0x7u
                                                           : 0x7Fu;
  }
  const int K = cvt_rs_bits(t);
  const Rounding rr{RoundMode::sr, K, Overflow::satfinite};
  constexpr FloatFormat kFp32 = formats::fp32;
  return static_cast<std::uint32_t>(
      convert(kFp32, cvt_rs_format(t), rr, u, r & ((1u << K) - 1u)).code);
}

EXMY_HD std::uint32_t bit_reverse8(std::uint32_t b) {
  std::uint32_t r = 0;
  for (int i = 0; i < 8; ++i) r |= ((b >> i) & 1u) << (7 - i);
  return r;
}

// cvt.rs.satfinite.f16x2.f32 / .bf16x2.f32 d, a, b, rbits.
EXMY_HD std::uint32_t cvt_rs_x2(CvtRsTarget t, std::uint32_t a, std::uint32_t b,
                                std::uint32_t rbits) {
  const std::uint32_t hi = cvt_rs_element(t, a, rbits >> 16);
  const std::uint32_t lo = cvt_rs_element(t, b, rbits & 0xFFFFu);
  return (hi << 16) | lo;
}

// The random byte the element in slot s (s = 0 for the lowest bits of d) reads.
EXMY_HD std::uint32_t cvt_rs_x4_byte(CvtRsTarget t, CvtRsArch arch, int s, std::uint32_t rbits) {
  int byte = s;
  bool reversed = false;
  if (arch == CvtRsArch::sm103a) {
    constexpr int kF8[4] = {1, 0, 3, 2};
    constexpr int kF4[4] = {2, 0, 3, 1};
    byte = t == CvtRsTarget::e2m1 ? kF4[s] : kF8[s];
    reversed = (s & 1) != 0;
  }
  const std::uint32_t v = (rbits >> (8 * byte)) & 0xFFu;
  return reversed ? bit_reverse8(v) : v;
}

// cvt.rs.satfinite.{e4m3x4,e5m2x4,e2m1x4}.f32 d, {a, b, e, f}, rbits: x[0] = a ... x[3] = f.
EXMY_HD std::uint32_t cvt_rs_x4(CvtRsTarget t, CvtRsArch arch, const std::uint32_t x[4],
                                std::uint32_t rbits) {
  const int w = t == CvtRsTarget::e2m1 ? 4 : 8;
  std::uint32_t d = 0;
  for (int s = 0; s < 4; ++s) {  // slot s holds operand x[3 - s]
    d |= cvt_rs_element(t, x[3 - s], cvt_rs_x4_byte(t, arch, s, rbits)) << (w * s);
  }
  return d;
}

}  // namespace exmy::native
