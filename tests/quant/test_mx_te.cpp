// `--scheme mx --variant te` (sim/native/quant_mx_te.hpp, SEMANTICS 7.6) against a reference
// written from TransformerEngine d0067d0's source, not from exmy's code: the E8M0 code is
// TransformerEngine/tests/cpp/test_common.h float_to_e8m0 of amax * (float)(1.0 / fmax) (the
// kernel's Quantized_Limits::max_norm_rcp), the element factor test_common.h exp2f_rcp, the element
// the nearest value of the format (a search over its decoded codes, ties to the even code) with
// cvt.rn.satfinite's saturation and NaN 0x7F. Exhaustive over every bf16 amax for the scale.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "sim/common/error.hpp"
#include "sim/native/quant_mx_te.hpp"
#include "sim/native/quant_mx_torchao.hpp"
#include "sim/quant/quantize.hpp"

using namespace exmy;
using namespace exmy::quant;

namespace {

float f_of(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
std::uint32_t u_of(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// test_common.h float_to_e8m0 (and the kernel's non-Blackwell branch).
std::uint8_t ref_e8m0(float val) {
  if (std::isnan(val)) return 0xFF;
  if (std::isinf(val)) return 0xFE;
  if (val == 0.0f) return 0x00;
  const std::uint32_t u = u_of(val);
  std::uint8_t e = static_cast<std::uint8_t>(u >> 23);
  const std::uint32_t m = u & 0x7FFFFFu;
  if ((m > 0 && e != 0xFE) && !(e == 0 && m <= 0x400000u)) ++e;
  return e;
}
std::uint8_t ref_code(float amax, double fmax) {
  const float rcp = static_cast<float>(1.0 / fmax);
  return ref_e8m0(amax * rcp);
}
// test_common.h exp2f_rcp.
float ref_factor(std::uint8_t e) {
  if (e == 255) return f_of(0x7FFFFFFFu);
  if (e == 254) return f_of(0x00400000u);
  return f_of(static_cast<std::uint32_t>(254 - e) << 23);
}

struct Fp8 {  // OCP FP8 e4m3fn / e5m2
  int e_bits, m_bits, bias;
  bool fn;
  double value(int c) const {
    const int e = (c >> m_bits) & ((1 << e_bits) - 1), m = c & ((1 << m_bits) - 1);
    const double s = (c >> 7) ? -1.0 : 1.0;
    if (!fn && e == (1 << e_bits) - 1) return std::nan("");
    if (fn && e == (1 << e_bits) - 1 && m == (1 << m_bits) - 1) return std::nan("");
    if (e == 0) return s * std::ldexp(m, 1 - bias - m_bits);
    return s * std::ldexp((1 << m_bits) + m, e - bias - m_bits);
  }
  double max() const {
    double mx = 0;
    for (int c = 0; c < 128; ++c)
      if (!std::isnan(value(c))) mx = std::max(mx, value(c));
    return mx;
  }
  // cvt.rn.satfinite: NaN -> 0x7F; else the nearest finite value (ties to even), saturating.
  int cvt(float y) const {
    if (std::isnan(y)) return 0x7F;
    const double a = std::min<double>(std::fabs(y), max());
    int best = 0;
    double bd = std::numeric_limits<double>::infinity();
    for (int c = 0; c < 128; ++c) {
      const double v = value(c);
      if (std::isnan(v)) continue;
      const double d = std::fabs(v - a);
      if (d < bd || (d == bd && (c & 1) == 0)) {
        bd = d;
        best = c;
      }
    }
    return (std::signbit(y) ? 0x80 : 0) | best;
  }
};
const Fp8 kE4{4, 3, 7, true}, kE5{5, 2, 15, false};

Options te_mx(const char* fmt) {
  Options o;
  o.scheme = parse_scheme("mx");
  o.target = parse_target(fmt);
  o.variant = native::CastVariant::te;
  return o;
}

}  // namespace

TEST_CASE("mx te: the E8M0 code equals TE's float_to_e8m0 for every bf16 amax and fp32 edges",
          "[quant][mx][te]") {
  for (const double fmax : {448.0, 57344.0}) {
    const float fm = static_cast<float>(fmax);
    std::size_t n = 0;
    for (std::uint32_t hi = 0; hi < 0x7F80u; ++hi, ++n) {
      const float a = f_of(hi << 16);
      REQUIRE(native::mx_te_scale_code(a, fm) == ref_code(a, fmax));
    }
    CHECK(n == 0x7F80u);
    // fp32 edges: subnormal amax, the 2^-127 boundary of v, the largest values, inf, NaN.
    for (const std::uint32_t u : {0x00000001u, 0x00400000u, 0x007FFFFFu, 0x00800000u, 0x1C600000u,
                                  0x1C600001u, 0x7F7FFFFFu, 0x7F000000u, 0x7F800000u}) {
      INFO(u);
      CHECK(native::mx_te_scale_code(f_of(u), fm) == ref_code(f_of(u), fmax));
    }
    CHECK(native::mx_te_scale_code(std::nanf(""), fm) == 0xFF);
  }
  // The largest v saturates at 0xFE (2^127), an amax of 0 gives code 0.
  CHECK(native::mx_te_scale_code(f_of(0x7F7FFFFFu), 448.0f) == 0xF7);
  CHECK(native::mx_te_scale_code(0.0f, 448.0f) == 0);
}

TEST_CASE("mx te: the factor is exp2f_rcp (code 0 multiplies by 2^127, not torchao's 1.0)",
          "[quant][mx][te]") {
  for (int c = 0; c < 256; ++c) {
    const float f = native::mx_te_factor(static_cast<std::uint8_t>(c));
    const float r = ref_factor(static_cast<std::uint8_t>(c));
    if (c == 255) {
      CHECK(std::isnan(f));
    } else {
      CHECK(u_of(f) == u_of(r));
    }
  }
  CHECK(native::mx_te_factor(0) == std::ldexp(1.0f, 127));
  CHECK(native::mx_torchao_factor(0, native::MxScaleMode::rceil) == 1.0f);
}

TEST_CASE("mx te: elements are cvt.rn.satfinite(RN32(x * factor)) for every bf16 x",
          "[quant][mx][te]") {
  const FloatFormat e4 = parse_target("e4m3fn").fp, e5 = parse_target("e5m2").fp;
  for (const std::uint8_t code : {std::uint8_t{0}, std::uint8_t{120}, std::uint8_t{127},
                                  std::uint8_t{134}, std::uint8_t{254}}) {
    for (std::uint32_t hi = 0; hi < 0x10000u; ++hi) {
      const float x = f_of(hi << 16);
      const float y = x * ref_factor(code);  // host fp32: one RN32 (-ffp-contract=off)
      INFO(code << " " << hi);
      REQUIRE(native::mx_te_element(e4, x, code).code == static_cast<std::uint64_t>(kE4.cvt(y)));
      REQUIRE(native::mx_te_element(e5, x, code).code == static_cast<std::uint64_t>(kE5.cvt(y)));
    }
  }
}

TEST_CASE("mx te: quantize() blocks, NaN skipped in the amax, inf block, tiny block",
          "[quant][mx][te]") {
  std::mt19937 rng(20261202);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const std::size_t rows = 6, cols = 96;
  std::vector<float> x(rows * cols);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = nd(rng) * std::exp2(static_cast<float>(i % 7));
  x[3] = std::nanf("");                                                      // skipped by the amax
  x[cols + 40] = std::numeric_limits<float>::infinity();                     // inf block: code 0xFE
  for (std::size_t k = 64; k < 96; ++k) x[2 * cols + k] = 1e-39f * (k % 5);  // v <= 2^-127
  for (std::size_t k = 0; k < 32; ++k) x[3 * cols + k] = 0.0f;               // zero block
  for (const char* fmt : {"e4m3fn", "e5m2"}) {
    const Options o = te_mx(fmt);
    const Quantized q = quantize(x, {rows, cols}, o);
    const Fp8& F = std::string(fmt) == "e4m3fn" ? kE4 : kE5;
    REQUIRE(q.scale_codes.size() == rows * cols / 32);
    for (std::size_t r = 0; r < rows; ++r) {
      for (std::size_t blk = 0; blk < cols / 32; ++blk) {
        float amax = 0.0f;
        for (std::size_t k = 0; k < 32; ++k)
          amax = std::fmax(amax, std::fabs(x[r * cols + blk * 32 + k]));
        const std::uint8_t code = ref_code(amax, F.max());
        INFO(fmt << " row " << r << " block " << blk);
        CHECK(q.scale_codes[r * (cols / 32) + blk] == code);
        for (std::size_t k = 0; k < 32; ++k) {
          const std::size_t i = r * cols + blk * 32 + k;
          CHECK(q.codes[i] == F.cvt(x[i] * ref_factor(code)));
        }
      }
    }
    CHECK(q.scale_codes[cols / 32 + 1] == 0xFE);
    CHECK(q.codes[3] == 0x7F);  // the NaN element
    CHECK(q.scale_codes[2 * (cols / 32) + 2] == 0);
    CHECK(q.codes[2 * cols + 66] != 0);  // scaled by 2^127: not flushed
  }
}

TEST_CASE("mx te refuses other element formats, --round and ceil/even", "[quant][mx][te]") {
  Options o = te_mx("e2m1fn");
  const std::vector<float> x(32, 1.0f);
  CHECK_THROWS_AS(quantize(x, {1, 32}, o), InputError);
  o = te_mx("e4m3fn");
  o.mode = RoundMode::rtz;
  CHECK_THROWS_AS(quantize(x, {1, 32}, o), InputError);
  o = te_mx("e4m3fn");
  o.scale_mode = native::MxScaleMode::even;
  CHECK_THROWS_AS(quantize(x, {1, 32}, o), InputError);
  o.scale_mode = native::MxScaleMode::rceil;
  CHECK_NOTHROW(quantize(x, {1, 32}, o));
}
