// The matmul-input formats of the lm-mantissa section (reports/lm_mantissa_section.cpp): the
// mantissa sweep of "To FP8 and back again" (2024), section 4.2 (masked E8M3..E8M7 against
// round-to-nearest-even at the same M, and fp32), and its inner/outer clamp ablation.
//
// The ablation. The paper simulates fewer exponent bits by thresholding magnitudes to the
// format's maximum and minimum (section 3.2, figure 5): the outer clamp acts on |x| > max, the
// inner one on 0 < |x| < min_normal. E7M7 with both clamps did not train; "models with only
// their inner exponent ranges clamped train normally while models with only their outer
// exponent ranges clamped do not" (section 4.2). In exmy's masking (docs/SEMANTICS.md 2.1) the
// outer rule is clamp (to +-max) or keep, the inner one min (to +-min_normal: the paper's
// threshold), zero (flush to +-0) or keep; EbM7: max = (2 - 2^-7) 2^bias, min_normal =
// 2^(1 - bias), bias = 2^(Eb-1) - 1 (E7: 2^63 and 2^-62, which no matmul input of the section's
// small model reaches, so the section runs the ablation at the width Eb where its outer clamp
// binds: reports/lm/operand_range.hpp). The variants: both clamped (clamp, min: the paper's
// E7M7 at Eb = 7), inner only (keep, min), outer only (clamp, keep), and the flushing inner rule
// with and without the outer clamp (clamp, zero; keep, zero). Neither clamp (keep, keep) equals
// the sweep's masked E8M7 on every finite value (keep, keep truncates to 7 mantissa bits at any
// Eb and never exceeds E8M7's max; they differ on inf only), so it is not run twice.
#pragma once

#include <string>
#include <vector>

#include "reports/lm/lm_model.hpp"
#include "reports/variance_stats.hpp"

namespace exmy::reports::lm {

struct MatmulFormat {
  CastMode mode = CastMode::identity;
  int exp_bits = 8, man_bits = 23;  // identity: fp32
  MaskOuter outer = MaskOuter::clamp;
  MaskInner inner = MaskInner::keep;
  bool ablation = false;  // an EbM7 ablation variant (else a sweep format)

  // fp32 | mask_e8m3 | rne_e8m5 | e7m7_outer-clamp_inner-min (ablation at Eb = 7)
  std::string name() const;
  // fp32 | mask | rne
  std::string mode_name() const;
  // The ablation's words for the variant ("both clamped", "inner only", ...); "" for the sweep.
  std::string variant() const;
  OperandCast cast() const;
};

const char* outer_name(MaskOuter o);  // clamp | keep
const char* inner_name(MaskInner i);  // min | zero | keep

// fp32, then masked E8M3..E8M7, then RNE E8M3..E8M7.
std::vector<MatmulFormat> sweep_formats();
// The five EbM7 variants above (Eb = exp_bits, 2..8), in that order: both, inner only, outer
// only, flush + outer, flush only.
std::vector<MatmulFormat> ablation_formats(int exp_bits);

// The ablation's verdict (a proxy row: the toy model stands in for the paper's TinyLlama). The
// paper's statement is tested as "outer only is worse than inner only", each arm `runs` seeds:
// divergence counts that differ at Fisher's exact test (two-sided p < 0.05: with 6 seeds a
// side, 5 vs 0, 6 vs 0 or 6 vs 1; more divergences with the outer clamp only: consistent;
// fewer: inconsistent), else the paired final eval loss of outer only minus inner only over the
// seeds where neither run diverged (lo > 0: consistent; hi < 0: inconsistent; else
// inconclusive; fewer than two such seeds: inconclusive). Every reason starts with the width,
// "EbM7: ", and names the divergence counts where they differ.
// When no matmul input of the outer-only runs exceeded the EbM7 max (outer_hits: their
// above-max tally; Eb = exp_bits) the clamp never acted there, so the runs cannot differ for
// the paper's reason: "inconclusive (...)". At an Eb narrower than the paper's the inner clamp
// may act on far more elements than the outer one; the verdict still tests only the paper's
// ordering (a proxy).
std::string ablation_verdict(int exp_bits, int div_outer, int div_inner, int runs,
                             const MeanCi& outer_minus_inner, long long outer_hits);
// Fisher's exact test, two-sided, of a of n1 against b of n2.
double fisher_exact_two_sided(int a, int n1, int b, int n2);

}  // namespace exmy::reports::lm
