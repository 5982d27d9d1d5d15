// docs/SEMANTICS.md 9.2.5 on exact values: torch.optim.RAdam on the ATen CPU kernels, the CUDA
// kernels and foreach=True on CUDA, storage T = fp32, bf16 or fp16. Written from the document;
// shares nothing with sim/native. states: exp_avg, exp_avg_sq. h.extra: [0]
// decoupled_weight_decay, [1] maximize. Host scalars: CPython doubles (pow correctly rounded).
#include <stdexcept>

#include "sim/oracle/steps/family_table.hpp"

namespace exmy::oracle::steps {
namespace {

Real py(double x) {
  return Real::of_double(x);
}

void radam_step(const FamilyHyper& h, const FloatFormat& T, long t, Tensor& p, const Tensor& g,
                std::vector<Tensor*>& states) {
  if (states.size() != 2) throw std::logic_error("radam oracle: two state arrays expected");
  Tensor& m = *states[0];
  Tensor& v = *states[1];
  const bool cpu = h.kernels == Kernels::cpu, foreach = h.kernels == Kernels::cuda_foreach;
  const bool decoupled = h.extra[0] != 0.0, maximize = h.extra[1] != 0.0, has_wd = h.wd != 0.0;
  const Real one = py(1.0), two = py(2.0), four = py(4.0), half = py(0.5), lr = py(h.lr);
  const Real tt = py(static_cast<double>(t));
  const Real b1t = pow(F64, py(h.beta1), tt), b2t = pow(F64, py(h.beta2), tt);
  const Real bc1 = sub(F64, one, b1t), bc2 = sub(F64, one, b2t);
  // ρ∞ = 2 / (1 − β2) − 1; ρt = ρ∞ − 2 · t · β2^t / bc2 (left to right, fp64)
  const Real rinf = sub(F64, div(F64, two, sub(F64, one, py(h.beta2))), one);
  const Real rt = sub(F64, rinf, div(F64, mul(F64, mul(F64, two, tt), b2t), bc2));
  const bool rect = gt(rt, py(5.0));
  Real r = py(0.0);
  if (rect) {
    const Real num = mul(F64, mul(F64, sub(F64, rt, four), sub(F64, rt, two)), rinf);
    const Real den = mul(F64, mul(F64, sub(F64, rinf, four), sub(F64, rinf, two)), rt);
    r = pow(F64, div(F64, num, den), half);
  }
  const Real c2_64 = pow(F64, bc2, half);
  const Real decay = round(F32, sub(F64, one, mul(F64, lr, py(h.wd))));
  const Real lambda = round(F32, py(h.wd)), e = round(F32, py(h.eps));
  const Real w1 = round(F32, sub(F64, one, py(h.beta1))), w1m1 = sub(F32, w1, one);
  const Real b2 = round(F32, py(h.beta2)), w2 = round(F32, sub(F64, one, py(h.beta2)));
  // single-tensor scalars
  const Real c_bc1 = round(F32, bc1), inv_bc1 = round(F32, div(F64, one, bc1));
  const Real lr32 = round(F32, lr), c2 = round(F32, c2_64), r32 = round(F32, r);
  // foreach: the signed step size (−0 when not rectified) and the unrectified step (−0 when)
  const Real fdiv = round(F32, neg(mul(F64, c2_64, div(F64, mul(F64, lr, r), bc1))));
  const Real fadd = round(F32, neg(div(F64, mul(F64, lr, py(rect ? 0.0 : 1.0)), bc1)));
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
    if (foreach) {
      Real b = round(T, sqrt(F32, v[i]));
      b = round(T, add(F32, b, e));
      b = round(T, div(F32, b, fdiv));
      b = round(T, div(F32, one, b));
      b = round(T, add(F32, b, fadd));
      p[i] = round(T, fma(F32, m[i], b, p[i]));  // addcmul value 1: fma(m, b, p)
      continue;
    }
    const Real bcm = round(T, cpu ? div(F32, m[i], c_bc1) : mul(F32, m[i], inv_bc1));
    Real x = round(T, mul(F32, bcm, lr32));
    if (rect) {
      Real a = round(T, sqrt(F32, v[i]));
      a = round(T, add(F32, a, scalar(e)));
      a = round(T, div(F32, one, a));
      a = round(T, mul(F32, a, c2));
      x = round(T, mul(F32, x, a));
      x = round(T, mul(F32, x, r32));
    }
    p[i] = round(T, sub(F32, p[i], x));
  }
}

}  // namespace

EXMY_ORACLE_FAMILY(radam){"radam", radam_step};

}  // namespace exmy::oracle::steps
