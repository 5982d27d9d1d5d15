// The block-scaled variance experiment (`exmy report`, section mx-variance; docs/SEMANTICS.md
// 14.8): Var(d) of d = <u^, v^> - <u, v> against k, block size and scale format for MX (E8M0
// scales) and NVFP4 (E4M3 scales, one or two levels), quantized by sim/quant (what `exmy quantize
// --scheme mx|nvfp4` runs), beside the closed forms of reports/mx_variance_law.hpp.
#pragma once

#include <string>
#include <vector>

#include "reports/mx_variance_law.hpp"
#include "reports/report_context.hpp"
#include "reports/variance_config.hpp"
#include "reports/variance_stats.hpp"

namespace exmy::reports {

struct MxVarScheme {
  std::string name;  // "mx:e4m3fn/32", "nvfp4/16", "nvfp4-1l/16"
  std::string elem;  // element format: e4m3fn, e5m2, e2m1fn
  BlockScaleKind scale = BlockScaleKind::e8m0_floor;
  int block = 32;
};
// "e8m0", "e4m3" (one level), "e4m3+fp32" (two levels).
const char* scale_format_name(BlockScaleKind k);

struct MxVarConfig {
  std::vector<int> ks;  // multiples of every block size
  int trials = 0;
  int rows = 8;  // U and V are rows x k: rows^2 inner products a trial
  std::vector<InputDist> dists;
  std::vector<MxVarScheme> schemes;
};
MxVarConfig mx_variance_config(bool quick, int tiny);

struct MxVarCell {
  InputDist dist{};
  int scheme = 0;
  int k = 0;
  long long samples = 0;  // trials * rows^2
  double var_d = 0, var_uv = 0, nsr = 0;
  double s2 = 0, c = 0, sigma2 = 0;  // per element, both operands pooled
  Interval var_d_ci, nsr_ci, s2_ci;
  std::vector<double> rep_var_d, rep_nsr;  // bootstrap replicates (trials resampled)
  ElementMoments closed;                   // the law's moments for this cell
  double var_d_closed = 0, nsr_closed = 0;
};

struct MxVarResults {
  MxVarConfig config;
  int replicates = 0;
  std::vector<MxVarCell> cells;  // dist-major, then k, then scheme
  const MxVarCell* find(InputDist d, const std::string& scheme, int k) const;
};

// The law of a cell (tensor_elements = rows k for the two-level scale).
BlockLaw mx_law(const MxVarScheme& s, InputDist d, int rows, int k);

// Runs the Monte Carlo and the closed forms. `laws` false: closed forms left 0 (tests).
MxVarResults run_mx_variance(const ReportContext& ctx, const MxVarConfig& cfg, bool laws = true);

// Geometric mean over k of Var(d) / Var_closed(d) for (d, scheme), with its 95% interval
// (replicate b of every k gives one mean); `closed` replaces the cells' closed forms when not
// empty (one per k, the config's order): a test plants wrong laws through it.
struct LawCheck {
  double ratio = 0;
  Interval ci;
  bool ok = false;
};
LawCheck mx_law_check(const MxVarResults& r, InputDist d, const std::string& scheme,
                      const std::vector<double>& closed = {});
// The verdict of a check: "agrees" when the interval holds 1, "agrees within 3%" when the ratio
// is within 3% of it, else "disagrees".
std::string mx_law_verdict(const LawCheck& c);

}  // namespace exmy::reports
