// exmy verify --backend LIB.so --op cast --format F --round MODE[+POLICY] [--depth full|ci]
//              [--shard i/N] [--seed S] [--threads N] [--json] [--quiet]
// (the hidden command "verify-backend", which cli/cmd_verify.cpp forwards to when --backend is
// given): a backend plugin's exmy_backend_cast_f32 against exmy's host array cast (sim/fast) on
// every fp32 input (full) or on the chunks around F's boundaries (ci). The work items are
// chunks of 2^20 consecutive fp32 codes, each one backend call with element index = code -
// chunk start (so sr words, and hence results, do not depend on --shard); --shard i/N takes a
// contiguous slice of the items (SEMANTICS 13.4). The backend runs in a child process
// (cli/backend_host.hpp); the reference of a chunk is computed while the backend works on it.
// Output: the summary of `exmy verify` (text or --json, sim/verify/summary.hpp) with one
// campaign "backend cast F MODE". Exit status: 0 all agree, 1 a mismatch or a backend crash or
// failure, 130 interrupted (SIGINT), 2 bad arguments or a backend that cannot be loaded or does
// not support the request.
#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "cli/backend_host.hpp"
#include "cli/cli_util.hpp"
#include "cli/command.hpp"
#include "sim/common/error.hpp"
#include "sim/common/shard.hpp"
#include "sim/fast/array_cast.hpp"
#include "sim/format/float_names.hpp"
#include "sim/native/convert.hpp"
#include "sim/native/philox.hpp"
#include "sim/verify/campaign.hpp"
#include "sim/verify/campaign_detail.hpp"
#include "sim/verify/summary.hpp"

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace exmy::cli {
namespace {

constexpr const char* kUsage =
    "usage: exmy verify --backend LIB.so --op cast --format F --round MODE[+POLICY] "
    "[--overflow none|satfinite|sat] [--depth full|ci] [--shard i/N] [--seed S] [--threads N] "
    "[--entry host|device] [--timeout SECONDS] [--json] [--quiet]";

constexpr int kChunkBits = 20;
constexpr std::uint64_t kChunk = std::uint64_t{1} << kChunkBits;
constexpr std::uint64_t kChunks = (std::uint64_t{1} << 32) / kChunk;

extern "C" void verify_backend_on_sigint(int) {
  verify::request_stop();
  std::signal(SIGINT, SIG_DFL);
}

std::uint32_t bits(float v) {
  std::uint32_t u;
  std::memcpy(&u, &v, 4);
  return u;
}

// --depth ci: the chunks holding +-0, +-1, F's smallest subnormal and smallest normal, its
// largest finite value and the overflow threshold above it, and +-inf with the NaNs after it.
std::vector<std::uint64_t> ci_chunks(const FloatFormat& f) {
  float min_pos = 0, min_normal = 0, max = 0;
  const auto& table = fast::decode_table(f);
  for (std::uint32_t c = 0; c < table.size(); ++c) {
    const float v = table[c];
    if (!(v > 0) || v == INFINITY) continue;
    if (min_pos == 0 || v < min_pos) min_pos = v;
    if (max < v) max = v;
    const ValueClass k = f.classify(c);
    if (k == ValueClass::normal && (min_normal == 0 || v < min_normal)) min_normal = v;
  }
  std::vector<std::uint64_t> chunks;
  for (const float v : {0.0f, 1.0f, min_pos, min_normal, max, INFINITY}) {
    for (const std::uint32_t sign : {0u, 0x80000000u}) {
      const std::uint32_t u = bits(v) | sign;
      chunks.push_back(u >> kChunkBits);
      // The overflow threshold lies just above max, possibly in the next chunk.
      if (v == max)
        chunks.push_back(((u & 0x7FFFFFFFu) + (1u << 20) < 0x7F800000u
                              ? (u + (1u << 20)) >> kChunkBits
                              : u >> kChunkBits));
    }
  }
  std::sort(chunks.begin(), chunks.end());
  chunks.erase(std::unique(chunks.begin(), chunks.end()), chunks.end());
  return chunks;
}

// The smallest run [lo, hi) of the chunk at `base` found by halving that still crashes the
// backend when called alone (each try in a fresh child): one input unless the crash needs
// several together.
std::pair<std::uint64_t, std::uint64_t> narrow_crash(BackendProcess& backend, std::uint64_t base,
                                                     std::uint64_t seed) {
  const auto crashes = [&](std::uint64_t a, std::uint64_t b) {
    for (std::uint64_t i = a; i < b; ++i) {
      const std::uint32_t u = static_cast<std::uint32_t>(base + i);
      std::memcpy(&backend.x()[i - a], &u, 4);
    }
    return backend.call(b - a, seed).status == BackendCall::Status::crashed;
  };
  std::uint64_t lo = 0, hi = kChunk;
  while (hi - lo > 1) {
    const std::uint64_t mid = lo + (hi - lo) / 2;
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

int run_verify_backend(const Args& args) {
  std::string library, op, format_name, round_text, overflow_text;
  int timeout = 600;          // seconds one backend call may take
  bool device_entry = false;  // --entry device: exmy_backend_cast_f32_device
  verify::Depth depth = verify::Depth::full;
  Shard shard;
  std::uint64_t seed = 0;
  int threads = 0;
  bool json = false, progress = true;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") {
      std::printf("%s\n", kUsage);
      return 0;
    } else if (a == "--backend") {
      library = option_value(args, i);
    } else if (a == "--op") {
      op = option_value(args, i);
    } else if (a == "--format") {
      format_name = option_value(args, i);
    } else if (a == "--round") {
      round_text = option_value(args, i);
    } else if (a == "--overflow") {
      overflow_text = option_value(args, i);
    } else if (a == "--depth") {
      const std::string& d = option_value(args, i);
      if (d != "full" && d != "ci") throw InputError("--depth '" + d + "': expected full or ci");
      depth = d == "full" ? verify::Depth::full : verify::Depth::ci;
    } else if (a == "--shard") {
      shard = parse_shard(option_value(args, i));
    } else if (a == "--entry") {
      const std::string& e = option_value(args, i);
      if (e != "host" && e != "device")
        throw InputError("--entry '" + e + "': expected host or device");
      device_entry = e == "device";
    } else if (a == "--timeout") {
      timeout = static_cast<int>(parse_uint(option_value(args, i), "--timeout", 86400));
      if (timeout < 1) throw InputError("--timeout '0': expected 1 to 86400 seconds");
    } else if (a == "--seed") {
      seed = parse_uint(option_value(args, i), "--seed", ~std::uint64_t{0});
    } else if (a == "--threads") {
      threads = static_cast<int>(parse_uint(option_value(args, i), "--threads", 4096));
      if (threads < 1) throw InputError("--threads '0': expected 1 to 4096");
    } else if (a == "--json") {
      json = true;
    } else if (a == "--quiet") {
      progress = false;
    } else {
      throw InputError("unknown argument '" + a + "' (" + kUsage + ")");
    }
  }
  if (library.empty() || op.empty() || format_name.empty() || round_text.empty()) {
    throw InputError(std::string("--backend, --op, --format and --round are required (") + kUsage +
                     ")");
  }
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

  std::vector<std::uint64_t> items;
  if (depth == verify::Depth::full) {
    for (std::uint64_t c = 0; c < kChunks; ++c) items.push_back(c);
  } else {
    items = ci_chunks(f);
  }
  const std::uint64_t first = shard.begin(items.size()), last = shard.end(items.size());

  BackendProcess backend(library, format_name, rounding, kChunk, device_entry);
  backend.set_timeout(timeout);
  backend.x()[0] = 1.0f;
  const BackendCall probe = backend.call(1, seed);
  if (probe.status == BackendCall::Status::returned_nonzero) {
    throw InputError("--backend '" + library + "' does not support cast fp32 -> " + format_name +
                     " under " + rounding + " (returned " + std::to_string(probe.rc) + ")");
  }

  // The R-bit word of element i of a call (SEMANTICS 3.2), 0 for deterministic modes.
  const auto word_of = [&](std::int64_t i) -> std::uint32_t {
    if (r.mode != RoundMode::sr) return 0;
    return native::sr_word(native::philox_word(seed, 0, static_cast<std::uint64_t>(i)), r.sr_bits);
  };
  verify::Result res;
  res.name = "backend cast " + format_name + " " + rounding;
  res.configurations = 1;
  const std::size_t max_reported = 20;
  const std::size_t cb = backend.code_bytes();
  const FloatFormat fp32 = *parse_float_format("fp32");
  std::vector<std::uint8_t> expected(kChunk * cb);
  verify::detail::Progress meter(res.name + (shard.whole() ? "" : " shard " + shard.text()),
                                 last - first, progress);
  const auto start = std::chrono::steady_clock::now();
  verify::clear_stop();
  std::signal(SIGINT, verify_backend_on_sigint);
  std::string failure;  // a crash or failing call ends the sweep
  for (std::uint64_t item = first; item < last; ++item) {
    if (verify::stop_requested()) {
      res.interrupted = true;
      break;
    }
    const std::uint64_t base = items[item] * kChunk;
    float* x = backend.x();
    for (std::uint64_t i = 0; i < kChunk; ++i) {
      const std::uint32_t u = static_cast<std::uint32_t>(base + i);
      std::memcpy(&x[i], &u, 4);
    }
    // The reference runs in this process while the child works on the same inputs.
    BackendCall call;
#if defined(_OPENMP)
#pragma omp parallel
#endif
    {
#if defined(_OPENMP)
      const int t = omp_get_thread_num(), nt = omp_get_num_threads();
#else
      const int t = 0, nt = 1;
#endif
      if (t == 0) call = backend.call(kChunk, seed);
      // Thread 0 waits on the backend; the others split the reference (all of it when alone).
      const int workers = nt > 1 ? nt - 1 : 1, w = nt > 1 ? t - 1 : 0;
      if (nt == 1 || t > 0) {
        const std::uint64_t lo = kChunk * static_cast<std::uint64_t>(w) / workers,
                            hi = kChunk * static_cast<std::uint64_t>(w + 1) / workers;
        fast::cast_to_codes(x + lo, fast::ArrayInput::fp32, hi - lo, expected.data() + lo * cb, f,
                            r, seed, 0, lo);
      }
    }
    if (call.status != BackendCall::Status::ok) {
      char buf[160];
      std::snprintf(buf, sizeof buf,
                    "inputs 0x%08" PRIx64 "..0x%08" PRIx64 " (%" PRIu64
                    " elements, index = input - 0x%08" PRIx64 ")",
                    base, base + kChunk - 1, kChunk, base);
      failure = call.status == BackendCall::Status::crashed
                    ? "backend crashed (" + call.crash + ") on the call with " + buf
                    : "backend returned " + std::to_string(call.rc) + " on the call with " + buf;
      std::uint64_t culprit = base;
      if (call.status == BackendCall::Status::crashed) {
        const auto [lo, hi] = narrow_crash(backend, base, seed);
        culprit = base + lo;
        char alone[128];
        if (hi - lo == 1) {
          std::snprintf(alone, sizeof alone, "; called alone, input 0x%08" PRIx64 " crashes it",
                        base + lo);
        } else {
          std::snprintf(alone, sizeof alone,
                        "; the inputs 0x%08" PRIx64 "..0x%08" PRIx64
                        " crash it together, neither half alone",
                        base + lo, base + hi - 1);
        }
        failure += alone;
      }
      verify::Mismatch m;
      m.check = call.status == BackendCall::Status::crashed ? "crash" : "returned-nonzero";
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
    std::uint64_t bad = 0;
    std::uint64_t by_class[verify::kClasses] = {}, by_outcome[verify::kOutcomes] = {};
#if defined(_OPENMP)
#pragma omp parallel for reduction(+ : bad) reduction(+ : by_class[:verify::kClasses]) \
    reduction(+ : by_outcome[:verify::kOutcomes])
#endif
    for (std::int64_t i = 0; i < static_cast<std::int64_t>(kChunk); ++i) {
      const std::uint64_t u = base + static_cast<std::uint64_t>(i);
      ++by_class[static_cast<int>(fp32.classify(u))];
      // The outcome (flags) of exmy's conversion, for the summary's outcome counts.
      ++by_outcome[static_cast<int>(
          verify::detail::outcome_of(native::convert(fp32, f, r, u, word_of(i)).flags))];
      bad += std::memcmp(expected.data() + i * cb, got + i * cb, cb) != 0;
    }
    res.checks += kChunk;
    res.mismatches += bad;
    for (int k = 0; k < verify::kClasses; ++k) res.by_input_class[k] += by_class[k];
    for (int k = 0; k < verify::kOutcomes; ++k) res.by_outcome[k] += by_outcome[k];
    for (std::uint64_t i = 0; bad != 0 && i < kChunk && res.first.size() < max_reported; ++i) {
      if (std::memcmp(expected.data() + i * cb, got + i * cb, cb) == 0) continue;
      const auto code = [cb](const std::uint8_t* p) -> std::uint64_t {
        return cb == 1 ? p[0] : static_cast<std::uint64_t>(p[0] | p[1] << 8);
      };
      verify::Mismatch m;
      m.check = "backend";
      m.from = "fp32";
      m.to = format_name;
      m.rounding = verify::rounding_label(r);
      m.input = base + i;
      m.rand = word_of(static_cast<std::int64_t>(i));
      m.native = {code(got + i * cb), 0};
      m.oracle = {code(expected.data() + i * cb),
                  native::convert(fp32, f, r, base + i, m.rand).flags};
      m.detail = "native = backend, oracle = exmy; element index " + std::to_string(i);
      res.first.push_back(m);
    }
    meter.add(1);
  }
  std::signal(SIGINT, SIG_DFL);
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  meter.finish(res);
  const std::vector<verify::Result> results{res};
  std::fputs((json ? verify::summary_json(results, shard) : verify::summary_text(results)).c_str(),
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
