// Campaign (e), `exmy verify --campaign steps` (docs/SEMANTICS.md 13.1): every optimizer step of
// section 9 run by the native engine (sim/optim on sim/native, what the CLI and the CUDA kernels
// compute) and by the step oracle (sim/oracle/steps, exact MPFR values rounded once per
// operation), on random inputs and boundary classes, over several steps with the states carried.
// Before each step the native engine is given the oracle's state, so that every step is checked
// on its own and one disagreement does not cascade. Every parameter, state, code and absmax is
// compared bit for bit (any two NaNs agree: section 9.1 leaves NaN payloads and signs open).
#include <algorithm>
#include <array>
#include <cfloat>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <stdexcept>
#include <variant>

#include "sim/common/error.hpp"
#include "sim/format/codebook.hpp"
#include "sim/optim/optim.hpp"
#include "sim/optim/registry.hpp"
#include "sim/oracle/steps/family_table.hpp"
#include "sim/oracle/steps/steps.hpp"
#include "sim/verify/campaign.hpp"
#include "sim/verify/campaign_detail.hpp"
#include "sim/verify/campaign_steps_inputs.hpp"
#include "sim/verify/campaign_steps_ops.hpp"

namespace exmy::verify {
namespace {

namespace os = oracle::steps;
using native::Storage;
using os::Real;

std::uint32_t bits(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
}
float from_bits(std::uint32_t u) {
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}
bool is_nan32(std::uint32_t u) {
  return (u & 0x7FFFFFFFu) > 0x7F800000u;
}
ValueClass class32(std::uint32_t u) {
  const std::uint32_t e = (u >> 23) & 0xFF, m = u & 0x7FFFFF;
  if (e == 0) return m == 0 ? ValueClass::zero : ValueClass::subnormal;
  if (e == 0xFF) return m == 0 ? ValueClass::inf : ValueClass::nan;
  return ValueClass::normal;
}
std::string hex32(float x) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08" PRIx32, bits(x));
  return buf;
}

const FloatFormat& storage_format(Storage st) {
  return st == Storage::bf16 ? os::BF16 : st == Storage::f16 ? os::F16 : os::F32;
}
const char* storage_name(Storage st) {
  return st == Storage::bf16 ? "bf16" : st == Storage::f16 ? "fp16" : "fp32";
}

// Input classes and their generator: sim/verify/campaign_steps_inputs.hpp.
using namespace steps_inputs;  // NOLINT: the campaign's own internal header

// ---- checking ------------------------------------------------------------------------------
struct CaseId {
  std::string op, cls, cfg;
};

class Checker {
 public:
  Checker(const CaseId& id, detail::Tally& t, std::size_t max) : id_(id), t_(t), max_(max) {}

  // An fp32 (or fp32-held storage) value; NaN agrees with NaN.
  void value(const char* what, long step, std::size_t i, float nat, const Real& orc,
             const std::function<std::string()>& operands) {
    const std::uint32_t o = orc.f32_bits(), n = bits(nat);
    const bool ok = n == o || (is_nan32(n) && is_nan32(o));
    record(what, step, i, n, o, class32(o), ok, operands);
  }
  void code(const char* what, long step, std::size_t i, std::uint64_t nat, std::uint64_t orc,
            bool ok, const std::function<std::string()>& operands) {
    record(what, step, i, nat, orc, ValueClass::normal, ok, operands);
  }
  std::uint64_t mismatches() const { return t_.mismatches; }

 private:
  void record(const char* what, long step, std::size_t i, std::uint64_t n, std::uint64_t o,
              ValueClass oc, bool ok, const std::function<std::string()>& operands) {
    t_.add_check(oc, ok);
    t_.label(id_.cls, ok);
    if (ok || t_.first.size() >= max_) return;
    Mismatch m;
    m.check = what;
    m.from = id_.op;
    m.to = id_.cls;
    m.rounding = id_.cfg;
    m.input = i;
    m.rand = static_cast<std::uint32_t>(step);
    m.native.code = n;
    m.oracle.code = o;
    m.detail = "step " + std::to_string(step) + " element " + std::to_string(i) + ": " +
               (operands ? operands() : std::string());
    t_.keep(std::move(m), max_);
  }
  const CaseId& id_;
  detail::Tally& t_;
  std::size_t max_;
};

std::vector<Real> to_real(const std::vector<float>& x) {
  std::vector<Real> r;
  r.reserve(x.size());
  for (float v : x) r.push_back(Real::of_f32_bits(bits(v)));
  return r;
}
std::vector<float> to_float(const std::vector<Real>& x) {
  std::vector<float> r;
  r.reserve(x.size());
  for (const Real& v : x) r.push_back(from_bits(v.f32_bits()));
  return r;
}

// ---- the ops -------------------------------------------------------------------------------
// bnb1: bitsandbytes' one-state RMSprop/Adagrad/Lion (Op::bnb1op); ademamix: its AdEMAMix.
// registered: an op a registry family generates (optim::FamilyDef::campaign), run by
// run_registered on the entry's CPU step and the family's oracle (family_table.hpp).
enum class Family {
  registered,
  adam,
  sgd,
  adam8,
  momentum8,
  bnb1,
  ademamix,
  stable,
  split_adam,
  split_sgd,
  loss,
  requant
};

struct Op {
  std::string name;
  Family family;
  Storage st = Storage::f32;
  bool decoupled = true;     // adamw / adam (and the 8-bit pair)
  int block = 256;           // 8-bit
  bool small = false;        // 8-bit: the < 4096 fp32 fallback
  os::SplitFmt split{};      // split formats
  bool fixed_scale = false;  // loss: fixed:S instead of dynamic
  int kernels = 0;  // adam/sgd: 0 torch-cpu, 1 torch-cuda, 2 torch-cuda-foreach, 3 torch-cuda-fused
  native::Bnb1Op bnb1op{};                   // bnb1
  const optim::Entry* entry = nullptr;       // registered
  std::vector<optim::CampaignConfig> reg{};  // registered: its configurations
  long min_steps = 0;                        // registered: optim::CampaignOp::min_steps
};

std::vector<Op> all_ops() {
  std::vector<Op> ops;
  // The --compat profiles of 9.2/9.3: "" (torch-cpu, the default), "-cuda", "-cuda-foreach".
  // SGD also under "-cuda-fused" (the oracle models fused Adam/AdamW's powf only on the GPU).
  const char* kernel_suffix[] = {"", "-cuda", "-cuda-foreach", "-cuda-fused"};
  for (int k = 0; k < 4; ++k) {
    for (bool dec : {true, false}) {
      for (Storage st : {Storage::f32, Storage::bf16, Storage::f16}) {
        if (k == 3) break;
        Op o{std::string(dec ? "adamw-" : "adam-") + storage_name(st) + kernel_suffix[k],
             Family::adam, st, dec};
        o.kernels = k;
        ops.push_back(o);
      }
    }
    for (Storage st : {Storage::f32, Storage::bf16, Storage::f16}) {
      Op o{std::string("sgd-") + storage_name(st) + kernel_suffix[k], Family::sgd, st};
      o.kernels = k;
      ops.push_back(o);
    }
  }
  for (bool dec : {true, false}) {
    const std::string base = dec ? "adamw8bit" : "adam8bit";
    ops.push_back(Op{base + "-b256", Family::adam8, Storage::f32, dec, 256});
    if (dec) {
      ops.push_back(Op{base + "-b2048", Family::adam8, Storage::f32, dec, 2048});
      ops.push_back(Op{base + "-small", Family::adam8, Storage::f32, dec, 256, true});
      ops.push_back(Op{base + "-b256-bf16", Family::adam8, Storage::bf16, dec, 256});
    }
  }
  ops.push_back(Op{"momentum8bit-b256", Family::momentum8, Storage::f32, true, 256});
  ops.push_back(Op{"momentum8bit-b2048", Family::momentum8, Storage::f32, true, 2048});
  ops.push_back(Op{"momentum8bit-small", Family::momentum8, Storage::f32, true, 256, true});
  const std::pair<const char*, native::Bnb1Op> bnb1_ops[] = {
      {"rmsprop8bit", native::Bnb1Op::rmsprop},
      {"adagrad8bit", native::Bnb1Op::adagrad},
      {"lion8bit", native::Bnb1Op::lion}};
  for (const auto& [name, bop] : bnb1_ops) {
    for (Storage st : {Storage::f32, Storage::bf16, Storage::f16}) {
      const std::string sfx = st == Storage::f32 ? "" : std::string("-") + storage_name(st);
      Op o{std::string(name) + "-b256" + sfx, Family::bnb1, st, true, 256};
      o.bnb1op = bop;
      ops.push_back(o);
      o.name = std::string(name) + "-small" + sfx;
      o.small = true;
      ops.push_back(o);
    }
  }
  for (Storage st : {Storage::f32, Storage::bf16, Storage::f16}) {
    const std::string sfx = st == Storage::f32 ? "" : std::string("-") + storage_name(st);
    ops.push_back(Op{"ademamix8bit-b256" + sfx, Family::ademamix, st, true, 256});
    ops.push_back(Op{"ademamix8bit-small" + sfx, Family::ademamix, st, true, 256, true});
  }
  ops.push_back(Op{"bnb8-requantize", Family::requant});
  ops.push_back(Op{"stableadamw", Family::stable});
  struct S {
    const char* name;
    Family fam;
    bool dec;
    os::SplitFmt f;
  };
  const S splits[] = {
      {"adamw-bf16+8", Family::split_adam, true, {true, 8, false}},
      {"adamw-bf16+8:sr", Family::split_adam, true, {true, 8, true}},
      {"adamw-bf16+16", Family::split_adam, true, {true, 16, false}},
      {"adamw-bf16+1:sr", Family::split_adam, true, {true, 1, true}},
      {"adamw-fp16+8", Family::split_adam, true, {false, 8, false}},
      {"adamw-fp16+8:sr", Family::split_adam, true, {false, 8, true}},
      {"adamw-fp16+13:sr", Family::split_adam, true, {false, 13, true}},
      {"adam-bf16+5:sr", Family::split_adam, false, {true, 5, true}},
      {"adam-fp16+3", Family::split_adam, false, {false, 3, false}},
      {"sgd-bf16+8", Family::split_sgd, true, {true, 8, false}},
      {"sgd-bf16+8:sr", Family::split_sgd, true, {true, 8, true}},
      {"sgd-fp16+4:sr", Family::split_sgd, true, {false, 4, true}},
      // e5m2 + k (Lewandowski and Kosson, table 3's fp8+8 / fp8+4).
      {"adamw-e5m2+8:sr", Family::split_adam, true, {false, 8, true, true}},
      {"adamw-e5m2+4", Family::split_adam, true, {false, 4, false, true}},
      {"sgd-e5m2+21:sr", Family::split_sgd, true, {false, 21, true, true}},
  };
  for (const S& s : splits) {
    Op o{s.name, s.fam, Storage::f32, s.dec};
    o.split = s.f;
    ops.push_back(o);
  }
  ops.push_back(Op{"loss-dynamic", Family::loss});
  Op fixed{"loss-fixed", Family::loss};
  fixed.fixed_scale = true;
  ops.push_back(fixed);
  // The ops the registry's families generate.
  for (const optim::Entry& e : optim::optimizers()) {
    if (e.def->campaign == nullptr) continue;
    for (optim::CampaignOp& c : e.def->campaign(e)) {
      Op o{c.name, Family::registered, c.st};
      o.kernels = static_cast<int>(c.kernels);
      o.entry = &e;
      o.reg = std::move(c.configs);
      o.min_steps = c.min_steps;
      ops.push_back(std::move(o));
    }
  }
  return ops;
}

// Hyperparameter configurations: the library defaults, and one that reaches the other branches
// (β1 = 0.5 takes lerp's second FMA form; large lr and wd; nesterov and dampening for SGD).
struct Cfg {
  std::string label;
  optim::AdamHyper a;
  optim::SgdHyper s;
  optim::Hyper h{};  // registered ops
};
std::vector<Cfg> configs(const Op& op) {
  std::vector<Cfg> c;
  switch (op.family) {
    case Family::registered:
      for (const optim::CampaignConfig& r : op.reg) c.push_back(Cfg{r.label, {}, {}, r.hyper});
      break;
    case Family::adam:
    case Family::split_adam:
    case Family::adam8:
    case Family::loss: {
      const double wd = op.decoupled ? 0.01 : 0.0;
      Cfg d{"defaults", {}, {}};
      d.a = {1e-3, 0.9, 0.999, 1e-8, wd};
      Cfg b{"lr0.05 b0.5,0.9 eps1e-6 wd0.1", {}, {}};
      b.a = {0.05, 0.5, 0.9, 1e-6, 0.1};
      c = {d, b};
      if (op.family == Family::adam) {  // amsgrad and maximize (SEMANTICS 9.2.6)
        Cfg a{"amsgrad wd0.1 b0.5,0.9", {}, {}};
        a.a = {1e-2, 0.5, 0.9, 1e-8, 0.1};
        a.a.amsgrad = true;
        Cfg m{"maximize amsgrad", {}, {}};
        m.a = {1e-3, 0.9, 0.999, 1e-8, wd};
        m.a.amsgrad = m.a.maximize = true;
        c.push_back(a);
        c.push_back(m);
      }
      break;
    }
    case Family::sgd:
    case Family::split_sgd: {
      Cfg a{"mom0.9", {}, {}};
      a.s = {1e-2, 0.9, 0.0, 0.0, false};
      Cfg b{"nesterov wd1e-4", {}, {}};
      b.s = {0.1, 0.9, 0.0, 1e-4, true};
      Cfg d{"mom0.5 damp0.3 wd0.01", {}, {}};
      d.s = {1e-3, 0.5, 0.3, 0.01, false};
      Cfg e{"plain lr0.5", {}, {}};
      e.s = {0.5, 0.0, 0.0, 0.0, false};
      c = {a, b, d, e};
      if (op.family == Family::sgd) {  // maximize (SEMANTICS 9.3)
        Cfg m{"maximize nesterov wd0.01", {}, {}};
        m.s = {1e-2, 0.9, 0.0, 0.01, true};
        m.s.maximize = true;
        c.push_back(m);
      }
      break;
    }
    case Family::momentum8: {
      Cfg a{"mom0.9", {}, {}};
      a.a = {1e-2, 0.9, 0.999, 1e-8, 0.0};
      Cfg b{"mom0.5 wd1e-3 lr0.1", {}, {}};
      b.a = {0.1, 0.5, 0.999, 1e-8, 1e-3};
      c = {a, b};
      break;
    }
    case Family::ademamix: {  // bitsandbytes' defaults, then other betas, alpha and decay
      Cfg a{"defaults", {}, {}};
      a.a = {1e-3, 0.9, 0.999, 1e-8, 1e-2};
      a.a.beta3 = 0.9999;
      a.a.alpha = 5.0;
      Cfg b{"lr0.01 b0.5,0.9,0.99 alpha2 eps1e-6 wd0.1", {}, {}};
      b.a = {1e-2, 0.5, 0.9, 1e-6, 0.1};
      b.a.beta3 = 0.99;
      b.a.alpha = 2.0;
      c = {a, b};
      break;
    }
    case Family::bnb1: {  // bitsandbytes' defaults, then larger steps with weight decay
      Cfg a{"defaults", {}, {}};
      Cfg b{"wd", {}, {}};
      switch (op.bnb1op) {
        case native::Bnb1Op::rmsprop:
          a.a = {1e-2, 0.99, 0.0, 1e-8, 0.0};
          b.label = "lr0.1 alpha0.9 eps1e-6 wd0.01";
          b.a = {0.1, 0.9, 0.0, 1e-6, 0.01};
          break;
        case native::Bnb1Op::adagrad:
          a.a = {1e-2, 0.0, 0.0, 1e-10, 0.0};
          b.label = "lr0.5 eps1e-6 wd1e-3";
          b.a = {0.5, 0.0, 0.0, 1e-6, 1e-3};
          break;
        case native::Bnb1Op::lion:
          a.a = {1e-4, 0.9, 0.99, 0.0, 0.0};
          b.label = "lr0.01 b0.5,0.9 wd0.1";
          b.a = {1e-2, 0.5, 0.9, 0.0, 0.1};
          break;
      }
      c = {a, b};
      break;
    }
    case Family::stable: {
      Cfg a{"b0.9,0.99 eps1e-6 wd0.01", {}, {}};
      a.a = {1e-3, 0.9, 0.99, 1e-6, 0.01};
      Cfg b{"lr1 b0.5,0.6 eps1e-8 wd0.1", {}, {}};
      b.a = {1.0, 0.5, 0.6, 1e-8, 0.1};
      c = {a, b};
      break;
    }
    case Family::requant:
      c = {Cfg{"absmax 1, 4, 0.75", {}, {}}};
      break;
  }
  return c;
}

struct Sizes {
  std::size_t n_elem;   // torch, split, stable, loss
  std::size_t n_8bit;   // 8-bit (> 4096, with a partial last block for both block sizes)
  std::size_t n_small;  // fallback
  long steps;
  int reps;  // seeds per (op, class, cfg)
};
Sizes sizes(Depth d) {
  // ci: under a minute on 2 cores; full: about 4·10^8 checks, sized for 16 cores. n_elem is no
  // multiple of 32: the torch-cpu kernels' scalar tails (SEMANTICS 9.2.2) are in every tensor.
  return d == Depth::ci ? Sizes{1024 + 19, 4096 + 300, 300, 5, 1}
                        : Sizes{8192 + 45, 4096 * 3 + 777, 3000, 10, 8};
}

// Which classes an op runs (8-bit requantization has its own input set).
std::vector<Cls> classes_of(const Op& op) {
  if (op.family == Family::requant) return {Cls::ties};
  return {std::begin(kAllClasses), std::end(kAllClasses)};
}

std::size_t elements_of(const Op& op, const Sizes& z) {
  if (op.family == Family::adam8 || op.family == Family::momentum8 || op.family == Family::bnb1 ||
      op.family == Family::ademamix) {
    return op.small ? z.n_small : z.n_8bit;
  }
  return z.n_elem;
}

std::uint64_t case_seed(const std::string& op, Cls c, std::size_t cfg, int rep) {
  std::uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a of the op name, then the indices
  for (char ch : op) h = (h ^ static_cast<unsigned char>(ch)) * 0x100000001b3ull;
  return h ^ (static_cast<std::uint64_t>(c) << 40) ^ (cfg << 48) ^ static_cast<std::uint64_t>(rep);
}

// ---- family runners ------------------------------------------------------------------------
struct Run {
  const Op& op;
  const Cfg& cfg;
  Cls cls;
  std::uint64_t seed;
  const Sizes& z;
  Checker& ck;
};

void run_adam(const Run& r) {
  const Storage st = r.op.st;
  const FloatFormat& T = storage_format(st);
  Gen gen(r.seed, st);
  const std::size_t n = elements_of(r.op, r.z);
  std::vector<float> p(n), g(n), m(n, 0.0f), v(n, 0.0f), x(n, 0.0f);
  for (std::size_t i = 0; i < n; ++i) p[i] = gen.value(r.cls, Gen::Role::param, i);
  std::vector<Real> P = to_real(p), M = to_real(m), V = to_real(v), X = to_real(x);
  os::AdamHyper h{r.cfg.a.lr,  r.cfg.a.beta1, r.cfg.a.beta2,
                  r.cfg.a.eps, r.cfg.a.wd,    static_cast<os::Kernels>(r.op.kernels)};
  h.amsgrad = r.cfg.a.amsgrad;
  h.maximize = r.cfg.a.maximize;
  optim::AdamHyper na = r.cfg.a;
  na.kernels = static_cast<native::TorchKernels>(r.op.kernels);
  for (long t = 1; t <= r.z.steps; ++t) {
    for (std::size_t i = 0; i < n; ++i) g[i] = gen.value(r.cls, Gen::Role::grad, i);
    p = to_float(P), m = to_float(M), v = to_float(V), x = to_float(X);
    const std::vector<float> p0 = p, m0 = m, v0 = v, x0 = x;
    optim::adam_step(na, r.op.decoupled, st, t, p, g, m, v, x);
    os::torch_adam_step(h, r.op.decoupled, T, t, P, to_real(g), M, V, &X);
    for (std::size_t i = 0; i < n; ++i) {
      const auto ops = [&] {
        return "p " + hex32(p0[i]) + " g " + hex32(g[i]) + " m " + hex32(m0[i]) + " v " +
               hex32(v0[i]) + (h.amsgrad ? " vmax " + hex32(x0[i]) : std::string());
      };
      r.ck.value("p", t, i, p[i], P[i], ops);
      r.ck.value("exp_avg", t, i, m[i], M[i], ops);
      r.ck.value("exp_avg_sq", t, i, v[i], V[i], ops);
      if (h.amsgrad) r.ck.value("max_exp_avg_sq", t, i, x[i], X[i], ops);
    }
  }
}

void run_sgd(const Run& r) {
  const Storage st = r.op.st;
  const FloatFormat& T = storage_format(st);
  Gen gen(r.seed, st);
  const std::size_t n = elements_of(r.op, r.z);
  std::vector<float> p(n), g(n), b(n, 0.0f);
  for (std::size_t i = 0; i < n; ++i) p[i] = gen.value(r.cls, Gen::Role::param, i);
  std::vector<Real> P = to_real(p), B = to_real(b);
  os::SgdHyper h{r.cfg.s.lr, r.cfg.s.momentum, r.cfg.s.dampening,
                 r.cfg.s.wd, r.cfg.s.nesterov, static_cast<os::Kernels>(r.op.kernels)};
  h.maximize = r.cfg.s.maximize;
  optim::SgdHyper ns = r.cfg.s;
  ns.kernels = static_cast<native::TorchKernels>(r.op.kernels);
  for (long t = 1; t <= r.z.steps; ++t) {
    for (std::size_t i = 0; i < n; ++i) g[i] = gen.value(r.cls, Gen::Role::grad, i);
    p = to_float(P), b = to_float(B);
    const std::vector<float> p0 = p, b0 = b;
    optim::sgd_step(ns, st, t, p, g, b);
    os::torch_sgd_step(h, T, t, P, to_real(g), B);
    for (std::size_t i = 0; i < n; ++i) {
      const auto ops = [&] {
        return "p " + hex32(p0[i]) + " g " + hex32(g[i]) + " buf " + hex32(b0[i]);
      };
      r.ck.value("p", t, i, p[i], P[i], ops);
      if (r.cfg.s.momentum != 0.0) r.ck.value("momentum_buffer", t, i, b[i], B[i], ops);
    }
  }
}

const os::Codebook& oracle_codebook(bool is_signed) {
  static const os::Codebook s = os::make_codebook(dynamic_codebook(true).values);
  static const os::Codebook u = os::make_codebook(dynamic_codebook(false).values);
  return is_signed ? s : u;
}

void run_bnb8(const Run& r) {
  const bool ademamix = r.op.family == Family::ademamix;
  const bool adam = r.op.family == Family::adam8 || ademamix;  // two states (and m2 in state 1)
  const Storage st = r.op.st;
  const FloatFormat& T = storage_format(st);
  Gen gen(r.seed, st);
  const std::size_t n = elements_of(r.op, r.z);
  std::vector<float> p(n), g(n);
  for (std::size_t i = 0; i < n; ++i) p[i] = gen.value(r.cls, Gen::Role::param, i);
  std::vector<Real> P = to_real(p);
  optim::Bnb8State S = ademamix ? optim::bnb_ademamix_init(n, r.op.block, r.op.small)
                                : optim::bnb8_init(n, adam, r.op.block, r.op.small);
  os::Bnb8State O = os::bnb8_init(n, adam, r.op.block, r.op.small);
  if (ademamix) os::bnb_ademamix_init(O, n);
  const os::AdamHyper h{r.cfg.a.lr, r.cfg.a.beta1, r.cfg.a.beta2, r.cfg.a.eps, r.cfg.a.wd};
  const os::Codebook& c1 = oracle_codebook(true);
  const os::Codebook& c2 = oracle_codebook(false);
  for (long t = 1; t <= r.z.steps; ++t) {
    for (std::size_t i = 0; i < n; ++i) g[i] = gen.value(r.cls, Gen::Role::grad, i);
    // The native engine starts from the oracle's state.
    p = to_float(P);
    if (O.is_8bit) {
      S.q1 = O.q1;
      S.absmax1 = to_float(O.a1);
      if (adam) {
        S.q2 = O.q2;
        S.absmax2 = to_float(O.a2);
      }
    } else {
      S.s1 = to_float(O.s1);
      if (adam) S.s2 = to_float(O.s2);
    }
    const optim::Bnb8State S0 = S;
    const std::vector<float> p0 = p;
    const native::Bnb8Scalars sc = optim::bnb8_scalars(r.cfg.a, t, false);
    if (ademamix) {
      optim::bnb_ademamix_step(sc, st, p, g, S);
      os::bnb_ademamix_step(h, r.cfg.a.beta3, r.cfg.a.alpha, t, T, c1, c2, P, to_real(g), O);
    } else if (adam) {
      optim::bnb_adam8_step(sc, st, p, g, S);
      os::bnb_adam8_step(h, t, T, c1, c2, P, to_real(g), O);
    } else if (r.op.family == Family::bnb1) {
      optim::bnb1_step(sc, r.op.bnb1op, st, p, g, S);
      os::bnb1_step(static_cast<os::Bnb1Op>(static_cast<int>(r.op.bnb1op)), h, t, T, c1, P,
                    to_real(g), O);
    } else {
      optim::bnb_momentum8_step(sc, st, p, g, S);
      os::bnb_momentum8_step(h, t, T, c1, P, to_real(g), O);
    }
    const std::size_t B = static_cast<std::size_t>(r.op.block);
    for (std::size_t i = 0; i < n; ++i) {
      const auto ops = [&] {
        std::string s = "p " + hex32(p0[i]) + " g " + hex32(g[i]);
        if (S0.is_8bit) {
          char buf[96];
          std::snprintf(buf, sizeof buf, " q1 %u absmax1 %s", S0.q1[i],
                        hex32(S0.absmax1[i / B]).c_str());
          s += buf;
          if (adam) {
            std::snprintf(buf, sizeof buf, " q2 %u absmax2 %s", S0.q2[i],
                          hex32(S0.absmax2[i / B]).c_str());
            s += buf;
          }
        } else {
          s += " s1 " + hex32(S0.s1[i]) + (adam ? " s2 " + hex32(S0.s2[i]) : "");
        }
        return s;
      };
      r.ck.value("p", t, i, p[i], P[i], ops);
      if (O.is_8bit) {
        // A NaN state 1 makes the sign guard read a NaN's sign bit (unspecified, 9.1): code 0 or
        // 255 both follow the document.
        const bool ok1 = S.q1[i] == O.q1[i] || (O.q1_nan[i] && (S.q1[i] == 0 || S.q1[i] == 255));
        r.ck.code("q1", t, i, S.q1[i], O.q1[i], ok1, ops);
        if (adam) r.ck.code("q2", t, i, S.q2[i], O.q2[i], S.q2[i] == O.q2[i], ops);
        if (ademamix) {  // m2: state 1's second half
          const std::size_t k = n + i;
          const bool ok3 = S.q1[k] == O.q1[k] || (O.q1_nan[k] && (S.q1[k] == 0 || S.q1[k] == 255));
          r.ck.code("q1.m2", t, i, S.q1[k], O.q1[k], ok3, ops);
        }
      } else {
        r.ck.value("s1", t, i, S.s1[i], O.s1[i], ops);
        if (adam) r.ck.value("s2", t, i, S.s2[i], O.s2[i], ops);
        if (ademamix) r.ck.value("s1.m2", t, i, S.s1[n + i], O.s1[n + i], ops);
      }
    }
    if (O.is_8bit) {
      // AdEMAMix's absmax1 holds m1's then m2's blocks (twice absmax2's length).
      for (std::size_t b = 0; b < O.a1.size(); ++b) {
        r.ck.value("absmax1", t, b, S.absmax1[b], O.a1[b], nullptr);
      }
      for (std::size_t b = 0; adam && b < O.a2.size(); ++b) {
        r.ck.value("absmax2", t, b, S.absmax2[b], O.a2[b], nullptr);
      }
    }
  }
}

// 9.4 step 4 alone, on the inputs that decide it: every midpoint of both maps and its fp32
// neighbours, every code value, ±0, NaN, values beyond ±1, under three absmax values.
void run_requant(const Run& r) {
  const float* c1 = dynamic_codebook(true).values.data();
  const float* c2 = dynamic_codebook(false).values.data();
  float mids1[256], mids2[256];
  native::bnb_midpoints(c1, mids1);
  native::bnb_midpoints(c2, mids2);
  std::vector<float> xs = {0.0f,     -0.0f,     NAN,    -NAN,    1.5f,    -1.5f,
                           INFINITY, -INFINITY, 1e-30f, -1e-30f, FLT_MIN, -FLT_MIN};
  for (const float* cb : std::array<const float*, 4>{c1, c2, mids1, mids2}) {
    for (int k = 0; k < 255 + (cb == c1 || cb == c2 ? 1 : 0); ++k) {
      const float x = cb[k];
      xs.push_back(x);
      xs.push_back(std::nextafter(x, INFINITY));
      xs.push_back(std::nextafter(x, -INFINITY));
    }
  }
  const os::Codebook& o1 = oracle_codebook(true);
  const os::Codebook& o2 = oracle_codebook(false);
  for (float a : {1.0f, 4.0f, 0.75f}) {
    const Real A = Real::of_f32_bits(bits(a));
    for (std::size_t i = 0; i < xs.size(); ++i) {
      // s = x·a: exact for a power of two (then s ⊘ a = x hits the midpoint exactly).
      const float s = xs[i] * a;
      const Real Sx = Real::of_f32_bits(bits(s));
      const auto ops = [&] { return "s " + hex32(s) + " absmax " + hex32(a); };
      std::uint8_t nan_state = 0;
      const std::uint8_t want1 = os::requantize_signed(o1, Sx, A, nan_state);
      const std::uint8_t got1 = native::bnb_quant_signed(native::Bnb8Scalars{}, c1, mids1, s, a);
      r.ck.code("q1", 1, i, got1, want1, got1 == want1 || (nan_state && (got1 == 0 || got1 == 255)),
                ops);
      const std::uint8_t want2 = os::nearest_even(o2, os::div(os::F32, Sx, A));
      const std::uint8_t got2 = native::bnb_quant_unsigned(native::Bnb8Scalars{}, mids2, s, a);
      r.ck.code("q2", 1, i, got2, want2, got2 == want2, ops);
    }
  }
}

void run_stable(const Run& r) {
  Gen gen(r.seed, Storage::f32);
  const std::size_t n = elements_of(r.op, r.z);
  std::vector<float> p(n), g(n), v(n, 0.0f), u(n, 0.0f);
  for (std::size_t i = 0; i < n; ++i) p[i] = gen.value(r.cls, Gen::Role::param, i);
  std::vector<Real> P = to_real(p), V = to_real(v), U = to_real(u);
  const os::AdamHyper h{r.cfg.a.lr, r.cfg.a.beta1, r.cfg.a.beta2, r.cfg.a.eps, r.cfg.a.wd};
  for (long t = 1; t <= r.z.steps; ++t) {
    for (std::size_t i = 0; i < n; ++i) g[i] = gen.value(r.cls, Gen::Role::grad, i);
    p = to_float(P), v = to_float(V), u = to_float(U);
    const std::vector<float> p0 = p, v0 = v, u0 = u;
    const float rms = optim::stable_adamw_step(r.cfg.a, t, p, g, v, u);
    const Real RMS = os::stable_adamw_step(h, t, P, to_real(g), V, U);
    r.ck.value("rms", t, 0, rms, RMS, nullptr);
    for (std::size_t i = 0; i < n; ++i) {
      const auto ops = [&] {
        return "p " + hex32(p0[i]) + " g " + hex32(g[i]) + " v " + hex32(v0[i]) + " u " +
               hex32(u0[i]) + " rms " + hex32(rms);
      };
      r.ck.value("p", t, i, p[i], P[i], ops);
      r.ck.value("v", t, i, v[i], V[i], ops);
      r.ck.value("u", t, i, u[i], U[i], ops);
    }
  }
}

bool is_nan16(std::uint16_t h, const os::SplitFmt& f) {
  const std::uint16_t e = f.bf16 ? 0x7F80u : f.fp8 ? 0x7Cu : 0x7C00u;
  return (h & e) == e && (h & ~e & (f.fp8 ? 0x7Fu : 0x7FFFu)) != 0;
}

native::SplitFormat native_split(const os::SplitFmt& f) {
  native::SplitFormat s;
  s.hi = f.bf16 ? Storage::bf16 : Storage::f16;
  s.k = f.k;
  s.sr = f.sr;
  s.fp8 = f.fp8;
  return s;
}

void run_split(const Run& r) {
  const os::SplitFmt f = r.op.split;
  const native::SplitFormat nf = native_split(f);
  // Parameters: fp32 values (the split keeps 16 + k of their bits).
  Gen gen(r.seed, Storage::f32);
  Gen ggen(r.seed ^ 0x9e3779b97f4a7c15ull, f.bf16 ? Storage::bf16 : Storage::f16);
  const std::size_t n = elements_of(r.op, r.z);
  const std::uint64_t seed = r.seed & 0xFFFFFFFFull;
  std::vector<float> x(n), g(n), m(n, 0.0f), v(n, 0.0f);
  // fp32 values of the class (extra bits set), every third one a value of the 16-bit format.
  for (std::size_t i = 0; i < n; ++i) x[i] = gen.value(r.cls, Gen::Role::param, i);
  for (std::size_t i = 0; i < n; i += 3) x[i] = ggen.value(r.cls, Gen::Role::param, i);
  // The initial split (t = 0 words).
  optim::SplitTensor N = optim::split_tensor(x, nf, seed);
  std::vector<os::SplitElem> E(n);
  for (std::size_t i = 0; i < n; ++i) {
    E[i] = os::split(Real::of_f32_bits(bits(x[i])), f, os::split_word(seed, 0, i));
  }
  const auto compare = [&](long t, const std::vector<float>& in_x, const std::vector<float>& g_in,
                           const std::vector<float>& m0, const std::vector<float>& v0) {
    const std::vector<std::uint32_t> words = os::pack_fields(E, f);
    for (std::size_t i = 0; i < n; ++i) {
      const auto ops = [&] {
        std::string s = "p " + hex32(in_x[i]);
        if (t > 0) s += " g " + hex32(g_in[i]) + " m " + hex32(m0[i]) + " v " + hex32(v0[i]);
        char buf[48];
        std::snprintf(buf, sizeof buf, " word 0x%08" PRIx32,
                      f.sr ? os::split_word(seed, t, i) : 0u);
        return s + buf;
      };
      // A NaN keeps its sign in the 16-bit part (section 6), and a NaN's sign is unspecified
      // (9.1): any two NaN codes agree.
      const bool ok = N.hi[i] == E[i].hi || (is_nan16(N.hi[i], f) && is_nan16(E[i].hi, f));
      r.ck.code("hi", t, i, N.hi[i], E[i].hi, ok, ops);
    }
    for (std::size_t w = 0; w < words.size(); ++w) {
      r.ck.code("extra-word", t, w, N.extra[w], words[w], N.extra[w] == words[w], nullptr);
    }
  };
  compare(0, x, g, m, v);
  std::vector<Real> M = to_real(m), V = to_real(v);
  const os::AdamHyper h{r.cfg.a.lr, r.cfg.a.beta1, r.cfg.a.beta2, r.cfg.a.eps, r.cfg.a.wd};
  const os::SgdHyper hs{r.cfg.s.lr, r.cfg.s.momentum, r.cfg.s.dampening, r.cfg.s.wd,
                        r.cfg.s.nesterov};
  for (long t = 1; t <= r.z.steps; ++t) {
    for (std::size_t i = 0; i < n; ++i) g[i] = gen.value(r.cls, Gen::Role::grad, i);
    // Native starts from the oracle's split tensor and states.
    for (std::size_t i = 0; i < n; ++i) N.hi[i] = E[i].hi;
    N.extra = os::pack_fields(E, f);
    m = to_float(M), v = to_float(V);
    std::vector<float> p0(n);
    for (std::size_t i = 0; i < n; ++i) p0[i] = from_bits(os::join(E[i], f).f32_bits());
    const std::vector<float> m0 = m, v0 = v;
    if (r.op.family == Family::split_adam) {
      optim::split_adam_step(r.cfg.a, r.op.decoupled, t, seed, N, g, m, v);
      os::split_adam_step(h, r.op.decoupled, f, t, seed, E, to_real(g), M, V);
    } else {
      optim::split_sgd_step(r.cfg.s, t, seed, N, g, m);
      os::split_sgd_step(hs, f, t, seed, E, to_real(g), M);
    }
    compare(t, p0, g, m0, v0);
    for (std::size_t i = 0; i < n; ++i) {
      const auto ops = [&] {
        return "p " + hex32(p0[i]) + " g " + hex32(g[i]) + " m " + hex32(m0[i]);
      };
      r.ck.value(r.op.family == Family::split_adam ? "exp_avg" : "momentum_buffer", t, i, m[i],
                 M[i], ops);
      if (r.op.family == Family::split_adam) r.ck.value("exp_avg_sq", t, i, v[i], V[i], ops);
    }
  }
}

// Loss scaling around fp32 AdamW, as `exmy step` composes them: unscale (and check) the scaled
// gradient, update the dynamic scale, skip the step on inf/NaN (t not incremented).
void run_loss(const Run& r) {
  Gen gen(r.seed, Storage::f32);
  const std::size_t n = elements_of(r.op, r.z);
  std::vector<float> p(n), g(n), m(n, 0.0f), v(n, 0.0f);
  for (std::size_t i = 0; i < n; ++i) p[i] = gen.value(Cls::random, Gen::Role::param, i);
  std::vector<Real> P = to_real(p), M = to_real(m), V = to_real(v);
  const os::AdamHyper h{r.cfg.a.lr, r.cfg.a.beta1, r.cfg.a.beta2, r.cfg.a.eps, r.cfg.a.wd};
  optim::DynamicScaler ns;
  os::DynamicScaler oscale;
  ns.growth_interval = oscale.growth_interval = 2;  // growth within the run
  const float fixed = 1024.0f;
  long tn = 0, to = 0;
  for (long k = 1; k <= r.z.steps + 2; ++k) {
    // Scaled gradients of the class (inf/NaN ones make the scaler skip); a clean class gets an
    // overflowing step now and then.
    for (std::size_t i = 0; i < n; ++i) g[i] = gen.value(r.cls, Gen::Role::grad, i);
    if (r.cls != Cls::nonfinite && k % 3 == 0) g[k % n] = INFINITY;
    std::vector<float> gn = g;
    std::vector<Real> G = to_real(g);
    p = to_float(P), m = to_float(M), v = to_float(V);
    const float scale_before = r.op.fixed_scale ? fixed : ns.scale;
    bool fn, fo;
    if (r.op.fixed_scale) {
      fn = optim::unscale_and_check(gn, fixed);
      fo = os::unscale(G, Real::of_f32_bits(bits(fixed)));
    } else {
      fn = optim::unscale_and_check(gn, ns.scale);
      optim::update_scale(ns, fn);
      fo = os::unscale(G, oscale.scale);
      os::update_scale(oscale, fo);
      r.ck.value("scale", k, 0, ns.scale, oscale.scale,
                 [&] { return "scale " + hex32(scale_before); });
      r.ck.code("growth_tracker", k, 0, static_cast<std::uint64_t>(ns.growth_tracker),
                static_cast<std::uint64_t>(oscale.tracker), ns.growth_tracker == oscale.tracker,
                nullptr);
      ns.scale = from_bits(oscale.scale.f32_bits());
      ns.growth_tracker = oscale.tracker;
    }
    r.ck.code("found_inf", k, 0, fn, fo, fn == fo, nullptr);
    for (std::size_t i = 0; i < n; ++i) {
      r.ck.value("unscaled_grad", k, i, gn[i], G[i],
                 [&] { return "g " + hex32(g[i]) + " scale " + hex32(scale_before); });
    }
    if (!fn) optim::adam_step(r.cfg.a, true, Storage::f32, ++tn, p, gn, m, v);
    if (!fo) os::torch_adam_step(h, true, os::F32, ++to, P, G, M, V);
    for (std::size_t i = 0; i < n; ++i) {
      r.ck.value("p", k, i, p[i], P[i], [&] { return "g " + hex32(gn[i]); });
    }
  }
}

// An op of a registry family: the entry's CPU step (sim/optim, on sim/native) against the
// family's oracle, every fp32 state array of the entry compared by its file name.
void run_registered(const Run& r) {
  const optim::Entry& e = *r.op.entry;
  const os::FamilyOracle* oracle = os::family_oracle(e.def->name);
  if (oracle == nullptr) {
    throw std::logic_error("verify steps: no oracle for the optimizer family '" +
                           std::string(e.def->name) + "' (sim/oracle/steps/family_table.hpp)");
  }
  const Storage st = r.op.st;
  const FloatFormat& T = storage_format(st);
  optim::Config c;
  c.opt = optim::Selected{&e, std::string(e.name), {}};
  c.hyper = r.cfg.h;
  c.hyper.adam.kernels = c.hyper.sgd.kernels = static_cast<native::TorchKernels>(r.op.kernels);
  c.st = st;
  Gen gen(r.seed, st);
  const std::size_t n = elements_of(r.op, r.z);
  std::vector<float> p(n), g(n);
  for (std::size_t i = 0; i < n; ++i) p[i] = gen.value(r.cls, Gen::Role::param, i);
  optim::State S = optim::init_state(c, p);
  std::vector<optim::StateArray> arrays = e.arrays(c, S);
  std::vector<std::vector<float>*> nat;
  for (const optim::StateArray& a : arrays) {
    auto* const* v = std::get_if<std::vector<float>*>(&a.data);
    if (v == nullptr)
      throw std::logic_error("verify steps: a registered family's state is not fp32");
    nat.push_back(*v);
  }
  std::vector<Real> P = to_real(p);
  std::vector<std::vector<Real>> O;
  for (const auto* v : nat) O.push_back(to_real(*v));
  std::vector<std::vector<Real>*> optr;
  for (auto& o : O) optr.push_back(&o);
  const optim::Hyper& hy = c.hyper;
  os::FamilyHyper h;
  h.lr = hy.adam.lr, h.beta1 = hy.adam.beta1, h.beta2 = hy.adam.beta2, h.eps = hy.adam.eps;
  h.wd = hy.adam.wd, h.momentum = hy.sgd.momentum, h.dampening = hy.sgd.dampening;
  h.alpha = hy.adam.alpha, h.beta3 = hy.adam.beta3, h.nesterov = hy.sgd.nesterov;
  for (std::size_t k = 0; k < h.extra.size(); ++k) h.extra[k] = hy.extra[k];
  h.kernels = static_cast<os::Kernels>(r.op.kernels);
  for (long t = 1; t <= std::max(r.z.steps, r.op.min_steps); ++t) {
    for (std::size_t i = 0; i < n; ++i) g[i] = gen.value(r.cls, Gen::Role::grad, i);
    // The native engine starts from the oracle's parameters and states.
    p = to_float(P);
    for (std::size_t k = 0; k < nat.size(); ++k) *nat[k] = to_float(O[k]);
    const std::vector<float> p0 = p;
    std::vector<std::vector<float>> s0;
    for (const auto* v : nat) s0.push_back(*v);
    e.cpu_step(c, t, p, g, S);
    oracle->step(h, T, t, P, to_real(g), optr);
    for (std::size_t i = 0; i < n; ++i) {
      const auto ops = [&] {
        std::string s = "p " + hex32(p0[i]) + " g " + hex32(g[i]);
        for (std::size_t k = 0; k < nat.size(); ++k) {
          s += std::string(" ") + arrays[k].file + " " + hex32(s0[k][i]);
        }
        return s;
      };
      r.ck.value("p", t, i, p[i], P[i], ops);
      for (std::size_t k = 0; k < nat.size(); ++k) {
        r.ck.value(arrays[k].file, t, i, (*nat[k])[i], O[k][i], ops);
      }
    }
  }
}

void run_case(const Run& r) {
  switch (r.op.family) {
    case Family::registered:
      return run_registered(r);
    case Family::adam:
      return run_adam(r);
    case Family::sgd:
      return run_sgd(r);
    case Family::adam8:
    case Family::momentum8:
    case Family::bnb1:
    case Family::ademamix:
      return run_bnb8(r);
    case Family::requant:
      return run_requant(r);
    case Family::stable:
      return run_stable(r);
    case Family::split_adam:
    case Family::split_sgd:
      return run_split(r);
    case Family::loss:
      return run_loss(r);
  }
}

}  // namespace

std::vector<std::string> step_op_names() {
  std::vector<std::string> names;
  for (const Op& op : all_ops()) names.push_back(op.name);
  for (const std::string& q : steps_detail::quant_op_names()) names.push_back(q);
  return names;
}

namespace {

// The jobs of an optimizer op: configuration × input class × seed.
steps_detail::OpPlan optimizer_plan(const Op& op, const Sizes& z) {
  steps_detail::OpPlan plan;
  plan.name = op.name;
  auto cfgs = std::make_shared<std::vector<Cfg>>(configs(op));
  plan.configurations = cfgs->size();
  for (std::size_t c = 0; c < cfgs->size(); ++c) {
    for (Cls cls : classes_of(op)) {
      for (int rep = 0; rep < z.reps; ++rep) {
        const std::uint64_t units =
            op.family == Family::requant
                ? 2000
                : elements_of(op, z) * static_cast<std::uint64_t>(std::max(z.steps, op.min_steps));
        const std::uint64_t seed = case_seed(op.name, cls, c, rep);
        plan.jobs.push_back({units, [op, cfgs, c, cls, seed, z](detail::Tally& t, std::size_t max) {
                               const Cfg& cfg = (*cfgs)[c];
                               const CaseId id{op.name, cls_name(cls), cfg.label};
                               Checker ck(id, t, max);
                               run_case(Run{op, cfg, cls, seed, z, ck});
                             }});
      }
    }
  }
  return plan;
}

}  // namespace

std::vector<Result> run_steps(const Options& o) {
  const std::vector<std::string> names = step_op_names();
  // --op NAME[,NAME...]: the ops to run (every op when empty).
  std::vector<std::string> wanted;
  for (std::size_t pos = 0; !o.op.empty() && pos <= o.op.size();) {
    const std::size_t comma = std::min(o.op.find(',', pos), o.op.size());
    wanted.push_back(o.op.substr(pos, comma - pos));
    pos = comma + 1;
  }
  for (const std::string& w : wanted) {
    if (std::find(names.begin(), names.end(), w) == names.end()) {
      std::string list;
      for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
      throw InputError("--op '" + w + "': expected one of " + list);
    }
  }
  const auto selected = [&](const std::string& n) {
    return wanted.empty() || std::find(wanted.begin(), wanted.end(), n) != wanted.end();
  };
  const Sizes z = sizes(o.depth);
  std::vector<steps_detail::OpPlan> plans;
  for (const Op& op : all_ops()) {
    if (selected(op.name)) plans.push_back(optimizer_plan(op, z));
  }
  for (const std::string& q : steps_detail::quant_op_names()) {
    if (selected(q)) plans.push_back(steps_detail::quant_op_plan(q, o.depth));
  }
  // Work units for the progress line and its ETA: element-steps (requantization: its inputs).
  std::uint64_t total = 0;
  for (const auto& p : plans) {
    for (const auto& j : p.jobs) total += j.units;
  }
  detail::Progress progress("steps", total, o.progress);
  std::vector<Result> out;
  Result all;
  all.name = "steps";
  const auto t_all = std::chrono::steady_clock::now();
  for (std::size_t k = 0; k < plans.size() && !stop_requested(); ++k) {
    const steps_detail::OpPlan& plan = plans[k];
    Result r;
    r.name = "steps/" + plan.name;
    r.configurations = plan.configurations;
    const auto t0 = std::chrono::steady_clock::now();
    detail::run_jobs(plan.jobs.size(), o, r, [&](std::size_t j, detail::Tally& t) {
      plan.jobs[j].run(t, o.max_reported);
      progress.add(plan.jobs[j].units);
    });
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    all.checks += r.checks;
    all.mismatches += r.mismatches;
    all.interrupted = all.interrupted || r.interrupted;
    out.push_back(std::move(r));
  }
  all.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_all).count();
  progress.finish(all);
  return out;
}

}  // namespace exmy::verify
