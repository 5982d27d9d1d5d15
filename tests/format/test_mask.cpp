// Seed 003 masking (SEMANTICS 2.1): boundaries of max / min_normal, truncation, specials, against a
// reference written with frexp/ldexp on doubles.
#include <catch2/catch.hpp>
#include <cmath>
#include <random>

#include "sim/native/convert.hpp"
#include "sim/native/mask.hpp"

using namespace exmy;

namespace {

// Written from the text of SEMANTICS 2.1, one clause at a time, on doubles: NaN stays NaN;
// inner acts on 0 < |x| < min_normal (min -> min_normal, zero -> 0, keep -> the truncated
// mantissa); outer = clamp maps |x| > max (inf included) to max; everything else keeps M
// mantissa bits (rtz; an fp32 subnormal keeps the top M bits of its field).
double truncate_to_m_bits(double a, int M) {
  if (!std::isfinite(a) || a == 0.0) return a;
  double q;
  if (a >= 0x1p-126) {  // fp32 normal: keep M bits after the leading one
    int e;
    std::frexp(a, &e);  // a = f * 2^e, f in [0.5, 1)
    q = std::ldexp(1.0, e - 1 - M);
  } else {  // fp32 subnormal: clear the low 23 - M bits of the field (quantum 2^(-149 + 23 - M))
    q = std::ldexp(1.0, -149 + 23 - M);
  }
  return std::floor(a / q) * q;
}

float reference_mask(float x, int E, int M, MaskOuter outer, MaskInner inner) {
  if (std::isnan(x)) return x;
  const double maxv = (2.0 - std::ldexp(1.0, -M)) * std::ldexp(1.0, (1 << (E - 1)) - 1);
  const double minn = std::ldexp(1.0, 2 - (1 << (E - 1)));
  const double a = std::fabs(static_cast<double>(x));
  double t;
  if (a > 0.0 && a < minn) {
    t = inner == MaskInner::min ? minn : inner == MaskInner::zero ? 0.0 : truncate_to_m_bits(a, M);
  } else if (outer == MaskOuter::clamp && a > maxv) {
    t = maxv;
  } else {
    t = truncate_to_m_bits(a, M);
  }
  return std::copysign(static_cast<float>(t), x);
}

}  // namespace

TEST_CASE("mask_fp32 at the E4M3 / E5M2 / E8M3 boundaries", "[format][mask]") {
  struct Shape {
    int E, M;
  };
  for (const Shape s :
       {Shape{4, 3}, Shape{5, 2}, Shape{8, 3}, Shape{8, 7}, Shape{2, 1}, Shape{3, 0}}) {
    const float maxv = native::float_of(native::mask_max_bits(s.E, s.M));
    const float minn = native::float_of(native::mask_min_normal_bits(s.E));
    CHECK(maxv == static_cast<float>((2.0 - std::ldexp(1.0, -s.M)) *
                                     std::ldexp(1.0, (1 << (s.E - 1)) - 1)));
    CHECK(minn == static_cast<float>(std::ldexp(1.0, 2 - (1 << (s.E - 1)))));
    const float pts[] = {0.0f,
                         -0.0f,
                         maxv,
                         std::nextafter(maxv, INFINITY),
                         maxv * 1.5f,
                         minn,
                         std::nextafter(minn, 0.0f),
                         minn * 0.5f,
                         0x1p-149f,
                         0x1p-127f,
                         INFINITY,
                         1.0f,
                         1.0f + 0x1p-23f,
                         1.9999999f,
                         3.1415926f,
                         0.1f,
                         std::numeric_limits<float>::max()};
    for (const float p : pts) {
      for (const float x : {p, -p}) {
        for (const MaskOuter o : {MaskOuter::clamp, MaskOuter::keep}) {
          for (const MaskInner in : {MaskInner::min, MaskInner::zero, MaskInner::keep}) {
            const float want = reference_mask(x, s.E, s.M, o, in);
            const float got = native::float_of(mask_fp32(native::bits_of(x), s.E, s.M, o, in));
            INFO("E" << s.E << "M" << s.M << " x=" << x);
            CHECK(native::bits_of(got) == native::bits_of(want));
          }
        }
      }
    }
  }
}

TEST_CASE("mask_fp32: NaN payloads stay NaN, inf clamps or stays", "[format][mask]") {
  for (const std::uint32_t nan : {0x7FC00000u, 0x7F800001u, 0xFFFFFFFFu}) {
    CHECK(mask_fp32(nan, 4, 3, MaskOuter::clamp, MaskInner::min) == nan);
  }
  CHECK(native::float_of(mask_fp32(0x7F800000u, 4, 3, MaskOuter::clamp, MaskInner::min)) == 240.0f);
  CHECK(native::float_of(mask_fp32(0xFF800000u, 4, 3, MaskOuter::clamp, MaskInner::min)) ==
        -240.0f);
  CHECK(mask_fp32(0x7F800000u, 4, 3, MaskOuter::keep, MaskInner::min) == 0x7F800000u);
}

TEST_CASE("mask_fp32 agrees with the reference on random fp32 patterns", "[format][mask]") {
  std::mt19937 rng(3);  // fixed seed 3
  std::uniform_int_distribution<std::uint32_t> any;
  for (int i = 0; i < 200000; ++i) {
    const std::uint32_t b = any(rng);
    const int E = 2 + static_cast<int>(any(rng) % 7);
    const int M = static_cast<int>(any(rng) % 24);
    const auto o = (i & 1) ? MaskOuter::keep : MaskOuter::clamp;
    const auto in = static_cast<MaskInner>((i >> 1) % 3);
    const float want = reference_mask(native::float_of(b), E, M, o, in);
    const std::uint32_t got = mask_fp32(b, E, M, o, in);
    if (std::isnan(want)) {
      REQUIRE(got == b);
    } else {
      INFO("bits 0x" << std::hex << b << std::dec << " E" << E << " M" << M);
      REQUIRE(got == native::bits_of(want));
    }
  }
}

TEST_CASE("mask_bf16 is mask_fp32 on the top half", "[format][mask]") {
  for (std::uint32_t h = 0; h < 65536; ++h) {
    for (const int M : {0, 3, 7}) {
      const std::uint16_t got =
          mask_bf16(static_cast<std::uint16_t>(h), 5, M, MaskOuter::clamp, MaskInner::zero);
      const std::uint32_t full = mask_fp32(h << 16, 5, M, MaskOuter::clamp, MaskInner::zero);
      REQUIRE((full & 0xFFFFu) == 0);
      REQUIRE(got == (full >> 16));
    }
  }
}

// Regression (exmy issue 9): mask_fp32 truncated first, so an fp32 subnormal whose top M field
// bits are zero became 0 and escaped inner = min: `exmy cast e5m2 --round mask 0x1p-140` gave 0
// while 0x1p-127 gave 2^-14. SEMANTICS 2.1 maps every 0 < |x| < min_normal to min_normal.
TEST_CASE("mask inner=min: fp32 subnormals that truncate to 0 still go to min_normal",
          "[format][mask][regression]") {
  for (const float x : {0x1p-140f, 0x1p-127f, 0x1p-149f, -0x1p-140f}) {
    INFO(x);
    CHECK(native::float_of(mask_fp32(native::bits_of(x), 5, 2, MaskOuter::clamp, MaskInner::min)) ==
          std::copysign(0x1p-14f, x));
    CHECK(native::float_of(mask_fp32(native::bits_of(x), 5, 2, MaskOuter::clamp,
                                     MaskInner::zero)) == std::copysign(0.0f, x));
    CHECK(std::signbit(native::float_of(mask_fp32(native::bits_of(x), 5, 2, MaskOuter::clamp,
                                                  MaskInner::zero))) == std::signbit(x));
  }
}
