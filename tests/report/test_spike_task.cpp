// The spike section's task and statistics (reports/spike_task.hpp): the task spikes under plain
// AdamW and less under StableAdamW, its traces are a function of (config, seed), and the
// interval and lead-time helpers against values computed from their definitions.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>

#include "reports/spike_task.hpp"
#include "reports/spikes.hpp"

using namespace exmy::reports;

namespace {

// The quick report's reference setting (reports/spikes_section.cpp): lr 3e-2, beta2 0.999,
// batch 128, 700 steps, late groups at steps 5/12, 15/24 and 5/6 of the run.
SpikeTaskConfig reference(SpikeTaskConfig::Optimizer o) {
  SpikeTaskConfig c;
  c.steps = 700;
  c.late_onsets = {c.steps * 5 / 12, c.steps * 15 / 24, c.steps * 5 / 6};
  c.late_rows_zero = true;
  c.lr = 3e-2f;
  c.beta2 = 0.999f;
  c.batch = 128;
  c.optimizer = o;
  return c;
}

SpikeResult analyse(const SpikeTaskLog& log, long ignore_first) {
  Trace t;
  for (std::size_t i = 0; i < log.loss.size(); ++i) {
    t.step.push_back(static_cast<long>(i + 1));
    t.loss.push_back(log.loss[i]);
    t.rms.push_back(log.rms[0][i]);
  }
  SpikeOptions so;
  so.ignore_first = ignore_first;
  return detect_spikes(t, so);
}

}  // namespace

TEST_CASE("spike task: AdamW spikes after the input shift, StableAdamW much less", "[spikes]") {
  long adamw = 0, stable = 0, preceded = 0;
  for (std::uint64_t seed : {20231116u, 20231117u}) {
    INFO("seed " << seed);
    const auto a = train_spike_task(reference(SpikeTaskConfig::Optimizer::adamw), seed);
    const auto s = train_spike_task(reference(SpikeTaskConfig::Optimizer::stable_adamw), seed);
    const SpikeResult ra = analyse(a, 175), rs = analyse(s, 175);
    adamw += static_cast<long>(ra.loss_spikes.size());
    stable += static_cast<long>(rs.loss_spikes.size());
    preceded += ra.preceded_count;
    // The stale second moment shows in RMS_t for both optimizers (it is g^2 / u, before any
    // clipping of the update), at each of the three onsets.
    REQUIRE(ra.rms_spikes.size() >= 3);
    REQUIRE(rs.rms_spikes.size() >= 3);
    for (int on : reference(SpikeTaskConfig::Optimizer::adamw).late_onsets) {
      CHECK(a.rms[0][static_cast<std::size_t>(on - 1)] > 2.3f);
      CHECK(a.rms[0][static_cast<std::size_t>(on - 3)] < 2.3f);
    }
  }
  INFO("AdamW " << adamw << " loss spikes, StableAdamW " << stable << ", preceded " << preceded);
  // Seeds 20231116/7 give 8 against 2: asserted with margin, not as numbers.
  CHECK(adamw >= 2 * stable + 2);
  CHECK(2 * preceded >= adamw);  // most AdamW spikes follow an input-layer RMS spike by 1-8
}

TEST_CASE("spike task: a trace is a function of (config, seed); clipping changes it", "[spikes]") {
  SpikeTaskConfig c = reference(SpikeTaskConfig::Optimizer::adamw);
  c.steps = 60;
  c.hidden = 16;
  c.batch = 8;
  c.late_onsets = {20, 30, 40};
  c.ramp = 5;
  const auto a = train_spike_task(c, 7), b = train_spike_task(c, 7), d = train_spike_task(c, 8);
  REQUIRE(a.loss.size() == 60);
  CHECK(std::memcmp(a.loss.data(), b.loss.data(), 60 * sizeof(float)) == 0);
  CHECK(std::memcmp(a.rms[0].data(), b.rms[0].data(), 60 * sizeof(float)) == 0);
  CHECK(std::memcmp(a.loss.data(), d.loss.data(), 60 * sizeof(float)) != 0);
  // Zero late rows: the forward pass does not see the late inputs until the optimizer has moved
  // their rows, so the loss at the first onset step is the one the run would have anyway; the
  // rows move on the onset step itself (their gradient is x_j dh), so the next loss differs.
  SpikeTaskConfig never = c;
  never.late_onsets = {1000, 1000, 1000};
  const auto n = train_spike_task(never, 7);
  CHECK(std::memcmp(a.loss.data(), n.loss.data(), 20 * sizeof(float)) == 0);
  CHECK(a.loss[20] != n.loss[20]);
  // Gradient clipping at norm 1 with gradients above it: a different trace.
  SpikeTaskConfig cl = c;
  cl.optimizer = SpikeTaskConfig::Optimizer::adamw_clip;
  cl.clip_norm = 1e-3f;
  const auto k = train_spike_task(cl, 7);
  CHECK(std::memcmp(a.loss.data() + 1, k.loss.data() + 1, 59 * sizeof(float)) != 0);
}

TEST_CASE("spike task: clip coefficient, lead times", "[spikes]") {
  CHECK(clip_coefficient(0.5, 1.0f) == 1.0f);
  CHECK(clip_coefficient(4.0, 1.0f) == static_cast<float>(1.0 / (4.0 + 1e-6)));
  CHECK(clip_coefficient(1.0, 1.0f) == static_cast<float>(1.0 / (1.0 + 1e-6)));  // torch clips
  // Loss spikes at 10, 30, 100; RMS spike starts at 2, 8, 25: leads 2 (8), 5 (25), none.
  CHECK(spike_lead_times({10, 30, 100}, {2, 8, 25}, 50) == std::vector<long>{2, 5, -1});
  CHECK(spike_lead_times({10}, {10}, 50) == std::vector<long>{0});
  CHECK(spike_lead_times({10}, {11}, 50) == std::vector<long>{-1});
}

TEST_CASE("spike statistics: Wilson, Poisson and rate-ratio intervals", "[spikes]") {
  // Wilson: p^ = 0.5, n = 10: (0.5 + z^2/20 -+ z sqrt(0.025 + z^2/400)) / (1 + z^2/10).
  const double z = 1.959963984540054;
  const auto w = wilson_interval(5, 10);
  const double den = 1 + z * z / 10, half = z * std::sqrt(0.025 + z * z / 400) / den;
  CHECK(w.lo == Approx(0.5 - half).epsilon(1e-12));
  CHECK(w.hi == Approx(0.5 + half).epsilon(1e-12));
  CHECK(wilson_interval(0, 10).lo == 0.0);
  // Garwood: k = 0: hi = -ln(0.025); k = 1: lo solves 1 - e^-l = 0.025, hi solves
  // e^-l (1 + l) = 0.025 (chi-square tables: 0.0253, 5.572); k = 10: 4.795, 18.39.
  CHECK(poisson_interval(0).lo == 0.0);
  CHECK(poisson_interval(0).hi == Approx(-std::log(0.025)).epsilon(1e-9));
  CHECK(poisson_interval(1).lo == Approx(-std::log(0.975)).epsilon(1e-9));
  const double h1 = poisson_interval(1).hi;
  CHECK(std::exp(-h1) * (1 + h1) == Approx(0.025).epsilon(1e-9));
  CHECK(poisson_interval(10).lo == Approx(4.795).epsilon(1e-3));
  CHECK(poisson_interval(10).hi == Approx(18.39).epsilon(1e-3));
  // Rate ratio: 2 events in 3 runs against 8 in 3: ratio 0.25, pi = 0.2 of 10 events.
  const auto r = rate_ratio(2, 3, 8, 3);
  CHECK(r.ratio == Approx(0.25));
  const auto wi = wilson_interval(2, 10);
  CHECK(r.lo == Approx(wi.lo / (1 - wi.lo)));
  CHECK(r.hi == Approx(wi.hi / (1 - wi.hi)));
  CHECK(std::isinf(rate_ratio(3, 3, 0, 3).ratio));
  CHECK(std::isnan(rate_ratio(0, 3, 0, 3).ratio));
}
