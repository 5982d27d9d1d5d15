// Loss spikes and RMS spikes in a training trace, by the heuristics of Wortsman et al. 2023
// ("Stable and low-precision training for large-scale vision-language models", appendix E), and
// how often an RMS spike precedes a loss spike. Used by `exmy diagnose spikes` (users' own logs)
// and by the report's spike section. docs/SEMANTICS.md 14.4 defines every choice the paper
// leaves open (window of the running statistics, clustering, chance rate).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace exmy::reports {

struct SpikeOptions {
  double rms_threshold = 2.3;      // RMS spike: RMS_t >= 2.3
  double sigma = 3.2;              // loss deviation: loss_t > mean + 3.2 std of the window
  int window = 100;                // running statistics over the `window` previous finite losses
  long ignore_first = 1000;        // steps < first step + ignore_first are ignored (low-lr warmup)
  int dedup = 10;                  // events within `dedup` steps of a cluster's start join it
  int min_loss_deviations = 2;     // a loss spike needs this many deviations in its cluster
  int lead_min = 1, lead_max = 8;  // an RMS spike 1..8 steps before a loss spike "precedes" it
};

struct Trace {
  std::vector<long> step;    // strictly increasing
  std::vector<double> loss;  // may be non-finite (a divergence counts as a deviation)
  std::vector<double> rms;   // may be empty (no RMS column): no RMS analysis
};

struct SpikeResult {
  std::vector<long> loss_spikes;  // cluster start steps
  std::vector<long> rms_spikes;   // cluster start steps
  std::vector<bool> preceded;     // per loss spike: an RMS spike lead_min..lead_max before it
  long preceded_count = 0;
  long analysed_steps = 0;  // steps after the ignored prefix
  // Chance that a step of the analysed range has an RMS spike lead_min..lead_max steps before
  // it (the fraction of analysed steps covered), and the binomial probability of at least
  // `preceded_count` of `loss_spikes.size()` preceded loss spikes at that rate.
  double chance_rate = 0;
  double p_value = 1;
};

// Parses a CSV trace (header row; columns named by `loss_col`, `rms_col` — empty: none — and
// "step" when present, else the row number). Numbers are strict decimal text; "nan", "inf",
// "-inf" are accepted in the loss and RMS columns. InputError names the file, line and column.
Trace parse_trace_csv(const std::string& text, const std::string& source,
                      const std::string& loss_col, const std::string& rms_col);

SpikeResult detect_spikes(const Trace& t, const SpikeOptions& o);

// P(X >= x) for X ~ Binomial(n, p).
double binomial_tail(long n, long x, double p);

}  // namespace exmy::reports
