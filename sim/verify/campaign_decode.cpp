// Campaign (a): every code of every format with <= 16 bits decodes identically in both engines,
// converts identically to itself, fp32 and fp64, and the formats' derived limits agree.
#include <chrono>
#include <cinttypes>
#include <cstdio>

#include "sim/format/float_names.hpp"
#include "sim/native/convert.hpp"
#include "sim/oracle/mpfr_engine.hpp"
#include "sim/oracle/mpfr_value.hpp"
#include "sim/verify/campaign.hpp"
#include "sim/verify/campaign_detail.hpp"

namespace exmy::verify {
namespace {

// The native engine's view of a code as an exact MPFR value: (-1)^s * sig * 2^(exp - 63).
void native_value(const FloatFormat& f, std::uint64_t code, mpfr_ptr out) {
  const native::Unpacked u = native::unpack(f, code);
  const int sgn = f.is_negative(code) ? -1 : 1;
  switch (u.cls) {
    case ValueClass::nan:
      mpfr_set_nan(out);
      mpfr_setsign(out, out, sgn < 0, MPFR_RNDN);
      return;
    case ValueClass::inf:
      mpfr_set_inf(out, sgn);
      return;
    case ValueClass::zero:
      mpfr_set_zero(out, sgn);
      return;
    default:
      break;
  }
  mpfr_set_uj_2exp(out, u.sig, u.exp - 63, MPFR_RNDN);  // 64-bit precision: exact
  if (sgn < 0) mpfr_neg(out, out, MPFR_RNDN);
}

bool same_value(mpfr_srcptr a, mpfr_srcptr b) {
  if (mpfr_nan_p(a) || mpfr_nan_p(b)) {
    return mpfr_nan_p(a) && mpfr_nan_p(b) && mpfr_signbit(a) == mpfr_signbit(b);
  }
  return mpfr_equal_p(a, b) && mpfr_signbit(a) == mpfr_signbit(b);
}

std::string value_text(mpfr_srcptr v) {
  char buf[96];
  mpfr_snprintf(buf, sizeof buf, "%Ra", v);
  return buf;
}

// The derived limits of one format: oracle's derivation against FloatFormat's helpers.
void check_descriptor(const FloatFormat& f, const std::string& name, detail::Tally& t,
                      std::size_t max) {
  const auto check = [&](const char* what, std::uint64_t nat, std::uint64_t orc) {
    if (!t.add_check(ValueClass::normal, nat == orc)) {
      t.keep({"descriptor", name, name, "", 0, 0, {nat, 0}, {orc, 0}, what}, max);
    }
  };
  check("max finite code", f.max_code(), oracle::max_finite_code(f));
  check("has NaN", f.has_nan(), oracle::has_nan_code(f));
  check("has zero", f.has_zero(), oracle::has_zero(f));
  check("has -0", f.has_neg_zero(), oracle::has_negative_zero(f));
  if (oracle::has_nan_code(f)) {
    check("+NaN code", f.nan_code(false), oracle::canonical_nan(f, false));
    check("-NaN code", f.nan_code(true), oracle::canonical_nan(f, true));
  }
}

}  // namespace

std::vector<FloatFormat> sweep_formats_16bit() {
  std::vector<FloatFormat> out;
  const auto add = [&](const FloatFormat& f) {
    for (const auto& g : out) {
      if (g == f) return;
    }
    out.push_back(f);
  };
  for (const auto& p : float_presets()) {
    if (p.format.total_bits() <= 16) add(p.format);
  }
  for (int E = 1; E <= 11; ++E) {
    for (int M = 0; M <= 15 - E; ++M) {
      std::string base = "e";
      base.append(std::to_string(E)).append("m").append(std::to_string(M));
      for (const char* suffix : {"", "fn", "fnuz", "fnu"}) {
        const std::string kind = suffix;
        if (kind.empty() && E < 2) continue;
        const std::string name = base + kind;
        const auto def = parse_float_format(name);
        if (!def) continue;
        add(*def);
        for (int bias : {0, 3 * def->bias + 2}) {
          std::string with_bias = name;
          with_bias.append("b").append(std::to_string(bias));
          const auto biased = parse_float_format(with_bias);
          if (biased) add(*biased);
        }
      }
    }
  }
  return out;
}

Result run_decode(const Options& o) {
  using namespace detail;
  const auto t0 = std::chrono::steady_clock::now();
  Result res;
  res.name = "decode";
  const auto formats_list = sweep_formats_16bit();
  res.configurations = formats_list.size();
  constexpr std::uint64_t kChunk = 4096;
  // Jobs: (format, chunk of codes); a format's descriptor checks ride on its first chunk.
  struct Job {
    std::size_t format;
    std::uint64_t begin, end;
  };
  std::vector<Job> jobs;
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < formats_list.size(); ++i) {
    const std::uint64_t codes = std::uint64_t{1} << formats_list[i].total_bits();
    for (std::uint64_t b = 0; b < codes; b += kChunk)
      jobs.push_back({i, b, std::min(codes, b + kChunk)});
    total += codes;
  }
  Progress progress("decode", total, o.progress);
  const Rounding rne{};

  run_jobs(jobs.size(), o, res, [&](std::size_t j, Tally& t) {
    const Job& job = jobs[j];
    const FloatFormat& f = formats_list[job.format];
    const std::string name = float_format_name(f);
    if (job.begin == 0) check_descriptor(f, name, t, o.max_reported);
    oracle::MpfrValue orc_v(64), nat_v(64);
    for (std::uint64_t code = job.begin; code < job.end; ++code) {
      const oracle::Decoded d = oracle::decode(f, code, orc_v);
      // Decode: class, sign and exact value.
      native_value(f, code, nat_v);
      const ValueClass nat_cls = f.classify(code);
      const bool ok =
          nat_cls == d.cls && f.is_negative(code) == d.negative && same_value(nat_v, orc_v);
      if (!t.add_check(d.cls, ok)) {
        t.keep({"decode",
                name,
                name,
                "",
                code,
                0,
                {},
                {},
                std::string("native ") + class_name(nat_cls) + " " + value_text(nat_v) +
                    ", oracle " + class_name(d.cls) + " " + value_text(orc_v)},
               o.max_reported);
      }
      // The oracle re-encodes every non-NaN code to itself (its own consistency), and both
      // engines agree on the identity conversion and on conversions to fp64 and fp32.
      const Encoded self = oracle::encode(f, rne, orc_v);
      const bool self_ok = d.cls == ValueClass::nan
                               ? self.code == oracle::canonical_nan(f, d.negative)
                               : (self.code == code && self.flags == 0);
      if (!t.add_check(d.cls, self_ok)) {
        t.keep({"oracle-roundtrip", name, name, rounding_label(rne), code, 0, self, self, ""},
               o.max_reported);
      }
      const struct {
        const FloatFormat* to;
        const char* check;
      } targets[] = {{&f, "identity"}, {&formats::fp64, "to-fp64"}, {&formats::fp32, "to-fp32"}};
      for (const auto& tg : targets) {
        const Encoded expect = oracle::encode(*tg.to, rne, orc_v);
        const Encoded got = native::convert(f, *tg.to, rne, code);
        if (!t.add(d.cls, expect, got)) {
          t.keep({tg.check, name, float_format_name(*tg.to), rounding_label(rne), code, 0, got,
                  expect, ""},
                 o.max_reported);
        }
      }
    }
    progress.add(job.end - job.begin);
  });
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  progress.finish(res);
  return res;
}

}  // namespace exmy::verify
