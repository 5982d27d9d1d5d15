#include "sim/optim/hyper_applies.hpp"

#include <string>
#include <vector>

#include "sim/common/error.hpp"

namespace exmy::optim {

namespace {

enum Opt : unsigned {
  kLr = 1u << 0,
  kBeta1 = 1u << 1,
  kBeta2 = 1u << 2,
  kEps = 1u << 3,
  kWd = 1u << 4,
  kMomentum = 1u << 5,
  kDampening = 1u << 6,
  kNesterov = 1u << 7,
  kAlpha = 1u << 8,
  kBeta3 = 1u << 9,
};

// The options each family reads (resolve_hyper's mapping, check_hyper_domains' checks).
unsigned reads(const Entry& e) {
  switch (e.family) {
    case Family::sgd:
    case Family::split_sgd:
      return kLr | kWd | kMomentum | kDampening | kNesterov;
    case Family::momentum8:  // bitsandbytes keeps the momentum in beta1: either spelling
      return kLr | kWd | kMomentum | kBeta1;
    case Family::bnb1:
      return kLr | kEps | kBeta1 | kBeta2 | kWd |
             (e.bnb_op == native::Bnb1Op::rmsprop ? unsigned{kAlpha} : 0u);
    case Family::ademamix:
      return kLr | kEps | kBeta1 | kBeta2 | kBeta3 | kAlpha | kWd;
    case Family::adam:
    case Family::adam8:
    case Family::stable:
    case Family::split_adam:
      return kLr | kEps | kBeta1 | kBeta2 | kWd;
  }
  return ~0u;  // a family added later without a row here: nothing refused
}

}  // namespace

void check_hyper_applies(const Entry& e, const HyperOptions& o) {
  const struct {
    bool given;
    Opt bit;
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
  const unsigned r = reads(e);
  for (const auto& opt : options) {
    if (!opt.given || (r & opt.bit) != 0) continue;
    std::string known;
    for (const auto& k : options) {
      if ((r & k.bit) != 0) known += (known.empty() ? "" : " ") + std::string(k.name);
    }
    throw InputError(std::string(opt.name) + ": " + std::string(e.name) +
                     " does not read it (expected only " + known + ")");
  }
}

}  // namespace exmy::optim
