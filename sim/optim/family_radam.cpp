// torch.optim.RAdam (docs/SEMANTICS.md 9.2.5), a family of cmake/ExmyOptimFamilies.cmake: its
// registry entry, its hyperparameters (lr, betas, eps, weight_decay, decoupled_weight_decay,
// maximize) and their domains, its state arrays (torch's exp_avg, exp_avg_sq), its CPU loop over
// native::torch_radam_element and its verify campaign ops. Its launcher is in
// gpu/optim/family_radam.cu, its step oracle in sim/oracle/steps/family_radam.cpp.
#include <cmath>

#include "sim/common/error.hpp"
#include "sim/format/compat.hpp"
#include "sim/native/optim_radam.hpp"
#include "sim/optim/registry.hpp"

namespace exmy::optim {
namespace {

// Hyper::extra: [0] decoupled_weight_decay, [1] maximize.
constexpr ExtraHyper kExtras[] = {
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
  const native::TorchRadamScalars sc =
      native::torch_radam_scalars(h.adam.lr, h.adam.beta1, h.adam.beta2, h.adam.eps, h.adam.wd,
                                  h.extra[0] != 0.0, h.extra[1] != 0.0, t, h.adam.kernels);
  const bool cpu = sc.k == native::TorchKernels::cpu;
  for (std::size_t i = 0; i < p.size(); ++i) {
    const bool tail =
        cpu && native::torch_cpu_scalar_tail(i, p.size(), native::storage_bytes(c.st), h.adam.cpu);
    native::torch_radam_element(sc, c.st, p[i], native::to_storage(g[i], c.st), s.s1[i], s.s2[i],
                                tail);
  }
  return 0.0f;
}

std::vector<CampaignOp> campaign(const Entry& e) {
  const auto cfg = [&](const char* label, double lr, double b1, double b2, double wd,
                       bool decoupled, bool maximize) {
    Hyper h = e.defaults;
    h.adam.lr = h.sgd.lr = lr;
    h.adam.beta1 = b1;
    h.adam.beta2 = b2;
    h.adam.wd = h.sgd.wd = wd;
    h.extra[0] = decoupled ? 1.0 : 0.0;
    h.extra[1] = maximize ? 1.0 : 0.0;
    return CampaignConfig{label, h};
  };
  const std::vector<CampaignConfig> configs = {
      // beta2 0.999 rectifies from step 6 on; 0.6 never (rho_inf = 4), 0.3 neither
      cfg("defaults", 1e-3, 0.9, 0.999, 0.0, false, false),
      cfg("wd0.01 l2 b2=0.9", 1e-2, 0.9, 0.9, 0.01, false, false),
      cfg("wd0.1 decoupled b0.8,0.99", 1e-2, 0.8, 0.99, 0.1, true, false),
      cfg("maximize b0.3,0.6", 5e-2, 0.3, 0.6, 0.0, false, true)};
  std::vector<CampaignOp> ops;
  for (const native::TorchKernels k : {native::TorchKernels::cpu, native::TorchKernels::cuda,
                                       native::TorchKernels::cuda_foreach}) {
    for (const Storage st : {Storage::f32, Storage::bf16, Storage::f16}) {
      const std::string name = std::string("radam-") + std::string(dtype_name(st)) +
                               (k == native::TorchKernels::cuda           ? "-cuda"
                                : k == native::TorchKernels::cuda_foreach ? "-cuda-foreach"
                                                                          : "");
      ops.push_back({name, st, k, configs, 8});  // steps 6..8 rectified
    }
  }
  return ops;
}

constexpr FamilyDef kDef{.name = "radam",
                         .library = kTorchOptim,
                         .torch_kernels = 0x7,  // cpu, cuda, cuda_foreach (no fused RAdam)
                         .reads = kLr | kBeta1 | kBeta2 | kEps | kWd,
                         .extras = kExtras,
                         .states_param_dtype = true,
                         .param_codes16 = true,
                         .domains = torch_adam_domains,
                         .nonnegative = nonnegative,
                         .campaign = campaign};

// torch.optim.RAdam's defaults: lr 1e-3, betas (0.9, 0.999), eps 1e-8, weight_decay 0,
// decoupled_weight_decay False, maximize False.
constexpr Hyper defaults() {
  Hyper h{};
  h.adam.lr = h.sgd.lr = 1e-3;
  h.adam.beta1 = 0.9;
  h.adam.beta2 = 0.999;
  h.adam.eps = 1e-8;
  h.adam.wd = h.sgd.wd = 0.0;
  return h;
}

const Entry kEntries[] = {{.name = "radam",
                           .family = Family::registered,
                           .def = &kDef,
                           .defaults = defaults(),
                           .state_bytes = 8.0,  // exp_avg, exp_avg_sq
                           .gpu = {true, true, true},
                           .example = "radam",
                           .init = init_two_states,
                           .arrays = arrays,
                           .cpu_step = step}};

}  // namespace

EXMY_OPTIM_FAMILY_ENTRIES(radam) {
  return kEntries;
}

}  // namespace exmy::optim
