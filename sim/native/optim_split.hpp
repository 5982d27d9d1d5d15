// Adam/AdamW and SGD on split-format parameters (seed 004; docs/SEMANTICS.md 9.6): join the
// 16-bit part and its extra bits into the exact fp32 value (un-rounding first under sr), run the
// fp32 PyTorch update on it, split the result again. With bf16+16 the join is the identity on
// fp32, so the update is bit for bit fp32-master AdamW.
#pragma once

#include <cstdint>

#include "sim/native/optim_adamw.hpp"
#include "sim/native/split_float.hpp"

namespace exmy::native {

EXMY_HD void split_adam_element(const TorchAdamScalars& s, const SplitFormat& f, std::uint16_t& hi,
                                std::uint32_t& field, float g, float& m, float& v,
                                std::uint32_t rand) {
  float p = split_join(hi, field, f);
  torch_adam_element(s, Storage::f32, p, g, m, v);
  split_value(p, f, rand, hi, field);
}

EXMY_HD void split_sgd_element(const TorchSgdScalars& s, const SplitFormat& f, std::uint16_t& hi,
                               std::uint32_t& field, float g, float& buf, bool first,
                               std::uint32_t rand) {
  float p = split_join(hi, field, f);
  torch_sgd_element(s, Storage::f32, p, g, buf, first);
  split_value(p, f, rand, hi, field);
}

}  // namespace exmy::native
