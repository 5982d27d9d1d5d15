#include "sim/optim/hyper_applies.hpp"

#include <string>
#include <vector>

#include "sim/common/error.hpp"

namespace exmy::optim {

void check_hyper_applies(const Entry& e, const HyperOptions& o) {
  const struct {
    bool given;
    HyperBit bit;
    const char* name;
  } options[] = {{o.lr.has_value(), kLr, "--lr"},
                 {o.beta1.has_value(), kBeta1, "--beta1"},
                 {o.beta2.has_value(), kBeta2, "--beta2"},
                 {o.eps.has_value(), kEps, "--eps"},
                 {o.wd.has_value(), kWd, "--wd"},
                 {o.momentum.has_value(), kMomentum, "--momentum"},
                 {o.dampening.has_value(), kDampening, "--dampening"},
                 {o.nesterov, kNesterov, "--nesterov"},
                 {o.alpha.has_value(), kAlpha, "--alpha"},
                 {o.beta3.has_value(), kBeta3, "--beta3"}};
  // The options each family reads (resolve_hyper's mapping, check_hyper_domains' checks), and
  // its extra ones.
  const unsigned r = e.def->reads;
  const auto known = [&] {
    std::string k;
    for (const auto& opt : options) {
      if ((r & opt.bit) != 0) k += (k.empty() ? "" : " ") + std::string(opt.name);
    }
    for (const ExtraHyper& x : e.def->extras) k += (k.empty() ? "" : " ") + std::string(x.option);
    return k;
  };
  for (const auto& opt : options) {
    if (!opt.given || (r & opt.bit) != 0) continue;
    throw InputError(std::string(opt.name) + ": " + std::string(e.name) +
                     " does not read it (expected only " + known() + ")");
  }
  for (const auto& [name, v] : o.extra) {
    bool read = false;
    for (const ExtraHyper& x : e.def->extras) read = read || name == x.option;
    if (!read) {
      throw InputError(name + ": " + std::string(e.name) + " does not read it (expected only " +
                       known() + ")");
    }
  }
}

}  // namespace exmy::optim
