// The spike section's task (reports/spike_task.hpp).
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <algorithm>

#include "reports/spike_task.hpp"
#include "reports/spikes.hpp"

using namespace exmy::reports;

TEST_CASE("spike task: exploration (hidden)", "[.explore]") {
  const char* e = std::getenv("EXPLORE");
  std::vector<double> lrs{3e-3, 3e-2};
  const char* v = std::getenv("VARIANT");
  const int var = v ? std::atoi(v) : 0;
  int B = e ? std::atoi(e) : 128;
  for (double lr : lrs) {
    for (float b2 : {0.999f}) {
      for (int o = 0; o < 1; ++o) {
        for (int sd = 0; sd < 1; ++sd) {
          SpikeTaskConfig c;
          c.batch = B;
          c.late_rows_zero = var & 1;
          c.late_informative = var & 2;
          if (var & 4) c.late_scale = 1.0f;
          c.lr = static_cast<float>(lr);
          c.beta2 = b2;
          c.optimizer = static_cast<SpikeTaskConfig::Optimizer>(o);
          const auto log = train_spike_task(c, 100 + sd);
          Trace tr;
          for (std::size_t i = 0; i < log.loss.size(); ++i) {
            tr.step.push_back(static_cast<long>(i + 1));
            tr.loss.push_back(log.loss[i]);
            tr.rms.push_back(log.rms[0][i]);
          }
          SpikeOptions so;
          so.ignore_first = 300;
          const auto r = detect_spikes(tr, so);
          double mx = 0, pre = 0;
          for (std::size_t i = 300; i < log.loss.size(); ++i) mx = std::max<double>(mx, log.loss[i]);
          for (std::size_t i = 400; i < 499; ++i) pre += log.loss[i] / 99;
          std::printf("B %d lr %g b2 %g opt %d seed %d: loss spikes %zu [", B, lr, b2, o, sd,
                      r.loss_spikes.size());
          for (long s : r.loss_spikes) std::printf(" %ld", s);
          std::vector<float> gn(log.grad_norm.begin() + 300, log.grad_norm.begin() + 499);
          std::sort(gn.begin(), gn.end());
          float gmax = *std::max_element(log.grad_norm.begin() + 300, log.grad_norm.end());
          std::printf(" ] rms %zu preceded %ld pre %.3f max %.3f gn med %.3g max %.3g\n", r.rms_spikes.size(),
                      r.preceded_count, pre, mx, gn[gn.size() / 2], gmax);
          std::fflush(stdout);
        }
      }
    }
  }
}
