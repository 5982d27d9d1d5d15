// The oracles' family table (family_table.hpp), expanded from cmake/ExmyOptimFamilies.cmake.
#include "sim/oracle/steps/family_table.hpp"

namespace exmy::oracle::steps {

#define EXMY_OPTIM_FAMILY(N) EXMY_ORACLE_FAMILY(N);
#include "sim/common/optim_families.inc"
#undef EXMY_OPTIM_FAMILY

const FamilyOracle* family_oracle(std::string_view family) {
  static const std::vector<const FamilyOracle*> table = [] {
    std::vector<const FamilyOracle*> t;
#define EXMY_OPTIM_FAMILY(N) t.push_back(&kFamilyOracle_##N);
#include "sim/common/optim_families.inc"
#undef EXMY_OPTIM_FAMILY
    return t;
  }();
  for (const FamilyOracle* f : table) {
    if (f->family == family) return f;
  }
  return nullptr;
}

}  // namespace exmy::oracle::steps
