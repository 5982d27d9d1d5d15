// exmy selfcheck: the format tables (as the oracle derives them) and the CPU verification
// campaigns (native engine and host fast path against the MPFR oracle).
//   exmy selfcheck [--threads N] [--depth full|ci] [--quiet] [--json]
// Exit status: 0 all agree, 1 any mismatch, 130 interrupted, 2 bad arguments.
#include <csignal>
#include <cstdio>
#include <string>

#include "cli/cli_util.hpp"
#include "cli/command.hpp"
#include "cli/options.hpp"
#include "sim/common/error.hpp"
#include "sim/common/number.hpp"
#include "sim/format/float_names.hpp"
#include "sim/io/pending_paths.hpp"
#include "sim/oracle/exact_text.hpp"
#include "sim/oracle/mpfr_engine.hpp"
#include "sim/oracle/mpfr_value.hpp"
#include "sim/verify/campaign.hpp"
#include "sim/verify/summary.hpp"

namespace exmy::cli {
namespace {

extern "C" void selfcheck_on_sigint(int) {
  verify::request_stop();
  io::restore_sigint_cleanup();
}

const char* nan_convention(const FloatFormat& f) {
  if (!oracle::has_nan_code(f)) return "none";
  switch (f.nan) {
    case NanEncoding::ieee:
      return "ieee";
    case NanEncoding::all_ones:
      return "all-ones";
    case NanEncoding::neg_zero:
      return "neg-zero";
    case NanEncoding::none:
      return "none";
  }
  return "?";
}

// "448 (0x1.cp+8)": shortest-ish decimal and the exact hex-float.
std::string value_text(mpfr_srcptr v) {
  char buf[64];
  mpfr_snprintf(buf, sizeof buf, "%.6Rg", v);
  return std::string(buf) + " (" + oracle::hexfloat_text(v) + ")";
}

// The limits of one format as the oracle derives them (value texts as value_text writes them).
// The smallest normal is exponent field 1 with subnormals, else code 0 (e8m0fnu: 2^-127).
struct FormatLimits {
  std::string max, min_normal, min_subnormal;  // min_subnormal "-" when there are none
};

FormatLimits limits_of(const FloatFormat& f) {
  FormatLimits l;
  oracle::MpfrValue v(64);
  oracle::decode(f, oracle::max_finite_code(f), v);
  l.max = value_text(v);
  oracle::decode(f, f.subnormals ? std::uint64_t{1} << f.man_bits : 0, v);
  l.min_normal = value_text(v);
  l.min_subnormal = "-";
  if (f.subnormals && f.man_bits > 0) {
    oracle::decode(f, 1, v);
    l.min_subnormal = value_text(v);
  }
  return l;
}

// One line of the format table.
std::string format_line(const NamedFloatFormat& p) {
  const FloatFormat& f = p.format;
  const FormatLimits l = limits_of(f);
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "%-12s %2d bits  bias %4d  max %-38s  min normal %-26s  "
                "min subnormal %-26s  inf %-3s  NaN %-8s  -0 %s\n",
                p.name, f.total_bits(), f.bias, l.max.c_str(), l.min_normal.c_str(),
                l.min_subnormal.c_str(), f.has_inf ? "yes" : "no", nan_convention(f),
                oracle::has_negative_zero(f) ? "yes" : "no");
  return buf;
}

// The same row as a JSON object (min_subnormal null when the format has none).
std::string format_json(const NamedFloatFormat& p) {
  const FloatFormat& f = p.format;
  const FormatLimits l = limits_of(f);
  return "{\"name\": " + json_string(p.name) + ", \"bits\": " + std::to_string(f.total_bits()) +
         ", \"bias\": " + std::to_string(f.bias) + ", \"max\": " + json_string(l.max) +
         ", \"min_normal\": " + json_string(l.min_normal) + ", \"min_subnormal\": " +
         (l.min_subnormal == "-" ? std::string("null") : json_string(l.min_subnormal)) +
         ", \"inf\": " + (f.has_inf ? "true" : "false") +
         ", \"nan\": " + json_string(nan_convention(f)) +
         ", \"negative_zero\": " + (oracle::has_negative_zero(f) ? "true" : "false") + "}";
}

int run_selfcheck(const Args& args) {
  verify::Options opts;
  bool json = false;
  Options options(
      "exmy selfcheck [--threads N] [--depth full|ci] [--quiet] [--json]",
      "The format tables (limits as the MPFR oracle derives them from docs/SEMANTICS.md "
      "1) and the CPU verification campaigns (native engine and fp32 fast path against "
      "the oracle). Exit 0 all agree, 1 any mismatch, 130 interrupted, 2 bad arguments.",
      "exmy selfcheck --depth ci --quiet");
  options
      .value({"--threads"}, "N", "worker threads (1 to 4096)",
             "OMP_NUM_THREADS if set, else every core",
             [&](const std::string& t) {
               const std::uint64_t n = number::parse_u64(t, "--threads", 4096, false);
               if (n < 1) throw InputError("--threads '" + t + "': expected 1 to 4096");
               opts.threads = static_cast<int>(n);
             })
      .value({"--depth"}, "full|ci", "full: every input of each campaign; ci: the CI subset",
             verify::Options{}.depth == verify::Depth::full ? "full" : "ci",
             [&](const std::string& d) {
               if (d != "full" && d != "ci") {
                 throw InputError("--depth '" + d + "': expected full or ci");
               }
               opts.depth = d == "full" ? verify::Depth::full : verify::Depth::ci;
             })
      .flag({"--quiet"}, "no progress lines on stderr (the tables and summary still printed)",
            [&] { opts.progress = false; })
      .flag({"--json"},
            "print one JSON object {\"formats\": [...], \"verification\": {...}} (the summary "
            "of exmy verify --json) instead of text",
            [&] { json = true; });
  if (!options.parse(args)) return 0;
  if (!json) {
    std::printf("Formats (limits derived by the MPFR oracle from docs/SEMANTICS.md section 1)\n");
    for (const auto& p : float_presets()) std::fputs(format_line(p).c_str(), stdout);
    std::printf("\nCPU verification: native engine and fp32 fast path against the MPFR oracle\n");
    std::fflush(stdout);
  }
  verify::clear_stop();
  std::signal(SIGINT, selfcheck_on_sigint);
  const auto results = verify::run_campaigns("all", opts);
  io::restore_sigint_cleanup();
  if (json) {
    std::string rows;
    for (const auto& p : float_presets()) rows += (rows.empty() ? "" : ", ") + format_json(p);
    std::string summary = verify::summary_json(results);
    while (!summary.empty() && summary.back() == '\n') summary.pop_back();
    std::printf("{\"formats\": [%s], \"verification\": %s}\n", rows.c_str(), summary.c_str());
  } else {
    std::fputs(verify::summary_text(results).c_str(), stdout);
  }
  if (verify::any_interrupted(results)) return 130;
  return verify::total_mismatches(results) == 0 ? 0 : 1;
}

}  // namespace

EXMY_COMMAND("selfcheck", run_selfcheck,
             "format tables + CPU verification of the native engine against the MPFR oracle");

}  // namespace exmy::cli
