// exmy fuzz --backend LIB.so --op cast --format F --round MODE [--cases N] [--seed S] [...]:
// RapidCheck properties of a backend plugin (include/exmy/backend.h) against exmy's reference
// (the host array cast of sim/fast, which the verify campaigns prove equal to the MPFR oracle).
// Inputs come from generators aimed at the boundary classes of F (SEMANTICS 13.5): exact ties
// and midpoints of adjacent F values and their fp32 neighbours, F's values themselves, the
// overflow threshold +- a few fp32 ulps, fp32 subnormals, +-0, inf and NaNs with payloads,
// powers of two, and uniform bit patterns. A failing case is shrunk (fewer elements, simpler
// values) and printed as `x=0x...  expected=0x..  got=0x..`. The backend runs in a child
// process (cli/backend_host.hpp): a crash is a failure with the input that caused it.
// Exit status: 0 every case agrees, 1 a counterexample or a crash, 2 bad arguments or a
// backend that cannot be loaded or does not support the request.
#include <rapidcheck.h>

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "cli/backend_host.hpp"
#include "cli/backend_options.hpp"
#include "cli/cli_util.hpp"
#include "cli/command.hpp"
#include "cli/options.hpp"
#include "sim/common/error.hpp"
#include "sim/fast/array_cast.hpp"
#include "sim/format/float_names.hpp"
#include "sim/io/pending_paths.hpp"
#include "sim/verify/campaign.hpp"

namespace exmy::cli {
namespace {

std::uint32_t bits(float v) {
  std::uint32_t u;
  std::memcpy(&u, &v, 4);
  return u;
}

// fp32 neighbours: the pattern k ulps above (k < 0: below) a nonnegative magnitude, kept within
// [0, inf] so that a step never flips the sign.
std::uint32_t step_ulps(std::uint32_t mag, int k) {
  const std::int64_t v = static_cast<std::int64_t>(mag) + k;
  return static_cast<std::uint32_t>(std::clamp<std::int64_t>(v, 0, 0x7F800000));
}

// 0, +1, -1, +2, -2, ...: offsets that shrink toward the exact point.
int offset_of(int k) {
  return k % 2 ? (k + 1) / 2 : -(k / 2);
}

// The boundary points of a target format, as fp32 magnitudes.
struct Boundaries {
  std::vector<std::uint32_t> values;  // nonnegative finite values of F, ascending
  std::vector<std::uint32_t> ties;    // midpoints of adjacent values exactly representable in fp32
  std::uint32_t max = 0;              // largest finite
  std::uint32_t threshold = 0;        // max + half its quantum: the overflow tie
  std::uint32_t beyond = 0;           // max + its quantum: the first value that always overflows
};

Boundaries boundaries_of(const FloatFormat& f) {
  Boundaries b;
  std::vector<double> vals;
  for (const float v : fast::decode_table(f)) {
    if (std::isfinite(v) && !std::signbit(v)) vals.push_back(v);
  }
  std::sort(vals.begin(), vals.end());
  vals.erase(std::unique(vals.begin(), vals.end()), vals.end());
  for (std::size_t i = 0; i < vals.size(); ++i) {
    b.values.push_back(bits(static_cast<float>(vals[i])));
    if (i + 1 < vals.size()) {
      const double mid = (vals[i] + vals[i + 1]) / 2;  // exact in double (<= 16-bit values)
      if (static_cast<double>(static_cast<float>(mid)) == mid) {
        b.ties.push_back(bits(static_cast<float>(mid)));
      }
    }
  }
  const double mx = vals.back();
  // The quantum of max's binade (SEMANTICS 2 step 1): 2^(exp(max) - M).
  const double quantum = std::ldexp(1.0, std::ilogb(mx) - f.man_bits);
  b.max = bits(static_cast<float>(mx));
  const auto to_f32 = [](double v) {
    return v >= 0x1p128 ? 0x7F800000u : bits(static_cast<float>(v));
  };
  b.threshold = to_f32(mx + quantum / 2);
  b.beyond = to_f32(mx + quantum);
  if (b.ties.empty()) b.ties.push_back(b.threshold);
  return b;
}

// One fp32 input, weighted toward the boundary classes; the sign is chosen last and shrinks to +.
rc::Gen<std::uint32_t> input_gen(const Boundaries& b) {
  using rc::Gen;
  namespace gen = rc::gen;
  const auto near = [](const std::vector<std::uint32_t>& points, int spread) {
    return gen::apply([points](std::size_t i, int k) { return step_ulps(points[i], offset_of(k)); },
                      gen::inRange<std::size_t>(0, points.size()), gen::inRange(0, 2 * spread + 1));
  };
  const std::vector<std::uint32_t> overflow = {b.threshold, b.beyond, b.max};
  const Gen<std::uint32_t> magnitude = gen::weightedOneOf<std::uint32_t>({
      {30, near(b.ties, 2)},    // exact ties (offset 0) and their neighbours
      {15, near(b.values, 2)},  // representable values and their neighbours
      {15, near(overflow, 3)},  // the overflow threshold +- ulps
      {8, gen::map(gen::inRange<std::uint32_t>(0, 0x00800000u),  // fp32 zero and subnormals
                   [](std::uint32_t m) { return m; })},
      {8, gen::element<std::uint32_t>(0u, 0x7F800000u, 0x7FC00000u, 0x7F800001u, 0x7FFFFFFFu,
                                      0x00000001u, 0x007FFFFFu, 0x00800000u, 0x7F7FFFFFu)},
      {6, gen::map(gen::inRange<std::uint32_t>(1, 0x00800000u),  // NaN payloads
                   [](std::uint32_t m) { return 0x7F800000u | m; })},
      {8, gen::map(gen::inRange(-149, 128),  // powers of two
                   [](int e) { return bits(std::ldexp(1.0f, e)); })},
      {10, gen::map(gen::arbitrary<std::uint32_t>(),  // anything
                    [](std::uint32_t u) { return u & 0x7FFFFFFFu; })},
  });
  return gen::apply([](std::uint32_t mag, bool neg) { return mag | (neg ? 0x80000000u : 0u); },
                    magnitude, gen::arbitrary<bool>());
}

// What the last failing case was; RapidCheck's shrinking runs the property on ever simpler
// failing cases and stops at a minimal one, so the last failure recorded is the minimal one.
struct Failure {
  bool any = false;
  std::vector<std::uint32_t> xs;
  std::uint64_t seed = 0;
  BackendCall call;
  std::size_t index = 0;  // the first disagreeing element
  std::uint32_t expected = 0, got = 0;
};

class QuietListener : public rc::detail::TestListener {
 public:
  void onTestCaseFinished(const rc::detail::CaseDescription&) override {}
  void onShrinkTried(const rc::detail::CaseDescription&, bool accepted) override {
    shrinks += accepted ? 1 : 0;
  }
  void onTestFinished(const rc::detail::TestMetadata&, const rc::detail::TestResult&) override {}
  int shrinks = 0;
};

extern "C" void fuzz_on_sigint(int) {
  verify::request_stop();
  io::restore_sigint_cleanup();
}

bool stop_flag() {
  return verify::stop_requested();
}

std::string hex(std::uint64_t v, int digits) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%0*" PRIx64, digits, v);
  return buf;
}

// The lines under FAIL: the minimal counterexample, in codes and in values (a disagreement) or
// with what the backend did (a crash, a write outside its codes, a nonzero return).
std::string counterexample_text(const Failure& last, const FloatFormat& f, int digits,
                                bool stochastic) {
  std::string out;
  char buf[512];
  std::string context;
  if (last.xs.size() > 1) {
    context += "  index=" + std::to_string(last.index) + " of n=" + std::to_string(last.xs.size());
  }
  if (stochastic) context += "  seed=" + hex(last.seed, 1);
  if (last.call.status == BackendCall::Status::ok) {
    std::snprintf(buf, sizeof buf, "x=%s  expected=%s  got=%s%s\n",
                  hex(last.xs[last.index], 8).c_str(), hex(last.expected, digits).c_str(),
                  hex(last.got, digits).c_str(), context.c_str());
    out += buf;
    // The same in values: the input, exmy's code (the reference) and the backend's.
    const auto value = [&](std::uint32_t c) {
      char v[64];
      std::snprintf(v, sizeof v, "%.9g %s", static_cast<double>(fast::decode_table(f)[c]),
                    class_name(f.classify(c)));
      return std::string(v);
    };
    float xv;
    std::memcpy(&xv, &last.xs[last.index], 4);
    std::snprintf(buf, sizeof buf, "  x = %.9g (%s); exmy %s = %s; backend %s = %s\n",
                  static_cast<double>(xv), class_name(formats::fp32.classify(last.xs[last.index])),
                  hex(last.expected, digits).c_str(), value(last.expected).c_str(),
                  hex(last.got, digits).c_str(), value(last.got).c_str());
    return out + buf;
  }
  std::string inputs;
  for (std::size_t i = 0; i < last.xs.size() && i < 8; ++i) {
    inputs += (i ? " " : "") + hex(last.xs[i], 8);
  }
  if (last.xs.size() > 8) inputs += " ... (" + std::to_string(last.xs.size()) + " elements)";
  const std::string seed_text = stochastic ? "  seed=" + hex(last.seed, 1) : "";
  if (last.call.status == BackendCall::Status::input_written ||
      last.call.status == BackendCall::Status::out_of_bounds) {
    return "x=" + inputs + "  " + last.call.crash + seed_text + "\n";
  }
  if (last.call.status == BackendCall::Status::crashed) {
    return "x=" + inputs + "  crashed: " + last.call.crash + seed_text + "\n";
  }
  return "x=" + inputs + "  returned " + std::to_string(last.call.rc) +
         " (the same request succeeded on x=1.0)\n";
}

// What `exmy fuzz` was asked for. The initial values are the defaults --help prints.
struct FuzzArgs {
  BackendRequest request;
  std::uint64_t cases = 10000, seed = 0;
  bool json = false, quiet = false;
};

Options fuzz_options(FuzzArgs& a) {
  const FuzzArgs d;
  Options opts("exmy fuzz --backend LIB.so --op cast --format F --round MODE[+POLICY] [OPTIONS]",
               "RapidCheck properties of a backend plugin (include/exmy/backend.h) against exmy's "
               "reference, on inputs aimed at the boundary classes of F (ties, the overflow "
               "threshold, subnormals, NaN payloads); a failing case is shrunk to a minimal one. "
               "Exit 0 every case agrees, 1 a counterexample or a crash, 2 bad arguments or a "
               "backend that cannot be loaded or does not support the request, 130 interrupted.",
               "exmy fuzz --backend ./libmine.so --op cast --format e4m3fn --round sr:8");
  add_backend_options(opts, a.request);
  opts.value({"--cases"}, "N", "test cases (1 to 100000000)", std::to_string(d.cases),
             [&](const std::string& v) {
               a.cases = parse_uint(v, "--cases", 100000000);
               if (a.cases == 0) throw InputError("--cases '0': expected 1 to 100000000");
             })
      .value({"--seed"}, "S", "RapidCheck's seed (the same seed, the same cases)",
             std::to_string(d.seed),
             [&](const std::string& v) { a.seed = parse_uint(v, "--seed", ~std::uint64_t{0}); })
      .flag({"--json"}, "print one JSON object (verdict, request, counterexample) instead of text",
            [&] { a.json = true; })
      .flag({"--quiet"}, "print only the verdict line (PASS:, FAIL: or INTERRUPTED:)",
            [&] { a.quiet = true; });
  return opts;
}

int run_fuzz(const Args& args) {
  FuzzArgs fa;
  if (!fuzz_options(fa).parse(args)) return 0;
  const BackendRequest& req = fa.request;
  const std::string &library = req.library, &op = req.op, &format_name = req.format_name,
                    &round_text = req.round_text, &overflow_text = req.overflow_text;
  const int timeout = req.timeout;
  const bool device_entry = req.device_entry;
  const std::uint64_t cases = fa.cases, seed = fa.seed;
  if (op != "cast") {
    throw InputError("--op '" + op + "': expected cast (ABI 1 fuzzes exmy_backend_cast_f32)");
  }
  const FloatFormat f = parse_backend_format(format_name);
  Rounding r = parse_backend_rounding(round_text);
  if (!overflow_text.empty()) r.overflow = parse_overflow(overflow_text);
  const std::string rounding = backend_rounding_text(r);
  const bool stochastic = r.mode == RoundMode::sr;

  constexpr std::size_t kMaxElements = 128;  // RapidCheck's containers stay below size 100
  // Ctrl-C is exmy's from before the child exists (a SIGINT while the plugin loads or answers
  // the probe ends the run as INTERRUPTED, exit 130, never by the signal).
  verify::clear_stop();
  std::signal(SIGINT, fuzz_on_sigint);
  std::optional<BackendProcess> loaded;
  try {
    loaded.emplace(library, format_name, rounding, kMaxElements, device_entry, timeout, stop_flag);
  } catch (const BackendInterrupted&) {
    io::restore_sigint_cleanup();
    std::fprintf(stderr, "INTERRUPTED while the backend loaded: nothing was checked\n");
    return 130;
  }
  BackendProcess& backend = *loaded;
  const std::string what = "cast fp32 -> " + format_name + " under " + rounding;

  // One element that every backend of the request supports: a nonzero return here means the
  // request itself is unsupported (exit 2), not a wrong answer.
  const float one = 1.0f;
  const BackendCall probe = backend.call(&one, 1, 0, nullptr, stop_flag);
  if (probe.status == BackendCall::Status::returned_nonzero) {
    throw InputError("--backend '" + library + "' does not support " + what + " (returned " +
                     std::to_string(probe.rc) + ")");
  }

  const Boundaries b = boundaries_of(f);
  const rc::Gen<std::uint32_t> element = input_gen(b);
  Failure last;
  std::uint64_t cases_run = 0;
  std::vector<std::uint8_t> expected(kMaxElements * 2), prefill(kMaxElements * 2);
  const auto property = [&] {
    const auto xs = *rc::gen::resize(
        std::min<int>(100, kMaxElements),
        rc::gen::nonEmpty(rc::gen::container<std::vector<std::uint32_t>>(element)));
    const std::uint64_t word_seed = stochastic ? *rc::gen::arbitrary<std::uint64_t>() : 0;
    // After Ctrl-C every case (and every shrink step) is discarded at once.
    if (verify::stop_requested()) RC_DISCARD("interrupted");
    const std::size_t n = std::min(xs.size(), kMaxElements);
    Failure now;
    now.xs.assign(xs.begin(), xs.begin() + static_cast<std::ptrdiff_t>(n));
    now.seed = word_seed;
    // exmy's expected codes from its own copy of the inputs; the backend gets a copy of them and
    // codes prefilled with the complement of the expected ones (an unwritten element fails).
    fast::cast_to_codes(xs.data(), fast::ArrayInput::fp32, n, expected.data(), f, r, word_seed, 0,
                        0);
    for (std::size_t k = 0; k < n * backend.code_bytes(); ++k) {
      prefill[k] = static_cast<std::uint8_t>(~expected[k]);
    }
    std::vector<float> copy(n);
    std::memcpy(copy.data(), xs.data(), n * 4);
    now.call = backend.call(copy.data(), n, word_seed, prefill.data(), stop_flag);
    if (verify::stop_requested()) RC_DISCARD("interrupted");
    ++cases_run;
    if (now.call.status != BackendCall::Status::ok) {
      now.any = true;
      last = now;
      RC_FAIL("backend failed");
    }
    const std::size_t cb = backend.code_bytes();
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint32_t want = cb == 1 ? expected[i] : expected[2 * i] | expected[2 * i + 1] << 8;
      const std::uint8_t* g = backend.codes() + cb * i;
      const std::uint32_t got = cb == 1 ? g[0] : g[0] | g[1] << 8;
      if (want != got) {
        now.any = true;
        now.index = i;
        now.expected = want;
        now.got = got;
        last = now;
        RC_FAIL("mismatch");
      }
    }
  };

  rc::detail::TestParams params;
  params.seed = seed;
  params.maxSuccess = static_cast<int>(cases);
  params.maxSize = 100;
  rc::detail::TestMetadata meta;
  meta.id = meta.description = "exmy fuzz " + what;
  QuietListener listener;
  // The overload with an explicit (empty) reproduce map does not read RC_PARAMS, which would
  // print its configuration and could change the run; --seed and --cases alone decide it.
  const auto result =
      rc::detail::checkProperty(rc::detail::toProperty(property), meta, params, listener, {});
  io::restore_sigint_cleanup();
  // The verdict lines (all that --quiet prints), then the counterexample's details.
  std::string verdict, detail;
  int status = 0;
  const auto line = [](std::string& into, const char* fmt, auto... v) {
    char buf[1024];
    std::snprintf(buf, sizeof buf, fmt, v...);
    into += buf;
  };
  if (verify::stop_requested()) {
    line(verdict,
         "INTERRUPTED: %" PRIu64
         " cases checked before Ctrl-C, %s; backend %s on %s "
         "(--seed %" PRIu64 "); the backend process was ended\n",
         cases_run, last.any ? "a failure was found (below, not shrunk to the end)" : "none failed",
         library.c_str(), what.c_str(), seed);
    status = 130;
  }
  if (!last.any && status != 130) {
    if (!result.template is<rc::detail::SuccessResult>()) {
      std::string why = "RapidCheck gave up";
      rc::detail::GaveUpResult gu;
      rc::detail::Error er;
      if (result.match(gu)) why += ": " + gu.description;
      if (result.match(er)) why += ": " + er.description;
      throw std::runtime_error(why);
    }
    line(verdict,
         "PASS: %" PRIu64 " cases, backend %s agrees with exmy on %s (--seed %" PRIu64 ")\n", cases,
         library.c_str(), what.c_str(), seed);
  }
  const int digits = backend.code_bytes() == 1 ? 2 : 4;
  const char* finding =
      last.call.status == BackendCall::Status::ok              ? "disagrees with exmy"
      : last.call.status == BackendCall::Status::crashed       ? "crashed"
      : last.call.status == BackendCall::Status::input_written ? "wrote to its input"
      : last.call.status == BackendCall::Status::out_of_bounds ? "wrote outside its buffers"
                                                               : "failed";
  if (last.any) {
    status = 1;
    line(verdict,
         "FAIL: backend %s %s on %s (--seed %" PRIu64
         "); minimal counterexample after %d shrinks:\n",
         library.c_str(), finding, what.c_str(), seed, listener.shrinks);
    detail = counterexample_text(last, f, digits, stochastic);
  }
  if (fa.json) {
    std::string o =
        "{\"verdict\": " +
        json_string(status == 0   ? "PASS"
                    : status == 1 ? "FAIL"
                                  : "INTERRUPTED") +
        ", \"backend\": " + json_string(library) + ", \"op\": " + json_string(op) +
        ", \"format\": " + json_string(format_name) + ", \"rounding\": " + json_string(rounding) +
        ", \"entry\": " + json_string(device_entry ? "device" : "host") +
        ", \"seed\": " + std::to_string(seed) + ", \"cases\": " + std::to_string(cases) +
        ", \"cases_run\": " + std::to_string(cases_run) +
        ", \"interrupted\": " + (verify::stop_requested() ? "true" : "false") + ", \"failure\": ";
    if (last.any) {
      std::string xs;
      for (const std::uint32_t x : last.xs) xs += (xs.empty() ? "" : ", ") + json_string(hex(x, 8));
      o += "{\"finding\": " + json_string(finding) +
           ", \"status\": " + json_string(call_status_name(last.call.status)) +
           ", \"shrinks\": " + std::to_string(listener.shrinks) + ", \"inputs\": [" + xs + "]";
      if (last.call.status == BackendCall::Status::ok) {
        o += ", \"index\": " + std::to_string(last.index) +
             ", \"expected\": " + json_string(hex(last.expected, digits)) +
             ", \"got\": " + json_string(hex(last.got, digits));
      }
      if (stochastic) o += ", \"word_seed\": " + json_string(hex(last.seed, 1));
      o += ", \"detail\": " + json_string(detail) + "}";
    } else {
      o += "null";
    }
    std::printf("%s}\n", o.c_str());
  } else {
    std::fputs(verdict.c_str(), stdout);
    if (!fa.quiet) std::fputs(detail.c_str(), stdout);
  }
  return status;
}

}  // namespace

EXMY_COMMAND("fuzz", run_fuzz,
             "property-based fuzzing of a backend plugin against exmy (--backend LIB.so --op "
             "cast)");

}  // namespace exmy::cli
