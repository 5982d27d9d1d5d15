// The spike section's task (docs/SEMANTICS.md 14.4.1): a small ReLU MLP trained with AdamW where
// loss spikes actually occur, for the appendix-E analysis of Wortsman et al. 2023 ("Stable and
// low-precision training for large-scale vision-language models"). Everything is fp32 with one
// defined summation order, single-threaded per run, so a run's trace is a function of its
// configuration and seed only.
//
// Data: x_j = z_j (z ~ N(0, 1), Philox) for the `in` base features, labelled by a random linear
// teacher (argmax over classes of T z). Then the input-layer signal shift: `late_onsets.size()`
// groups of `late_group` extra input features are exactly 0 before their onset and ramp in
// linearly to full scale over `ramp` steps (x_j = r_t s z_j, r_t = min(1, (t - onset + 1)/ramp)).
// The teacher ignores them, but their input-layer rows are He-initialised like every other row,
// so once they are on they move every hidden unit: the shift matters to the loss (left alone it
// raises the loss) and the network has to learn to suppress them. Their second moment v is 0
// until the onset, so AdamW's u is stale right after it (appendix E's "the learning signal
// changes"): RMS_t of the input layer spikes and AdamW's update of those rows is several times
// the learning rate.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace exmy::reports {

struct SpikeTaskConfig {
  int in = 16, hidden = 64, classes = 8;  // base features, hidden width (2 hidden layers)
  int batch = 128;
  int steps = 1200;
  int warmup = 100;  // linear learning-rate warmup from lr / warmup, then constant
  float lr = 1e-2f, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f, wd = 0.1f;
  // adamw: optim::adam_step (torch.optim.AdamW, decoupled decay; SEMANTICS 9.2);
  // stable_adamw: optim::stable_adamw_step (SEMANTICS 9.5);
  // adamw_clip: AdamW after torch.nn.utils.clip_grad_norm_(max_norm = clip_norm) over every
  // parameter (SEMANTICS 14.4.1 states the norm's arithmetic).
  enum class Optimizer { adamw, stable_adamw, adamw_clip } optimizer = Optimizer::adamw;
  float clip_norm = 1.0f;
  std::vector<int> late_onsets{500, 750, 1000};
  int late_group = 8;
  int ramp = 30;
  float late_scale = 2.0f;
  bool late_rows_zero = false;    // the late features' input-layer rows start at 0
  bool late_informative = false;  // the teacher also uses the late features (their z)
};

struct SpikeTaskLog {
  std::vector<float> loss;       // mean cross-entropy of step t's batch (index t - 1)
  std::vector<float> sharpness;  // mean logit sharpness of the batch (eps 5e-4; sharpness.hpp)
  // RMS_t = sqrt(mean(g^2 / max(u, eps^2))) of each layer's weight matrix (0: the input layer,
  // 1: the hidden layer, 2: the output layer) at every step; AdamW: u = v / (1 - beta2^t),
  // StableAdamW: its own u (SEMANTICS 9.5).
  std::vector<float> rms[3];
  std::vector<float> grad_norm;  // global gradient norm before clipping (all parameters)
};

// One run; calls throw_if_interrupted() between steps.
SpikeTaskLog train_spike_task(const SpikeTaskConfig& cfg, std::uint64_t seed);

// torch.nn.utils.clip_grad_norm_'s coefficient: min(1, max_norm / (total_norm + 1e-6)) in fp64,
// rounded to fp32 (1 when no clipping happens).
float clip_coefficient(double total_norm, float max_norm);

// Lead times: for each loss spike, the distance to the latest RMS spike start at or before it
// (-1 when none lies within `horizon` steps before it).
std::vector<long> spike_lead_times(const std::vector<long>& loss_spikes,
                                   const std::vector<long>& rms_spikes, long horizon);

// 95% Wilson score interval for k successes in n trials (0, 1 when n = 0).
struct RateInterval {
  double lo = 0, hi = 1;
};
RateInterval wilson_interval(long k, long n);
// Exact (Garwood) 95% interval of a Poisson mean from one count k: lo solves P(X >= k) = 0.025
// (0 for k = 0), hi solves P(X <= k) = 0.025, by bisection on the Poisson sums.
RateInterval poisson_interval(long k);

// Ratio of two event rates, k1 events in n1 runs against k2 in n2 (k1/n1 over k2/n2), with the
// 95% interval of the conditional binomial: given k1 + k2, k1 ~ Binomial(k1 + k2, pi) with pi =
// n1 r1 / (n1 r1 + n2 r2); the Wilson interval of pi mapped to r1/r2 = pi/(1-pi) n2/n1. The
// ratio is +inf when k2 = 0 < k1 and NaN when k1 = k2 = 0; hi is +inf when the interval reaches 1.
struct RateRatio {
  double ratio = 0, lo = 0, hi = 0;
};
RateRatio rate_ratio(long k1, long n1, long k2, long n2);

}  // namespace exmy::reports
