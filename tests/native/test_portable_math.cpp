// The portable fp32 exp, log and erf (sim/native/portable_math.hpp) against MPFR: errors in ulps
// of the exact value on a strided subset of all fp32 codes plus boundary tables (CI), and on all
// 2^32 codes (hidden case [portable_math_all]); special values bit for bit. MPFR shares no
// arithmetic with the code under test.
#include <mpfr.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "sim/native/convert.hpp"
#include "sim/native/portable_math.hpp"

namespace {

using exmy::native::portable_erff;
using exmy::native::portable_expf;
using exmy::native::portable_logf;

using exmy::native::bits_of;
using exmy::native::float_of;

enum Fn { kExp = 0, kLog = 1, kErf = 2 };
const char* const kNames[3] = {"exp", "log", "erf"};
// The documented bounds (docs/SEMANTICS.md 14.10), in ulps of the exact result.
const double kBound[3] = {1.0, 1.0, 2.0};

float eval(Fn f, float x) {
  return f == kExp ? portable_expf(x) : f == kLog ? portable_logf(x) : portable_erff(x);
}

// |y − f(x)| in ulps of f(x) (the fp32 spacing of f(x)'s binade, 2^-149 below 2^-126), by MPFR at
// 128 bits. y = ±inf counts as exact when f(x) rounds to it (|f(x)| >= 2^128 − 2^103), as 1e30
// otherwise; a NaN, where f(x) is a number, as 1e30. f(x) = 0 exactly (log 1, erf 0): 0 if y is 0,
// else 1e30. Inputs whose f(x) is NaN are the special-value tests' business: 0 here.
double ulp_error(Fn f, float x, float y) {
  mpfr_t m, d;
  mpfr_init2(m, 128);
  mpfr_init2(d, 256);
  mpfr_set_flt(m, x, MPFR_RNDN);
  if (f == kExp) {
    mpfr_exp(m, m, MPFR_RNDN);
  } else if (f == kLog) {
    mpfr_log(m, m, MPFR_RNDN);
  } else {
    mpfr_erf(m, m, MPFR_RNDN);
  }
  double err = 0;
  if (mpfr_nan_p(m)) {
    err = 0;
  } else if (std::isnan(y)) {
    err = 1e30;
  } else if (mpfr_zero_p(m) || mpfr_inf_p(m)) {
    err = (mpfr_zero_p(m) ? y == 0 : std::isinf(y) && (y > 0) == (mpfr_sgn(m) > 0)) ? 0 : 1e30;
  } else if (std::isinf(y)) {
    mpfr_set_ui_2exp(d, (1u << 25) - 1, 103, MPFR_RNDN);  // 2^128 − 2^103: the rounding to inf
    err = (mpfr_cmpabs(m, d) >= 0 && (y > 0) == (mpfr_sgn(m) > 0)) ? 0 : 1e30;
  } else {
    const long e = std::max<long>(mpfr_get_exp(m) - 1, -126);  // the binade 2^e of f(x)
    mpfr_set_flt(d, y, MPFR_RNDN);
    mpfr_sub(d, d, m, MPFR_RNDN);  // exact at 256 bits
    mpfr_mul_2si(d, d, 23 - e, MPFR_RNDN);
    err = std::fabs(mpfr_get_d(d, MPFR_RNDN));
  }
  mpfr_clear(m);
  mpfr_clear(d);
  return err;
}

struct Worst {
  double err = 0;
  std::uint32_t x = 0;
  std::uint64_t n = 0;
};

void take(Worst& w, double err, std::uint32_t x) {
  ++w.n;
  if (err > w.err || (err == w.err && x < w.x)) {
    w.err = err;
    w.x = x;
  }
}

void report(Fn f, const Worst& w, const char* what) {
  std::printf("portable %s: max %.4f ulp at x = %a (0x%08" PRIx32 "), %" PRIu64 " inputs (%s)\n",
              kNames[f], w.err, static_cast<double>(float_of(w.x)), w.x, w.n, what);
}

// TestFloat-style boundaries: the special codes, the ends of the binades that matter to each
// function, and two codes either side of each.
std::vector<std::uint32_t> boundary_codes() {
  std::vector<std::uint32_t> c;
  const auto near = [&](float v) {
    const std::uint32_t u = bits_of(v);
    for (int d = -2; d <= 2; ++d) {
      c.push_back(u + static_cast<std::uint32_t>(d));
      c.push_back((u + static_cast<std::uint32_t>(d)) ^ 0x80000000u);
    }
  };
  for (std::uint32_t u :
       {0x00000000u, 0x00000001u, 0x00000002u, 0x007FFFFFu, 0x00800000u, 0x00800001u, 0x7F7FFFFFu,
        0x7F800000u, 0x7F800001u, 0x7FBFFFFFu, 0x7FC00000u, 0x7FFFFFFFu}) {
    c.push_back(u);
    c.push_back(u | 0x80000000u);
  }
  for (int e = -149; e <= 127; ++e) near(std::ldexp(1.0f, e));  // powers of two (log's k)
  const double ln2 = 0.693147180559945309417232121458176568;
  for (int k = -151; k <= 129; ++k) {
    near(static_cast<float>(k * ln2));          // exp's k steps
    near(static_cast<float>((k + 0.5) * ln2));  // the reduction's switch between k and k + 1
  }
  for (float v :
       {88.72283935546875f, 88.7228317f, 89.0f, -87.3365479f, -103.972084f, -104.0f, 0.70710677f,
        1.41421354f, 0x1p-14f, 1.0f, 1.5f, 2.0f, 3.0f, 3.92f, 3.9192059f, 0.5f, 0.84375f, 1.25f}) {
    near(v);
  }
  return c;
}

Worst sweep(Fn f, std::uint64_t stride, const std::vector<std::uint32_t>& extra) {
  Worst w;
  for (std::uint64_t u = 0; u < (std::uint64_t{1} << 32); u += stride) {
    const auto x = static_cast<std::uint32_t>(u);
    take(w, ulp_error(f, float_of(x), eval(f, float_of(x))), x);
  }
  for (std::uint32_t x : extra) take(w, ulp_error(f, float_of(x), eval(f, float_of(x))), x);
  return w;
}

}  // namespace

TEST_CASE("portable math: special values bit for bit", "[native][portable_math]") {
  const std::uint32_t nan = 0x7FC00000u, inf = 0x7F800000u, ninf = 0xFF800000u;
  for (std::uint32_t n : {0x7FC00000u, 0x7F800001u, 0x7FFFFFFFu, 0xFFC00000u, 0xFF800001u}) {
    INFO("NaN input " << n);
    CHECK(bits_of(portable_expf(float_of(n))) == nan);
    CHECK(bits_of(portable_logf(float_of(n))) == nan);
    CHECK(bits_of(portable_erff(float_of(n))) == nan);
  }
  CHECK(bits_of(portable_expf(float_of(inf))) == inf);
  CHECK(bits_of(portable_expf(float_of(ninf))) == 0u);
  CHECK(bits_of(portable_expf(0.0f)) == bits_of(1.0f));
  CHECK(bits_of(portable_expf(-0.0f)) == bits_of(1.0f));
  // The thresholds: 0x42B17217 (88.72283) is the last code whose exp rounds below 2^128 (ln(2^128
  // − 2^103) = 88.7228391), 0xC2CFF1B4 (−103.972076) the last whose exp rounds up to 2^-149
  // (ln 2^-150 = −103.9720771).
  CHECK(bits_of(portable_expf(float_of(0x42B17218u))) == inf);
  CHECK(bits_of(portable_expf(float_of(0x42B17217u))) == 0x7F7FFF84u);
  CHECK(bits_of(portable_expf(float_of(0xC2CFF1B4u))) == 0x00000001u);
  CHECK(bits_of(portable_expf(float_of(0xC2CFF1B5u))) == 0u);
  CHECK(bits_of(portable_expf(-104.0f)) == 0u);
  CHECK(bits_of(portable_logf(0.0f)) == ninf);
  CHECK(bits_of(portable_logf(-0.0f)) == ninf);
  CHECK(bits_of(portable_logf(float_of(inf))) == inf);
  CHECK(bits_of(portable_logf(float_of(ninf))) == nan);
  CHECK(bits_of(portable_logf(-1.0f)) == nan);
  CHECK(bits_of(portable_logf(-0x1p-149f)) == nan);
  CHECK(bits_of(portable_logf(1.0f)) == 0u);  // +0
  CHECK(bits_of(portable_erff(0.0f)) == 0u);
  CHECK(bits_of(portable_erff(-0.0f)) == 0x80000000u);
  CHECK(bits_of(portable_erff(float_of(inf))) == bits_of(1.0f));
  CHECK(bits_of(portable_erff(float_of(ninf))) == bits_of(-1.0f));
  CHECK(bits_of(portable_erff(3.92f)) == bits_of(1.0f));
  CHECK(bits_of(portable_erff(0x1p-149f)) == 0x00000001u);   // 1.128·2^-149 rounds to 2^-149
  CHECK(bits_of(portable_erff(-0x1p-148f)) == 0x80000002u);  // 2.26·2^-149: 2·2^-149
  // The pinned finite results above are MPFR's correctly rounded ones.
  CHECK(ulp_error(kExp, float_of(0x42B17217u), float_of(0x7F7FFF84u)) < 0.5);
  CHECK(ulp_error(kExp, float_of(0xC2CFF1B4u), float_of(0x00000001u)) < 0.5);
}

TEST_CASE("portable math: erf is odd bit for bit", "[native][portable_math]") {
  std::uint64_t bad = 0;
  for (std::uint64_t u = 0; u < 0x7F800000u; u += 101) {
    const float x = float_of(static_cast<std::uint32_t>(u));
    bad += bits_of(portable_erff(-x)) != (bits_of(portable_erff(x)) ^ 0x80000000u);
  }
  CHECK(bad == 0);
}

TEST_CASE("portable math: errors within the bounds (every 997th code and boundaries, MPFR)",
          "[native][portable_math]") {
  const std::vector<std::uint32_t> extra = boundary_codes();
  for (Fn f : {kExp, kLog, kErf}) {
    const Worst w = sweep(f, 997, extra);
    report(f, w, "every 997th code and boundaries");
    INFO(kNames[f] << " at x = 0x" << std::hex << w.x);
    CHECK(w.err <= kBound[f]);
  }
}

// All 2^32 codes. MPFR on every code would take hours on two cores, so the double-precision host
// libm (exp, log, erf: within 1 ulp of double, 2^-28 of an fp32 ulp) screens each result and
// every code it places above 0.55 ulp is evaluated by MPFR: the maximum below is MPFR's unless
// it is under 0.55 + 2^-28. The libm is an oracle only; it shares no arithmetic with the code.
TEST_CASE("portable math: errors on all 2^32 codes", "[native][.exhaustive][portable_math_all]") {
  for (Fn f : {kExp, kLog, kErf}) {
    const auto t0 = std::chrono::steady_clock::now();
    std::uint64_t mpfr_count = 0, above_half = 0;
    std::vector<Worst> per(256);
#pragma omp parallel for reduction(+ : mpfr_count, above_half) schedule(dynamic, 1)
    for (int hi = 0; hi < 256; ++hi) {
      Worst& w = per[static_cast<std::size_t>(hi)];
      for (std::uint32_t lo = 0; lo < (1u << 24); ++lo) {
        const std::uint32_t xb = (static_cast<std::uint32_t>(hi) << 24) | lo;
        const float x = float_of(xb);
        const float y = eval(f, x);
        const double xd = x;
        const double ref = f == kExp ? std::exp(xd) : f == kLog ? std::log(xd) : std::erf(xd);
        double est;
        if (std::isnan(ref)) {  // log of x < 0, NaN inputs: the canonical NaN or a failure
          est = bits_of(y) == 0x7FC00000u ? 0.0 : 1e30;
        } else if (std::isinf(ref) || ref == 0) {  // |f(x)| > 2^1024 or f(x) = 0: exactly
          est = y == ref ? 0.0 : 1e30;
        } else if (std::isnan(y) || std::isinf(y)) {
          est = 1.0;  // MPFR decides (inf is right where f(x) rounds to it)
        } else {
          int e;
          std::frexp(ref, &e);
          est =
              std::fabs(static_cast<double>(y) - ref) / std::ldexp(1.0, std::max(e - 1, -126) - 23);
        }
        above_half += est > 0.5;
        if (est >= 1e30) {
          take(w, est, xb);
        } else if (est > 0.55) {
          ++mpfr_count;
          take(w, ulp_error(f, x, y), xb);
        } else {
          ++w.n;
        }
      }
    }
    Worst all;
    for (const Worst& w : per) {
      if (w.err > all.err) all = Worst{w.err, w.x, all.n};
      all.n += w.n;
    }
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    report(f, all, "all codes");
    std::printf("  %" PRIu64 " codes evaluated by MPFR, %" PRIu64
                " screened above 0.5 ulp (not correctly rounded), %.1f s\n",
                mpfr_count, above_half, secs);
    INFO(kNames[f] << " at x = 0x" << std::hex << all.x);
    CHECK(all.n == (std::uint64_t{1} << 32));
    CHECK(all.err <= kBound[f]);
  }
}
