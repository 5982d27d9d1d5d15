// Closed forms of block-scaled quantization error (docs/SEMANTICS.md 14.8).
#include "reports/mx_variance_law.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace exmy::reports {

ElemGrid elem_grid(const char* name) {
  const std::string n = name;
  // OCP MX v1.0 table of element formats: E, M, bias; fmax the largest finite value.
  if (n == "e4m3fn") return {3, -6, 8, 448.0};
  if (n == "e5m2") return {2, -14, 15, 57344.0};
  if (n == "e2m1fn") return {1, 0, 2, 6.0};
  throw std::logic_error("elem_grid: no grid for '" + n + "'");
}

double grid_round(const ElemGrid& g, double y) {
  const double a = std::fabs(y);
  if (a >= g.fmax) return std::copysign(g.fmax, y);
  int e = 0;
  std::frexp(a, &e);  // a = f 2^e, f in [1/2, 1): floor(log2 a) = e - 1
  const int ex = std::max(e - 1, g.emin);
  const double step = std::ldexp(1.0, ex - g.man_bits);
  double q = std::nearbyint(a / step) * step;  // ties to the even multiple: even mantissa
  if (q > g.fmax) q = g.fmax;
  return std::copysign(q, y);
}

double abs_tail(double x, int nu) {
  if (nu == 0) return std::erfc(x / std::sqrt(2.0));
  // Student-t, nu = 4: P(T > t) = (1/4) c^2 (3 - c) with c = q / (1 + t sqrt(q) / 2),
  // q = 1 / (1 + t^2 / 4) (the CDF 1/2 + (3/8) y (1 - y^2/3) ... in a cancellation-free form).
  const double q = 1.0 / (1.0 + x * x / 4.0);
  const double c = q / (1.0 + x * std::sqrt(q) / 2.0);
  return 0.5 * c * c * (3.0 - c);
}

double abs_density(double x, int nu) {
  if (nu == 0) return std::sqrt(2.0 / M_PI) * std::exp(-0.5 * x * x);
  // 2 * Gamma(5/2) / (sqrt(4 pi) Gamma(2)) (1 + x^2/4)^(-5/2) = (3/4) (1 + x^2/4)^(-5/2).
  return 0.75 * std::pow(1.0 + x * x / 4.0, -2.5);
}

namespace {

// A scale that is piecewise constant in the block absmax a: val[0] for a < bp[0], val[j + 1]
// for bp[j] <= a < bp[j + 1], val[n] for a >= bp[n - 1].
struct ScaleSteps {
  std::vector<double> bp, val;
};

ElemGrid e4m3_grid() {
  return elem_grid("e4m3fn");
}

// Quantizing 2^phase X with S(2^phase a) is 2^phase times quantizing X with S(2^phase a) /
// 2^phase: steps at 2^(j - phase), scale 2^(j - phase - emax).
ScaleSteps e8m0_steps(int emax, double phase) {
  ScaleSteps s;
  s.val.push_back(std::exp2(-81 - phase - emax));
  for (int j = -80; j <= 40; ++j) {
    s.bp.push_back(std::exp2(j - phase));
    s.val.push_back(std::exp2(j - phase - emax));
  }
  return s;
}

// S(a) = pts * E4M3(clamp(a / (div pts), 2^-6, 448)): the positive e4m3fn values v_i >= 2^-6,
// each held for a / (div pts) between the midpoints around it.
ScaleSteps e4m3_steps(double div, double pts) {
  const ElemGrid g = e4m3_grid();
  std::vector<double> v;
  for (int e = g.emin; e <= g.emax; ++e) {
    for (int m = 0; m < 8; ++m) {
      const double x = std::ldexp(1.0 + m / 8.0, e);
      if (x <= g.fmax) v.push_back(x);
    }
  }
  ScaleSteps s;
  s.val.push_back(pts * v.front());
  for (std::size_t i = 0; i + 1 < v.size(); ++i) {
    s.bp.push_back(div * pts * 0.5 * (v[i] + v[i + 1]));
    s.val.push_back(pts * v[i + 1]);
  }
  return s;
}

// E[e^2] and E[e x] over x of the inputs' law, the other block - 1 elements' absmax M' with
// P(M' <= m) = (1 - tail(m))^(block - 1), a = max(|x|, M'), S = steps(a). With trunc > 0 the
// inputs' law is truncated to |x| < trunc (the elements of a tensor other than its absmax).
ElementMoments integrate(const ElemGrid& g, const ScaleSteps& st, int block, int nu, int points,
                         double trunc = 0) {
  const std::size_t n = st.bp.size();
  const double log_h_trunc = trunc > 0 ? std::log1p(-abs_tail(trunc, nu)) : 0.0;
  std::vector<double> gb(n + 1);
  for (std::size_t j = 0; j < n; ++j) {
    if (trunc > 0 && st.bp[j] >= trunc) {
      gb[j] = 1.0;
      continue;
    }
    const double t = abs_tail(st.bp[j], nu);
    gb[j] = std::exp((block - 1) * (std::log1p(-std::min(t, 1.0 - 1e-300)) - log_h_trunc));
  }
  gb[n] = 1.0;
  // Intervals with mass: from the last bp with G < 1e-20 to the first with G >= 1 - 1e-16.
  std::size_t jlo = 0, jhi = n;
  while (jlo + 1 < n && gb[jlo + 1] < 1e-20) ++jlo;
  while (jhi > 0 && gb[jhi - 1] >= 1.0 - 1e-16) --jhi;
  // Midpoint rule in log2 |x| with `points` points per octave (the same offsets in every
  // octave: the grids and E8M0 scales repeat per octave), from 2^-24 (below it the error is
  // -x, of mass < 1e-21) to 2^4 (N(0,1)), 2^14 (Student-t 4: the tail of E[x^2] above 2^14 is
  // 12 / 2^28) or the truncation point.
  const double ulo = -24.0;
  const double uhi = trunc > 0 ? std::log2(trunc) : (nu == 0 ? 4.0 : 14.0);
  const double du = 1.0 / points;
  const int npts = static_cast<int>(std::ceil((uhi - ulo) * points));
  const double dens_scale = std::exp(-log_h_trunc);
  ElementMoments m;
  for (int i = 0; i < npts; ++i) {
    const double u = ulo + (i + 0.5) * du;
    if (u > uhi) break;
    const double x = std::exp2(u);
    // P(|X| in dx), dx = x ln2 du; the last point's cell is cut at the truncation point.
    const double cell = std::min(du, uhi - (ulo + i * du));
    const double w = abs_density(x, nu) * dens_scale * x * M_LN2 * cell;
    // j1: the first step whose lower breakpoint is above x.
    const std::size_t j1 =
        static_cast<std::size_t>(std::upper_bound(st.bp.begin(), st.bp.end(), x) - st.bp.begin());
    double e2 = 0, ex = 0;
    auto add = [&](double p, double s) {
      if (p <= 0) return;
      const double e = s * grid_round(g, x / s) - x;
      e2 += p * e * e;
      ex += p * e * x;
    };
    // a = |x| or M' in [x, bp[j1]): the scale of x itself.
    std::size_t j = j1;
    if (j1 >= jlo) {
      add(gb[j1], st.val[j1]);
    } else {
      j = jlo;
    }
    for (; j < n && j <= jhi; ++j) add(gb[j + 1] - gb[j], st.val[j + 1]);
    m.s2 += w * e2;
    m.c += w * ex;
    m.sigma2 += w * x * x;
  }
  return m;
}

// The absmax of n i.i.d. |X| at probability p: tail(A) = -expm1(log(p) / n), by bisection.
double max_quantile(double n, double p, int nu) {
  const double target = -std::expm1(std::log(p) / n);
  double lo = 0.0, hi = nu == 0 ? 64.0 : 1e8;
  for (int it = 0; it < 200; ++it) {
    const double mid = 0.5 * (lo + hi);
    if (abs_tail(mid, nu) > target) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return 0.5 * (lo + hi);
}

}  // namespace

ElementMoments block_error_moments(const BlockLaw& law) {
  const ElemGrid& g = law.elem;
  const double div = g.fmax * std::ldexp(1.0, law.emax_shift);
  switch (law.scale) {
    case BlockScaleKind::e8m0_floor:
      return integrate(g, e8m0_steps(g.emax + law.emax_shift, law.phase), law.block, law.student_nu,
                       law.x_points);
    case BlockScaleKind::e4m3:
      return integrate(g, e4m3_steps(div, 1.0), law.block, law.student_nu, law.x_points);
    case BlockScaleKind::e4m3_two_level: {
      // pts = A / (448 fmax), A the absmax of the tensor's n elements. Given A, the other n - 1
      // elements are i.i.d. from the law truncated to |x| < A. An element lies in the block
      // that holds A with probability B / n: that block's scale is exactly A / fmax (its code
      // is 448), and the element is A itself (error 0) with probability 1 / B. Otherwise its
      // block is B truncated elements under the E4M3 step scale. A is averaged over the
      // midpoints of `tensor_quantiles` equal-probability bins of its law.
      const double n = std::max(law.tensor_elements, static_cast<double>(law.block));
      const double w = law.block / n;
      const double wm = w * (law.block - 1) / law.block;  // a non-max element of A's block
      ElementMoments acc;
      const int q = std::max(1, law.tensor_quantiles);
      for (int i = 0; i < q; ++i) {
        const double a = max_quantile(n, (i + 0.5) / q, law.student_nu);
        ElementMoments m;
        if (w < 1) {
          m = integrate(g, e4m3_steps(div, a / (448.0 * g.fmax)), law.block, law.student_nu,
                        law.x_points, a);
        }
        ScaleSteps fixed;
        fixed.val.push_back(a / div);
        const ElementMoments e = integrate(g, fixed, 1, law.student_nu, law.x_points, a);
        acc.s2 += ((1 - w) * m.s2 + wm * e.s2) / q;
        acc.c += ((1 - w) * m.c + wm * e.c) / q;
      }
      // E[x^2] of the untruncated law (the quantile average of A^2 misses its heavy tail).
      acc.sigma2 = law.student_nu == 0 ? 1.0 : law.student_nu / (law.student_nu - 2.0);
      return acc;
    }
  }
  return {};
}

double var_d_closed(const ElementMoments& u, const ElementMoments& v, int k) {
  return k * (u.s2 * v.sigma2 + v.s2 * u.sigma2 + u.s2 * v.s2 + 2 * u.c * v.c + 2 * u.s2 * v.c +
              2 * v.s2 * u.c);
}

}  // namespace exmy::reports
