// docs/SEMANTICS.md 9.2.4 on exact values: torch.optim.NAdam on the ATen CPU kernels, the CUDA
// kernels and foreach=True on CUDA, storage T = fp32, bf16 or fp16. Written from the document;
// shares nothing with sim/native. states: exp_avg, exp_avg_sq. h.extra: [0] momentum_decay,
// [1] decoupled_weight_decay, [2] maximize. The host scalars are CPython doubles (pow correctly
// rounded here); mu_product the fp32 product RN32(mu_1) ⊗ ... ⊗ RN32(mu_t).
#include <stdexcept>

#include "sim/oracle/steps/family_table.hpp"

namespace exmy::oracle::steps {
namespace {

Real py(double x) {
  return Real::of_double(x);
}

// mu_k = β1 · (1 − 0.5 · 0.96^(k · ψ)) in fp64
Real mu_of(double beta1, double psi, double k) {
  const Real p = pow(F64, py(0.96), mul(F64, py(k), py(psi)));
  return mul(F64, py(beta1), sub(F64, py(1.0), mul(F64, py(0.5), p)));
}

void nadam_step(const FamilyHyper& h, const FloatFormat& T, long t, Tensor& p, const Tensor& g,
                std::vector<Tensor*>& states) {
  if (states.size() != 2) throw std::logic_error("nadam oracle: two state arrays expected");
  Tensor& m = *states[0];
  Tensor& v = *states[1];
  const bool cpu = h.kernels == Kernels::cpu, foreach = h.kernels == Kernels::cuda_foreach;
  const bool decoupled = h.extra[1] != 0.0, maximize = h.extra[2] != 0.0, has_wd = h.wd != 0.0;
  const double psi = h.extra[0];
  const Real one = py(1.0), half = py(0.5), lr = py(h.lr);
  const Real tt = py(static_cast<double>(t));
  const Real bc2 = sub(F64, one, pow(F64, py(h.beta2), tt));
  Real mp = one;  // fp32 tensor
  for (long k = 1; k <= t; ++k) {
    mp = mul(F32, mp, round(F32, mu_of(h.beta1, psi, static_cast<double>(k))));
  }
  const Real mu = mu_of(h.beta1, psi, static_cast<double>(t));
  const Real mun = mu_of(h.beta1, psi, static_cast<double>(t + 1));
  // c_g = RN32(−lr · (1 − μ) / (1 − mp)), c_m = RN32((−lr · μ') / (1 − mp · μ'))
  const Real cg = round(F32, div(F64, mul(F64, neg(lr), sub(F64, one, mu)), sub(F64, one, mp)));
  const Real cm = round(F32, div(F64, mul(F64, neg(lr), mun), sub(F64, one, mul(F64, mp, mun))));
  const Real decay = round(F32, sub(F64, one, mul(F64, lr, py(h.wd))));
  const Real lambda = round(F32, py(h.wd)), e = round(F32, py(h.eps));
  const Real w1 = round(F32, sub(F64, one, py(h.beta1))), w1m1 = sub(F32, w1, one);
  const Real b2 = round(F32, py(h.beta2)), w2 = round(F32, sub(F64, one, py(h.beta2)));
  const Real c_bc2 = round(F32, bc2), inv_bc2 = round(F32, div(F64, one, bc2));
  const Real bc2s = round(F32, pow(F64, bc2, half));
  const auto scalar = [&](const Real& x) { return cpu ? round(T, x) : x; };
  for (std::size_t i = 0; i < p.size(); ++i) {
    const bool tail = cpu && cpu_scalar_tail(i, p.size(), T);
    Real gi = round(T, g[i]);
    if (maximize) gi = neg(gi);
    if (has_wd) {
      if (decoupled) {
        p[i] = round(T, mul(F32, p[i], decay));
      } else {
        gi = cpu_add_alpha(gi, p[i], scalar(lambda), T, tail);
      }
    }
    const Real d = sub(F32, gi, m[i]);
    m[i] = round(T, lt(abs(w1), half) ? fma(F32, w1, d, m[i]) : fma(F32, w1m1, d, gi));
    v[i] = round(T, mul(F32, v[i], b2));
    v[i] = round(T, torch_addcmul(v[i], gi, gi, w2, cpu));
    Real den;
    if (foreach) {
      den = round(T, sqrt(F32, v[i]));
      den = round(T, div(F32, den, bc2s));
      den = round(T, add(F32, den, e));
    } else {
      den = round(T, cpu ? div(F32, v[i], c_bc2) : mul(F32, v[i], inv_bc2));
      den = round(T, sqrt(F32, den));
      den = round(T, add(F32, den, scalar(e)));
    }
    for (const auto& [x, c] : {std::pair<const Real&, const Real&>{gi, cg}, {m[i], cm}}) {
      p[i] = round(T, cpu ? add(F32, p[i], div(F32, mul(F32, c, x), den))
                          : fma(F32, c, div(F32, x, den), p[i]));
    }
  }
}

}  // namespace

EXMY_ORACLE_FAMILY(nadam){"nadam", nadam_step};

}  // namespace exmy::oracle::steps
