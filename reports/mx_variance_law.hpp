// Closed forms for block-scaled quantization (MX: E8M0 scales; NVFP4: E4M3 scales, one or two
// levels): the per-element error moments E[e^2] and E[e x] of a block of B i.i.d. inputs, from
// the law of the block's absmax and the scale's rounding, and from them Var(d) of k products
// (docs/SEMANTICS.md 14.8 derives them). Written from the formats' definitions (the element and
// scale grids are enumerated here from E, M, bias and the largest finite value), not from
// sim/quant, so that the report's closed-form check compares two independent computations.
#pragma once

#include <vector>

namespace exmy::reports {

// An element grid: a sign-symmetric float format with subnormals, rounded to nearest even and
// saturated at fmax (what MX's satfinite and NVFP4's clamp to +-6 do).
struct ElemGrid {
  int man_bits = 0;
  int emin = 0;  // exponent of the smallest normal (1 - bias)
  int emax = 0;  // exponent of the largest normal (MX's emax_elem)
  double fmax = 0;
};
ElemGrid elem_grid(const char* name);  // "e4m3fn", "e5m2", "e2m1fn" (std::logic_error otherwise)
// RNE onto the grid with saturation, odd in y.
double grid_round(const ElemGrid& g, double y);

enum class BlockScaleKind {
  e8m0_floor,      // OCP MX: S = 2^(floor(log2 a) - emax_elem)
  e4m3,            // NVFP4 one level: S = E4M3(clamp(a / fmax_elem, 2^-6, 448))
  e4m3_two_level,  // NVFP4 two levels: S = pts E4M3(clamp(a / (fmax_elem pts), 2^-6, 448)),
                   // pts = A / (448 fmax_elem), A the tensor's absmax
};

struct BlockLaw {
  ElemGrid elem;
  BlockScaleKind scale = BlockScaleKind::e8m0_floor;
  int block = 32;
  int student_nu = 0;          // 0: N(0, 1) inputs; 4: Student-t, nu = 4 (variance 2)
  double tensor_elements = 0;  // e4m3_two_level: the elements whose absmax A sets the level
  int tensor_quantiles = 16;   // e4m3_two_level: A averaged over this many quantiles of its law
  int x_points = 512;          // quadrature points per octave of |x|
  // e8m0_floor: the inputs are 2^phase X (phase in [0, 1)); the moments returned are those of
  // X's quantization error divided by 2^(2 phase), so that they compare with phase 0. E8M0
  // scaling is invariant under powers of two only: the phase moves the absmax law within the
  // octave. (E4M3 two-level scales are invariant under any factor: pts follows the tensor.)
  double phase = 0;
  // Test knob (a planted wrong law must fail the check): the element grid's emax used for the
  // scale differs from the grid's own by this much.
  int emax_shift = 0;
};

struct ElementMoments {
  double s2 = 0;      // E[e^2], e = x^ - x
  double c = 0;       // E[e x]
  double sigma2 = 0;  // E[x^2]
};

ElementMoments block_error_moments(const BlockLaw& law);

// Var(d) for d = <u^, v^> - <u, v> of k products of independent operands with these moments
// (both sign-symmetric): k (s_u^2 sig_v^2 + s_v^2 sig_u^2 + s_u^2 s_v^2 + 2 c_u c_v
// + 2 s_u^2 c_v + 2 s_v^2 c_u). Elements of one block share their scale, but their product
// terms are uncorrelated (flipping one input's sign flips its term only).
double var_d_closed(const ElementMoments& u, const ElementMoments& v, int k);

// P(|X| > x) for N(0, 1) (nu = 0) or Student-t nu = 4, and the density of |X|.
double abs_tail(double x, int nu);
double abs_density(double x, int nu);

}  // namespace exmy::reports
