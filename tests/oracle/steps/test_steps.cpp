// The step oracle's optimizer steps (sim/oracle/steps/steps.hpp) on cases worked out from
// docs/SEMANTICS.md sections 5.3, 6, 9 and 10, with expected values from the host's IEEE fp32
// arithmetic where a chain of operations is spelled out (a third engine, not sim/native).
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>

#include "sim/format/codebook.hpp"
#include "sim/oracle/steps/steps.hpp"

using namespace exmy;
using namespace exmy::oracle::steps;

namespace {
std::uint32_t b32(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
}
float f32(std::uint32_t u) {
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}
Real R(double x) {
  return Real::of_double(x);
}
const oracle::steps::Codebook& signed_map() {
  static const oracle::steps::Codebook c = make_codebook(dynamic_codebook(true).values);
  return c;
}
}  // namespace

TEST_CASE("step oracle AdamW step 1, fp32: SEMANTICS 9.2 spelled out in host fp32",
          "[oracle][steps]") {
  const AdamHyper h{1e-3, 0.9, 0.999, 1e-8, 0.01};
  Tensor p{R(1.5)}, g{R(-0.25)}, m{R(0.0)}, v{R(0.0)};
  torch_adam_step(h, true, F32, 1, p, g, m, v);
  // Host: the scalars in double then float; the element in float with std::fmaf.
  const float decay = static_cast<float>(1.0 - 1e-3 * 0.01);
  const float w1 = static_cast<float>(1.0 - 0.9), w2 = static_cast<float>(1.0 - 0.999);
  const float ns = static_cast<float>(-(1e-3 / (1.0 - std::pow(0.9, 1.0))));
  const float c = static_cast<float>(std::pow(1.0 - std::pow(0.999, 1.0), 0.5));
  const float pp = 1.5f * decay;
  const float mm = std::fmaf(w1, -0.25f - 0.0f, 0.0f);
  const float vv = std::fmaf(w2 * -0.25f, -0.25f, 0.0f * static_cast<float>(0.999));
  const float den = std::sqrt(vv) / c + 1e-8f;
  const float pn = pp + (ns * mm) / den;
  CHECK(m[0].f32_bits() == b32(mm));
  CHECK(v[0].f32_bits() == b32(vv));
  CHECK(p[0].f32_bits() == b32(pn));
}

TEST_CASE("step oracle SGD on bf16: every tensor op rounds to bf16, alphas are bf16 (9.1, 9.3)",
          "[oracle][steps]") {
  const SgdHyper h{0.1, 0.9, 0.0, 0.0, true};
  Tensor p{R(1.0)}, g{R(0.5)}, buf{R(0.0)};
  torch_sgd_step(h, BF16, 1, p, g,
                 buf);  // buf = g; g ← T(fma(buf, T(μ), g)); p ← T(fma(g, T(−lr), p))
  const auto bf = [](float x) { return round(BF16, Real::of_f32_bits(b32(x))).f32_bits(); };
  const float mu = f32(bf(0.9f)), nlr = f32(bf(-0.1f));
  const float gn = f32(bf(std::fmaf(0.5f, mu, 0.5f)));
  CHECK(buf[0].f32_bits() == b32(0.5f));
  CHECK(p[0].f32_bits() == bf(std::fmaf(gn, nlr, 1.0f)));
}

TEST_CASE("step oracle nearest code: midpoints tie to the even index, NaN to 0 (5.3)",
          "[oracle][steps]") {
  const oracle::steps::Codebook& cb = signed_map();
  for (int k = 0; k < 255; ++k) {
    CHECK(nearest_even(cb, cb.mid[k]) == (k % 2 == 0 ? k : k + 1));
    CHECK(nearest_even(cb, cb.c[k]) == k);
  }
  CHECK(nearest_even(cb, Real::nan()) == 0);
  CHECK(nearest_even(cb, R(2.0)) == 255);
  CHECK(nearest_even(cb, R(-2.0)) == 0);
}

TEST_CASE("step oracle sign guard: the all-zero block and -0 (9.4 step 4)", "[oracle][steps]") {
  std::uint8_t nan_state = 0;
  // +0 / absmax 0 = NaN → code 0 (negative) → the guard moves it to 255 (+1.0 · 0 = +0).
  CHECK(requantize_signed(signed_map(), R(0.0), R(0.0), nan_state) == 255);
  CHECK(nan_state == 0);
  // −0 / 1 = −0 → code 127 (+0) → the guard moves it down to 126.
  CHECK(requantize_signed(signed_map(), R(-0.0), R(1.0), nan_state) == 126);
  // A NaN state is reported: the guard then reads an unspecified sign bit.
  requantize_signed(signed_map(), Real::nan(), R(1.0), nan_state);
  CHECK(nan_state == 1);
}

TEST_CASE("step oracle 8-bit Adam: padding lanes, absmax and codes of one partial block",
          "[oracle][steps]") {
  // One element in a block of 256: the padding lanes load code 128 of state 1 (c_128 > 0) and
  // code 0 of state 2 with g = 0; with absmax 0 they contribute 0, so absmax1 = |s1| of the
  // element and its code is 255 (s1 / absmax1 = ±1 → 0 or 255).
  const AdamHyper h{1e-3, 0.9, 0.999, 1e-8, 0.0};
  Bnb8State st = bnb8_init(1, true, 256, false);
  Tensor p{R(1.0)}, g{R(2.0)};
  const oracle::steps::Codebook& c1 = signed_map();
  const oracle::steps::Codebook c2 = make_codebook(dynamic_codebook(false).values);
  bnb_adam8_step(h, 1, F32, c1, c2, p, g, st);
  const float s1 = static_cast<float>(1.0f - 0.9f) * 2.0f;  // (0 ⊗ β1) ⊕ ((1 ⊖ β1) ⊗ g)
  CHECK(st.a1[0].f32_bits() == b32(s1));
  CHECK(st.q1[0] == 255);
  CHECK(st.q2[0] == 255);
}

TEST_CASE("step oracle tree sum: section 10's halving order, not left to right",
          "[oracle][steps]") {
  // a[0] = 2^53, a[1] = 1, a[129] = 1: the h = 128 level adds a[1] + a[129] = 2 first, so the
  // sum is 2^53 + 2 (exact); left to right both 1s would be lost to ties-to-even.
  Tensor t(200, R(0.0));
  t[0] = R(std::ldexp(1.0, 53));
  t[1] = R(1.0);
  t[129] = R(1.0);
  CHECK(tree_sum(t).code(F64) == 0x4340000000000001ull);
  // A second level: 300 ones in two chunks sum to 300.
  CHECK(tree_sum(Tensor(300, R(1.0))).code(F64) == 0x4072C00000000000ull);
  CHECK(tree_sum(Tensor()).is_zero());
}

TEST_CASE("step oracle split formats: truncation, saturation, sr and packing (section 6)",
          "[oracle][steps]") {
  const SplitFmt b8{true, 8, false};
  SplitElem e = split(Real::of_f32_bits(0x3F812345u), b8, 0);
  CHECK(e.hi == 0x3F81);
  CHECK(e.field == 0x23);
  CHECK(join(e, b8).f32_bits() == 0x3F812300u);
  // fp16+8: finite values beyond the extended maximum saturate to it (rtz overflow).
  const SplitFmt h8{false, 8, false};
  e = split(R(1e10), h8, 0);
  CHECK(e.hi == 0x7BFF);
  CHECK(e.field == 0xFF);
  e = split(R(INFINITY), h8, 0);
  CHECK(e.hi == 0x7C00);
  // NaN: the quiet NaN, sign kept, extra bits 0.
  e = split(Real::of_f32_bits(0xFFC01234u), b8, 0);
  CHECK(e.hi == 0xFFC0);
  CHECK(e.field == 0);
  // :sr with k = 4: extra 0x3 + r ≥ 16 rounds up iff r ≥ 13 (the word's top 4 bits).
  const SplitFmt s4{true, 4, true};
  const Real x = Real::of_f32_bits(0x3F803000u);  // bf16 0x3F80, extra 0x3
  CHECK(split(x, s4, 0xC0000000u).hi == 0x3F80);
  e = split(x, s4, 0xD0000000u);
  CHECK(e.hi == 0x3F81);
  CHECK(e.field == 0x13);
  CHECK(join(e, s4).f32_bits() == 0x3F803000u);  // un-rounded
  // The largest finite bf16 never rounds up into inf.
  CHECK(split(Real::of_f32_bits(0x7F7FF000u), s4, 0xF0000000u).hi == 0x7F7F);
  // Packing: w = 9 bits; element 3 occupies stream bits 27..35 and straddles words 0 and 1.
  std::vector<SplitElem> es(4);
  es[3].field = 0x1FF;
  const auto words = pack_fields(es, SplitFmt{true, 8, true});
  REQUIRE(words.size() == 9);
  CHECK(words[0] == 0xF8000000u);
  CHECK(words[1] == 0x0000000Fu);
}

TEST_CASE("step oracle loss scaler: backoff, growth at the interval, no growth into inf (9.7)",
          "[oracle][steps]") {
  DynamicScaler s;
  s.growth_interval = 2;
  update_scale(s, true);
  CHECK(s.scale.f32_bits() == b32(32768.0f));
  update_scale(s, false);
  CHECK(s.tracker == 1);
  update_scale(s, false);
  CHECK(s.scale.f32_bits() == b32(65536.0f));
  CHECK(s.tracker == 0);
  s.scale = R(std::ldexp(1.0, 127));
  s.growth_interval = 1;
  update_scale(s, false);
  CHECK(s.scale.f32_bits() == b32(std::ldexp(1.0f, 127)));
  Tensor g{R(65536.0), R(INFINITY)};
  CHECK(unscale(g, R(65536.0)));
  CHECK(g[0].f32_bits() == b32(1.0f));
}
