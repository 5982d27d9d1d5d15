// docs/SEMANTICS.md 9.7: torch.amp.GradScaler's unscale and scale update, on exact values.
#include "sim/oracle/steps/steps.hpp"

namespace exmy::oracle::steps {

bool unscale(Tensor& g, const Real& scale) {
  const Real one = Real::of_double(1.0);
  const Real inv = round(F32, div(F64, one, scale));  // RN32(1/scale), fp64 reciprocal
  bool found = false;
  for (Real& x : g) {
    if (!x.is_finite()) found = true;  // on the scaled gradient
    if (!eq(inv, one)) x = mul(F32, x, inv);
  }
  return found;
}

void update_scale(DynamicScaler& s, bool found_inf) {
  if (found_inf) {  // backoff ×0.5, tracker reset
    s.scale = mul(F32, s.scale, Real::of_double(0.5));
    s.tracker = 0;
    return;
  }
  if (s.tracker + 1 == s.growth_interval) {  // growth ×2 when the grown scale is finite
    const Real grown = mul(F32, s.scale, Real::of_double(2.0));
    if (grown.is_finite()) s.scale = grown;
    s.tracker = 0;
  } else {
    ++s.tracker;
  }
}

}  // namespace exmy::oracle::steps
