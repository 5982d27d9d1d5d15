// Property: the native engine equals the MPFR oracle (code and flags) for generated fp32 and fp64
// bit patterns into every narrower preset, in every mode and overflow policy (sr:R with a drawn R
// and word). Generators weight the special classes: +-0, subnormals, +-inf, NaNs with payloads,
// exact ties (and neighbours) of the target format, values near its max and min, and huge
// outliers. The seed is pinned (and printed) by tests/main.cpp; counterexamples are printed.
#include <rapidcheck.h>
#include <rapidcheck/catch.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cinttypes>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "sim/format/float_names.hpp"
#include "sim/native/convert.hpp"
#include "sim/oracle/mpfr_engine.hpp"
#include "sim/oracle/mpfr_value.hpp"
#include "sim/verify/campaign.hpp"
#include "tests/support/rc_classify.hpp"

using namespace exmy;

namespace {

std::uint64_t ones(int n) {
  return n >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << n) - 1;
}

// Assembles a code of `in` from sign, unbiased exponent (clamped to the normal range) and
// mantissa bits.
std::uint64_t assemble(const FloatFormat& in, bool neg, long e, std::uint64_t man) {
  const long top = static_cast<long>(ones(in.exp_bits)) - 1;  // largest finite field (ieee)
  const long field = std::min(std::max(e + in.bias, 1L), top);
  const std::uint64_t s = neg ? std::uint64_t{1} << (in.exp_bits + in.man_bits) : 0;
  return s | (static_cast<std::uint64_t>(field) << in.man_bits) | (man & ones(in.man_bits));
}

rc::Gen<bool> gen_sign() {
  return rc::gen::arbitrary<bool>();
}

rc::Gen<std::uint64_t> gen_mantissa(const FloatFormat& in) {
  const std::uint64_t mask = ones(in.man_bits);
  return rc::gen::map(rc::gen::arbitrary<std::uint64_t>(),
                      [mask](std::uint64_t m) { return m & mask; });
}

// An exact tie of `target` (midpoint of two adjacent values, or of max and the overflow
// boundary), encoded in `in`, moved by -3..3 ulps of `in`.
rc::Gen<std::uint64_t> gen_tie(const FloatFormat& in, const FloatFormat& target) {
  const std::uint64_t max = oracle::max_finite_code(target);
  return rc::gen::apply(
      [in, target, max](std::uint64_t c, int nudge, bool neg) {
        oracle::MpfrValue v(128), w(128);
        c %= max + 1;
        oracle::decode(target, c, v);
        mpfr_abs(v, v, MPFR_RNDN);
        if (c == max) {
          mpfr_set_ui_2exp(w, 1, mpfr_get_exp(v) - 1 - target.man_bits, MPFR_RNDN);
          mpfr_add(w, w, v, MPFR_RNDN);
        } else {
          oracle::decode(target, c + 1, w);
        }
        mpfr_add(v, v, w, MPFR_RNDN);
        mpfr_div_2ui(v, v, 1, MPFR_RNDN);
        std::uint64_t code = oracle::encode(in, Rounding{}, v).code;  // a magnitude
        if (nudge < 0 && code < static_cast<std::uint64_t>(-nudge)) nudge = 0;
        code += static_cast<std::uint64_t>(static_cast<std::int64_t>(nudge));
        code &= ones(in.exp_bits + in.man_bits);
        return code | (neg ? std::uint64_t{1} << (in.exp_bits + in.man_bits) : 0);
      },
      rc::gen::arbitrary<std::uint64_t>(), rc::gen::inRange(-3, 4), gen_sign());
}

// Bit patterns of `in` (fp32 or fp64) weighted toward what matters for `target`.
rc::Gen<std::uint64_t> gen_input(const FloatFormat& in, const FloatFormat& target) {
  const int M = in.man_bits;
  const std::uint64_t sign = std::uint64_t{1} << (in.exp_bits + M);
  const std::uint64_t exp_top = ones(in.exp_bits) << M;
  const std::vector<std::uint64_t> specials = {0,
                                               sign,
                                               exp_top,
                                               sign | exp_top,
                                               exp_top | (std::uint64_t{1} << (M - 1)),
                                               sign | exp_top | (std::uint64_t{1} << (M - 1)),
                                               exp_top | 1,
                                               sign | exp_top | ones(M),
                                               1,
                                               sign | 1,
                                               ones(M),
                                               std::uint64_t{1} << M,
                                               oracle::max_finite_code(in),
                                               sign | oracle::max_finite_code(in)};
  const long t_emin = target.subnormals ? 1L - target.bias : -static_cast<long>(target.bias);
  const long t_emax =
      static_cast<long>(oracle::max_finite_code(target) >> target.man_bits) - target.bias;
  const long lo = t_emin - target.man_bits - 3, hi = t_emax + 3;
  const long in_emax = static_cast<long>(ones(in.exp_bits)) - 1 - in.bias;
  const auto with = [in](long e_lo, long e_hi) {
    return rc::gen::apply(
        [in](bool neg, long e, std::uint64_t m) { return assemble(in, neg, e, m); }, gen_sign(),
        rc::gen::inRange(e_lo, e_hi + 1), gen_mantissa(in));
  };
  return rc::gen::weightedOneOf<std::uint64_t>({
      {2, rc::gen::elementOf(specials)},
      {2, rc::gen::apply(
              [sign, M](bool neg, std::uint64_t m) {  // subnormals of `in`
                return (neg ? sign : 0) | (m & ones(M));
              },
              gen_sign(), rc::gen::arbitrary<std::uint64_t>())},
      {2, rc::gen::apply(
              [sign, exp_top, M](bool neg, std::uint64_t m) {  // NaN payloads
                const std::uint64_t payload = m & ones(M);
                return (neg ? sign : 0) | exp_top | (payload ? payload : 1);
              },
              gen_sign(), rc::gen::arbitrary<std::uint64_t>())},
      {6, gen_tie(in, target)},
      {6, with(lo, hi)},                  // inside the target's range (and just outside)
      {2, with(t_emax - 1, t_emax + 1)},  // near the target's max
      {2, with(t_emin - 2, t_emin)},      // near its smallest normal
      {1, with(t_emax + 4, in_emax)},     // huge outliers
      {1, rc::gen::map(rc::gen::arbitrary<std::uint64_t>(),
                       [in](std::uint64_t b) { return b & ones(in.total_bits()); })},
  });
}

std::string mismatch_text(const char* from, const char* to, const Rounding& r, std::uint64_t bits,
                          std::uint32_t w, const Encoded& n, const Encoded& o) {
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "%s 0x%" PRIx64 " -> %s [%s] w=0x%" PRIx32 ": native 0x%" PRIx64 "/%" PRIu32
                ", oracle 0x%" PRIx64 "/%" PRIu32,
                from, bits, to, verify::rounding_label(r).c_str(), w, n.code, n.flags, o.code,
                o.flags);
  return buf;
}

// Every mode x every overflow policy for one input; sr takes the drawn R and word.
void check_all_roundings(const NamedFloatFormat& from, const NamedFloatFormat& to,
                         std::uint64_t bits, int R, std::uint32_t word) {
  for (const Overflow pol : {Overflow::none, Overflow::satfinite, Overflow::sat}) {
    for (const RoundMode m : {RoundMode::rne, RoundMode::rna, RoundMode::rtz, RoundMode::rup,
                              RoundMode::rdn, RoundMode::rto, RoundMode::sr}) {
      const Rounding r{m, m == RoundMode::sr ? R : 0, pol};
      const std::uint32_t w = m == RoundMode::sr ? word : 0;
      const Encoded o = oracle::encode_code(from.format, bits, to.format, r, w);
      const Encoded n = native::convert(from.format, to.format, r, bits, w);
      if (n.code != o.code || n.flags != o.flags) {
        RC_FAIL(mismatch_text(from.name, to.name, r, bits, w, n, o));
      }
    }
  }
}

// rc::prop with at least `n` successful cases (the seed and other parameters come from
// RC_PARAMS, pinned by tests/main.cpp): 100 cases would barely touch 21 roundings x 14 targets.
template <typename Testable>
void prop_n(const std::string& description, int n, Testable&& testable) {
  SECTION(description) {
    rc::detail::TestParams params = rc::detail::configuration().testParams;
    params.maxSuccess = std::max(params.maxSuccess, n);
    rc::detail::TestMetadata metadata;
    metadata.id = description;
    metadata.description = description;
    const auto result =
        rc::detail::checkTestable(std::forward<Testable>(testable), metadata, params);
    std::ostringstream ss;
    rc::detail::printResultMessage(result, ss);
    INFO(ss.str());
    CHECK(result.template is<rc::detail::SuccessResult>());
  }
}

void agreement_properties(const NamedFloatFormat& from) {
  for (const auto& to : float_presets()) {
    if (to.format.total_bits() >= from.format.total_bits()) continue;
    prop_n(std::string(from.name) + " -> " + to.name + ": native == oracle", 3000, [from, to]() {
      const std::uint64_t bits = *gen_input(from.format, to.format);
      const int R = *rc::gen::inRange(1, 33);
      const std::uint32_t word = *rc::gen::arbitrary<std::uint32_t>();
      const std::uint32_t w = R >= 32 ? word : word & ((1u << R) - 1);
      check_all_roundings(from, to, bits, R, w);
      exmy::testing::CaseLabels labels;
      labels.add_conversion(from.format, to.format, bits);
      labels.emit();
    });
  }
}

}  // namespace

TEST_CASE("fp32 inputs: native engine == MPFR oracle for every narrower preset",
          "[properties][oracle]") {
  agreement_properties({"fp32", formats::fp32});
}

TEST_CASE(
    "fp64 inputs: native engine == MPFR oracle for fp32/tf32/bf16/fp16 and every 8-bit "
    "preset",
    "[properties][oracle]") {
  agreement_properties({"fp64", formats::fp64});
}
