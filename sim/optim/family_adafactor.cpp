// torch.optim.Adafactor (torch 2.11, torch/optim/_adafactor.py; docs/SEMANTICS.md 9.2.8), a
// family of cmake/ExmyOptimFamilies.cmake: its registry entry, its hyperparameters (lr,
// beta2_decay, eps = (eps1, eps2), d, weight_decay, maximize) and their domains, its state arrays
// as torch names and shapes them (row_var (..., R, 1) and col_var (..., 1, C) for parameters of
// two or more dimensions, variance for one), and its step on the ATen CPU kernels: per step the
// norms and the mean in torch's reduction orders (sim/native/torch_reduce_cpu.hpp) between the
// element operations (sim/native/optim_adafactor.hpp). The step oracle of the one-dimensional
// path is sim/oracle/steps/family_adafactor.cpp, the GPU launcher gpu/optim/family_adafactor.cu.
#include <cmath>
#include <string>

#include "sim/common/error.hpp"
#include "sim/format/compat.hpp"
#include "sim/native/optim_adafactor.hpp"
#include "sim/native/sfu_sm90.hpp"
#include "sim/native/torch_reduce_cpu.hpp"
#include "sim/native/torch_reduce_cuda.hpp"
#include "sim/optim/registry.hpp"
#include "sim/sfu/sfu_tables.hpp"

namespace exmy::optim {
namespace {

using native::to_storage;

// Hyper::extra: [0] beta2_decay, [1] eps1 (NaN: None), [2] eps2, [3] d, [4] maximize.
constexpr ExtraHyper kExtras[] = {
    {.option = "--beta2-decay",
     .help = "Adafactor: beta2_decay, 1 - beta2_t = t ** beta2_decay (<= 0)",
     .def = -0.8,
     .lo = -HUGE_VAL,
     .hi = 0.0,
     .hi_open = false},
    {.option = "--eps1",
     .help = "Adafactor: eps[0], the floor of the row mean and of sqrt(var_estimate) "
             "(default None: torch.finfo(param dtype).eps)",
     .def = NAN,
     .lo = 0.0,
     .hi = HUGE_VAL},
    {.option = "--eps2",
     .help = "Adafactor: eps[1], the floor of RMS(param) in the step size",
     .def = 1e-3,
     .lo = 0.0,
     .hi = HUGE_VAL},
    {.option = "--d",
     .help = "Adafactor: d, the clipping threshold of RMS(update) (>= 1)",
     .def = 1.0,
     .lo = 1.0,
     .hi = HUGE_VAL},
    {.option = "--maximize",
     .help = "torch.optim: maximize the objective (the gradient negated)",
     .flag = true}};

// torch.optim.Adafactor's constructor checks lr >= 0 and weight_decay >= 0 (the extras' domains
// are checked from kExtras).
void domains(const Entry&, const Hyper& h) {
  const double inf = HUGE_VAL;
  check_domain(h.adam.lr, "--lr", 0.0, inf, true);
  check_domain(h.adam.wd, "--wd", 0.0, inf, true);
}
void resolve(const Entry&, const HyperOptions& o, Hyper& h) {
  for (const auto& [name, v] : o.extra) {
    if (name == "--eps1" && std::isnan(v)) {
      throw InputError("--eps1: expected a number >= 0 (leave it out for torch's None)");
    }
  }
  (void)h;
}
bool nonnegative(const Entry&, std::string_view file) {
  return file == "row_var" || file == "col_var" || file == "variance";
}

// The parameters' geometry: factored (>= 2 dimensions) with B batches of R x C matrices.
struct Geometry {
  bool factored = false;
  std::size_t b = 1, r = 1, c = 1, n = 0;
};
Geometry geometry(const Config& c, std::size_t n) {
  Geometry g;
  g.n = n;
  const std::vector<std::size_t>& s = c.shape;
  if (s.size() < 2) return g;
  g.factored = true;
  g.r = s[s.size() - 2];
  g.c = s[s.size() - 1];
  g.b = g.r * g.c == 0 ? 0 : n / (g.r * g.c);
  return g;
}

// torch's state: row_var (shape with the last dimension 1) and col_var (the next-to-last 1) for
// >= 2-d parameters, variance (the parameters' shape) otherwise, all p.grad.new_zeros: values
// of the parameters' dtype, saved as fp32. The 0-d `step` is state.json's step.
void init(const Config& c, std::span<const float> p, State& s) {
  const Geometry g = geometry(c, p.size());
  if (g.factored) {
    s.s1.assign(g.b * g.r, 0.0f);
    s.s2.assign(g.b * g.c, 0.0f);
  } else {
    s.s1.assign(p.size(), 0.0f);
  }
}
std::vector<StateArray> arrays(const Config& c, State& s) {
  if (c.shape.size() < 2) return {{"variance", &s.s1, true}};
  std::vector<std::size_t> rs = c.shape, cs = c.shape;
  rs.back() = 1;
  cs[cs.size() - 2] = 1;
  return {{.file = "row_var", .data = &s.s1, .param_shaped = false, .shape = rs},
          {.file = "col_var", .data = &s.s2, .param_shaped = false, .shape = cs}};
}

native::TorchAdafactorHyper torch_hyper(const Hyper& h) {
  native::TorchAdafactorHyper a;
  a.lr = h.adam.lr;
  a.wd = h.adam.wd;
  a.beta2_decay = h.extra[0];
  a.eps1 = h.extra[1];
  a.eps2 = h.extra[2];
  a.d = h.extra[3];
  a.maximize = h.extra[4] != 0.0;
  a.k = h.adam.kernels;
  return a;
}

// ---- the reductions, on the ATen CPU kernels ----------------------------------------------------
// linalg.vector_norm(x, 2) over n values x[i*stride] of one output, rounded to st: the lastdim
// kernel where TensorIterator sees a contiguous innermost reduction of fp32/bf16 values, the
// generic serial loop otherwise (fp16; strided dimensions); chunks: torch_cpu_norm2_serial's.
float cpu_norm(const float* x, std::size_t n, std::size_t stride, Storage st,
               std::size_t chunks = 1) {
  if (n == 1) return to_storage(native::f32_abs(x[0]), st);  // a size-1 dimension: abs()
  const bool lastdim = stride == 1 && st != Storage::f16;
  const float r = lastdim ? native::torch_cpu_norm2_lastdim(x, n, 1, st == Storage::bf16)
                          : native::torch_cpu_norm2_serial(x, n, stride, chunks);
  return to_storage(r, st);
}

// p.norm(2) / update.norm(2) of the whole tensor (coalesced to one contiguous dimension), as the
// Python float .item() returns.
double cpu_norm_all(const std::vector<float>& x, Storage st, const native::TorchCpuLoop& loop) {
  if (x.empty()) return 0.0;
  const std::size_t chunks =
      st == Storage::f16 ? native::torch_cpu_chunks(x.size(), loop.threads) : 1;
  return cpu_norm(x.data(), x.size(), 1, st, chunks);
}

// ---- the step on the ATen CUDA kernels (torch-cuda, torch-cuda-foreach) ------------------------
// The reductions in Reduce.cuh's launch and order (sim/native/torch_reduce_cuda.hpp, an H200's
// 132 SMs), each projected in fp32 and rounded to st: the norm's sqrt.rn, the mean's
// RN32(S * RN32(outputs / numel)). A reduction over one element (a size-1 dimension, dropped by
// TensorIterator) is that element's fma(x, x, 0) (norm) or 0 + x (sum).
using native::TorchReduceOp;
using native::TorchReduceShape;

// n values per output at x[first[o] + i * istride]; inner: the reduced dimension is the fastest.
std::vector<float> cuda_reduce(TorchReduceOp op, const std::vector<float>& x, std::size_t outputs,
                               std::size_t n, bool inner, std::int64_t istride,
                               const std::vector<std::int64_t>& first, std::size_t vec_of) {
  std::vector<float> acc(outputs);
  if (n == 1) {
    for (std::size_t o = 0; o < outputs; ++o) {
      const float v = x[static_cast<std::size_t>(first[o])];
      acc[o] = op == TorchReduceOp::norm2 ? native::rn_fma(v, v, 0.0f) : native::rn_add(0.0f, v);
    }
    return acc;
  }
  TorchReduceShape sh;
  sh.outputs = outputs;
  sh.n = n;
  sh.inner = inner;
  sh.output_vec = inner ? 1 : native::torch_output_vec_size(vec_of);
  return native::torch_cuda_reduce_acc(op, sh, x.data(), first, istride, native::TorchCudaDevice{});
}

std::vector<std::int64_t> row_starts(std::size_t outputs, std::size_t n) {
  std::vector<std::int64_t> f(outputs);
  for (std::size_t o = 0; o < outputs; ++o) f[o] = static_cast<std::int64_t>(o * n);
  return f;
}

// p.norm(2).item() / update.norm(2).item(): one output over the whole (contiguous) tensor.
double cuda_norm_all(const std::vector<float>& x, Storage st) {
  const float a = cuda_reduce(TorchReduceOp::norm2, x, 1, x.size(), true, 1, {0}, 1)[0];
  return to_storage(native::rn_sqrt(a), st);
}

float cuda_step(const Config& c, long t, std::span<float> p, const std::vector<float>& gr, State& s,
                const native::TorchAdafactorHyper& h, const native::TorchAdafactorScalars& sc) {
  const Storage st = c.st;
  const bool foreach = h.k == native::TorchKernels::cuda_foreach;
  const std::size_t n = p.size();
  const Geometry geo = geometry(c, n);
  const std::vector<float> p0(p.begin(), p.end());
  const double sqrt_numel = std::pow(static_cast<double>(n), 0.5);
  const double alpha = native::py_max(h.eps2, cuda_norm_all(p0, st) / sqrt_numel) * sc.rho;
  // param.mul_ / _foreach_mul_(params, 1 - lr*wd): the scalar in opmath (fp32) on both forms
  if (sc.has_wd) {
    for (float& x : p) x = to_storage(native::rn_mul(x, sc.decay), st);
  }
  // clamp_(min=v) takes v.to<T>(); _foreach_clamp_min_ compares in fp32 with RN32(v) and rounds
  // the result to T
  const auto clamp = [&](float x, double v) {
    return foreach ? to_storage(native::torch_clamp_min(x, static_cast<float>(v)), st)
                   : native::torch_clamp_min(x, native::scalar_to_storage(v, st));
  };
  // .div_(int): single-tensor multiplies by RN32(1 / k) (a CPU scalar's reciprocal);
  // _foreach_div_ with a scalar list divides
  const auto div_int = [&](float x, std::size_t k) {
    const float fk = static_cast<float>(k);
    return to_storage(foreach ? native::rn_div(x, fk) : native::rn_mul(x, native::rn_div(1.0f, fk)),
                      st);
  };
  std::vector<float> ve(n);
  if (geo.factored) {
    const std::size_t B = geo.b, R = geo.r, C = geo.c;
    // row norms: B*R rows of C contiguous values
    const std::vector<float> rn =
        cuda_reduce(TorchReduceOp::norm2, gr, B * R, C, true, 1, row_starts(B * R, C), 1);
    for (std::size_t o = 0; o < B * R; ++o) {
      float m = to_storage(native::rn_sqrt(rn[o]), st);
      m = div_int(to_storage(native::rn_mul(m, m), st), C);
      s.s1[o] = native::torch_lerp_scalar(s.s1[o], m, sc.w, sc.wm1, st);
    }
    // column norms: B*C outputs over R values of stride C (contiguous when C == 1)
    std::vector<std::int64_t> cf(B * C);
    for (std::size_t o = 0; o < B * C; ++o) {
      cf[o] = static_cast<std::int64_t>((o / C) * R * C + o % C);
    }
    const std::vector<float> cn = cuda_reduce(TorchReduceOp::norm2, gr, B * C, R, C == 1,
                                              static_cast<std::int64_t>(C), cf, C);
    for (std::size_t o = 0; o < B * C; ++o) {
      float m = to_storage(native::rn_sqrt(cn[o]), st);
      m = div_int(to_storage(native::rn_mul(m, m), st), R);
      s.s2[o] = native::torch_lerp_scalar(s.s2[o], m, sc.w, sc.wm1, st);
    }
    // var_estimate = row_var @ col_var (one fp32 product, to T); / clamp(row_var.mean(dim=-2)):
    // MeanOps, factor RN32(float(B) / (B * R)), a true division
    const std::vector<float> sums =
        cuda_reduce(TorchReduceOp::sum, s.s1, B, R, true, 1, row_starts(B, R), 1);
    const float factor = native::rn_div(static_cast<float>(B), static_cast<float>(B * R));
    for (std::size_t b = 0; b < B; ++b) {
      const float mean = clamp(to_storage(native::rn_mul(sums[b], factor), st), sc.eps1);
      for (std::size_t r = 0; r < R; ++r) {
        for (std::size_t k = 0; k < C; ++k) {
          const float e = to_storage(native::rn_mul(s.s1[b * R + r], s.s2[b * C + k]), st);
          ve[(b * R + r) * C + k] = to_storage(native::rn_div(e, mean), st);
        }
      }
    }
  } else {
    for (std::size_t i = 0; i < n; ++i) {
      const float sq = to_storage(native::rn_mul(gr[i], gr[i]), st);
      s.s1[i] = native::torch_lerp_scalar(s.s1[i], sq, sc.w, sc.wm1, st);
      ve[i] = s.s1[i];
    }
  }
  // update = clamp(var_estimate, eps1 * eps1).rsqrt_() (CUDA's rsqrtf: rsqrt.approx.f32, the
  // SFU); update.mul_(grad)
  const native::SfuTables& sfu = sfu::sm90_view();
  for (std::size_t i = 0; i < n; ++i) {
    const float v = clamp(ve[i], sc.eps1 * sc.eps1);
    ve[i] = to_storage(native::rn_mul(to_storage(native::sfu_rsqrt_full_f(sfu, v), st), gr[i]), st);
  }
  const double denom = native::py_max(1.0, cuda_norm_all(ve, st) / (sqrt_numel * h.d));
  const float a = static_cast<float>(-alpha / denom);  // opmath: the fp32 scalar
  for (std::size_t i = 0; i < n; ++i) {
    // foreach: _foreach_mul_(updates, alphas) then _foreach_add_(params, updates); single:
    // param.add_(update, alpha=a) = fma(a, update, param)
    p[i] = foreach ? to_storage(native::rn_add(p[i], to_storage(native::rn_mul(ve[i], a), st)), st)
                   : native::torch_add_alpha(p[i], ve[i], a, st, false);
  }
  (void)t;
  return 0.0f;
}

float step(const Config& c, long t, std::span<float> p, std::span<const float> g, State& s) {
  if (g.size() != p.size()) {
    throw InputError("gradient: expected " + std::to_string(p.size()) + " elements, got " +
                     std::to_string(g.size()));
  }
  const std::size_t n = p.size();
  if (n == 0) return 0.0f;
  const Storage st = c.st;
  const native::TorchAdafactorHyper h = torch_hyper(c.hyper);
  const native::TorchAdafactorScalars sc = native::torch_adafactor_scalars(h, st, t);
  const native::TorchCpuLoop& loop = c.hyper.adam.cpu;
  const Geometry geo = geometry(c, n);
  std::vector<float> gr(n);
  for (std::size_t i = 0; i < n; ++i) {
    gr[i] = to_storage(g[i], st);
    if (h.maximize) gr[i] = -gr[i];  // grad = -grad
  }
  if (h.k != native::TorchKernels::cpu) return cuda_step(c, t, p, gr, s, h, sc);
  // alpha = max(eps2, param.norm(2).item() / (numel ** 0.5)) * rho_t, before the decay
  const std::vector<float> p0(p.begin(), p.end());
  const double sqrt_numel = std::pow(static_cast<double>(n), 0.5);
  const double alpha = native::py_max(h.eps2, cpu_norm_all(p0, st, loop) / sqrt_numel) * sc.rho;
  if (sc.has_wd) {
    // param.mul_(1 - lr*wd): the scalar in opmath; foreach=True on the CPU (_foreach_mul_) has
    // it rounded to a 16-bit dtype first, as its alphas below
    const float decay =
        c.variant == "foreach" ? native::scalar_to_storage(1.0 - h.lr * h.wd, st) : sc.decay;
    for (float& x : p) x = to_storage(native::rn_mul(x, decay), st);
  }
  std::vector<float> ve(n);
  if (geo.factored) {
    const std::size_t B = geo.b, R = geo.r, C = geo.c;
    const float fc = static_cast<float>(C), fr = static_cast<float>(R);
    // row_mean = norm(grad, dim=-1).square_().div_(C); row_var.lerp_(row_mean, 1 - beta2_t)
    for (std::size_t b = 0; b < B; ++b) {
      for (std::size_t r = 0; r < R; ++r) {
        float m = cpu_norm(&gr[(b * R + r) * C], C, 1, st);
        m = to_storage(native::rn_mul(m, m), st);
        m = to_storage(native::rn_div(m, fc), st);
        float& rv = s.s1[b * R + r];
        rv = native::torch_lerp_scalar(rv, m, sc.w, sc.wm1, st);
      }
      // col_mean = norm(grad, dim=-2).square_().div_(R): a contiguous reduction when C == 1
      for (std::size_t k = 0; k < C; ++k) {
        float m = cpu_norm(&gr[b * R * C + k], R, C, st);
        m = to_storage(native::rn_mul(m, m), st);
        m = to_storage(native::rn_div(m, fr), st);
        float& cv = s.s2[b * C + k];
        cv = native::torch_lerp_scalar(cv, m, sc.w, sc.wm1, st);
      }
    }
    // var_estimate = row_var @ col_var (K = 1: one product, fp32, rounded to T);
    // .div_(row_var.mean(dim=-2, keepdim=True).clamp_(min=eps1)); CPU mean: fp32 sum, / R, to T
    for (std::size_t b = 0; b < B; ++b) {
      const std::size_t chunks = B == 1 ? native::torch_cpu_chunks(R, loop.threads) : 1;
      float mean = native::rn_div(native::torch_cpu_sum(&s.s1[b * R], R, chunks), fr);
      mean = native::torch_clamp_min(to_storage(mean, st), sc.clamp_rv);
      for (std::size_t r = 0; r < R; ++r) {
        for (std::size_t k = 0; k < C; ++k) {
          const float e = to_storage(native::rn_mul(s.s1[b * R + r], s.s2[b * C + k]), st);
          ve[(b * R + r) * C + k] = to_storage(native::rn_div(e, mean), st);
        }
      }
    }
  } else {
    // variance.lerp_(grad * grad, 1 - beta2_t); var_estimate = variance.clone()
    for (std::size_t i = 0; i < n; ++i) {
      const float sq = to_storage(native::rn_mul(gr[i], gr[i]), st);
      s.s1[i] = native::torch_lerp_scalar(s.s1[i], sq, sc.w, sc.wm1, st);
      ve[i] = s.s1[i];
    }
  }
  // update = var_estimate.clamp_(min=eps1 * eps1).rsqrt_(); update.mul_(grad)
  const std::size_t bytes = native::storage_bytes(st);
  for (std::size_t i = 0; i < n; ++i) {
    const bool tail = native::torch_cpu_scalar_tail(i, n, bytes, loop);
    const float v = native::torch_clamp_min(ve[i], sc.clamp_v);
    ve[i] = to_storage(native::rn_mul(native::torch_cpu_rsqrt(v, st, tail), gr[i]), st);
  }
  // denom = max(1.0, update.norm(2).item() / ((numel ** 0.5) * d));
  // param.add_(update, alpha=-alpha / denom)
  const double denom = native::py_max(1.0, cpu_norm_all(ve, st, loop) / (sqrt_numel * h.d));
  if (c.variant == "foreach") {
    // _multi_tensor_adafactor on CPU tensors (the per-tensor fallback of the foreach ops): the
    // same ops up to here, then _foreach_mul_(updates, alphas), whose scalar reaches a 16-bit
    // tensor rounded to its dtype (measured: 0 of 2,193 bf16 elements differ that way, 5 to 33
    // with the fp32 scalar), and _foreach_add_(params, updates): two roundings where
    // add_(alpha=) has one.
    const float a = native::scalar_to_storage(-alpha / denom, st);
    for (std::size_t i = 0; i < n; ++i) {
      p[i] = to_storage(native::rn_add(p[i], to_storage(native::rn_mul(ve[i], a), st)), st);
    }
    return 0.0f;
  }
  const float a = native::scalar_to_storage(-alpha / denom, st);
  for (std::size_t i = 0; i < n; ++i) {
    const bool tail = native::torch_cpu_scalar_tail(i, n, bytes, loop);
    p[i] = native::torch_add_alpha(p[i], ve[i], a, st, tail);
  }
  return 0.0f;
}

// The campaign: the one-dimensional path (the campaign's tensors are 1-d; the step oracle of
// sim/oracle/steps/family_adafactor.cpp covers that path) on fp32/bf16/fp16 parameters under
// torch-cpu, the defaults and the branches (weight decay, eps1 given, d, beta2_decay, maximize).
std::vector<CampaignOp> campaign(const Entry& e) {
  const auto cfg = [&](const char* label, double lr, double wd, double decay, double eps1,
                       double eps2, double d, bool maximize) {
    Hyper h = e.defaults;
    h.adam.lr = h.sgd.lr = lr;
    h.adam.wd = h.sgd.wd = wd;
    h.extra = {decay, eps1, eps2, d, maximize ? 1.0 : 0.0, 0.0};
    return CampaignConfig{label, h};
  };
  const std::vector<CampaignConfig> configs = {
      cfg("defaults", 1e-2, 0.0, -0.8, NAN, 1e-3, 1.0, false),
      cfg("wd0.1 decay-0.5 d2 eps1=1e-30", 5e-3, 0.1, -0.5, 1e-30, 1e-3, 2.0, false),
      cfg("maximize lr0.1 eps2=0.5 wd0.5", 0.1, 0.5, -0.8, NAN, 0.5, 1.5, true)};
  std::vector<CampaignOp> ops;
  for (const Storage st : {Storage::f32, Storage::bf16, Storage::f16}) {
    ops.push_back({std::string("adafactor-") + std::string(dtype_name(st)), st,
                   native::TorchKernels::cpu, configs});
  }
  return ops;
}

constexpr FamilyDef kDef{.name = "adafactor",
                         .library = kTorchOptim,
                         // cpu, cuda, cuda_foreach (docs/SEMANTICS.md 9.2.8)
                         .torch_kernels = 0x7,
                         .reads = kLr | kWd,
                         .extras = kExtras,
                         .states_param_dtype = true,
                         .param_codes16 = true,
                         .domains = domains,
                         .resolve = resolve,
                         .nonnegative = nonnegative,
                         .campaign = campaign};

// torch.optim.Adafactor's defaults: lr 1e-2, beta2_decay -0.8, eps (None, 1e-3), d 1,
// weight_decay 0, maximize False.
constexpr Hyper defaults() {
  Hyper h{};
  h.adam.lr = h.sgd.lr = 1e-2;
  h.adam.wd = h.sgd.wd = 0.0;
  return h;
}

const Entry kEntries[] = {{.name = "adafactor",
                           .family = Family::registered,
                           .def = &kDef,
                           .decoupled = true,
                           .defaults = defaults(),
                           // torch's foreach=True on CPU tensors (SEMANTICS 9.2.8)
                           .variants = "foreach",
                           // 1-d: variance, one value of the parameters' dtype per parameter;
                           // >= 2-d: (R + C) / (R C) of that (exmy memory --shape)
                           .state_bytes = 4.0,
                           .factored_state = true,
                           .gpu = {false, false, false},
                           .example = "adafactor",
                           .init = init,
                           .arrays = arrays,
                           .cpu_step = step}};

}  // namespace

EXMY_OPTIM_FAMILY_ENTRIES(adafactor) {
  return kEntries;
}

}  // namespace exmy::optim
