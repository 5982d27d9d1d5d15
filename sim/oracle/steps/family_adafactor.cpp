// docs/SEMANTICS.md 9.2.8 on exact values: torch.optim.Adafactor's one-dimensional path
// (`variance`) on the ATen CPU kernels, storage T = fp32, bf16 or fp16 (every tensor op computes
// in fp32 and rounds to T; the norms in the orders of 9.2.8). The campaign's tensors are
// one-dimensional, so the factored path (row_var, col_var) is not run here; it is checked against
// torch itself (bench/peers/torch_optim_vs_exmy.py --adafactor). Written from the document;
// shares nothing with sim/native. states: variance. h.extra: [0] beta2_decay, [1] eps1 (NaN:
// None), [2] eps2, [3] d, [4] maximize.
#include <cmath>
#include <stdexcept>

#include "sim/oracle/steps/family_table.hpp"

namespace exmy::oracle::steps {
namespace {

Real py(double x) {
  return Real::of_double(x);
}
bool is_f16(const FloatFormat& T) {
  return T.exp_bits == 5;
}
bool is_bf16(const FloatFormat& T) {
  return T.exp_bits == 8 && T.man_bits == 7;
}

// ‖x‖₂ rounded to T (9.2.8): n = 1: |x|; fp32/bf16: eight fp32 lanes over vectors of 8 (bf16: 16,
// the lower then the upper eight), the lanes summed in order, then the m tail elements in order,
// the first 4⌊m/4⌋ as b ⊕ (x ⊗ x), the rest as fma(x, x, b); fp16: b ⊕ (x ⊗ x) in order.
Real norm2(const Tensor& x, const FloatFormat& T) {
  const std::size_t n = x.size();
  if (n == 1) return round(T, abs(x[0]));
  if (is_f16(T)) {
    Real b;
    for (const Real& v : x) b = add(F32, b, mul(F32, v, v));
    return round(T, sqrt(F32, b));
  }
  const std::size_t vec = is_bf16(T) ? 16 : 8;
  std::vector<Real> lane(8);
  std::size_t d = 0;
  for (; d + vec <= n; d += vec) {
    for (std::size_t j = 0; j < vec; ++j)
      lane[j % 8] = add(F32, lane[j % 8], mul(F32, x[d + j], x[d + j]));
  }
  Real b = lane[0];
  for (int j = 1; j < 8; ++j) b = add(F32, b, lane[j]);
  const std::size_t m = n - d;
  for (std::size_t k = 0; k < m; ++k) {
    const Real& v = x[d + k];
    b = k < m / 4 * 4 ? add(F32, b, mul(F32, v, v)) : fma(F32, v, v, b);
  }
  return round(T, sqrt(F32, b));
}

// The fp64 value of an exactly held Real (a member of fp32 after `round`).
double to_double(const Real& r) {
  const std::uint64_t c = r.code(F64);
  double d;
  static_assert(sizeof d == sizeof c);
  __builtin_memcpy(&d, &c, sizeof d);
  return d;
}

void adafactor_step(const FamilyHyper& h, const FloatFormat& T, long t, Tensor& p, const Tensor& g,
                    std::vector<Tensor*>& states) {
  if (h.kernels != Kernels::cpu) throw std::logic_error("adafactor oracle: torch-cpu only");
  if (states.size() != 1) throw std::logic_error("adafactor oracle: expected variance only");
  Tensor& var = *states[0];
  const std::size_t n = p.size();
  if (n == 0) return;
  // Scalars, CPython doubles: 1 − β̂₂ = t^τ, ρ = min(lr, 1 / t^0.5), eps1 = finfo(T).eps if None.
  const double tf = static_cast<double>(t);
  const double omb = to_double(pow(F64, py(tf), py(h.extra[0])));
  const double root_t = to_double(pow(F64, py(tf), py(0.5)));
  const double inv = to_double(div(F64, py(1.0), py(root_t)));
  const double rho = inv < h.lr ? inv : h.lr;
  const double eps1 = std::isnan(h.extra[1]) ? (is_f16(T)    ? 0x1p-10
                                                : is_bf16(T) ? 0x1p-7
                                                             : 0x1p-23)
                                             : h.extra[1];
  const double sqrt_n = to_double(pow(F64, py(static_cast<double>(n)), py(0.5)));
  // α = max(eps2, ‖p‖₂ / √n) · ρ (fp64), before the decay
  const double pn = to_double(norm2(p, T));
  const double q = to_double(div(F64, py(pn), py(sqrt_n)));
  const double alpha = to_double(mul(F64, py(q > h.extra[2] ? q : h.extra[2]), py(rho)));
  // p ← T(p ⊗ RN32(1 − lr·wd))
  if (h.wd != 0.0) {
    const Real dec = round(F32, sub(F64, py(1.0), mul(F64, py(h.lr), py(h.wd))));
    for (Real& x : p) x = round(T, mul(F32, x, dec));
  }
  const Real w = round(F32, py(omb)), one = py(1.0);
  const Real wm1 = sub(F32, w, one);
  const Real lo = round(T, round(F32, mul(F64, py(eps1), py(eps1))));
  Tensor gg(n), u(n);
  for (std::size_t i = 0; i < n; ++i) {
    gg[i] = round(T, g[i]);
    if (h.extra[4] != 0.0) gg[i] = neg(gg[i]);
    // v ← T(lerp(v, T(g ⊗ g), w))
    const Real sq = round(T, mul(F32, gg[i], gg[i]));
    const Real dd = sub(F32, sq, var[i]);
    var[i] = round(T, lt(abs(w), py(0.5)) ? fma(F32, w, dd, var[i]) : fma(F32, wm1, dd, sq));
    // u ← T(T(1 ⊘ √max(v, lo)) ⊗ g); the scalar tail of a 16-bit T rounds √ to T first
    const Real v = lt(var[i], lo) ? lo : var[i];
    const bool tail = cpu_scalar_tail(i, n, T) && T.total_bits() == 16;
    const Real r = sqrt(F32, v);
    const Real rs = round(T, div(F32, one, tail ? round(T, r) : r));
    u[i] = round(T, mul(F32, rs, gg[i]));
  }
  // denom = max(1, ‖u‖₂ / (√n · d)); p ← T(fma(u, T(−α / denom), p)) (the tails: 9.2.2)
  const double un = to_double(norm2(u, T));
  const double r = to_double(div(F64, py(un), mul(F64, py(sqrt_n), py(h.extra[3]))));
  const double denom = r > 1.0 ? r : 1.0;
  const Real a = round(T, round(F32, neg(div(F64, py(alpha), py(denom)))));
  for (std::size_t i = 0; i < n; ++i) {
    p[i] = cpu_add_alpha(p[i], u[i], a, T, cpu_scalar_tail(i, n, T));
  }
}

}  // namespace

EXMY_ORACLE_FAMILY(adafactor){"adafactor", adafactor_step};

}  // namespace exmy::oracle::steps
