// Which hyperparameter options an optimizer reads: an option given to an optimizer that does not
// read it (--momentum for AdamW, --beta3 for SGD) is refused by name instead of being silently
// ignored (issue 36). The sets are those check_hyper_domains checks per family
// (sim/optim/registry.cpp).
#pragma once

#include "sim/optim/registry.hpp"

namespace exmy::optim {

// InputError naming the first option of `o` that entry `e` does not read, and the ones it does.
void check_hyper_applies(const Entry& e, const HyperOptions& o);

}  // namespace exmy::optim
