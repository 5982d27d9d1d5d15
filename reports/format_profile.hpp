// Section 3 computations: per-format error profiles measured with the native engine next to
// their closed forms (docs/SEMANTICS.md 14.3).
#pragma once

#include <string>
#include <vector>

#include "sim/native/float_format.hpp"

namespace exmy::reports {

struct FormatLimits {
  std::string name;
  FloatFormat fmt;
  double max = 0, min_normal = 0, min_positive = 0;
  double decades_total = 0;   // log10(max / min_positive)
  double decades_normal = 0;  // log10(max / min_normal)
  double unit_roundoff = 0;   // u = 2^-(M+1) (rne)
  double sharp_bound = 0;     // u / (1 + u): the largest relative error rne attains
};
FormatLimits format_limits(const std::string& name, const FloatFormat& f);

// Relative error of rne rounding over one binade [2^e, 2^(e+1)) (points above max excluded).
struct BinadeProfile {
  int e = 0;
  bool subnormal = false;  // the binade lies below 2^emin (grid spacing fixed at 2^(emin - M))
  int points = 0;
  bool has_worst_point = false;  // the first midpoint 2^e + q/2 is <= max (not in a top
                                 // binade cut short by max, e.g. e8m0fnu's 2^127)
  double max_rel = 0;            // measured max over the grid plus the binade's first midpoint
  double mean_rel = 0;           // measured mean over the uniform grid
  double bound = 0;              // closed form: (q/2) / (2^e + q/2), q = 2^(max(e, emin) - M)
  double mean_approx = 0;        // closed-form approximation (q/4) ln2 / 2^e
};
// Binades from the smallest positive value's to the largest finite's. `grid` uniform points a
// binade: x_j = 2^e (1 + (j + 1/2) / grid). Formats wider than 32 bits are not profiled.
std::vector<BinadeProfile> binade_profiles(const FloatFormat& f, int grid);

// Stochastic rounding sr:R of x = 1 + (T0 + f) 2^-M (T0 = 1), measured exactly by enumerating
// all 2^R random words through native::convert; in units of the quantum 2^-M.
struct SrPoint {
  double f = 0;            // the residual fraction
  double bias_ulp = 0;     // E[x^] - x, measured
  double var_ulp2 = 0;     // Var[x^], measured
  double bias_closed = 0;  // floor(f 2^R) / 2^R - f
  double var_closed = 0;   // p (1 - p), p = floor(f 2^R) / 2^R
  double rne_err_ulp = 0;  // rne(x) - x
};
std::vector<SrPoint> sr_profile(const FloatFormat& f, int R, const std::vector<double>& fracs);

// n residual fractions in (0, 1) with 40 significant bits: frac((j + 1/2) * golden ratio),
// truncated to a multiple of 2^-40 (so x is exact in fp64 for M <= 12).
std::vector<double> sr_fractions(int n);

}  // namespace exmy::reports
