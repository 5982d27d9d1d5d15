// The magnitude range of the language model's matmul inputs (reports/lm/lm_model.hpp's
// OperandHistogram, tallied in the lm-mantissa section's fp32 runs) against the exponent limits
// of masked ExMy with M = 7 ("To FP8 and back again" (Lee et al., 2024), section 3.2 and figure
// 5; docs/SEMANTICS.md 2.1): for E bits, bias = 2^(E-1) - 1, max = (2 - 2^-7) 2^bias and min
// normal = 2^(1 - bias). The paper's E7M7 ablation clamps above max (outer) and below min normal
// (inner); whether either clamp acts at all depends on the model's range, so the section reads
// that range first and runs the ablation at the width where the outer clamp binds
// (binding_width).
#pragma once

#include <string>
#include <vector>

#include "reports/lm/lm_model.hpp"

namespace exmy::reports::lm {

// The exponent widths the section tallies: 2 .. 8, every width the masking defines (docs/
// SEMANTICS.md 2.1); E8M7 is bf16's range, E7M7 the paper's, E2M7 (max 3.98, min normal 1) the
// narrowest.
inline constexpr int kRangeMinExp = 2, kRangeMaxExp = 8;

// `from` added into `into`, bin by bin.
void add_histogram(OperandHistogram& into, const OperandHistogram& from);
// Every operand of one pass (or of all passes: pass < 0) summed.
OperandHistogram pass_histogram(const RangeHistograms& r, int pass);

// A histogram's elements in E's limit regions at M = 7, the regions MaskLimitCounts tallies
// (docs/SEMANTICS.md 2.1): above_max = |x| > max, inf included; below_min_normal = 0 < |x| <
// min normal; NaN and +-0 in neither.
struct LimitTally {
  int exp_bits = 0, bias = 0;
  double max = 0, min_normal = 0;
  long long elements = 0, zeros = 0, nonfinite = 0, above_max = 0, below_min_normal = 0;
  double above_share() const;  // of elements; NaN when there are none
  double below_share() const;
};
LimitTally limit_tally(const OperandHistogram& h, int exp_bits);

// Whether t's outer clamp binds: above_max > 0 and above_max >= min_share * elements (compared
// in integers, the product rounded up, so no share's rounding decides).
bool outer_binds(const LimitTally& t, double min_share);
// The width of the section's inner/outer ablation: the widest E in tallies (each a
// limit_tally of the fp32 runs' histogram, any order) whose share above max is at least
// min_share; when none reaches it, the narrowest E (the outer clamp binds most there, and the
// verdict says whether it acted at all). A pure function of integer tallies.
int binding_width(const std::vector<LimitTally>& tallies, double min_share);
// The section's min_share: one matmul input in 10^4 above max over the fp32 runs. The paper's
// E7M7 outer clamp acted on TinyLlama's rare large values; a share this size is a few thousand
// clamped elements per run of the --quick configuration, present in every step's operands rather
// than in one outlier batch, and is chosen from the range data alone (before any ablation run).
inline constexpr double kBindShare = 1e-4;

// CSV bodies of the section's operand_range.csv (per pass "all", fwd, dgrad, wgrad and E in
// kRangeMinExp..kRangeMaxExp: the tallies, shares, and whether E is the ablation's width) and
// operand_hist.csv (per site, pass and operand, the non-empty binades with their M = 7 tops).
std::string operand_range_csv(const RangeHistograms& r, int ablation_exp);
std::string operand_hist_csv(const RangeHistograms& r);

}  // namespace exmy::reports::lm
