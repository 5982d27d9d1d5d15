// The lm-mantissa section's formats and the E7M7 ablation's verdict (mantissa_formats.hpp).
#include "reports/lm/mantissa_formats.hpp"

#include <algorithm>
#include <cmath>

#include "reports/output_files.hpp"

namespace exmy::reports::lm {

const char* outer_name(MaskOuter o) {
  return o == MaskOuter::clamp ? "clamp" : "keep";
}

const char* inner_name(MaskInner i) {
  switch (i) {
    case MaskInner::min:
      return "min";
    case MaskInner::zero:
      return "zero";
    case MaskInner::keep:
      return "keep";
  }
  return "?";
}

std::string MatmulFormat::mode_name() const {
  if (mode == CastMode::identity) return "fp32";
  return mode == CastMode::mask ? "mask" : "rne";
}

std::string MatmulFormat::name() const {
  if (mode == CastMode::identity) return "fp32";
  const std::string em = "e" + std::to_string(exp_bits) + "m" + std::to_string(man_bits);
  if (ablation) {
    return em + "_outer-" + outer_name(outer) + "_inner-" + inner_name(inner);
  }
  return mode_name() + "_" + em;
}

std::string MatmulFormat::variant() const {
  if (!ablation) return "";
  const bool oc = outer == MaskOuter::clamp;
  switch (inner) {
    case MaskInner::min:
      return oc ? "both clamped" : "inner only";
    case MaskInner::zero:
      return oc ? "outer clamp, inner flushed" : "inner flushed only";
    case MaskInner::keep:
      return oc ? "outer only" : "neither";
  }
  return "";
}

OperandCast MatmulFormat::cast() const {
  OperandCast c;
  c.mode = mode;
  c.exp_bits = exp_bits;
  c.man_bits = man_bits;
  c.outer = outer;
  c.inner = inner;
  return c;
}

std::vector<MatmulFormat> sweep_formats() {
  std::vector<MatmulFormat> f{{}};
  for (CastMode m : {CastMode::mask, CastMode::rne}) {
    for (int man = 3; man <= 7; ++man) {
      MatmulFormat x;
      x.mode = m;
      x.man_bits = man;
      // The sweep's masking: outer clamp to +-max, inner values kept (truncated).
      x.outer = MaskOuter::clamp;
      x.inner = MaskInner::keep;
      f.push_back(x);
    }
  }
  return f;
}

std::vector<MatmulFormat> ablation_formats(int exp_bits) {
  const std::pair<MaskOuter, MaskInner> v[] = {{MaskOuter::clamp, MaskInner::min},
                                               {MaskOuter::keep, MaskInner::min},
                                               {MaskOuter::clamp, MaskInner::keep},
                                               {MaskOuter::clamp, MaskInner::zero},
                                               {MaskOuter::keep, MaskInner::zero}};
  std::vector<MatmulFormat> f;
  for (const auto& [o, i] : v) {
    MatmulFormat x;
    x.mode = CastMode::mask;
    x.exp_bits = exp_bits;
    x.man_bits = 7;
    x.outer = o;
    x.inner = i;
    x.ablation = true;
    f.push_back(x);
  }
  return f;
}

double fisher_exact_two_sided(int a, int n1, int b, int n2) {
  // Given the margins (n1, n2 runs, a + b divergences), a is hypergeometric: P(a = x) =
  // C(n1, x) C(n2, k - x) / C(n1 + n2, k). The two-sided p sums every table no more probable
  // than the observed one (the usual definition; a relative slack of 1e-7 keeps ties of equal
  // probability together against rounding).
  const int k = a + b, n = n1 + n2;
  const auto lc = [](int m, int r) {
    return std::lgamma(m + 1.0) - std::lgamma(r + 1.0) - std::lgamma(m - r + 1.0);
  };
  const auto pr = [&](int x) { return std::exp(lc(n1, x) + lc(n2, k - x) - lc(n, k)); };
  const double p0 = pr(a);
  double p = 0;
  for (int x = std::max(0, k - n2); x <= std::min(k, n1); ++x) {
    const double q = pr(x);
    if (q <= p0 * (1 + 1e-7)) p += q;
  }
  return std::min(p, 1.0);
}

std::string ablation_verdict(int exp_bits, int div_outer, int div_inner, int runs,
                             const MeanCi& outer_minus_inner, long long outer_hits) {
  const std::string w = "E" + std::to_string(exp_bits) + "M7: ";
  if (outer_hits == 0) {
    return "inconclusive (" + w +
           "no matmul input of the outer-only runs exceeded its max, so the outer clamp never "
           "acted there at this scale)";
  }
  const double p = fisher_exact_two_sided(div_outer, runs, div_inner, runs);
  const std::string dv = "divergences " + std::to_string(div_outer) + " vs " +
                         std::to_string(div_inner) + " of " + std::to_string(runs) + " (Fisher p " +
                         fmt_g(p, 2) + ")";
  if (p < 0.05 && div_outer > div_inner) {
    return "consistent (" + w + "more divergences with the outer clamp only: " + dv + ")";
  }
  if (p < 0.05 && div_outer < div_inner) {
    return "inconsistent (" + w + "more divergences with the inner clamp only: " + dv + ")";
  }
  const MeanCi& m = outer_minus_inner;
  if (!std::isfinite(m.lo) || !std::isfinite(m.hi)) {
    return "inconclusive (" + w + dv + "; fewer than two seeds where neither run diverged)";
  }
  const std::string tail = div_outer == div_inner ? ")" : "; " + dv + ")";
  if (m.lo > 0) return "consistent (" + w + "outer only ends higher" + tail;
  if (m.hi < 0) return "inconsistent (" + w + "outer only ends lower" + tail;
  return "inconclusive (" + w + "interval contains 0" + tail;
}

}  // namespace exmy::reports::lm
