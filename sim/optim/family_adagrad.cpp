// torch.optim.Adagrad (docs/SEMANTICS.md 9.2.3), a family of cmake/ExmyOptimFamilies.cmake: its
// registry entry, its hyperparameters (lr, lr_decay, weight_decay, initial_accumulator_value,
// eps, maximize) and their domains, its state array (torch's "sum"), its CPU loop over
// native::torch_adagrad_element and its verify campaign ops. Its launcher is in
// gpu/optim/family_adagrad.cu, its step oracle in sim/oracle/steps/family_adagrad.cpp.
#include <cmath>

#include "sim/common/error.hpp"
#include "sim/format/compat.hpp"
#include "sim/native/optim_adagrad.hpp"
#include "sim/optim/registry.hpp"

namespace exmy::optim {
namespace {

// Hyper::extra: [0] lr_decay, [1] initial_accumulator_value, [2] maximize.
constexpr ExtraHyper kExtras[] = {
    {.option = "--lr-decay",
     .help = "Adagrad: learning-rate decay, clr = lr / (1 + (step - 1) lr_decay)",
     .def = 0.0,
     .lo = 0.0,
     .hi = HUGE_VAL},
    {.option = "--initial-accumulator-value",
     .help = "Adagrad: the initial value of its state 'sum'",
     .def = 0.0,
     .lo = 0.0,
     .hi = HUGE_VAL},
    {.option = "--maximize",
     .help = "torch.optim: maximize the objective (the gradient negated)",
     .flag = true}};

// torch.optim.Adagrad's constructor checks: lr, lr_decay, weight_decay,
// initial_accumulator_value, eps >= 0 (the extras' domains are checked from kExtras).
void domains(const Entry&, const Hyper& h) {
  const double inf = HUGE_VAL;
  check_domain(h.adam.lr, "--lr", 0.0, inf, true);
  check_domain(h.adam.wd, "--wd", 0.0, inf, true);
  check_domain(h.adam.eps, "--eps", 0.0, inf, true);
}
bool nonnegative(const Entry&, std::string_view file) {
  return file == "sum";
}

void init(const Config& c, std::span<const float> p, State& s) {
  s.s1.assign(p.size(), native::torch_adagrad_initial_sum(c.hyper.extra[1], c.st));
}
std::vector<StateArray> arrays(const Config&, State& s) {
  return {{"sum", &s.s1, true}};
}

float step(const Config& c, long t, std::span<float> p, std::span<const float> g, State& s) {
  if (g.size() != p.size()) {
    throw InputError("gradient: expected " + std::to_string(p.size()) + " elements, got " +
                     std::to_string(g.size()));
  }
  const Hyper& h = c.hyper;
  const native::TorchAdagradScalars sc = native::torch_adagrad_scalars(
      h.adam.lr, h.extra[0], h.adam.eps, h.adam.wd, h.extra[2] != 0.0, t, h.adam.kernels);
  const bool cpu = sc.k == native::TorchKernels::cpu;
  for (std::size_t i = 0; i < p.size(); ++i) {
    const bool tail =
        cpu && native::torch_cpu_scalar_tail(i, p.size(), native::storage_bytes(c.st), h.adam.cpu);
    native::torch_adagrad_element(sc, c.st, p[i], native::to_storage(g[i], c.st), s.s1[i], tail);
  }
  return 0.0f;
}

// The campaign: fp32/bf16/fp16 parameters on the CPU, CUDA and foreach kernels; the defaults and
// each branch (lr_decay, weight decay, initial accumulator, maximize).
std::vector<CampaignOp> campaign(const Entry& e) {
  const auto cfg = [&](const char* label, double lr, double lr_decay, double wd, double init,
                       double eps, bool maximize) {
    Hyper h = e.defaults;
    h.adam.lr = h.sgd.lr = lr;
    h.adam.wd = h.sgd.wd = wd;
    h.adam.eps = eps;
    h.extra[0] = lr_decay;
    h.extra[1] = init;
    h.extra[2] = maximize ? 1.0 : 0.0;
    return CampaignConfig{label, h};
  };
  const std::vector<CampaignConfig> configs = {
      cfg("defaults", 1e-2, 0.0, 0.0, 0.0, 1e-10, false),
      cfg("lr_decay0.1 wd0.01", 5e-2, 0.1, 0.01, 0.0, 1e-10, false),
      cfg("init0.1 eps1e-6 maximize", 1e-2, 0.0, 0.0, 0.1, 1e-6, true),
      cfg("maximize wd0.1 lr_decay0.5", 0.1, 0.5, 0.1, 0.3, 1e-8, true)};
  std::vector<CampaignOp> ops;
  for (const native::TorchKernels k : {native::TorchKernels::cpu, native::TorchKernels::cuda,
                                       native::TorchKernels::cuda_foreach}) {
    for (const Storage st : {Storage::f32, Storage::bf16, Storage::f16}) {
      const std::string name = std::string("adagrad-") + std::string(dtype_name(st)) +
                               (k == native::TorchKernels::cuda           ? "-cuda"
                                : k == native::TorchKernels::cuda_foreach ? "-cuda-foreach"
                                                                          : "");
      ops.push_back({name, st, k, configs});
    }
  }
  return ops;
}

constexpr FamilyDef kDef{.name = "adagrad",
                         .library = kTorchOptim,
                         // cpu, cuda and cuda_foreach (torch 2.11's fused Adagrad is CPU-only)
                         .torch_kernels = 0x7,
                         .reads = kLr | kEps | kWd,
                         .extras = kExtras,
                         .states_param_dtype = true,
                         .param_codes16 = true,
                         .domains = domains,
                         .nonnegative = nonnegative,
                         .campaign = campaign};

// torch.optim.Adagrad's defaults: lr 1e-2, lr_decay 0, weight_decay 0,
// initial_accumulator_value 0, eps 1e-10, maximize False.
constexpr Hyper defaults() {
  Hyper h{};
  h.adam.lr = h.sgd.lr = 1e-2;
  h.adam.eps = 1e-10;
  h.adam.wd = h.sgd.wd = 0.0;
  return h;
}

const Entry kEntries[] = {{.name = "adagrad",
                           .family = Family::registered,
                           .def = &kDef,
                           .defaults = defaults(),
                           .state_bytes = 4.0,  // sum
                           .gpu = {true, true, true},
                           .example = "adagrad",
                           .init = init,
                           .arrays = arrays,
                           .cpu_step = step}};

}  // namespace

EXMY_OPTIM_FAMILY_ENTRIES(adagrad) {
  return kEntries;
}

}  // namespace exmy::optim
