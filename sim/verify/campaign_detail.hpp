// Shared machinery of the campaigns (internal to sim/verify): the rounding cases swept, the
// per-thread tallies, progress on stderr and the parallel job loop.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "sim/native/float_format.hpp"
#include "sim/native/rounding.hpp"
#include "sim/verify/campaign.hpp"

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace exmy::verify::detail {

// Seed of the per-element stochastic-rounding words (Philox, stream 0, index = input code).
inline constexpr std::uint64_t kWordSeed = 0x5EED0E5A11ull;

// A rounding swept by a campaign: a mode/policy, and for sr either a fixed R-bit word or the
// per-element Philox word of the input code.
struct RoundingCase {
  Rounding r;
  bool philox = false;
  std::uint32_t word = 0;
  std::string label;
};
// Deterministic modes x every overflow policy, then sr:R cases; `depth` picks how many.
std::vector<RoundingCase> rounding_cases(Depth depth);
std::uint32_t word_for(const RoundingCase& c, std::uint64_t input);

Outcome outcome_of(std::uint32_t flags);

struct Tally {
  std::uint64_t checks = 0, mismatches = 0;
  std::uint64_t by_class[kClasses] = {};
  std::uint64_t by_outcome[kOutcomes] = {};
  std::vector<Mismatch> first;
  std::vector<LabelCount> by_label;

  // One check: the oracle's verdict `expected` against `got`; returns whether they agree.
  bool add(ValueClass input, const Encoded& expected, const Encoded& got) {
    ++checks;
    ++by_class[static_cast<int>(input)];
    ++by_outcome[static_cast<int>(outcome_of(expected.flags))];
    if (expected.code == got.code && expected.flags == got.flags) return true;
    ++mismatches;
    return false;
  }
  // A check without a code/flags pair (decode, descriptor): counted as exact.
  bool add_check(ValueClass input, bool ok) {
    ++checks;
    ++by_class[static_cast<int>(input)];
    ++by_outcome[static_cast<int>(Outcome::exact)];
    if (ok) return true;
    ++mismatches;
    return false;
  }
  // Counts a check under a named input class too (after add or add_check).
  void label(const std::string& name, bool ok) {
    for (auto& l : by_label) {
      if (l.label == name) {
        ++l.checks;
        l.mismatches += ok ? 0 : 1;
        return;
      }
    }
    by_label.push_back({name, 1, ok ? 0u : 1u});
  }
  void keep(Mismatch m, std::size_t max) {
    if (first.size() < max) first.push_back(std::move(m));
  }
};

void merge(Result& into, const Tally& t, std::size_t max_reported);

class Progress {
 public:
  Progress(std::string label, std::uint64_t total_units, bool enabled);
  void add(std::uint64_t units);  // thread-safe; prints from one thread at most once a second
  void finish(const Result& r);

 private:
  std::string label_;
  std::uint64_t total_;
  bool enabled_, tty_;
  std::atomic<std::uint64_t> done_{0};
  std::atomic<std::int64_t> last_print_ms_{0};
  std::chrono::steady_clock::time_point start_;
};

// Runs body(job, tally) for job in [0, jobs) on o.threads threads, merging per-thread tallies
// into `r`. Stops picking up jobs once stop_requested().
template <class Body>
void run_jobs(std::size_t jobs, const Options& o, Result& r, Body&& body) {
  bool interrupted = false;
#if defined(_OPENMP)
  const int threads = o.threads > 0 ? o.threads : omp_get_max_threads();
#pragma omp parallel num_threads(threads)
#endif
  {
    Tally t;
    bool stopped = false;
#if defined(_OPENMP)
#pragma omp for schedule(dynamic, 1)
#endif
    for (std::size_t j = 0; j < jobs; ++j) {
      if (j < o.shard.begin(jobs) || j >= o.shard.end(jobs)) continue;  // another shard's job
      if (stop_requested()) {
        stopped = true;
        continue;
      }
      body(j, t);
    }
#if defined(_OPENMP)
#pragma omp critical(exmy_verify_merge)
#endif
    {
      merge(r, t, o.max_reported);
      interrupted = interrupted || stopped;
    }
  }
  r.interrupted = r.interrupted || interrupted;
}

}  // namespace exmy::verify::detail
