// Campaign plumbing: labels, rounding cases, tallies, progress, stop flag, dispatch by name.
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>

#include "sim/common/error.hpp"
#include "sim/format/rounding_names.hpp"
#include "sim/native/philox.hpp"
#include "sim/native/rounding.hpp"
#include "sim/verify/campaign.hpp"
#include "sim/verify/campaign_detail.hpp"

namespace exmy::verify {
namespace {
std::atomic<bool> g_stop{false};
}  // namespace

void request_stop() {
  g_stop.store(true);
}
void clear_stop() {
  g_stop.store(false);
}
bool stop_requested() {
  return g_stop.load(std::memory_order_relaxed);
}

std::string rounding_label(const Rounding& r) {
  return rounding_text(r, " ");
}

const char* outcome_name(Outcome o) {
  switch (o) {
    case Outcome::invalid:
      return "invalid";
    case Outcome::overflow:
      return "overflow";
    case Outcome::underflow:
      return "underflow";
    case Outcome::inexact:
      return "inexact";
    case Outcome::exact:
      return "exact";
  }
  return "?";
}

std::string describe(const Mismatch& m) {
  // A backend sweep writes the whole description (input, both codes, values and classes).
  if (m.check == "backend") return m.detail;
  // A backend call that failed as a whole: what happened, with the call it happened on.
  if (m.check == "crash" || m.check == "returned-nonzero" || m.check == "input-written" ||
      m.check == "out-of-bounds") {
    return m.check + ": " + m.detail;
  }
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "%s %s -> %s [%s] input 0x%" PRIx64 " rand 0x%" PRIx32 ": native 0x%" PRIx64
                "/flags %" PRIu32 ", oracle 0x%" PRIx64 "/flags %" PRIu32,
                m.check.c_str(), m.from.c_str(), m.to.c_str(), m.rounding.c_str(), m.input, m.rand,
                m.native.code, m.native.flags, m.oracle.code, m.oracle.flags);
  std::string s = buf;
  if (!m.detail.empty()) s += " (" + m.detail + ")";
  return s;
}

std::vector<std::string> campaign_names() {
  return {"decode", "bf16", "fp16", "fp32-sample", "fp32-top16", "steps"};
}

std::vector<Result> run_campaigns(const std::string& which, const Options& o) {
  std::vector<Result> out;
  const bool all = which == "all";
  bool known = all;
  for (const auto& n : campaign_names()) known = known || n == which;
  if (!known) {
    throw InputError("unknown campaign '" + which +
                     "' (expected decode, bf16, fp16, fp32-sample, fp32-top16, steps or all)");
  }
  if (which == "steps") return run_steps(o);
  if (all || which == "decode") out.push_back(run_decode(o));
  if (stop_requested()) return out;
  if (all || which == "bf16") out.push_back(run_exhaustive16(formats::bf16, "bf16", o));
  if (stop_requested()) return out;
  if (all || which == "fp16") out.push_back(run_exhaustive16(formats::fp16, "fp16", o));
  if (stop_requested()) return out;
  if (all || which == "fp32-sample") out.push_back(run_sample(o));
  if (stop_requested()) return out;
  if (all || which == "fp32-top16") out.push_back(run_fp32_top16(o));
  return out;
}

namespace detail {

std::vector<RoundingCase> rounding_cases(Depth depth) {
  std::vector<RoundingCase> cases;
  const auto add = [&](Rounding r, bool philox, std::uint32_t word) {
    std::string label = rounding_label(r);
    if (r.mode == RoundMode::sr) {
      char buf[32];
      if (philox) {
        std::snprintf(buf, sizeof buf, " w=philox");
      } else {
        std::snprintf(buf, sizeof buf, " w=0x%" PRIx32, word);
      }
      label += buf;
    }
    cases.push_back({r, philox, word, label});
  };
  for (Overflow p : {Overflow::none, Overflow::satfinite, Overflow::sat}) {
    for (RoundMode m : {RoundMode::rne, RoundMode::rna, RoundMode::rtz, RoundMode::rup,
                        RoundMode::rdn, RoundMode::rto}) {
      add({m, 0, p}, false, 0);
    }
  }
  // sr:R. Small R enumerate every word (so every carry threshold is hit); larger R take the
  // extreme words 0 and 2^R - 1, the half word 2^(R-1) and a per-element Philox word. R = 23
  // and 32 reach below every residual bit of an fp32 input; R = 32 needs the full word.
  const std::vector<int> full_r = {1, 2, 3, 4, 8, 11, 16, 23, 32};
  const std::vector<int> ci_r = {1, 3, 8, 32};
  for (int R : depth == Depth::full ? full_r : ci_r) {
    const std::uint32_t top = R >= 32 ? 0xFFFFFFFFu : (1u << R) - 1;
    const Rounding r{RoundMode::sr, R, Overflow::none};
    if (R <= 3 && depth == Depth::full) {
      for (std::uint32_t w = 0; w <= top; ++w) add(r, false, w);
    } else {
      add(r, true, 0);
      add(r, false, top);
      if (depth == Depth::full) {
        add(r, false, 0);
        add(r, false, 1u << (R - 1));
      }
    }
  }
  // The overflow policies under sr: only overflow and infinite inputs see them.
  for (Overflow p : {Overflow::satfinite, Overflow::sat}) add({RoundMode::sr, 8, p}, true, 0);
  return cases;
}

std::uint32_t word_for(const RoundingCase& c, std::uint64_t input) {
  if (!c.philox) return c.word;
  return native::sr_word(native::philox_word(kWordSeed, 0, input), c.r.sr_bits);
}

Outcome outcome_of(std::uint32_t flags) {
  if (flags & flag::invalid) return Outcome::invalid;
  if (flags & flag::overflow) return Outcome::overflow;
  if (flags & flag::underflow) return Outcome::underflow;
  if (flags & flag::inexact) return Outcome::inexact;
  return Outcome::exact;
}

void merge(Result& into, const Tally& t, std::size_t max_reported) {
  into.checks += t.checks;
  into.mismatches += t.mismatches;
  for (int i = 0; i < kClasses; ++i) into.by_input_class[i] += t.by_class[i];
  for (int i = 0; i < kOutcomes; ++i) into.by_outcome[i] += t.by_outcome[i];
  for (const auto& m : t.first) {
    if (into.first.size() < max_reported) into.first.push_back(m);
  }
  for (const auto& l : t.by_label) {
    bool found = false;
    for (auto& k : into.by_label) {
      if (k.label == l.label) {
        k.checks += l.checks;
        k.mismatches += l.mismatches;
        found = true;
      }
    }
    if (!found) into.by_label.push_back(l);
  }
}

Progress::Progress(std::string label, std::uint64_t total_units, bool enabled)
    : label_(std::move(label)),
      total_(total_units),
      enabled_(enabled),
      tty_(isatty(2) != 0),
      start_(std::chrono::steady_clock::now()) {}

void Progress::add(std::uint64_t units) {
  const std::uint64_t done = done_.fetch_add(units) + units;
  if (!enabled_) return;
  const auto now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::steady_clock::now() - start_)
                          .count();
  // On a terminal redraw once a second; in a log, a line every ten seconds.
  const std::int64_t period = tty_ ? 1000 : 10000;
  std::int64_t last = last_print_ms_.load();
  if (now_ms - last < period || !last_print_ms_.compare_exchange_strong(last, now_ms)) return;
  const double pct = total_ ? 100.0 * static_cast<double>(done) / static_cast<double>(total_) : 0;
  // ETA from the rate so far (work units are roughly uniform in cost within a campaign).
  const double eta = done ? (now_ms / 1000.0) *
                                static_cast<double>(total_ - std::min(done, total_)) /
                                static_cast<double>(done)
                          : 0.0;
  std::fprintf(stderr, "%s[verify %s] %5.1f%%  %.0fs  ETA %.0fs%s", tty_ ? "\r" : "",
               label_.c_str(), pct, now_ms / 1000.0, eta, tty_ ? "" : "\n");
  std::fflush(stderr);
}

void Progress::finish(const Result& r) {
  if (!enabled_) return;
  std::fprintf(stderr, "%s[verify %s] %s: %" PRIu64 " checks, %" PRIu64 " mismatches, %.1fs\n",
               tty_ ? "\r" : "", label_.c_str(), r.interrupted ? "interrupted" : "done", r.checks,
               r.mismatches, r.seconds);
}

}  // namespace detail
}  // namespace exmy::verify
