// exmy selfcheck: the format tables (as the oracle derives them) and the CPU verification
// campaigns (native engine and host fast path against the MPFR oracle).
//   exmy selfcheck [--threads N] [--depth full|ci] [--quiet]
// Exit status: 0 all agree, 1 any mismatch, 130 interrupted, 2 bad arguments.
#include <csignal>
#include <cstdio>
#include <string>

#include "cli/command.hpp"
#include "sim/common/error.hpp"
#include "sim/common/number.hpp"
#include "sim/format/float_names.hpp"
#include "sim/oracle/exact_text.hpp"
#include "sim/oracle/mpfr_engine.hpp"
#include "sim/oracle/mpfr_value.hpp"
#include "sim/verify/campaign.hpp"
#include "sim/verify/summary.hpp"

namespace exmy::cli {
namespace {

extern "C" void selfcheck_on_sigint(int) {
  verify::request_stop();
  std::signal(SIGINT, SIG_DFL);
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

// One line of the format table. The smallest normal is exponent field 1 with subnormals, else
// code 0 (e8m0fnu: 2^-127).
std::string format_line(const NamedFloatFormat& p) {
  const FloatFormat& f = p.format;
  oracle::MpfrValue v(64);
  oracle::decode(f, oracle::max_finite_code(f), v);
  const std::string max = value_text(v);
  oracle::decode(f, f.subnormals ? std::uint64_t{1} << f.man_bits : 0, v);
  const std::string min_normal = value_text(v);
  std::string min_sub = "-";
  if (f.subnormals && f.man_bits > 0) {
    oracle::decode(f, 1, v);
    min_sub = value_text(v);
  }
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "%-12s %2d bits  bias %4d  max %-38s  min normal %-26s  "
                "min subnormal %-26s  inf %-3s  NaN %-8s  -0 %s\n",
                p.name, f.total_bits(), f.bias, max.c_str(), min_normal.c_str(), min_sub.c_str(),
                f.has_inf ? "yes" : "no", nan_convention(f),
                oracle::has_negative_zero(f) ? "yes" : "no");
  return buf;
}

int run_selfcheck(const Args& args) {
  verify::Options opts;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    const auto value = [&]() -> const std::string& {
      if (i + 1 >= args.size()) throw InputError("option " + a + " needs a value");
      return args[++i];
    };
    if (a == "--help" || a == "-h") {
      std::printf("usage: exmy selfcheck [--threads N] [--depth full|ci] [--quiet]\n");
      return 0;
    } else if (a == "--threads") {
      const std::string& t = value();
      const std::uint64_t n = number::parse_u64(t, "--threads", 4096, false);
      if (n < 1) throw InputError("--threads '" + t + "': expected 1 to 4096");
      opts.threads = static_cast<int>(n);
    } else if (a == "--depth") {
      const std::string& d = value();
      if (d != "full" && d != "ci") throw InputError("--depth '" + d + "': expected full or ci");
      opts.depth = d == "full" ? verify::Depth::full : verify::Depth::ci;
    } else if (a == "--quiet") {
      opts.progress = false;
    } else {
      throw InputError("unknown argument '" + a + "' (expected --threads, --depth, --quiet)");
    }
  }
  std::printf("Formats (limits derived by the MPFR oracle from docs/SEMANTICS.md section 1)\n");
  for (const auto& p : float_presets()) std::fputs(format_line(p).c_str(), stdout);
  std::printf("\nCPU verification: native engine and fp32 fast path against the MPFR oracle\n");
  std::fflush(stdout);
  verify::clear_stop();
  std::signal(SIGINT, selfcheck_on_sigint);
  const auto results = verify::run_campaigns("all", opts);
  std::signal(SIGINT, SIG_DFL);
  std::fputs(verify::summary_text(results).c_str(), stdout);
  if (verify::any_interrupted(results)) return 130;
  return verify::total_mismatches(results) == 0 ? 0 : 1;
}

}  // namespace

EXMY_COMMAND("selfcheck", run_selfcheck,
             "format tables + CPU verification of the native engine against the MPFR oracle");

}  // namespace exmy::cli
