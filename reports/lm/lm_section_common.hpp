// What the two language-model sections (reports/lm8bit_section.cpp,
// reports/lm_mantissa_section.cpp) share: the instability rule of a run and the text of their quick
// verdicts and intervals.
#pragma once

#include <algorithm>
#include <cmath>
#include <string>

#include "reports/lm/lm_train.hpp"
#include "reports/output_files.hpp"
#include "reports/variance_stats.hpp"

namespace exmy::reports::lm {

// Unstable (diverged), as the 8-bit optimizers paper's table 3 counts runs that diverge or crash:
// a non-finite loss, a training loss above stop_loss (the run is stopped), or a last logged
// window more than 1 nat above the run's best window.
inline bool run_unstable(const TrainResult& r) {
  if (r.stopped || r.nonfinite || !std::isfinite(r.final_eval)) return true;
  double best = 1e300;
  for (double l : r.loss) best = std::min(best, l);
  return r.loss.empty() || r.loss.back() > best + 1.0;
}

// "word (why)" -> "word (preliminary: SIZE configuration; why)".
inline std::string preliminary_verdict(const std::string& verdict, const std::string& size) {
  const auto p = verdict.find(" (");
  const std::string w = p == std::string::npos ? verdict : verdict.substr(0, p);
  const std::string why =
      p == std::string::npos ? "" : "; " + verdict.substr(p + 2, verdict.size() - p - 3);
  return w + " (preliminary: " + size + " configuration" + why + ")";
}

// "mean [lo, hi]", two significant digits each.
inline std::string mean_ci_text(const MeanCi& m) {
  return fmt_g(m.mean, 2) + " [" + fmt_g(m.lo, 2) + ", " + fmt_g(m.hi, 2) + "]";
}

}  // namespace exmy::reports::lm
