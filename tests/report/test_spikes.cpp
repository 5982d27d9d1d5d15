// The appendix-E spike heuristics (reports/spikes.hpp) on traces built by hand: each rule of
// SEMANTICS 14.4 has a case that fails if it is dropped.
#include <catch2/catch.hpp>
#include <cmath>
#include <string>

#include "reports/spikes.hpp"
#include "sim/common/error.hpp"

using namespace exmy::reports;

namespace {
// A flat loss with a little deterministic wiggle (std > 0), RMS 1.
Trace flat(int n) {
  Trace t;
  for (int s = 0; s < n; ++s) {
    t.step.push_back(s);
    t.loss.push_back(2.0 + 0.01 * ((s * 7919) % 13 - 6) / 6.0);
    t.rms.push_back(1.0);
  }
  return t;
}
}  // namespace

TEST_CASE("spikes: a preceded loss spike, a lone deviation, the ignored prefix", "[spikes]") {
  Trace t = flat(3000);
  t.rms[1500] = 3.0;                  // RMS spike
  t.loss[1504] = t.loss[1505] = 5.0;  // two deviations: a loss spike 4 steps later
  t.loss[2600] = 5.0;                 // one deviation alone: not a spike
  t.loss[500] = t.loss[501] = 9.0;    // inside the first 1000 steps: ignored
  t.rms[400] = 9.0;                   // ignored too
  const SpikeResult r = detect_spikes(t, SpikeOptions{});
  REQUIRE(r.analysed_steps == 2000);
  REQUIRE(r.loss_spikes == std::vector<long>{1504});
  REQUIRE(r.rms_spikes == std::vector<long>{1500});
  REQUIRE(r.preceded_count == 1);
  REQUIRE(r.chance_rate == Approx(8.0 / 2000));
  REQUIRE(r.p_value == Approx(8.0 / 2000));
}

TEST_CASE("spikes: clusters start at the earliest event; lead window is 1..8", "[spikes]") {
  Trace t = flat(3000);
  for (int s : {1200, 1203, 1209}) t.rms[s] = 2.3;   // threshold is inclusive: one cluster at 1200
  for (int s : {1209, 1210, 1211}) t.loss[s] = 6.0;  // loss spike at 1209: 9 steps after 1200
  const SpikeResult r = detect_spikes(t, SpikeOptions{});
  REQUIRE(r.rms_spikes == std::vector<long>{1200});
  REQUIRE(r.loss_spikes == std::vector<long>{1209});
  REQUIRE(r.preceded_count == 0);  // 9 > 8
  SpikeOptions wide;
  wide.lead_max = 9;
  REQUIRE(detect_spikes(t, wide).preceded_count == 1);
}

TEST_CASE("spikes: a non-finite loss deviates and does not poison the window", "[spikes]") {
  Trace t = flat(2000);
  t.loss[1500] = NAN;
  t.loss[1501] = INFINITY;
  t.loss[1700] = 5.0;
  t.loss[1701] = 5.0;
  const SpikeResult r = detect_spikes(t, SpikeOptions{});
  REQUIRE(r.loss_spikes == std::vector<long>{1500, 1700});
}

TEST_CASE("binomial_tail matches small cases exactly", "[spikes]") {
  REQUIRE(binomial_tail(3, 0, 0.2) == 1.0);
  REQUIRE(binomial_tail(3, 3, 0.2) == Approx(0.008));
  REQUIRE(binomial_tail(3, 2, 0.5) == Approx(0.5));
  REQUIRE(binomial_tail(15, 14, 0.01) ==
          Approx(15 * std::pow(0.01, 14) * 0.99 + std::pow(0.01, 15)));
}

TEST_CASE("parse_trace_csv: columns by name; every malformed input named", "[spikes]") {
  const Trace t = parse_trace_csv("step,rms,loss\n10,1.5,2\n11,nan,inf\n", "t.csv", "loss", "rms");
  REQUIRE(t.step == std::vector<long>{10, 11});
  REQUIRE(t.loss[0] == 2.0);
  REQUIRE(std::isinf(t.loss[1]));
  REQUIRE(std::isnan(t.rms[1]));
  const Trace nostep = parse_trace_csv("loss\n1\n2\n", "t.csv", "loss", "");
  REQUIRE(nostep.step == std::vector<long>{0, 1});
  REQUIRE(nostep.rms.empty());
  auto bad = [](const std::string& text, const std::string& needle) {
    try {
      parse_trace_csv(text, "t.csv", "loss", "rms");
    } catch (const exmy::InputError& e) {
      INFO(e.what());
      REQUIRE(std::string(e.what()).find(needle) != std::string::npos);
      return;
    }
    FAIL("accepted: " << text);
  };
  bad("", "empty");
  bad("step,loss,rms\n", "no rows");
  bad("step,lss,rms\n1,2,3\n", "no column named 'loss'");
  bad("step,loss\n1,2\n", "no column named 'rms'");
  bad("step,loss,rms\n1,2\n", "line 2: 2 fields, expected 3");
  bad("step,loss,rms\n1,2,3\n1,2,3\n", "does not increase");
  bad("step,loss,rms\n1,two,3\n", "line 2 column loss");
  bad("step,loss,rms\n-1,2,3\n", "line 2 column step");
}
