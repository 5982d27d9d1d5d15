// The step oracles of the optimizer families of cmake/ExmyOptimFamilies.cmake, by family name
// (sim/optim/registry.hpp FamilyDef::name): `exmy verify --campaign steps` runs each family's
// registry entry against the oracle found here. A family N defines kFamilyOracle_N in
// sim/oracle/steps/family_<N>.cpp, from docs/SEMANTICS.md alone (no engine code, as steps.hpp).
#pragma once

#include <array>
#include <string_view>
#include <vector>

#include "sim/oracle/steps/steps.hpp"

namespace exmy::oracle::steps {

// The hyperparameters as the user gives them (Python floats), the union of the families' own:
// `extra` holds a family's extra ones in its order (sim/optim/registry.hpp ExtraHyper).
struct FamilyHyper {
  double lr = 0.0, beta1 = 0.0, beta2 = 0.0, eps = 0.0, wd = 0.0;
  double momentum = 0.0, dampening = 0.0, alpha = 0.0, beta3 = 0.0;
  bool nesterov = false;
  std::array<double, 6> extra{};  // sim/optim/registry.hpp kMaxExtraHyper
  Kernels kernels = Kernels::cpu;
};
// One step t (1-based) on values p of storage T with gradient g; `states` are the family's state
// arrays in the order its registry entry saves them, updated in place.
using FamilyStep = void (*)(const FamilyHyper& h, const FloatFormat& T, long t, Tensor& p,
                            const Tensor& g, std::vector<Tensor*>& states);
struct FamilyOracle {
  std::string_view family;
  FamilyStep step;
};
// Declares (and, followed by an initializer, defines) the oracle of family N.
#define EXMY_ORACLE_FAMILY(N) extern const FamilyOracle kFamilyOracle_##N

// The family's oracle, or null.
const FamilyOracle* family_oracle(std::string_view family);

}  // namespace exmy::oracle::steps
