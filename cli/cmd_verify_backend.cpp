// exmy verify --backend LIB.so --op cast --format F --round MODE[+POLICY] [--depth full|ci]
//              [--shard i/N] [--seed S] [--threads N] [--json] [--quiet]
// (the hidden command "verify-backend", which cli/cmd_verify.cpp forwards to when --backend is
// given): a backend plugin's exmy_backend_cast_f32 against exmy's host array cast (sim/fast).
// full: every fp32 input, in chunks of 2^20 consecutive codes, each one backend call with element
// index = code - chunk start (so sr words, and hence results, do not depend on --shard). ci: the
// designed inputs of sim/verify/backend_inputs.hpp (every tie and its neighbours in every binade,
// binade edges, the overflow edge, specials, NaN payloads; under sr:R each at words 0, max and
// either side of its rounding boundary) and weighted random inputs, counted per input class.
// --shard i/N takes a contiguous slice of the calls (SEMANTICS 13.4). The backend runs in a child
// process on its own copies of the inputs (cli/backend_host.hpp); exmy's expected codes come from
// a pristine copy the backend never sees, and the codes are prefilled with their complement, so
// an element the backend does not write fails. A backend that writes its input or outside its
// buffers fails with a message that says so.
// Output: the summary of `exmy verify` (text or --json, sim/verify/summary.hpp) with one
// campaign "backend cast F MODE"; the JSON carries the campaign's identity for `verify merge`.
// Exit status: 0 all agree, 1 a mismatch or a backend crash or failure, 130 interrupted (SIGINT;
// the child is ended), 2 bad arguments or a backend that cannot be loaded or does not support the
// request.
#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cli/backend_host.hpp"
#include "cli/backend_options.hpp"
#include "cli/cli_util.hpp"
#include "cli/command.hpp"
#include "cli/options.hpp"
#include "sim/common/error.hpp"
#include "sim/common/shard.hpp"
#include "sim/fast/array_cast.hpp"
#include "sim/format/float_names.hpp"
#include "sim/io/build_info.hpp"
#include "sim/io/pending_paths.hpp"
#include "sim/io/sha256.hpp"
#include "sim/native/convert.hpp"
#include "sim/native/philox.hpp"
#include "sim/verify/backend_inputs.hpp"
#include "sim/verify/campaign.hpp"
#include "sim/verify/campaign_detail.hpp"
#include "sim/verify/summary.hpp"

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace exmy::cli {
namespace {

constexpr int kChunkBits = 20;
constexpr std::uint64_t kChunk = std::uint64_t{1} << kChunkBits;
constexpr std::uint64_t kChunks = (std::uint64_t{1} << 32) / kChunk;

extern "C" void verify_backend_on_sigint(int) {
  verify::request_stop();
  io::restore_sigint_cleanup();
}

bool stop_flag() {
  return verify::stop_requested();
}

float as_float(std::uint32_t u) {
  float v;
  std::memcpy(&v, &u, 4);
  return v;
}

// "0x3a800000 (0.0009765625, normal)"
std::string fp32_text(std::uint32_t u) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "0x%08" PRIx32 " (%.9g, %s)", u, static_cast<double>(as_float(u)),
                class_name(formats::fp32.classify(u)));
  return buf;
}

// "0x01 (0.001953125, subnormal)"
std::string code_text(const FloatFormat& f, std::uint64_t code) {
  char buf[96];
  const int digits = f.total_bits() <= 8 ? 2 : 4;
  std::snprintf(buf, sizeof buf, "0x%0*" PRIx64 " (%.9g, %s)", digits, code,
                static_cast<double>(fast::decode_table(f)[code]), class_name(f.classify(code)));
  return buf;
}

// One backend call of the sweep: its inputs (exmy's pristine copy), seed and, for ci, classes.
struct CallInputs {
  std::uint64_t seed = 0;
  std::vector<std::uint32_t> x;
  const verify::DesignedCall* designed = nullptr;  // ci: classes per element
  std::uint64_t base = 0;                          // full: the first input of the chunk
};

// The smallest run [lo, hi) of a crashing call's inputs found by halving that still crashes the
// backend when called alone (each try in a fresh child, the run at element index 0): one input
// unless the crash needs several together.
std::pair<std::size_t, std::size_t> narrow_crash(BackendProcess& backend,
                                                 const std::vector<std::uint32_t>& x,
                                                 std::uint64_t seed) {
  const auto crashes = [&](std::size_t a, std::size_t b) {
    return backend.call(reinterpret_cast<const float*>(x.data() + a), b - a, seed).status ==
           BackendCall::Status::crashed;
  };
  std::size_t lo = 0, hi = x.size();
  while (hi - lo > 1) {
    const std::size_t mid = lo + (hi - lo) / 2;
    if (crashes(lo, mid)) {
      hi = mid;
    } else if (crashes(mid, hi)) {
      lo = mid;
    } else {
      break;
    }
  }
  return {lo, hi};
}

// What `exmy verify --backend` was asked for. The initial values are the defaults --help prints.
struct SweepArgs {
  BackendRequest request;
  verify::Depth depth = verify::Depth::full;
  Shard shard;
  std::uint64_t seed = 0;
  int threads = 0;  // 0: OpenMP's default
  bool json = false, progress = true;
};

Options sweep_options(SweepArgs& a) {
  const SweepArgs d;
  Options opts(
      "exmy verify --backend LIB.so --op cast --format F --round MODE[+POLICY] [OPTIONS]",
      "A backend plugin's casts against exmy's host array cast: full sweeps every fp32 input (in "
      "calls of 2^20 consecutive codes), ci the designed inputs of SEMANTICS 13.5.1 (every tie "
      "and its neighbours, binade and overflow edges, specials, sr words either side of each "
      "boundary) and weighted random ones. The plugin runs in a child process on its own copy of "
      "the inputs. Exit 0 all agree, 1 a mismatch or a backend crash or failure, 2 bad arguments "
      "or an unusable backend, 130 interrupted.",
      "exmy verify --backend ./libmine.so --op cast --format e4m3fn --round rne --depth ci");
  add_backend_options(opts, a.request);
  opts.value({"--depth"}, "full|ci", "full: every fp32 input; ci: the designed inputs",
             d.depth == verify::Depth::full ? "full" : "ci",
             [&](const std::string& v) {
               if (v != "full" && v != "ci") {
                 throw InputError("--depth '" + v + "': expected full or ci");
               }
               a.depth = v == "full" ? verify::Depth::full : verify::Depth::ci;
             })
      .value({"--shard"}, "i/N", "run slice i of N of the calls (SEMANTICS 13.4; verify merge)",
             d.shard.text() + " (the whole run)",
             [&](const std::string& v) { a.shard = parse_shard(v); })
      .value({"--seed"}, "S", "seed of the sr words (call k of ci: S + k) and ci's random inputs",
             std::to_string(d.seed),
             [&](const std::string& v) { a.seed = parse_uint(v, "--seed", ~std::uint64_t{0}); })
      .value({"--threads"}, "N", "threads computing exmy's codes (1 to 4096)",
             "OMP_NUM_THREADS if set, else every core",
             [&](const std::string& v) {
               a.threads = static_cast<int>(parse_uint(v, "--threads", 4096));
               if (a.threads < 1) throw InputError("--threads '0': expected 1 to 4096");
             })
      .flag({"--json"},
            "print the summary as one JSON object (with the identity verify merge reads)",
            [&] { a.json = true; })
      .flag({"--quiet"}, "no progress lines on stderr (the summary still printed)",
            [&] { a.progress = false; });
  return opts;
}

int run_verify_backend(const Args& args) {
  SweepArgs sa;
  if (!sweep_options(sa).parse(args)) return 0;
  const BackendRequest& req = sa.request;
  const std::string &library = req.library, &op = req.op, &format_name = req.format_name,
                    &round_text = req.round_text, &overflow_text = req.overflow_text;
  const int timeout = req.timeout;
  const bool device_entry = req.device_entry;
  const verify::Depth depth = sa.depth;
  const Shard shard = sa.shard;
  const std::uint64_t seed = sa.seed;
  const int threads = sa.threads;
  const bool json = sa.json, progress = sa.progress;
  if (op != "cast") {
    throw InputError("--op '" + op + "': expected cast (ABI 1 sweeps exmy_backend_cast_f32)");
  }
  const FloatFormat f = parse_backend_format(format_name);
  Rounding r = parse_backend_rounding(round_text);
  if (!overflow_text.empty()) r.overflow = parse_overflow(overflow_text);
  const std::string rounding = backend_rounding_text(r);
#if defined(_OPENMP)
  if (threads > 0) omp_set_num_threads(threads);
#endif

  // The calls: 2^20-input chunks (full) or the designed sweep (ci).
  verify::DesignedSweep sweep;
  std::uint64_t items = kChunks;
  std::size_t capacity = kChunk;
  if (depth == verify::Depth::ci) {
    sweep = verify::designed_cast_sweep(f, r, seed);
    items = sweep.calls.size();
    capacity = 0;
    for (const auto& c : sweep.calls) capacity = std::max(capacity, c.x.size());
  }
  const std::uint64_t first = shard.begin(items), last = shard.end(items);

  // Ctrl-C is exmy's from before the child exists: a SIGINT while the plugin loads or answers
  // the probe ends the run through the summary (exit 130), never by the signal.
  verify::clear_stop();
  std::signal(SIGINT, verify_backend_on_sigint);
  std::optional<BackendProcess> loaded;
  try {
    loaded.emplace(library, format_name, rounding, capacity, device_entry, timeout, stop_flag);
  } catch (const BackendInterrupted&) {
    io::restore_sigint_cleanup();
    std::fprintf(stderr, "INTERRUPTED while the backend loaded: nothing was checked\n");
    return 130;
  }
  BackendProcess& backend = *loaded;
  const float one = 1.0f;
  const BackendCall probe = backend.call(&one, 1, seed, nullptr, stop_flag);
  if (probe.status == BackendCall::Status::returned_nonzero) {
    throw InputError("--backend '" + library + "' does not support cast fp32 -> " + format_name +
                     " under " + rounding + " (returned " + std::to_string(probe.rc) + ")");
  }

  // What makes shard files one run (verify merge compares it).
  const verify::Identity identity = {
      {"op", "cast"},
      {"format", float_format_name(f)},
      {"rounding", rounding},
      {"depth", depth == verify::Depth::ci ? "ci" : "full"},
      {"seed", std::to_string(seed)},
      {"entry", device_entry ? "device" : "host"},
      {"backend_sha256", io::sha256_file(library)},
      {"exmy", std::string(EXMY_VERSION) + " (" + exmy::build_git_sha() + ")"},
      {"shard_count", std::to_string(shard.count)},
      {"calls", std::to_string(items)}};

  verify::Result res;
  res.name = "backend cast " + format_name + " " + rounding;
  res.configurations = 1;
  std::vector<std::string> labels;  // ci: input classes, then word classes
  if (depth == verify::Depth::ci) {
    res.label_title = "designed input class (checks/mismatches)";
    labels = sweep.input_classes;
    labels.insert(labels.end(), sweep.word_classes.begin(), sweep.word_classes.end());
    char note[320];
    std::snprintf(note, sizeof note,
                  "ci inputs: %" PRIu64
                  " designed (TestFloat-style, SEMANTICS 13.5.1) + weighted "
                  "random from --seed %" PRIu64 ", in %" PRIu64 " calls of up to %zu elements%s",
                  sweep.designed, sweep.random_seed, items, capacity,
                  r.mode == RoundMode::sr ? "; call k uses seed + k, and each element counts under "
                                            "its input class and its sr word class"
                                          : "");
    res.notes.push_back(note);
  }
  res.notes.push_back("backend = " + library +
                      " (the implementation under test); exmy = the "
                      "reference");
  const std::size_t n_labels = labels.size();
  const std::size_t n_input_labels = sweep.input_classes.size();
  std::vector<std::uint64_t> label_checks(n_labels), label_bad(n_labels);
  const std::size_t max_reported = 20;
  const std::size_t cb = backend.code_bytes();
  const FloatFormat fp32 = formats::fp32;
  std::vector<std::uint8_t> expected(capacity * cb), prefill(capacity * cb);
  verify::detail::Progress meter(res.name + (shard.whole() ? "" : " shard " + shard.text()),
                                 last - first, progress);
  const auto start = std::chrono::steady_clock::now();
  std::string failure;  // a crash or failing call ends the sweep
  CallInputs in;
  for (std::uint64_t item = first; item < last; ++item) {
    if (verify::stop_requested()) {
      res.interrupted = true;
      break;
    }
    // exmy's pristine inputs of this call.
    if (depth == verify::Depth::ci) {
      in.designed = &sweep.calls[item];
      in.seed = in.designed->seed;
      in.x = in.designed->x;
    } else {
      in.seed = seed;
      in.base = item * kChunk;
      in.x.resize(kChunk);
      for (std::uint64_t i = 0; i < kChunk; ++i) in.x[i] = static_cast<std::uint32_t>(in.base + i);
    }
    const std::size_t n = in.x.size();
    const std::int64_t sn = static_cast<std::int64_t>(n);
    // The expected codes, and their complement as the backend's prefilled codes: an element the
    // backend leaves unwritten cannot match.
#if defined(_OPENMP)
#pragma omp parallel
#endif
    {
#if defined(_OPENMP)
      const int t = omp_get_thread_num(), nt = omp_get_num_threads();
#else
      const int t = 0, nt = 1;
#endif
      const std::size_t lo = n * static_cast<std::size_t>(t) / static_cast<std::size_t>(nt),
                        hi = n * static_cast<std::size_t>(t + 1) / static_cast<std::size_t>(nt);
      fast::cast_to_codes(in.x.data() + lo, fast::ArrayInput::fp32, hi - lo,
                          expected.data() + lo * cb, f, r, in.seed, 0, lo);
      for (std::size_t k = lo * cb; k < hi * cb; ++k)
        prefill[k] = static_cast<std::uint8_t>(~expected[k]);
    }
    const BackendCall call = backend.call(reinterpret_cast<const float*>(in.x.data()), n, in.seed,
                                          prefill.data(), stop_flag);
    if (call.status == BackendCall::Status::crashed && verify::stop_requested()) {
      res.interrupted = true;
      break;
    }
    // The R-bit word of element i of this call (SEMANTICS 3.2), 0 for deterministic modes.
    const auto word_of = [&](std::int64_t i) -> std::uint32_t {
      if (r.mode != RoundMode::sr) return 0;
      return native::sr_word(native::philox_word(in.seed, 0, static_cast<std::uint64_t>(i)),
                             r.sr_bits);
    };
    char where[200];
    if (depth == verify::Depth::ci) {
      std::snprintf(where, sizeof where,
                    "call %" PRIu64 " of the ci sweep (%zu elements, seed %" PRIu64 ")", item, n,
                    in.seed);
    } else {
      std::snprintf(where, sizeof where,
                    "inputs 0x%08" PRIx64 "..0x%08" PRIx64
                    " (%zu elements, index = input - "
                    "0x%08" PRIx64 ")",
                    in.base, in.base + n - 1, n, in.base);
    }
    if (call.status != BackendCall::Status::ok) {
      failure = call.status == BackendCall::Status::returned_nonzero
                    ? "backend returned " + std::to_string(call.rc) + " on " + where
                : call.status == BackendCall::Status::crashed
                    ? "backend crashed (" + call.crash + ") on " + where
                    : "backend " + call.crash + ", on " + where;
      std::uint64_t culprit = in.x.empty() ? 0 : in.x[0];
      if (call.status == BackendCall::Status::crashed) {
        const auto [lo, hi] = narrow_crash(backend, in.x, in.seed);
        culprit = in.x[lo];
        char alone[160];
        if (hi - lo == 1) {
          std::snprintf(alone, sizeof alone, "; called alone, input 0x%08" PRIx32 " crashes it",
                        in.x[lo]);
        } else {
          std::snprintf(alone, sizeof alone,
                        "; the elements %zu..%zu (inputs 0x%08" PRIx32
                        "..) crash it together, "
                        "neither half alone",
                        lo, hi - 1, in.x[lo]);
        }
        failure += alone;
      }
      verify::Mismatch m;
      m.check = call_status_name(call.status);
      m.from = "fp32";
      m.to = format_name;
      m.rounding = verify::rounding_label(r);
      m.input = culprit;
      m.detail = failure;
      res.first.push_back(m);
      ++res.mismatches;
      break;
    }
    const std::uint8_t* got = backend.codes();
    const auto code = [cb](const std::uint8_t* p) -> std::uint64_t {
      return cb == 1 ? p[0] : static_cast<std::uint64_t>(p[0] | p[1] << 8);
    };
    std::uint64_t bad = 0;
    std::uint64_t by_class[verify::kClasses] = {}, by_outcome[verify::kOutcomes] = {};
    // One spare element: an OpenMP array-section reduction of length 0 is not safe everywhere.
    std::vector<std::uint64_t> lc(n_labels + 1), lb(n_labels + 1);
    std::uint64_t* lcp = lc.data();
    std::uint64_t* lbp = lb.data();
    const verify::DesignedCall* d = in.designed;
#if defined(_OPENMP)
#pragma omp parallel for reduction(+ : bad) reduction(+ : by_class[:verify::kClasses]) \
    reduction(+ : by_outcome[:verify::kOutcomes]) reduction(+ : lcp[:n_labels + 1])   \
    reduction(+ : lbp[:n_labels + 1])
#endif
    for (std::int64_t i = 0; i < sn; ++i) {
      const std::uint32_t u = in.x[static_cast<std::size_t>(i)];
      ++by_class[static_cast<int>(fp32.classify(u))];
      // The outcome (flags) of exmy's conversion, for the summary's outcome counts.
      ++by_outcome[static_cast<int>(
          verify::detail::outcome_of(native::convert(fp32, f, r, u, word_of(i)).flags))];
      const bool differs = std::memcmp(expected.data() + i * cb, got + i * cb, cb) != 0;
      bad += differs;
      if (d != nullptr) {
        const std::size_t ic = d->input[static_cast<std::size_t>(i)];
        ++lcp[ic];
        lbp[ic] += differs;
        if (!d->word.empty()) {
          const std::size_t wc = n_input_labels + d->word[static_cast<std::size_t>(i)];
          ++lcp[wc];
          lbp[wc] += differs;
        }
      }
    }
    res.checks += n;
    res.mismatches += bad;
    for (int k = 0; k < verify::kClasses; ++k) res.by_input_class[k] += by_class[k];
    for (int k = 0; k < verify::kOutcomes; ++k) res.by_outcome[k] += by_outcome[k];
    for (std::size_t k = 0; k < n_labels; ++k) {
      label_checks[k] += lc[k];
      label_bad[k] += lb[k];
    }
    for (std::size_t i = 0; bad != 0 && i < n && res.first.size() < max_reported; ++i) {
      if (std::memcmp(expected.data() + i * cb, got + i * cb, cb) == 0) continue;
      verify::Mismatch m;
      m.check = "backend";
      m.from = "fp32";
      m.to = format_name;
      m.rounding = verify::rounding_label(r);
      m.input = in.x[i];
      m.rand = word_of(static_cast<std::int64_t>(i));
      m.native = {code(got + i * cb), 0};
      m.oracle = {code(expected.data() + i * cb),
                  native::convert(fp32, f, r, in.x[i], m.rand).flags};
      std::string text = "cast fp32 -> " + format_name + " " + rounding + ": input " +
                         fp32_text(in.x[i]) + " at element " + std::to_string(i) + " of " + where;
      if (d != nullptr) {
        text += ", designed class '" + sweep.input_classes[d->input[i]] + "'";
        if (!d->word.empty()) text += ", '" + sweep.word_classes[d->word[i]] + "'";
      }
      if (r.mode == RoundMode::sr) {
        char w[48];
        std::snprintf(w, sizeof w, ", sr word 0x%" PRIx32, m.rand);
        text += w;
      }
      text += ": backend " + code_text(f, m.native.code) + ", exmy " + code_text(f, m.oracle.code);
      if (std::memcmp(got + i * cb, prefill.data() + i * cb, cb) == 0) {
        text +=
            " (the backend left this element unwritten: exmy had put the complement of the "
            "expected code there)";
      }
      m.detail = text;
      res.first.push_back(m);
    }
    meter.add(1);
  }
  io::restore_sigint_cleanup();
  for (std::size_t k = 0; k < n_labels; ++k) {
    if (label_checks[k] > 0) res.by_label.push_back({labels[k], label_checks[k], label_bad[k]});
  }
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  meter.finish(res);
  const std::vector<verify::Result> results{res};
  std::fputs((json ? verify::summary_json(results, shard, identity) : verify::summary_text(results))
                 .c_str(),
             stdout);
  if (!failure.empty()) {
    std::fprintf(stderr, "exmy verify: %s\n", failure.c_str());
    return 1;
  }
  if (res.interrupted) return 130;
  return res.mismatches == 0 ? 0 : 1;
}

}  // namespace

EXMY_COMMAND("verify-backend", run_verify_backend,
             "(hidden; use `exmy verify --backend LIB.so`) sweep a backend plugin's casts");

}  // namespace exmy::cli
