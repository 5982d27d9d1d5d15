// Loss scaling (docs/SEMANTICS.md 9.7): PyTorch's dynamic GradScaler and seed 000's per-tensor
// check with a fixed scale.
#include <cmath>

#include "sim/native/fp32_ops.hpp"
#include "sim/optim/optim.hpp"

namespace exmy::optim {

bool has_non_finite(std::span<const float> g) {
  for (float x : g) {
    if (!native::f32_is_finite(x)) return true;
  }
  return false;
}

bool unscale_and_check(std::span<float> g, float scale) {
  // GradScaler: inv_scale = scale.double().reciprocal().float()
  const float inv = static_cast<float>(1.0 / static_cast<double>(scale));
  bool found = false;
  for (float& x : g) {
    if (!native::f32_is_finite(x)) found = true;
    if (inv != 1.0f) x = x * inv;
  }
  return found;
}

void update_scale(DynamicScaler& s, bool found_inf) {
  if (found_inf) {
    s.scale = s.scale * s.backoff_factor;
    s.growth_tracker = 0;
    return;
  }
  const int successful = s.growth_tracker + 1;
  if (successful == s.growth_interval) {
    const float grown = s.scale * s.growth_factor;
    if (std::isfinite(grown)) s.scale = grown;
    s.growth_tracker = 0;
  } else {
    s.growth_tracker = successful;
  }
}

}  // namespace exmy::optim
