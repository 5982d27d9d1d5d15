// The optimizer registry (sim/optim/registry.hpp, docs/SEMANTICS.md 9.9).
#include "sim/optim/registry.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <type_traits>

#include "sim/common/error.hpp"
#include "sim/common/number.hpp"
#include "sim/format/compat.hpp"
#include "sim/io/npy.hpp"

namespace exmy::optim {
namespace {

// ---- per family: zero state, saved arrays, CPU step --------------------------------------------

void init_two(const Config& c, std::span<const float> p, State& s) {
  init_two_states(c, p, s);
}
void init_one(const Config&, std::span<const float> p, State& s) {
  s.s1.assign(p.size(), 0.0f);
}
void init_adam8(const Config& c, std::span<const float> p, State& s) {
  s.bnb = bnb8_init(p.size(), true, c.block, c.small_fallback);
}
void init_momentum8(const Config& c, std::span<const float> p, State& s) {
  s.bnb = bnb8_init(p.size(), false, c.block, c.small_fallback);
}
// The *32bit entries keep fp32 states at every size; the 8-bit ones below min_8bit_size.
void init_bnb1(const Config& c, std::span<const float> p, State& s) {
  s.bnb = bnb8_init(p.size(), false, c.block, c.small_fallback);
  if (c.opt.entry->state32 && s.bnb.is_8bit) {
    s.bnb.is_8bit = false;
    s.bnb.q1.clear();
    s.bnb.absmax1.clear();
    s.bnb.s1.assign(p.size(), 0.0f);
  }
  // bitsandbytes 0.50.2 compiles kOptimizer32bit1State<bf16, RMSPROP/ADAGRAD> but its Python
  // table (str2optimizer32bit) has no bf16 entry for them: the library raises ValueError.
  if (!s.bnb.is_8bit && c.st == Storage::bf16 &&
      c.hyper.adam.bnb == native::BnbKernels::cuda_sm90 &&
      c.opt.entry->bnb_op != native::Bnb1Op::lion) {
    throw InputError("--optimizer " + c.opt.name +
                     " --compat bnb-cuda --param-dtype bf16: bitsandbytes 0.50.2 has no bf16 "
                     "32-bit RMSprop/Adagrad step (it raises ValueError for fp32 states of bf16 "
                     "parameters, i.e. below 4096 elements or with the *32bit optimizers)");
  }
}
// bitsandbytes 0.50.2's 8-bit AdEMAMix indexes m2's absmax as absmax1[(n + i) / 256]: for n not a
// multiple of 256 that overlaps m1's last block (two CTAs race on absmax1[blocks - 1]) and misses
// the last entry, so its result depends on scheduling (SEMANTICS 9.4.2); bnb-cuda refuses it.
// bitsandbytes 0.50.2's AdEMAMix32bit / PagedAdEMAMix32bit subclass Optimizer2State, not AdEMAMix:
// they allocate state1 with p's shape while kOptimizer32bit2State ADEMAMIX reads and writes m2 at
// state1[n + i], past the end of the buffer (bitsandbytes issue #2075, fix in PR #2076), so m2
// lands in whatever the caching allocator put there (state2 when it follows state1 directly).
// bnb-cuda refuses them; `--variant double-buffer` models AdEMAMix(optim_bits=32), whose
// init_state allocates (2, *shape) — what AdEMAMix32bit becomes with PR #2076.
void init_ademamix(const Config& c, std::span<const float> p, State& s) {
  if (c.opt.entry->state32 && c.hyper.adam.bnb == native::BnbKernels::cuda_sm90 &&
      c.variant != "double-buffer") {
    throw InputError("--optimizer " + c.opt.name +
                     " --compat bnb-cuda: bitsandbytes 0.50.2's AdEMAMix32bit allocates state1 "
                     "with the parameters' shape but its kernel keeps m2 at state1[n + i], past "
                     "the end (bitsandbytes issue #2075): no defined result; --variant "
                     "double-buffer models AdEMAMix(optim_bits=32), state1 of shape (2, n)");
  }
  s.bnb = bnb_ademamix_init(p.size(), c.block, c.small_fallback);
  if (c.opt.entry->state32 && s.bnb.is_8bit) {
    s.bnb = bnb_ademamix_init(p.size(), c.block, true);
    s.bnb.is_8bit = false;
    s.bnb.q1.clear();
    s.bnb.q2.clear();
    s.bnb.absmax1.clear();
    s.bnb.absmax2.clear();
    s.bnb.s1.assign(2 * p.size(), 0.0f);
    s.bnb.s2.assign(p.size(), 0.0f);
  }
  if (s.bnb.is_8bit && c.hyper.adam.bnb == native::BnbKernels::cuda_sm90 &&
      p.size() % static_cast<std::size_t>(c.block) != 0) {
    throw InputError("--optimizer " + c.opt.name +
                     " --compat bnb-cuda: " + std::to_string(p.size()) +
                     " elements is not a multiple of 256; bitsandbytes 0.50.2's 8-bit AdEMAMix "
                     "then reads and writes m2's absmax at absmax1[(n + i) / 256], which overlaps "
                     "m1's last block (a race between two thread blocks, no defined result)");
  }
}
void init_split_two(const Config& c, std::span<const float> p, State& s) {
  init_two(c, p, s);
  s.split = split_tensor(p, c.opt.split, c.seed);
}
void init_split_one(const Config& c, std::span<const float> p, State& s) {
  init_one(c, p, s);
  s.split = split_tensor(p, c.opt.split, c.seed);
}

std::vector<StateArray> arrays_two(const Config&, State& s) {
  return {{"state1", &s.s1, true}, {"state2", &s.s2, true}};
}
std::vector<StateArray> arrays_one(const Config&, State& s) {
  return {{"state1", &s.s1, true}};
}
std::vector<StateArray> arrays_bnb(const Config&, State& s) {
  Bnb8State& b = s.bnb;
  if (b.ademamix) {
    if (!b.is_8bit) return {{"state1", &b.s1, true, 2}, {"state2", &b.s2, true}};
    return {{"state1", &b.q1, true, 2},
            {"absmax1", &b.absmax1, false, 2},
            {"state2", &b.q2, true},
            {"absmax2", &b.absmax2, false}};
  }
  if (!b.is_8bit) {
    if (!b.two_states) return {{"state1", &b.s1, true}};
    return {{"state1", &b.s1, true}, {"state2", &b.s2, true}};
  }
  if (!b.two_states) return {{"state1", &b.q1, true}, {"absmax1", &b.absmax1, false}};
  return {{"state1", &b.q1, true},
          {"absmax1", &b.absmax1, false},
          {"state2", &b.q2, true},
          {"absmax2", &b.absmax2, false}};
}
std::vector<StateArray> arrays_split_two(const Config& c, State& s) {
  auto a = arrays_two(c, s);
  a.push_back({"hi", &s.split.hi, true});
  a.push_back({"extra", &s.split.extra, false});
  return a;
}
std::vector<StateArray> arrays_split_one(const Config& c, State& s) {
  auto a = arrays_one(c, s);
  a.push_back({"hi", &s.split.hi, true});
  a.push_back({"extra", &s.split.extra, false});
  return a;
}

float step_adam(const Config& c, long t, std::span<float> p, std::span<const float> g, State& s) {
  if (c.variant == "torch-fused" || c.hyper.adam.kernels == native::TorchKernels::cuda_fused) {
    adam_fused_step(c.hyper.adam, c.opt.entry->decoupled, c.st, t, p, g, s.s1, s.s2, s.s3);
  } else {
    adam_step(c.hyper.adam, c.opt.entry->decoupled, c.st, t, p, g, s.s1, s.s2, s.s3);
  }
  return 0.0f;
}
// torch.optim.Adam/AdamW: exp_avg, exp_avg_sq and, with amsgrad=True, max_exp_avg_sq (state3).
void init_adam(const Config& c, std::span<const float> p, State& s) {
  init_two(c, p, s);
  if (c.hyper.adam.amsgrad) s.s3.assign(p.size(), 0.0f);
}
std::vector<StateArray> arrays_adam(const Config& c, State& s) {
  std::vector<StateArray> a = arrays_two(c, s);
  if (c.hyper.adam.amsgrad) a.push_back({"state3", &s.s3, true});
  return a;
}
float step_sgd(const Config& c, long t, std::span<float> p, std::span<const float> g, State& s) {
  sgd_step(c.hyper.sgd, c.st, t, p, g, s.s1);
  return 0.0f;
}
float step_adam8(const Config& c, long t, std::span<float> p, std::span<const float> g, State& s) {
  bnb_adam8_step(bnb8_scalars(c.hyper.adam, t, c.variant == "torch-order"), c.st, p, g, s.bnb);
  return 0.0f;
}
float step_momentum8(const Config& c, long t, std::span<float> p, std::span<const float> g,
                     State& s) {
  bnb_momentum8_step(bnb8_scalars(c.hyper.adam, t, false), c.st, p, g, s.bnb);
  return 0.0f;
}
float step_bnb1(const Config& c, long t, std::span<float> p, std::span<const float> g, State& s) {
  bnb1_step(bnb8_scalars(c.hyper.adam, t, false), c.opt.entry->bnb_op, c.st, p, g, s.bnb);
  return 0.0f;
}
float step_ademamix(const Config& c, long t, std::span<float> p, std::span<const float> g,
                    State& s) {
  bnb_ademamix_step(bnb8_scalars(c.hyper.adam, t, false), c.st, p, g, s.bnb);
  return 0.0f;
}
float step_stable(const Config& c, long t, std::span<float> p, std::span<const float> g, State& s) {
  return stable_adamw_step(c.hyper.adam, t, p, g, s.s1, s.s2);
}
float step_split_adam(const Config& c, long t, std::span<float>, std::span<const float> g,
                      State& s) {
  split_adam_step(c.hyper.adam, c.opt.entry->decoupled, t, c.seed, s.split, g, s.s1, s.s2);
  return 0.0f;
}
float step_split_sgd(const Config& c, long t, std::span<float>, std::span<const float> g,
                     State& s) {
  split_sgd_step(c.hyper.sgd, t, c.seed, s.split, g, s.s1);
  return 0.0f;
}

// ---- the core families (sim/optim/registry.hpp FamilyDef) -------------------------------------
void domains_sgd(const Entry&, const Hyper& h) {
  const double inf = HUGE_VAL;
  check_domain(h.sgd.lr, "--lr", 0.0, inf, true);
  check_domain(h.sgd.momentum, "--momentum", 0.0, inf, true);
  check_domain(h.sgd.wd, "--wd", 0.0, inf, true);
  if (h.sgd.nesterov && (h.sgd.momentum <= 0.0 || h.sgd.dampening != 0.0)) {
    throw InputError("--nesterov: expected --momentum > 0 and --dampening 0 (PyTorch's rule)");
  }
}
void domains_momentum8(const Entry&, const Hyper& h) {
  const double inf = HUGE_VAL;
  check_domain(h.adam.lr, "--lr", 0.0, inf, true);
  check_domain(h.adam.beta1, "--momentum / --beta1", 0.0, 1.0, true);
  check_domain(h.adam.wd, "--wd", 0.0, inf, true);
}
void domains_bnb1(const Entry& e, const Hyper& h) {  // bitsandbytes' Optimizer1State checks
  const double inf = HUGE_VAL;
  check_domain(h.adam.lr, "--lr", 0.0, inf, true);
  check_domain(h.adam.eps, "--eps", 0.0, inf, true);
  check_domain(h.adam.beta1, e.bnb_op == native::Bnb1Op::rmsprop ? "--alpha / --beta1" : "--beta1",
               0.0, 1.0, true);
  check_domain(h.adam.beta2, "--beta2", 0.0, 1.0, true);
  check_domain(h.adam.wd, "--wd", 0.0, inf, true);
}
void domains_ademamix(const Entry&, const Hyper& h) {  // Optimizer2State's checks (α unchecked)
  const double inf = HUGE_VAL;
  check_domain(h.adam.lr, "--lr", 0.0, inf, true);
  check_domain(h.adam.eps, "--eps", 0.0, inf, true);
  check_domain(h.adam.beta1, "--beta1", 0.0, 1.0, true);
  check_domain(h.adam.beta2, "--beta2", 0.0, 1.0, true);
  check_domain(h.adam.beta3, "--beta3", 0.0, 1.0, true);
  check_domain(h.adam.wd, "--wd", 0.0, inf, true);
}
void domains_adam(const Entry& e, const Hyper& h) {
  torch_adam_domains(e, h);
}

// bitsandbytes' Momentum keeps its momentum in beta1: --beta1, else --momentum, else 0.9.
void resolve_momentum8(const Entry&, const HyperOptions& o, Hyper& h) {
  h.adam.beta1 = h.sgd.momentum = o.beta1 ? *o.beta1 : h.sgd.momentum;
}
void resolve_ademamix(const Entry&, const HyperOptions& o, Hyper& h) {
  if (o.alpha) h.adam.alpha = *o.alpha;
}
// bitsandbytes' RMSprop keeps its alpha in beta1.
void resolve_bnb_rmsprop(const Entry&, const HyperOptions& o, Hyper& h) {
  if (o.alpha) h.adam.beta1 = *o.alpha;
}

// Second moments are never negative (Adam's exp_avg_sq and amsgrad's max_exp_avg_sq, state3;
// AdEMAMix's nu); RMSprop's and Adagrad's state1 is a sum of squares too.
bool nonneg_state2(const Entry&, std::string_view file) {
  return file == "state2" || file == "state3";
}
// torch.optim.Adam/AdamW's amsgrad and maximize (Hyper::extra[0], [1]; SEMANTICS 9.2.6).
constexpr ExtraHyper kAdamExtras[] = {
    {.option = "--amsgrad",
     .help = "Adam/AdamW: amsgrad=True (max_exp_avg_sq kept, saved as state3)",
     .flag = true},
    {.option = "--maximize",
     .help = "torch.optim: maximize the objective (the gradient negated)",
     .flag = true}};
void resolve_adam(const Entry&, const HyperOptions&, Hyper& h) {
  h.adam.amsgrad = h.extra[0] != 0.0;
  h.adam.maximize = h.extra[1] != 0.0;
}
// torch.optim.SGD's maximize (Hyper::extra[0]; SEMANTICS 9.3).
constexpr ExtraHyper kSgdExtras[] = {kAdamExtras[1]};
void resolve_sgd(const Entry&, const HyperOptions&, Hyper& h) {
  h.sgd.maximize = h.extra[0] != 0.0;
}
bool nonneg_bnb1(const Entry& e, std::string_view file) {
  return e.bnb_op != native::Bnb1Op::lion && file == "state1";
}

constexpr unsigned kAllTorchKernels = 0xF;
constexpr unsigned kReadsAdam = kLr | kEps | kBeta1 | kBeta2 | kWd;
constexpr unsigned kReadsSgd = kLr | kWd | kMomentum | kDampening | kNesterov;

constexpr FamilyDef kAdamDef{.name = "adam",
                             .library = kTorchOptim,
                             .torch_kernels = kAllTorchKernels,
                             .reads = kReadsAdam,
                             .extras = kAdamExtras,
                             .states_param_dtype = true,
                             .param_codes16 = true,
                             .domains = domains_adam,
                             .resolve = resolve_adam,
                             .nonnegative = nonneg_state2};
constexpr FamilyDef kSgdDef{.name = "sgd",
                            .library = kTorchOptim,
                            .torch_kernels = kAllTorchKernels,
                            .reads = kReadsSgd,
                            .extras = kSgdExtras,
                            .states_param_dtype = true,
                            .param_codes16 = true,
                            .domains = domains_sgd,
                            .resolve = resolve_sgd};
constexpr FamilyDef kAdam8Def{.name = "adam8",
                              .library = kBitsandbytes,
                              .reads = kReadsAdam,
                              .param_codes16 = true,
                              .domains = domains_adam};
constexpr FamilyDef kMomentum8Def{.name = "momentum8",
                                  .library = kBitsandbytes,
                                  .reads = kLr | kWd | kMomentum | kBeta1,
                                  .param_codes16 = true,
                                  .domains = domains_momentum8,
                                  .resolve = resolve_momentum8};
constexpr FamilyDef kBnb1Def{.name = "bnb1",
                             .library = kBitsandbytes,
                             .reads = kLr | kEps | kBeta1 | kBeta2 | kWd,
                             .param_codes16 = true,
                             .domains = domains_bnb1,
                             .nonnegative = nonneg_bnb1};
constexpr FamilyDef kBnb1RmspropDef{.name = "bnb1",
                                    .library = kBitsandbytes,
                                    .reads = kLr | kEps | kBeta1 | kBeta2 | kWd | kAlpha,
                                    .param_codes16 = true,
                                    .domains = domains_bnb1,
                                    .resolve = resolve_bnb_rmsprop,
                                    .nonnegative = nonneg_bnb1};
constexpr FamilyDef kAdemamixDef{.name = "ademamix",
                                 .library = kBitsandbytes,
                                 .reads = kLr | kEps | kBeta1 | kBeta2 | kBeta3 | kAlpha | kWd,
                                 .param_codes16 = true,
                                 .domains = domains_ademamix,
                                 .resolve = resolve_ademamix,
                                 .nonnegative = nonneg_state2};
constexpr FamilyDef kStableDef{
    .name = "stable", .reads = kReadsAdam, .domains = domains_adam, .nonnegative = nonneg_state2};
constexpr FamilyDef kSplitAdamDef{.name = "split_adam",
                                  .reads = kReadsAdam,
                                  .domains = domains_adam,
                                  .nonnegative = nonneg_state2};
constexpr FamilyDef kSplitSgdDef{.name = "split_sgd", .reads = kReadsSgd, .domains = domains_sgd};

// ---- library defaults ------------------------------------------------------------------------
// torch.optim.Adam/AdamW: lr 1e-3, betas (0.9, 0.999), eps 1e-8, weight_decay 0 (Adam) or 1e-2
// (AdamW); bitsandbytes Adam8bit/AdamW8bit the same. SGD: exmy's lr 1e-3 and momentum 0.9
// (torch.optim.SGD has no lr default and momentum 0); bitsandbytes' 8-bit Momentum reads the
// momentum as beta1.
constexpr Hyper kHyper{};
constexpr Hyper with_wd(double wd) {
  Hyper h{};
  h.adam.wd = wd;
  return h;
}

// bitsandbytes' one-state optimizers (section 9.4.1): RMSprop(lr 1e-2, alpha 0.99 as beta1,
// eps 1e-8), Adagrad(lr 1e-2, eps 1e-10), Lion(lr 1e-4, betas (0.9, 0.99), eps unused); wd 0.
constexpr Hyper bnb1_hyper(double lr, double beta1, double beta2, double eps) {
  Hyper h{};
  h.adam.lr = lr;
  h.adam.beta1 = beta1;
  h.adam.beta2 = beta2;
  h.adam.eps = eps;
  return h;
}
constexpr Hyper kRmsprop = bnb1_hyper(1e-2, 0.99, 0.0, 1e-8);
constexpr Hyper kAdagrad = bnb1_hyper(1e-2, 0.0, 0.0, 1e-10);
constexpr Hyper kLion = bnb1_hyper(1e-4, 0.9, 0.99, 0.0);

// AdEMAMix8bit / AdEMAMix32bit: lr 1e-3, betas (0.9, 0.999, 0.9999), alpha 5, eps 1e-8, wd 1e-2.
constexpr Hyper ademamix_hyper() {
  Hyper h = bnb1_hyper(1e-3, 0.9, 0.999, 1e-8);
  h.adam.beta3 = 0.9999;
  h.adam.alpha = 5.0;
  h.adam.wd = 1e-2;
  return h;
}
constexpr Hyper kAdemamix = ademamix_hyper();

constexpr std::array<bool, 3> kGpuAll{true, true, true};
constexpr std::array<bool, 3> kGpuF32{true, false, false};

const Entry kTable[] = {
    {.name = "adamw",
     .family = Family::adam,
     .def = &kAdamDef,
     .decoupled = true,
     .defaults = with_wd(1e-2),
     .variants = "torch-fused",
     .state_bytes = 8.0,
     .gpu = kGpuAll,
     .example = "adamw",
     .init = init_adam,
     .arrays = arrays_adam,
     .cpu_step = step_adam},
    {.name = "adam",
     .family = Family::adam,
     .def = &kAdamDef,
     .defaults = kHyper,
     .variants = "torch-fused",
     .state_bytes = 8.0,
     .gpu = kGpuAll,
     .example = "adam",
     .init = init_adam,
     .arrays = arrays_adam,
     .cpu_step = step_adam},
    {.name = "sgd",
     .family = Family::sgd,
     .def = &kSgdDef,
     .defaults = kHyper,
     .state_bytes = 4.0,
     .gpu = kGpuAll,
     .example = "sgd",
     .init = init_one,
     .arrays = arrays_one,
     .cpu_step = step_sgd},
    {.name = "adamw8bit",
     .family = Family::adam8,
     .def = &kAdam8Def,
     .decoupled = true,
     .defaults = with_wd(1e-2),
     .variants = "torch-order",
     .state_bytes = 2.0,
     .absmax_states = 2,
     .gpu = kGpuAll,
     .example = "adamw8bit",
     .init = init_adam8,
     .arrays = arrays_bnb,
     .cpu_step = step_adam8},
    // bitsandbytes' Adam8bit is the AdamW kernel with weight decay 0.
    {.name = "adam8bit",
     .family = Family::adam8,
     .def = &kAdam8Def,
     .decoupled = true,
     .defaults = kHyper,
     .variants = "torch-order",
     .state_bytes = 2.0,
     .absmax_states = 2,
     .gpu = kGpuAll,
     .example = "adam8bit",
     .init = init_adam8,
     .arrays = arrays_bnb,
     .cpu_step = step_adam8},
    {.name = "momentum8bit",
     .family = Family::momentum8,
     .def = &kMomentum8Def,
     .defaults = kHyper,
     .state_bytes = 1.0,
     .absmax_states = 1,
     .gpu = kGpuAll,
     .example = "momentum8bit",
     .init = init_momentum8,
     .arrays = arrays_bnb,
     .cpu_step = step_momentum8},
    // bitsandbytes' RMSprop8bit/32bit, Adagrad8bit/32bit, Lion8bit/32bit; the paged Lion
    // optimizers keep their states in managed (paged) memory and run the same kernels.
    {.name = "rmsprop8bit",
     .family = Family::bnb1,
     .def = &kBnb1RmspropDef,
     .defaults = kRmsprop,
     .state_bytes = 1.0,
     .absmax_states = 1,
     .bnb_op = native::Bnb1Op::rmsprop,
     .gpu = kGpuAll,
     .example = "rmsprop8bit",
     .init = init_bnb1,
     .arrays = arrays_bnb,
     .cpu_step = step_bnb1},
    {.name = "rmsprop32bit",
     .family = Family::bnb1,
     .def = &kBnb1RmspropDef,
     .defaults = kRmsprop,
     .state_bytes = 4.0,
     .bnb_op = native::Bnb1Op::rmsprop,
     .state32 = true,
     .gpu = kGpuAll,
     .example = "rmsprop32bit",
     .init = init_bnb1,
     .arrays = arrays_bnb,
     .cpu_step = step_bnb1},
    {.name = "adagrad8bit",
     .family = Family::bnb1,
     .def = &kBnb1Def,
     .defaults = kAdagrad,
     .state_bytes = 1.0,
     .absmax_states = 1,
     .bnb_op = native::Bnb1Op::adagrad,
     .gpu = kGpuAll,
     .example = "adagrad8bit",
     .init = init_bnb1,
     .arrays = arrays_bnb,
     .cpu_step = step_bnb1},
    {.name = "adagrad32bit",
     .family = Family::bnb1,
     .def = &kBnb1Def,
     .defaults = kAdagrad,
     .state_bytes = 4.0,
     .bnb_op = native::Bnb1Op::adagrad,
     .state32 = true,
     .gpu = kGpuAll,
     .example = "adagrad32bit",
     .init = init_bnb1,
     .arrays = arrays_bnb,
     .cpu_step = step_bnb1},
    {.name = "lion8bit",
     .family = Family::bnb1,
     .def = &kBnb1Def,
     .defaults = kLion,
     .state_bytes = 1.0,
     .absmax_states = 1,
     .bnb_op = native::Bnb1Op::lion,
     .gpu = kGpuAll,
     .example = "lion8bit",
     .init = init_bnb1,
     .arrays = arrays_bnb,
     .cpu_step = step_bnb1},
    {.name = "lion32bit",
     .family = Family::bnb1,
     .def = &kBnb1Def,
     .defaults = kLion,
     .state_bytes = 4.0,
     .bnb_op = native::Bnb1Op::lion,
     .state32 = true,
     .gpu = kGpuAll,
     .example = "lion32bit",
     .init = init_bnb1,
     .arrays = arrays_bnb,
     .cpu_step = step_bnb1},
    {.name = "paged_lion8bit",
     .family = Family::bnb1,
     .def = &kBnb1Def,
     .defaults = kLion,
     .state_bytes = 1.0,
     .absmax_states = 1,
     .bnb_op = native::Bnb1Op::lion,
     .gpu = kGpuAll,
     .example = "paged_lion8bit",
     .init = init_bnb1,
     .arrays = arrays_bnb,
     .cpu_step = step_bnb1},
    {.name = "paged_lion32bit",
     .family = Family::bnb1,
     .def = &kBnb1Def,
     .defaults = kLion,
     .state_bytes = 4.0,
     .bnb_op = native::Bnb1Op::lion,
     .state32 = true,
     .gpu = kGpuAll,
     .example = "paged_lion32bit",
     .init = init_bnb1,
     .arrays = arrays_bnb,
     .cpu_step = step_bnb1},
    // bitsandbytes' AdEMAMix8bit/32bit and the paged ones (same kernels on managed memory).
    {.name = "ademamix8bit",
     .family = Family::ademamix,
     .def = &kAdemamixDef,
     .decoupled = true,
     .defaults = kAdemamix,
     .state_bytes = 3.0,
     .absmax_states = 3,
     .gpu = kGpuAll,
     .example = "ademamix8bit",
     .init = init_ademamix,
     .arrays = arrays_bnb,
     .cpu_step = step_ademamix},
    {.name = "ademamix32bit",
     .family = Family::ademamix,
     .def = &kAdemamixDef,
     .decoupled = true,
     .defaults = kAdemamix,
     .variants = "double-buffer",
     .state_bytes = 12.0,
     .state32 = true,
     .gpu = kGpuAll,
     .example = "ademamix32bit",
     .init = init_ademamix,
     .arrays = arrays_bnb,
     .cpu_step = step_ademamix},
    {.name = "paged_ademamix8bit",
     .family = Family::ademamix,
     .def = &kAdemamixDef,
     .decoupled = true,
     .defaults = kAdemamix,
     .state_bytes = 3.0,
     .absmax_states = 3,
     .gpu = kGpuAll,
     .example = "paged_ademamix8bit",
     .init = init_ademamix,
     .arrays = arrays_bnb,
     .cpu_step = step_ademamix},
    {.name = "paged_ademamix32bit",
     .family = Family::ademamix,
     .def = &kAdemamixDef,
     .decoupled = true,
     .defaults = kAdemamix,
     .variants = "double-buffer",
     .state_bytes = 12.0,
     .state32 = true,
     .gpu = kGpuAll,
     .example = "paged_ademamix32bit",
     .init = init_ademamix,
     .arrays = arrays_bnb,
     .cpu_step = step_ademamix},
    {.name = "stableadamw",
     .family = Family::stable,
     .def = &kStableDef,
     .decoupled = true,
     .defaults = kHyper,
     .state_bytes = 8.0,
     .reports_rms = true,
     .gpu = kGpuF32,
     .example = "stableadamw",
     .init = init_two,
     .arrays = arrays_two,
     .cpu_step = step_stable},
    {.name = "adamw-FMT",
     .split = true,
     .family = Family::split_adam,
     .def = &kSplitAdamDef,
     .decoupled = true,
     .defaults = with_wd(1e-2),
     .state_bytes = 8.0,
     .gpu = kGpuAll,
     .example = "adamw-bf16+8",
     .init = init_split_two,
     .arrays = arrays_split_two,
     .cpu_step = step_split_adam},
    {.name = "adam-FMT",
     .split = true,
     .family = Family::split_adam,
     .def = &kSplitAdamDef,
     .defaults = kHyper,
     .state_bytes = 8.0,
     .gpu = kGpuAll,
     .example = "adam-fp16+5:sr",
     .init = init_split_two,
     .arrays = arrays_split_two,
     .cpu_step = step_split_adam},
    {.name = "sgd-FMT",
     .split = true,
     .family = Family::split_sgd,
     .def = &kSplitSgdDef,
     .defaults = kHyper,
     .state_bytes = 4.0,
     .gpu = kGpuAll,
     .example = "sgd-fp16+13",
     .init = init_split_one,
     .arrays = arrays_split_one,
     .cpu_step = step_split_sgd},
};

constexpr std::string_view kFmt = "FMT";

std::string_view split_prefix(const Entry& e) {
  return e.name.substr(0, e.name.size() - kFmt.size());
}

// The entries of the families of cmake/ExmyOptimFamilies.cmake (sim/optim/family_<N>.cpp).
#define EXMY_OPTIM_FAMILY(N) EXMY_OPTIM_FAMILY_ENTRIES(N);
}  // namespace
#include "sim/common/optim_families.inc"
namespace {
#undef EXMY_OPTIM_FAMILY

const std::vector<Entry>& table() {
  static const std::vector<Entry> t = [] {
    std::vector<Entry> v(std::begin(kTable), std::end(kTable));
#define EXMY_OPTIM_FAMILY(N) \
  for (const Entry& e : family_entries_##N()) v.push_back(e);
#include "sim/common/optim_families.inc"
#undef EXMY_OPTIM_FAMILY
    return v;
  }();
  return t;
}

class HostStepper final : public Stepper {
 public:
  HostStepper(const Config& c, std::span<float> p, State& s) : c_(c), p_(p), s_(s) {}
  float step(long t, std::span<const float> g) override {
    return c_.opt.entry->cpu_step(c_, t, p_, g, s_);
  }
  void finish() override {}

 private:
  const Config& c_;
  std::span<float> p_;
  State& s_;
};

}  // namespace

void torch_adam_domains(const Entry&, const Hyper& h) {
  const double inf = HUGE_VAL;
  check_domain(h.adam.lr, "--lr", 0.0, inf, true);
  check_domain(h.adam.eps, "--eps", 0.0, inf, true);
  check_domain(h.adam.beta1, "--beta1", 0.0, 1.0, true);
  check_domain(h.adam.beta2, "--beta2", 0.0, 1.0, true);
  check_domain(h.adam.wd, "--wd", 0.0, inf, true);
}

void init_two_states(const Config&, std::span<const float> p, State& s) {
  s.s1.assign(p.size(), 0.0f);
  s.s2.assign(p.size(), 0.0f);
}

std::span<const Entry> optimizers() {
  return table();
}

std::string optimizer_names() {
  std::string out;
  for (const Entry& e : table()) {
    if (!out.empty()) out += ", ";
    out += e.name;
  }
  return out +
         " (FMT: bf16+K with K 0..16 or fp16+K with K 0..13 extra bits, :sr appended for "
         "stochastic rounding)";
}

std::optional<Selected> lookup_optimizer(std::string_view name) {
  for (const Entry& e : table()) {
    if (!e.split) {
      if (name == e.name) return Selected{&e, std::string(name), {}};
      continue;
    }
    const std::string_view pre = split_prefix(e);
    if (name.size() > pre.size() && name.substr(0, pre.size()) == pre) {
      return Selected{&e, std::string(name),
                      parse_split_format(std::string(name.substr(pre.size())))};
    }
  }
  return std::nullopt;
}

Selected find_optimizer(std::string_view name) {
  if (auto s = lookup_optimizer(name)) return *s;
  throw InputError("--optimizer '" + std::string(name) +
                   "': expected one of: " + optimizer_names());
}

bool is_blockwise(const Entry& e) {
  return e.family == Family::adam8 || e.family == Family::momentum8 ||
         ((e.family == Family::bnb1 || e.family == Family::ademamix) && !e.state32);
}

Hyper resolve_hyper(const Entry& e, const HyperOptions& o) {
  Hyper h = e.defaults;
  if (o.lr) h.adam.lr = h.sgd.lr = *o.lr;
  if (o.wd) h.adam.wd = h.sgd.wd = *o.wd;
  if (o.beta1) h.adam.beta1 = *o.beta1;
  if (o.beta2) h.adam.beta2 = *o.beta2;
  if (o.eps) h.adam.eps = *o.eps;
  if (o.momentum) h.sgd.momentum = *o.momentum;
  if (o.dampening) h.sgd.dampening = *o.dampening;
  h.sgd.nesterov = o.nesterov;
  if (o.beta3) h.adam.beta3 = *o.beta3;
  // The family's extra hyperparameters: given, else its default.
  for (std::size_t k = 0; k < e.def->extras.size(); ++k) {
    h.extra[k] = e.def->extras[k].def;
    for (const auto& [name, v] : o.extra) {
      if (name == e.def->extras[k].option) h.extra[k] = v;
    }
  }
  if (e.def->resolve != nullptr) e.def->resolve(e, o, h);
  return h;
}

void check_variant(const Config& c) {
  const Entry& e = *c.opt.entry;
  if (c.variant != "default" && c.variant != e.variants) {
    throw InputError("--variant '" + c.variant + "' for " + c.opt.name + ": expected default" +
                     (e.variants.empty() ? "" : " or " + std::string(e.variants)));
  }
}

void check_domain(double v, const char* what, double lo, double hi, bool hi_open) {
  // The shortest decimal that reads back as v: the text the user typed, for typed values.
  char text[40];
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(text, sizeof text, "%.*g", digits, v);
    if (std::strtod(text, nullptr) == v) break;
  }
  number::require_range(v, text, what, lo, false, hi, hi_open);
}

void check_hyper_domains(const Entry& e, const Hyper& h) {
  if (e.def->domains != nullptr) e.def->domains(e, h);
  for (std::size_t k = 0; k < e.def->extras.size(); ++k) {
    const ExtraHyper& x = e.def->extras[k];
    // A NaN default is Python's None (Adafactor's eps1): left alone when not given.
    if (x.flag || (std::isnan(x.def) && std::isnan(h.extra[k]))) continue;
    check_domain(h.extra[k], std::string(x.option).c_str(), x.lo, x.hi, x.hi_open);
  }
}

namespace {
// torch-cpu's switches (docs/SEMANTICS.md 9.2.2): `:tN` (at::get_num_threads()) and the ATen
// capability `:avx512` or `:avx2` (ATEN_CPU_CAPABILITY; both compute the same bits), after the
// profile's name.
native::TorchCpuLoop parse_cpu_switches(std::string_view profile, std::string_view rest) {
  native::TorchCpuLoop loop;
  if (rest.empty()) throw InputError("--compat " + std::string(profile) + ": an empty switch");
  while (!rest.empty()) {
    const std::size_t colon = rest.find(':');
    const std::string_view sw = rest.substr(0, colon);
    rest = colon == std::string_view::npos ? std::string_view{} : rest.substr(colon + 1);
    if (sw == "avx512" || sw == "avx2") continue;
    if (sw.size() > 1 && sw.size() < 8 && sw[0] == 't' &&
        sw.find_first_not_of("0123456789", 1) == std::string_view::npos &&
        std::stoul(std::string(sw.substr(1))) > 0) {
      loop.threads = static_cast<std::uint32_t>(std::stoul(std::string(sw.substr(1))));
      continue;
    }
    throw InputError("--compat " + std::string(profile) + ": unknown switch '" + std::string(sw) +
                     "' (torch-cpu takes :avx512, :avx2 and :tN with N >= 1 threads; ATen's "
                     "DEFAULT capability, without FMA, is not modelled)");
  }
  return loop;
}
}  // namespace

void apply_compat(Config& c, std::string_view profile) {
  if (compat_is_default(profile)) return;
  const Entry& e = *c.opt.entry;
  const std::size_t colon = profile.find(':');
  const CompatProfile& p = compat_profile(profile.substr(0, colon));
  native::TorchCpuLoop loop;
  if (colon != std::string_view::npos) {
    if (std::string_view(p.name) != "torch-cpu") {
      throw InputError("--compat " + std::string(profile) + ": only torch-cpu takes switches");
    }
    loop = parse_cpu_switches(profile, profile.substr(colon + 1));
  }
  c.hyper.adam.cpu = c.hyper.sgd.cpu = loop;
  // A profile covers every optimizer of a library (bitsandbytes: all its 8-bit kernels); of
  // torch.optim, the families that model the profile's kernels.
  const CompatEntry& ce = compat_step_entry(p, e.def->library, e.name);
  if (e.def->library == kTorchOptim &&
      ((e.def->torch_kernels >> static_cast<int>(ce.kernels)) & 1u) == 0) {
    throw InputError("--compat " + std::string(profile) + " does not cover step --optimizer " +
                     c.opt.name + " (torch 2.11 has no such kernel for it)");
  }
  // double-buffer (AdEMAMix32bit) names bitsandbytes' state layout, not other kernels.
  if ((ce.kernels != native::TorchKernels::cpu || ce.bnb != native::BnbKernels::exact) &&
      c.variant != "default" && c.variant != "double-buffer") {
    throw InputError("--compat " + std::string(profile) + " with --variant " + c.variant +
                     ": choose one (the variant is a model of other kernels)");
  }
  c.hyper.adam.kernels = c.hyper.sgd.kernels = ce.kernels;
  c.hyper.adam.bnb = ce.bnb;
}

std::string_view dtype_name(Storage st) {
  return st == Storage::f32 ? "fp32" : st == Storage::bf16 ? "bf16" : "fp16";
}

void require_gpu_kernel(const Config& c) {
  const Entry& e = *c.opt.entry;
  if (e.gpu[static_cast<int>(c.st)]) return;
  std::string have;
  for (Storage st : {Storage::f32, Storage::bf16, Storage::f16}) {
    if (!e.gpu[static_cast<int>(st)]) continue;
    have += (have.empty() ? "" : ", ") + std::string(dtype_name(st));
  }
  throw InputError("--device cuda: no byte-identical GPU step for " + c.opt.name + " with " +
                   std::string(dtype_name(c.st)) + " parameters (the GPU runs it on " + have +
                   " parameters; use --device cpu)");
}

std::unique_ptr<Stepper> cpu_stepper(const Config& c, std::span<float> p, State& s) {
  return std::make_unique<HostStepper>(c, p, s);
}

}  // namespace exmy::optim
