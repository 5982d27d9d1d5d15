// Blackwell cvt.rs.satfinite (sim/native/cvt_rs.hpp) against a second formulation of the same
// rounding: Dao-AILab/quack's (quack/rounding.py, commit c8ec317, its f16/f8 emulation comment):
//   y = RZ_f32(x + r * sign(x) * 2^(max(e_x, emin) - (M + K))),  out = satfinite(RZ_target(y)),
// with e_x the exponent of x, emin the target's smallest normal exponent, M its mantissa bits and
// K the random bits. The reference below evaluates that in double arithmetic (every sum is exact
// there or cannot cross a target grid point) with its own truncations; it shares nothing with
// exmy's rounding routine. Hopper cannot run cvt.rs: what is verified here is exmy's model
// against quack's model of the PTX ISA text, not against hardware (docs/SEMANTICS.md 12.2).
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>

#include "sim/native/cvt_rs.hpp"

using namespace exmy;
using native::CvtRsTarget;

namespace {

float f32(std::uint32_t u) {
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}

// |v| truncated to p significant bits (v finite, nonzero).
double trunc_bits(double v, int p) {
  int e;
  const double m = std::frexp(std::fabs(v), &e);  // m in [0.5, 1)
  return std::copysign(std::ldexp(std::floor(std::ldexp(m, p)), e - p), v);
}

// quack's model for one element; returns the value of the result (NaN as NaN).
double quack_model(CvtRsTarget t, std::uint32_t u, std::uint32_t r) {
  const FloatFormat f = native::cvt_rs_format(t);
  const int M = f.man_bits, K = native::cvt_rs_bits(t);
  const int emin = f.emin();
  const double maxv = native::to_double(f, f.max_code());
  const float x = f32(u);
  if (std::isnan(x)) return std::nan("");
  if (std::isinf(x)) return std::copysign(maxv, x);
  if (x == 0) return x;
  int ex;
  std::frexp(std::fabs(x), &ex);
  ex -= 1;  // |x| in [2^ex, 2^(ex+1))
  const double sc = std::ldexp(1.0, std::max(ex, emin) - (M + K));
  double y = static_cast<double>(x) + std::copysign(static_cast<double>(r) * sc, x);
  // RZ onto fp32 (y is an fp32-normal magnitude here or exact below it).
  if (std::fabs(y) >= 0x1p-126) y = trunc_bits(y, 24);
  // RZ onto the target grid, then satfinite.
  int ey;
  std::frexp(std::fabs(y), &ey);
  ey -= 1;
  const double q = std::ldexp(1.0, std::max(ey, emin) - M);
  double out = std::copysign(std::floor(std::fabs(y) / q) * q, y);
  if (std::fabs(out) > maxv) out = std::copysign(maxv, y);
  return out;
}

}  // namespace

TEST_CASE("cvt.rs elements equal quack's fma.rz formulation", "[native][cvt-rs]") {
  const std::uint64_t seed = 20261201;
  std::mt19937_64 gen(seed);
  INFO("seed " << seed);
  for (CvtRsTarget t : {CvtRsTarget::f16, CvtRsTarget::bf16, CvtRsTarget::e4m3, CvtRsTarget::e5m2,
                        CvtRsTarget::e2m1}) {
    const FloatFormat f = native::cvt_rs_format(t);
    const int K = native::cvt_rs_bits(t);
    // Inputs: every target value and the fp32 values around it (code +-1, 2, half-way), fp32
    // patterns with exponents around the target's range, specials.
    std::vector<std::uint32_t> in = {0u,          0x80000000u, 0x7F800000u, 0xFF800000u,
                                     0x7FC00000u, 0xFFC00001u, 0x00000001u, 0x7F7FFFFFu};
    const std::uint64_t codes = std::uint64_t{1} << f.total_bits();
    const std::uint64_t step = codes > 4096 ? codes / 4096 : 1;  // 4096 codes of 16-bit targets
    for (std::uint64_t c = 0; c < codes; c += step) {
      const float v = native::to_float(f, c);
      if (std::isnan(v)) continue;
      std::uint32_t b;
      std::memcpy(&b, &v, 4);
      for (std::uint32_t d : {0u, 1u, 2u, 0x1000u, 0x7FFFu, 0xFFFFFFFFu, 0xFFFFFFFEu})
        in.push_back(b + d);
    }
    const int emid = 127 + f.emin();
    for (int i = 0; i < 3000; ++i) {
      const int e = std::clamp(emid + static_cast<int>(gen() % 40) - 20, 1, 254);
      in.push_back((static_cast<std::uint32_t>(gen()) & 0x807FFFFFu) |
                   (static_cast<std::uint32_t>(e) << 23));
    }
    int bad = 0;
    std::uint64_t n = 0;
    for (std::uint32_t u : in) {
      std::vector<std::uint32_t> words;
      if (K == 8) {
        for (std::uint32_t r = 0; r < 256; ++r) words.push_back(r);
      } else {
        words = {0u, (1u << K) - 1u, 1u, 1u << (K - 1)};
        for (int j = 0; j < 12; ++j)
          words.push_back(static_cast<std::uint32_t>(gen()) & ((1u << K) - 1u));
      }
      for (std::uint32_t r : words) {
        ++n;
        const std::uint32_t code = native::cvt_rs_element(t, u, r);
        const double want = quack_model(t, u, r);
        const double got = native::to_double(f, code);
        const bool same =
            std::isnan(want)
                ? (code == (K == 8 ? (t == CvtRsTarget::e2m1 ? 0x7u : 0x7Fu) : 0x7FFFu))
                : (got == want && std::signbit(got) == std::signbit(want));
        if (!same && ++bad <= 5) {
          INFO("target " << static_cast<int>(t) << " x 0x" << std::hex << u << " r 0x" << r
                         << " code 0x" << code << std::dec << " got " << got << " want " << want);
          CHECK(same);
        }
      }
    }
    INFO("target " << static_cast<int>(t) << ": " << n << " conversions");
    CHECK(bad == 0);
    WARN("cvt.rs target " << static_cast<int>(t) << ": " << n << " conversions, " << bad
                          << " differences");
  }
}

TEST_CASE("cvt.rs packing and random-bit slots", "[native][cvt-rs]") {
  const auto bits = [](float x) {
    std::uint32_t u;
    std::memcpy(&u, &x, 4);
    return u;
  };
  // x2: the first source goes to the high half and reads the high rbits.
  const std::uint32_t half_up = bits(1.0f + 0x1p-11f);  // f16: exactly half an ulp above 1
  // D_top = 0x1000 (top 13 discarded bits): carry iff r >= 0x1000.
  CHECK(native::cvt_rs_x2(CvtRsTarget::f16, half_up, half_up, 0x10000000u) == 0x3C013C00u);
  CHECK(native::cvt_rs_x2(CvtRsTarget::f16, half_up, half_up, 0x00001000u) == 0x3C003C01u);
  // f16 reads 13 bits per half: bit 13 (0x2000) of the low half is not one of them.
  CHECK(native::cvt_rs_x2(CvtRsTarget::f16, half_up, half_up, 0x0000E000u) == 0x3C003C00u);
  // x4, sm_100a: d byte i holds the operand x[3 - i] and reads rbits byte i.
  const std::uint32_t e4_half = bits(1.0f + 0x1p-4f);  // e4m3: D_top = 0x80
  const std::uint32_t x[4] = {e4_half, e4_half, e4_half, e4_half};
  CHECK(native::cvt_rs_x4(CvtRsTarget::e4m3, native::CvtRsArch::sm100a, x, 0x00000080u) ==
        0x38383839u);
  CHECK(native::cvt_rs_x4(CvtRsTarget::e4m3, native::CvtRsArch::sm100a, x, 0x80000000u) ==
        0x39383838u);
  // sm_103a: d byte 0 reads rbits byte 1; d byte 1 reads byte 0 bit-reversed (0x01 -> 0x80).
  CHECK(native::cvt_rs_x4(CvtRsTarget::e4m3, native::CvtRsArch::sm103a, x, 0x00008000u) ==
        0x38383839u);
  CHECK(native::cvt_rs_x4(CvtRsTarget::e4m3, native::CvtRsArch::sm103a, x, 0x00000001u) ==
        0x38383938u);
  // Specials: NaN -> 0x7F / 0x7FFF / 0x7 (positive), inf -> +-max.
  CHECK(native::cvt_rs_element(CvtRsTarget::e4m3, 0xFFC00000u, 0) == 0x7Fu);
  CHECK(native::cvt_rs_element(CvtRsTarget::e5m2, 0x7F800000u, 0) == 0x7Bu);
  CHECK(native::cvt_rs_element(CvtRsTarget::e2m1, 0xFF800000u, 0) == 0xFu);
  CHECK(native::cvt_rs_element(CvtRsTarget::bf16, 0x7FC00000u, 0) == 0x7FFFu);
  CHECK(native::cvt_rs_element(CvtRsTarget::f16, 0x47800000u, 0x1FFF) == 0x7BFFu);  // 65536 -> max
}
