// docs/SEMANTICS.md 9.2.3 on exact values: torch.optim.Adagrad on the ATen CPU kernels, the CUDA
// kernels and foreach=True on CUDA, storage T = fp32, bf16 or fp16 (every tensor op computes in
// fp32 and rounds to T). Written from the document; shares nothing with sim/native. states: sum.
// h.extra: [0] lr_decay, [1] initial_accumulator_value (the initial state, given), [2] maximize.
#include <stdexcept>

#include "sim/oracle/steps/family_table.hpp"

namespace exmy::oracle::steps {
namespace {

Real py(double x) {
  return Real::of_double(x);
}

void adagrad_step(const FamilyHyper& h, const FloatFormat& T, long t, Tensor& p, const Tensor& g,
                  std::vector<Tensor*>& states) {
  if (states.size() != 1) throw std::logic_error("adagrad oracle: one state array expected");
  Tensor& sum = *states[0];
  const bool cpu = h.kernels == Kernels::cpu, foreach = h.kernels == Kernels::cuda_foreach;
  const bool maximize = h.extra[2] != 0.0, has_wd = h.wd != 0.0;
  // clr = lr / (1 + (step - 1) · lr_decay) in fp64; the tensor ops see RN32(−clr)
  const Real one = py(1.0);
  const Real steps1 = sub(F64, py(static_cast<double>(t)), one);
  const Real clr = div(F64, py(h.lr), add(F64, one, mul(F64, steps1, py(h.extra[0]))));
  const Real nclr = round(F32, neg(clr));
  const Real lambda = round(F32, py(h.wd)), e = round(F32, py(h.eps));
  const auto scalar = [&](const Real& x) { return cpu ? round(T, x) : x; };
  for (std::size_t i = 0; i < p.size(); ++i) {
    const bool tail = cpu && cpu_scalar_tail(i, p.size(), T);
    Real gi = round(T, g[i]);
    if (maximize) gi = neg(gi);
    if (has_wd) gi = cpu_add_alpha(gi, p[i], scalar(lambda), T, tail);  // g ← T(fma(p, λ, g))
    // s ← T(fma(g, g, s)): addcmul with value 1 on every kernel
    sum[i] = round(T, fma(F32, gi, gi, sum[i]));
    Real den = round(T, sqrt(F32, sum[i]));
    den = round(T, add(F32, den, scalar(e)));
    if (foreach) {
      const Real num = round(T, mul(F32, gi, nclr));  // T(g ⊗ −clr), then p ⊕ num ⊘ std
      p[i] = round(T, add(F32, p[i], div(F32, num, den)));
    } else if (cpu) {
      p[i] = round(T, add(F32, p[i], div(F32, mul(F32, nclr, gi), den)));
    } else {
      p[i] = round(T, fma(F32, nclr, div(F32, gi, den), p[i]));
    }
  }
}

}  // namespace

EXMY_ORACLE_FAMILY(adagrad){"adagrad", adagrad_step};

}  // namespace exmy::oracle::steps
