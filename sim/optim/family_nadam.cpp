// torch.optim.NAdam (docs/SEMANTICS.md 9.2.4), a family of cmake/ExmyOptimFamilies.cmake: its
// registry entry, its hyperparameters (lr, betas, eps, weight_decay, momentum_decay,
// decoupled_weight_decay, maximize) and their domains, its state arrays (torch's exp_avg,
// exp_avg_sq; mu_product is a function of the step, not saved), its CPU loop over
// native::torch_nadam_element and its verify campaign ops. Its launcher is in
// gpu/optim/family_nadam.cu, its step oracle in sim/oracle/steps/family_nadam.cpp.
#include <cmath>

#include "sim/common/error.hpp"
#include "sim/format/compat.hpp"
#include "sim/native/optim_nadam.hpp"
#include "sim/optim/registry.hpp"

namespace exmy::optim {
namespace {

// Hyper::extra: [0] momentum_decay, [1] decoupled_weight_decay, [2] maximize.
constexpr ExtraHyper kExtras[] = {
    {.option = "--momentum-decay",
     .help = "NAdam: momentum_decay (psi)",
     .def = 4e-3,
     .lo = 0.0,
     .hi = HUGE_VAL},
    {.option = "--decoupled-wd",
     .help = "NAdam/RAdam: decoupled_weight_decay=True (param.mul_(1 - lr*wd))",
     .flag = true},
    {.option = "--maximize",
     .help = "torch.optim: maximize the objective (the gradient negated)",
     .flag = true}};

bool nonnegative(const Entry&, std::string_view file) {
  return file == "exp_avg_sq";
}

std::vector<StateArray> arrays(const Config&, State& s) {
  return {{"exp_avg", &s.s1, true}, {"exp_avg_sq", &s.s2, true}};
}

float step(const Config& c, long t, std::span<float> p, std::span<const float> g, State& s) {
  if (g.size() != p.size()) {
    throw InputError("gradient: expected " + std::to_string(p.size()) + " elements, got " +
                     std::to_string(g.size()));
  }
  const Hyper& h = c.hyper;
  const native::TorchNadamScalars sc = native::torch_nadam_scalars(
      h.adam.lr, h.adam.beta1, h.adam.beta2, h.adam.eps, h.adam.wd, h.extra[0], h.extra[1] != 0.0,
      h.extra[2] != 0.0, t, h.adam.kernels);
  const bool cpu = sc.k == native::TorchKernels::cpu;
  for (std::size_t i = 0; i < p.size(); ++i) {
    const bool tail =
        cpu && native::torch_cpu_scalar_tail(i, p.size(), native::storage_bytes(c.st), h.adam.cpu);
    native::torch_nadam_element(sc, c.st, p[i], native::to_storage(g[i], c.st), s.s1[i], s.s2[i],
                                tail);
  }
  return 0.0f;
}

std::vector<CampaignOp> campaign(const Entry& e) {
  const auto cfg = [&](const char* label, double lr, double b1, double b2, double wd, double psi,
                       bool decoupled, bool maximize) {
    Hyper h = e.defaults;
    h.adam.lr = h.sgd.lr = lr;
    h.adam.beta1 = b1;
    h.adam.beta2 = b2;
    h.adam.wd = h.sgd.wd = wd;
    h.extra[0] = psi;
    h.extra[1] = decoupled ? 1.0 : 0.0;
    h.extra[2] = maximize ? 1.0 : 0.0;
    return CampaignConfig{label, h};
  };
  const std::vector<CampaignConfig> configs = {
      cfg("defaults", 2e-3, 0.9, 0.999, 0.0, 4e-3, false, false),
      cfg("wd0.01 l2", 1e-2, 0.9, 0.999, 0.01, 4e-3, false, false),
      cfg("wd0.1 decoupled psi0.1", 1e-2, 0.8, 0.99, 0.1, 0.1, true, false),
      cfg("maximize b0.3,0.6", 5e-2, 0.3, 0.6, 0.0, 4e-3, false, true)};
  std::vector<CampaignOp> ops;
  for (const native::TorchKernels k : {native::TorchKernels::cpu, native::TorchKernels::cuda,
                                       native::TorchKernels::cuda_foreach}) {
    for (const Storage st : {Storage::f32, Storage::bf16, Storage::f16}) {
      const std::string name = std::string("nadam-") + std::string(dtype_name(st)) +
                               (k == native::TorchKernels::cuda           ? "-cuda"
                                : k == native::TorchKernels::cuda_foreach ? "-cuda-foreach"
                                                                          : "");
      ops.push_back({name, st, k, configs});
    }
  }
  return ops;
}

constexpr FamilyDef kDef{.name = "nadam",
                         .library = kTorchOptim,
                         .torch_kernels = 0x7,  // cpu, cuda, cuda_foreach (no fused NAdam)
                         .reads = kLr | kBeta1 | kBeta2 | kEps | kWd,
                         .extras = kExtras,
                         .states_param_dtype = true,
                         .param_codes16 = true,
                         .domains = torch_adam_domains,
                         .nonnegative = nonnegative,
                         .campaign = campaign};

// torch.optim.NAdam's defaults: lr 2e-3, betas (0.9, 0.999), eps 1e-8, weight_decay 0,
// momentum_decay 4e-3, decoupled_weight_decay False, maximize False.
constexpr Hyper defaults() {
  Hyper h{};
  h.adam.lr = h.sgd.lr = 2e-3;
  h.adam.beta1 = 0.9;
  h.adam.beta2 = 0.999;
  h.adam.eps = 1e-8;
  h.adam.wd = h.sgd.wd = 0.0;
  h.extra[0] = 4e-3;
  return h;
}

const Entry kEntries[] = {{.name = "nadam",
                           .family = Family::registered,
                           .def = &kDef,
                           .defaults = defaults(),
                           .state_bytes = 8.0,  // exp_avg, exp_avg_sq
                           .gpu = {true, true, true},
                           .example = "nadam",
                           .init = init_two_states,
                           .arrays = arrays,
                           .cpu_step = step}};

}  // namespace

EXMY_OPTIM_FAMILY_ENTRIES(nadam) {
  return kEntries;
}

}  // namespace exmy::optim
