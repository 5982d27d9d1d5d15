// The quantization oracle (sim/oracle/steps/quant.hpp) on values worked out by hand from
// docs/SEMANTICS.md 5.1, 5.3, 7.1, 7.3, 7.6, 7.11 and 8.3 (and, for fp32 arithmetic, against the
// host's correctly rounded IEEE operations, a third engine).
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>

#include "sim/format/codebook.hpp"
#include "sim/oracle/steps/quant.hpp"

using namespace exmy;
using namespace exmy::oracle::steps;
namespace oq = exmy::oracle::steps::quant;

namespace {
Real R(double x) {
  return Real::of_double(x);
}
Rounding mode(RoundMode m, int bits = 0) {
  return Rounding{m, bits, Overflow::none};
}
std::uint32_t b32(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
}
}  // namespace

TEST_CASE("quant oracle: 5.1 rounding to int8 in every mode", "[oracle][quant]") {
  CHECK(oq::round_int8(R(2.5), mode(RoundMode::rne), 0) == 2);
  CHECK(oq::round_int8(R(3.5), mode(RoundMode::rne), 0) == 4);
  CHECK(oq::round_int8(R(-2.5), mode(RoundMode::rne), 0) == -2);
  CHECK(oq::round_int8(R(2.5), mode(RoundMode::rna), 0) == 3);
  CHECK(oq::round_int8(R(-2.5), mode(RoundMode::rna), 0) == -3);
  CHECK(oq::round_int8(R(-2.75), mode(RoundMode::rtz), 0) == -2);
  CHECK(oq::round_int8(R(-2.25), mode(RoundMode::rup), 0) == -2);
  CHECK(oq::round_int8(R(2.25), mode(RoundMode::rup), 0) == 3);
  CHECK(oq::round_int8(R(-2.25), mode(RoundMode::rdn), 0) == -3);
  CHECK(oq::round_int8(R(2.25), mode(RoundMode::rto), 0) == 3);  // T = 2, last bit set
  CHECK(oq::round_int8(R(3.25), mode(RoundMode::rto), 0) == 3);
  CHECK(oq::round_int8(R(2.0), mode(RoundMode::rto), 0) == 2);  // exact: unchanged
  // Saturation at ±127 under every mode: 127.5 rounds to 128 (even), then saturates.
  CHECK(oq::round_int8(R(127.5), mode(RoundMode::rne), 0) == 127);
  CHECK(oq::round_int8(R(-300.0), mode(RoundMode::rtz), 0) == -127);
  CHECK(oq::round_int8(R(1e30), mode(RoundMode::rne), 0) == 127);
  CHECK(oq::round_int8(R(-1.0), mode(RoundMode::rne), 0) == -1);
  Real inf;
  mpfr_set_inf(inf.raw(), -1);
  CHECK(oq::round_int8(inf, mode(RoundMode::rne), 0) == -127);
  CHECK(oq::round_int8(Real::nan(), mode(RoundMode::rne), 0) == 0);
  CHECK(oq::round_int8(R(-0.0), mode(RoundMode::rne), 0) == 0);
  // sr:8: f = 0.5 truncates to 128/256; up iff 128 + w ≥ 256.
  CHECK(oq::round_int8(R(4.5), mode(RoundMode::sr, 8), 127) == 4);
  CHECK(oq::round_int8(R(4.5), mode(RoundMode::sr, 8), 128) == 5);
  CHECK(oq::round_int8(R(-4.5), mode(RoundMode::sr, 8), 128) == -5);
  // An exact integer never moves, whatever the word.
  CHECK(oq::round_int8(R(4.0), mode(RoundMode::sr, 8), 255) == 4);
}

TEST_CASE("quant oracle: 5.3 exact midpoints under each tie rule", "[oracle][quant]") {
  const oracle::steps::Codebook cb = make_codebook(dynamic_codebook(true).values);
  int ties = 0;
  for (int k = 0; k < 255; ++k) {
    const Real m = cb.mid[k];
    CHECK(oq::nearest(cb, m, oq::Tie::even) == (k % 2 == 0 ? k : k + 1));
    CHECK(oq::nearest(cb, m, oq::Tie::lower) == k);
    ++ties;
  }
  CHECK(ties == 255);
  CHECK(oq::nearest(cb, R(-1.0), oq::Tie::even) == 0);  // below c_0
  CHECK(oq::nearest(cb, R(1.0), oq::Tie::even) == 255);
  CHECK(oq::nearest(cb, Real::nan(), oq::Tie::even) == 0);
  // bnb-cpu compares rounded distances: a value exactly on c_k stays there.
  for (int k = 0; k < 256; k += 17) CHECK(oq::nearest(cb, cb.c[k], oq::Tie::bnb_cpu) == k);
  // 5.4: a code value never moves; between c_128 and c_129 (p = 128) the code moves to 129 iff
  // u ≥ the distance ratio (about ½ at the midpoint).
  CHECK(oq::nearest_stochastic(cb, cb.c[128], R(0.999)) == 128);
  CHECK(oq::nearest_stochastic(cb, cb.mid[128], R(0.0)) == 128);
  CHECK(oq::nearest_stochastic(cb, cb.mid[128], R(0.75)) == 129);
}

TEST_CASE("quant oracle: 7.1 groups and 7.7 transposed codes", "[oracle][quant]") {
  oq::Layout l;
  l.rows = 3;
  l.cols = 5;
  l.groups = oq::Groups::colwise;
  CHECK(oq::group_count(l) == 5);
  CHECK(oq::group_of(l, 7) == 2);
  l.groups = oq::Groups::block;
  l.block = 4;
  CHECK(oq::group_count(l) == 4);  // ⌈15/4⌉, the last block holds 3
  CHECK(oq::group_of(l, 14) == 3);
  // int8, tensor-wise, recip-mul, transposed: code of (r, c) at c·rows + r.
  oq::Spec s;
  s.layout.rows = 2;
  s.layout.cols = 3;
  s.order = oq::Order::recip_mul;
  s.transpose = true;
  const Tensor x = {R(0), R(1), R(2), R(3), R(4), R(-127)};
  const oq::Quantized q = oq::quantize(x, s);
  REQUIRE(q.state.size() == 1);
  CHECK(q.state[0].f32_bits() == b32(127.0f));
  // 127 · (x · RN32(1/127)): 1 → 1, 4 → 4 (host fp32 confirms no tie is crossed).
  CHECK(q.codes[0] == 0);     // (0, 0)
  CHECK(q.codes[2] == 1);     // (0, 1) at 1·2 + 0
  CHECK(q.codes[1] == 3);     // (1, 0) at 0·2 + 1
  CHECK(q.codes[5] == 0x81);  // (1, 2) = −127
  const Tensor back = oq::dequantize(q, s);
  const float d = (127.0f * 3.0f) * (1.0f / 127.0f);
  CHECK(back[3].f32_bits() == b32(d));
}

TEST_CASE("quant oracle: 7.6 MX scale codes", "[oracle][quant]") {
  oq::Spec s;
  s.layout.groups = oq::Groups::mx;
  s.layout.cols = 32;
  s.format = &formats::e4m3fn;
  s.variant = oq::Variant::ocp;
  auto scale_of = [&](double a, oq::ScaleMode m, oq::Variant v = oq::Variant::ocp) {
    s.scale_mode = m;
    s.variant = v;
    Tensor x(32);
    x[5] = R(a);
    return oq::quantize(x, s).scale_codes[0];
  };
  // 448 = 1.75·2^8, emax_elem(e4m3fn) = 8.
  CHECK(scale_of(448, oq::ScaleMode::floor) == 127);
  CHECK(scale_of(448, oq::ScaleMode::ceil) == 128);
  CHECK(scale_of(448, oq::ScaleMode::rceil) == 127);
  CHECK(scale_of(448, oq::ScaleMode::even) == 127);
  // 496 = 1.9375·2^8: three fraction bits round 1.9375 up to 2 (even), exceeds 1.75 (rceil).
  CHECK(scale_of(496, oq::ScaleMode::even) == 128);
  CHECK(scale_of(496, oq::ScaleMode::rceil) == 128);
  CHECK(scale_of(256, oq::ScaleMode::ceil) == 127);  // a power of two: ⌈log2⌉ = ⌊log2⌋
  CHECK(scale_of(0, oq::ScaleMode::floor) == 0);
  CHECK(scale_of(std::ldexp(1.0, -140), oq::ScaleMode::floor) == 0);  // clamped to −127
  // torchao reads the fp32 exponent field: an inf amax gives 128 − 8 + 127 = 247, not 0xFF.
  CHECK(scale_of(INFINITY, oq::ScaleMode::floor) == 0xFF);
  CHECK(scale_of(INFINITY, oq::ScaleMode::floor, oq::Variant::torchao) == 247);
  // Elements: 500 = 1.953125·2^8 under X = 0 saturates to 448 (0x7E); the scale shift is exact.
  s.scale_mode = oq::ScaleMode::floor;
  s.variant = oq::Variant::ocp;
  Tensor x(32);
  x[0] = R(500);
  x[1] = R(-0.0);
  CHECK(oq::quantize(x, s).codes[0] == 0x7E);
  CHECK(oq::quantize(x, s).codes[1] == 0x80);
}

TEST_CASE("quant oracle: 7.11 NVFP4 all-zero block and 8.3 sum orders", "[oracle][quant]") {
  oq::Spec s;
  s.layout.groups = oq::Groups::nvfp4;
  s.layout.rows = 1;
  s.layout.cols = 16;
  s.format = &formats::e2m1fn;
  s.variant = oq::Variant::torchao;
  const oq::Quantized q = oq::quantize(Tensor(16), s);
  CHECK(q.scale_codes[0] == 0x08);  // clamp(0, 2^−6, 448) = 2^−6, e4m3fn 0x08
  CHECK(q.codes[0] == 0);
  // p = {1, 2^−24 ×4}: sequentially each 2^−24 is absorbed (a tie to even); pairwise adds
  // 2^−24 + 2^−24 = 2^−23 first, which survives.
  const Tensor a = {R(1), R(std::ldexp(1.0, -24)), R(std::ldexp(1.0, -24)), R(std::ldexp(1.0, -24)),
                    R(std::ldexp(1.0, -24))};
  const Tensor b = {R(1), R(1), R(1), R(1), R(1)};
  CHECK(oq::matmul_fp32(a, b, 1, 1, 5, oq::Accum::sequential)[0].f32_bits() == b32(1.0f));
  CHECK(oq::matmul_fp32(a, b, 1, 1, 5, oq::Accum::pairwise)[0].f32_bits() ==
        b32(1.0f + std::ldexp(1.0f, -23)));
  // 8.1: exact int32 products.
  const std::vector<std::int8_t> ia = {127, -127, 3}, ib = {127, 127, -2};
  CHECK(oq::matmul_int8(ia, ib, 1, 1, 3)[0] == 127 * 127 - 127 * 127 - 6);
}
