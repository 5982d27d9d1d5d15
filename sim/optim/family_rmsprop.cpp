// torch.optim.RMSprop (docs/SEMANTICS.md 9.2.1), a family of cmake/ExmyOptimFamilies.cmake: its
// registry entry, its hyperparameters (lr, alpha, eps, weight_decay, momentum, centered, maximize)
// and their domains, its state arrays (torch's state names), its CPU loop over
// native::torch_rmsprop_element and its verify campaign ops. Its launcher is in
// gpu/optim/family_rmsprop.cu, its step oracle in sim/oracle/steps/family_rmsprop.cpp.
#include <cmath>

#include "sim/common/error.hpp"
#include "sim/format/compat.hpp"
#include "sim/native/optim_rmsprop.hpp"
#include "sim/optim/registry.hpp"

namespace exmy::optim {
namespace {

// --centered: Hyper::extra[0]; --maximize: Hyper::extra[1].
constexpr ExtraHyper kExtras[] = {
    {.option = "--centered",
     .help = "RMSprop: normalise by the variance estimate (torch's centered=True)",
     .flag = true},
    {.option = "--maximize",
     .help = "torch.optim: maximize the objective (the gradient negated)",
     .flag = true}};
bool centered(const Hyper& h) {
  return h.extra[0] != 0.0;
}
bool has_momentum(const Hyper& h) {
  return h.sgd.momentum > 0.0;
}

// torch.optim.RMSprop's constructor checks: lr, eps, momentum, weight_decay, alpha >= 0.
void domains(const Entry&, const Hyper& h) {
  const double inf = HUGE_VAL;
  check_domain(h.adam.lr, "--lr", 0.0, inf, true);
  check_domain(h.adam.eps, "--eps", 0.0, inf, true);
  check_domain(h.sgd.momentum, "--momentum", 0.0, inf, true);
  check_domain(h.adam.wd, "--wd", 0.0, inf, true);
  check_domain(h.adam.alpha, "--alpha", 0.0, inf, true);
}
void resolve(const Entry&, const HyperOptions& o, Hyper& h) {
  if (o.alpha) h.adam.alpha = *o.alpha;
}
bool nonnegative(const Entry&, std::string_view file) {
  return file == "square_avg";
}

// torch's state: square_avg, momentum_buffer (momentum > 0), grad_avg (centered), all
// zeros_like(param): values of the parameters' dtype, saved as fp32.
void init(const Config& c, std::span<const float> p, State& s) {
  s.s1.assign(p.size(), 0.0f);
  if (has_momentum(c.hyper)) s.s2.assign(p.size(), 0.0f);
  if (centered(c.hyper)) s.s3.assign(p.size(), 0.0f);
}
std::vector<StateArray> arrays(const Config& c, State& s) {
  std::vector<StateArray> a = {{"square_avg", &s.s1, true}};
  if (has_momentum(c.hyper)) a.push_back({"momentum_buffer", &s.s2, true});
  if (centered(c.hyper)) a.push_back({"grad_avg", &s.s3, true});
  return a;
}

native::TorchRmspropScalars scalars(const Hyper& h) {
  return native::torch_rmsprop_scalars(h.adam.lr, h.adam.alpha, h.adam.eps, h.adam.wd,
                                       h.sgd.momentum, centered(h), h.adam.kernels,
                                       h.extra[1] != 0.0);
}

float step(const Config& c, long, std::span<float> p, std::span<const float> g, State& s) {
  if (g.size() != p.size()) {
    throw InputError("gradient: expected " + std::to_string(p.size()) + " elements, got " +
                     std::to_string(g.size()));
  }
  const native::TorchRmspropScalars sc = scalars(c.hyper);
  const bool cpu = sc.k == native::TorchKernels::cpu;
  float unused = 0.0f;
  for (std::size_t i = 0; i < p.size(); ++i) {
    float& ga = sc.centered ? s.s3[i] : unused;
    float& buf = sc.has_momentum ? s.s2[i] : unused;
    const bool tail = cpu && native::torch_cpu_scalar_tail(i, p.size(), native::storage_bytes(c.st),
                                                           c.hyper.adam.cpu);
    native::torch_rmsprop_element(sc, c.st, p[i], native::to_storage(g[i], c.st), s.s1[i], ga, buf,
                                  tail);
  }
  return 0.0f;
}

// The campaign: fp32/bf16/fp16 parameters on the CPU and the CUDA kernels (foreach=True computes
// the CUDA bits, section 9.2.1), the defaults and the branches (centered, momentum, decay).
std::vector<CampaignOp> campaign(const Entry& e) {
  const auto cfg = [&](const char* label, double lr, double alpha, double eps, double wd,
                       double momentum, bool is_centered, bool maximize = false) {
    Hyper h = e.defaults;
    h.adam.lr = h.sgd.lr = lr;
    h.adam.alpha = alpha;
    h.adam.eps = eps;
    h.adam.wd = h.sgd.wd = wd;
    h.sgd.momentum = momentum;
    h.extra[0] = is_centered ? 1.0 : 0.0;
    h.extra[1] = maximize ? 1.0 : 0.0;
    return CampaignConfig{label, h};
  };
  const std::vector<CampaignConfig> configs = {
      cfg("defaults", 1e-2, 0.99, 1e-8, 0.0, 0.0, false),
      cfg("centered", 1e-2, 0.99, 1e-8, 0.0, 0.0, true),
      cfg("mom0.9 wd0.01 lr0.05 alpha0.9", 0.05, 0.9, 1e-6, 0.01, 0.9, false),
      cfg("centered mom0.5 alpha0.3 lr0.1", 0.1, 0.3, 1e-8, 0.0, 0.5, true),
      cfg("maximize centered mom0.9 wd0.01", 1e-2, 0.99, 1e-8, 0.01, 0.9, true, true)};
  std::vector<CampaignOp> ops;
  for (const native::TorchKernels k : {native::TorchKernels::cpu, native::TorchKernels::cuda}) {
    for (const Storage st : {Storage::f32, Storage::bf16, Storage::f16}) {
      const std::string name = std::string("rmsprop-") + std::string(dtype_name(st)) +
                               (k == native::TorchKernels::cuda ? "-cuda" : "");
      ops.push_back({name, st, k, configs});
    }
  }
  return ops;
}

constexpr FamilyDef kDef{.name = "rmsprop",
                         .library = kTorchOptim,
                         // cpu, cuda and cuda_foreach (no fused RMSprop in torch 2.11)
                         .torch_kernels = 0x7,
                         .reads = kLr | kAlpha | kEps | kWd | kMomentum,
                         .extras = kExtras,
                         .states_param_dtype = true,
                         .param_codes16 = true,
                         .domains = domains,
                         .resolve = resolve,
                         .nonnegative = nonnegative,
                         .campaign = campaign};

// torch.optim.RMSprop's defaults: lr 1e-2, alpha 0.99, eps 1e-8, weight_decay 0, momentum 0,
// centered False.
constexpr Hyper defaults() {
  Hyper h{};
  h.adam.lr = h.sgd.lr = 1e-2;
  h.adam.alpha = 0.99;
  h.adam.eps = 1e-8;
  h.adam.wd = h.sgd.wd = 0.0;
  h.sgd.momentum = 0.0;
  return h;
}

const Entry kEntries[] = {{.name = "rmsprop",
                           .family = Family::registered,
                           .def = &kDef,
                           .defaults = defaults(),
                           // square_avg; momentum_buffer and grad_avg add 4 bytes each
                           .state_bytes = 4.0,
                           .gpu = {true, true, true},
                           .example = "rmsprop",
                           .init = init,
                           .arrays = arrays,
                           .cpu_step = step}};

}  // namespace

EXMY_OPTIM_FAMILY_ENTRIES(rmsprop) {
  return kEntries;
}

}  // namespace exmy::optim
