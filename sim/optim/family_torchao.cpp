// torchao 0.18's low-bit optimizers (docs/SEMANTICS.md 9.2.7), a family of
// cmake/ExmyOptimFamilies.cmake: torchao-adamw8bit, torchao-adamw4bit and torchao-adamwfp8, their
// hyperparameters (lr, betas, eps, weight_decay, amsgrad, bf16_stochastic_round), their state
// arrays as torchao's state dict names them (exp_avg, exp_avg_sq, max_exp_avg_sq: `.codes` and
// `.scale` of a quantized state, the plain tensor below 4096 elements or off the block), the CPU
// loop over native::torchao_adam_element and the block quantizer. Two code generators' arithmetic:
// Inductor's C++ (the default, --compat torchao-cpu) and Triton (--compat torchao-cuda, with
// Triton's libdevice powf for beta**step: SEMANTICS 9.2.7). No GPU
// kernel (gpu/optim/family_torchao.cu refuses); the step oracle is
// sim/oracle/steps/family_torchao.cpp.
#include <cmath>

#include "sim/common/error.hpp"
#include "sim/format/compat.hpp"
#include "sim/native/libdevice_powf_triton.hpp"
#include "sim/native/optim_torchao.hpp"
#include "sim/native/philox.hpp"
#include "sim/optim/registry.hpp"
#include "sim/sfu/sfu_tables.hpp"

namespace exmy::optim {
namespace {

using native::TorchaoQuant;

// Hyper::extra: [0] amsgrad, [1] bf16_stochastic_round; [3] the state kind (defaults()).
constexpr ExtraHyper kExtras[] = {
    {.option = "--amsgrad",
     .help = "Adam/AdamW: amsgrad=True (max_exp_avg_sq kept, saved as state3)",
     .flag = true},
    {.option = "--bf16-stochastic-round",
     .help = "torchao: bf16 parameters rounded stochastically (--seed: the step's Inductor seed)",
     .flag = true}};

// torchao's _AdamBase checks: lr >= 0, eps >= 0, 0 <= beta < 1 (weight_decay unchecked).
void domains(const Entry&, const Hyper& h) {
  const double inf = HUGE_VAL;
  check_domain(h.adam.lr, "--lr", 0.0, inf, true);
  check_domain(h.adam.eps, "--eps", 0.0, inf, true);
  check_domain(h.adam.beta1, "--beta1", 0.0, 1.0, true);
  check_domain(h.adam.beta2, "--beta2", 0.0, 1.0, true);
}
// Second moments and every scale are never negative.
bool nonnegative(const Entry&, std::string_view file) {
  return file == "exp_avg_sq" || file == "max_exp_avg_sq" || file.ends_with(".scale");
}

constexpr const char* kNames[3] = {"exp_avg", "exp_avg_sq", "max_exp_avg_sq"};
constexpr const char* kCodes[3] = {"exp_avg.codes", "exp_avg_sq.codes", "max_exp_avg_sq.codes"};
constexpr const char* kScales[3] = {"exp_avg.scale", "exp_avg_sq.scale", "max_exp_avg_sq.scale"};

int n_states(const Config& c) {
  return c.hyper.extra[0] != 0.0 ? 3 : 2;
}

template <TorchaoQuant Q>
void init(const Config& c, std::span<const float> p, State& s) {
  TorchaoState& ao = s.ao;
  ao.quantized = native::torchao_quantized(Q, p.size());
  const std::size_t blocks = p.size() / static_cast<std::size_t>(native::torchao_block(Q));
  for (int k = 0; k < 3; ++k) {
    ao.codes[k].clear();
    ao.scale[k].clear();
    ao.plain[k].clear();
    if (k >= n_states(c)) continue;
    if (ao.quantized) {
      ao.codes[k].assign(Q == TorchaoQuant::q4 ? p.size() / 2 : p.size(), 0);
      ao.scale[k].assign(blocks, 0.0f);
    } else {
      ao.plain[k].assign(p.size(), 0.0f);
    }
  }
}

template <TorchaoQuant Q>
std::vector<StateArray> arrays(const Config& c, State& s) {
  std::vector<StateArray> a;
  TorchaoState& ao = s.ao;
  for (int k = 0; k < n_states(c); ++k) {
    if (ao.quantized) {
      // 4-bit codes are torchao's flat (n/2,) buffer; 8-bit and fp8 codes have p's shape.
      a.push_back({kCodes[k], &ao.codes[k], Q != TorchaoQuant::q4});
      a.push_back({kScales[k], &ao.scale[k], false});
    } else {
      a.push_back({kNames[k], &ao.plain[k], true});
    }
  }
  return a;
}

// The per-step scalars as the generated code computes them (optim_torchao.hpp TorchaoScalars).
native::TorchaoScalars scalars(const Config& c, long t, TorchaoQuant q) {
  const Hyper& h = c.hyper;
  native::TorchaoScalars s;
  const bool triton = h.adam.kernels == native::TorchKernels::cuda;
  s.eng = triton ? native::TorchaoEngine::inductor_triton : native::TorchaoEngine::inductor_cpp;
  s.decoupled = c.opt.entry->decoupled;
  s.amsgrad = h.extra[0] != 0.0;
  s.lr = static_cast<float>(h.adam.lr);
  const float wd = static_cast<float>(h.adam.wd);
  s.lr_wd = native::rn_mul(s.lr, wd);
  s.wd = wd;
  s.w1 = static_cast<float>(1.0 - h.adam.beta1);
  s.w2 = static_cast<float>(1.0 - h.adam.beta2);
  s.eps = static_cast<float>(h.adam.eps);
  const float step = static_cast<float>(t);  // the fp32 step tensor (exact below 2^24)
  const float b1 = static_cast<float>(h.adam.beta1), b2 = static_cast<float>(h.adam.beta2);
  float p1, p2;
  if (triton) {
    // libdevice.pow in the Triton kernel: Triton's own libdevice __nv_powf (FTZ), the constant
    // base folded at compile time (sim/native/libdevice_powf_triton.hpp; SEMANTICS 9.2.7)
    const native::SfuTables& sfu = sfu::sm90_view();
    s.sfu = &sfu;
    // The kernel forms of optim_torchao.hpp's second moment, as measured on the H200 captures
    // (SEMANTICS 9.2.7): AdamW4bit reads the state's v; fp32 AdamW8bit with more than 16 blocks
    // and a plain (-1, 256) view of p also, with the update unfused; fp32 AdamWFp8 on that view
    // recomputes it for the state too; the rest recompute it for the update only.
    std::size_t n = 1;
    for (std::size_t d : c.shape) n *= d;
    const bool view = c.shape.size() < 2 || c.shape.back() % 256 == 0;
    const bool wide8 = q == TorchaoQuant::q8 && c.st == Storage::f32 && view && n / 256 > 16;
    s.v_param_split = q == TorchaoQuant::q4 || wide8;
    s.update_unfused = wide8;
    // fp32 AdamWFp8 where each row of the (-1, 256) view is a row of p (1-D p, or a last dimension
    // of 256: one scale per row, a uniform load): both the state and the update from fma(g, g,
    // -RN(q*s)). With more blocks to a row (8x512: the scale loaded per element) the amax kernel
    // contracts the other product, as AdamW8bit does (PTX of the H200 captures).
    s.v_state_g = q == TorchaoQuant::fp8 && c.st == Storage::f32 &&
                  (c.shape.size() < 2 || c.shape.back() == 256);
    p1 = native::triton_powf(sfu, b1, step);
    p2 = native::triton_powf(sfu, b2, step);
  } else {
    // std::pow(float, float) of the C++ kernel at run time: the host libm's powf (glibc's on
    // x86-64 Linux, which Inductor's module links), not correctly rounded everywhere
    // (tests/optim/test_torchao_optim.cpp counts and pins where)
    p1 = std::pow(b1, step);
    p2 = std::pow(b2, step);
  }
  s.bc1 = native::rn_sub(1.0f, p1);
  s.sbc2 = native::rn_sqrt(native::rn_sub(1.0f, p2));
  return s;
}

// The random 16 bits of _fp32_to_bf16_sr for element i (torch.randint(0, 2^16) in the compiled
// graph, Inductor's randint64 from one int64 seed per step): the C++ code's randint64_cpu(seed,
// i, 0, 65536) is at::Philox4_32(uint32 seed, 0, i)'s first word mod 2^16 (the key's high word 0);
// Triton's triton_helpers.randint64(seed, i, 0, 65536) is tl.randint4x's first word of the full
// 64-bit key.
std::uint32_t sr_rand(bool triton, std::uint64_t seed, std::size_t i) {
  const std::uint64_t key = triton ? seed : (seed & 0xFFFFFFFFu);
  return native::philox_block(key, 0, static_cast<std::uint64_t>(i)).w[0] & 0xFFFFu;
}

template <TorchaoQuant Q>
float step(const Config& c, long t, std::span<float> p, std::span<const float> g, State& s) {
  if (g.size() != p.size()) {
    throw InputError("gradient: expected " + std::to_string(p.size()) + " elements, got " +
                     std::to_string(g.size()));
  }
  const native::TorchaoScalars sc = scalars(c, t, Q);
  const bool sr = c.hyper.extra[1] != 0.0 && c.st == Storage::bf16;
  TorchaoState& ao = s.ao;
  const int ns = n_states(c);
  const std::size_t n = p.size();
  const int B = native::torchao_block(Q);
  std::vector<float> qmaps[3];
  for (int k = 0; k < ns; ++k) {
    if (Q != TorchaoQuant::fp8) qmaps[k] = native::torchao_qmap(Q, k == 0);
  }
  std::vector<float> nv[3];
  for (int k = 0; k < ns; ++k) nv[k].resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    native::TorchaoOld old[3];
    for (int k = 0; k < ns; ++k) {
      if (ao.quantized) {
        const float scale = ao.scale[k][i / static_cast<std::size_t>(B)];
        old[k].q = native::torchao_code_value(Q, qmaps[k].data(), ao.codes[k].data(), i);
        old[k].s = scale;
        old[k].v = native::rn_mul(old[k].q, scale);
        old[k].split = true;
      } else {
        old[k].v = ao.plain[k][i];
      }
    }
    const float gi = native::to_storage(g[i], c.st);
    float nm, nvv, nvm;
    const float pf =
        native::torchao_adam_element(sc, p[i], gi, old[0], old[1], old[2], nm, nvv, nvm);
    p[i] = sr ? native::f32_from_bf16(native::torchao_bf16_sr(
                    pf, sr_rand(sc.eng == native::TorchaoEngine::inductor_triton, c.seed, i)))
              : native::to_storage(pf, c.st);
    nv[0][i] = nm;
    nv[1][i] = nvv;
    if (ns == 3) nv[2][i] = nvm;
  }
  for (int k = 0; k < ns; ++k) {
    if (!ao.quantized) {
      for (std::size_t i = 0; i < n; ++i) ao.plain[k][i] = native::to_storage(nv[k][i], c.st);
      continue;
    }
    for (std::size_t b = 0; b < n / static_cast<std::size_t>(B); ++b) {
      const std::size_t first = b * static_cast<std::size_t>(B);
      ao.scale[k][b] = native::torchao_quantize_block(
          Q, sc.sfu, qmaps[k].data(), nv[k].data() + first, B, first, ao.codes[k].data());
    }
  }
  return 0.0f;
}

constexpr FamilyDef kDef{.name = "torchao",
                         .library = kTorchao,
                         .reads = kLr | kBeta1 | kBeta2 | kEps | kWd,
                         .extras = kExtras,
                         .domains = domains,
                         .nonnegative = nonnegative};

// torchao's AdamW8bit / AdamW4bit / AdamWFp8 defaults: lr 1e-3, betas (0.9, 0.999), eps 1e-8,
// weight_decay 1e-2, amsgrad False, bf16_stochastic_round False. Hyper::extra[3]: the state kind
// (0 8-bit, 1 4-bit, 2 fp8), the entry's constant, which the step oracle reads (no option).
constexpr Hyper defaults(TorchaoQuant q) {
  Hyper h{};
  h.extra[3] = static_cast<double>(q);
  h.adam.lr = h.sgd.lr = 1e-3;
  h.adam.beta1 = 0.9;
  h.adam.beta2 = 0.999;
  h.adam.eps = 1e-8;
  h.adam.wd = h.sgd.wd = 1e-2;
  return h;
}

const Entry kEntries[] = {
    {.name = "torchao-adamw8bit",
     .family = Family::registered,
     .def = &kDef,
     .decoupled = true,
     .defaults = defaults(TorchaoQuant::q8),
     .state_bytes = 2.0 + 2.0 * 4.0 / 256.0,  // two 8-bit codes, two fp32 scales per 256
     .gpu = {false, false, false},
     .example = "torchao-adamw8bit",
     .init = init<TorchaoQuant::q8>,
     .arrays = arrays<TorchaoQuant::q8>,
     .cpu_step = step<TorchaoQuant::q8>},
    {.name = "torchao-adamw4bit",
     .family = Family::registered,
     .def = &kDef,
     .decoupled = true,
     .defaults = defaults(TorchaoQuant::q4),
     .state_bytes = 1.0 + 2.0 * 4.0 / 128.0,  // two 4-bit codes, two fp32 scales per 128
     .gpu = {false, false, false},
     .example = "torchao-adamw4bit",
     .init = init<TorchaoQuant::q4>,
     .arrays = arrays<TorchaoQuant::q4>,
     .cpu_step = step<TorchaoQuant::q4>},
    {.name = "torchao-adamwfp8",
     .family = Family::registered,
     .def = &kDef,
     .decoupled = true,
     .defaults = defaults(TorchaoQuant::fp8),
     .state_bytes = 2.0 + 2.0 * 4.0 / 256.0,  // two e4m3fn codes, two fp32 scales per 256
     .gpu = {false, false, false},
     .example = "torchao-adamwfp8",
     .init = init<TorchaoQuant::fp8>,
     .arrays = arrays<TorchaoQuant::fp8>,
     .cpu_step = step<TorchaoQuant::fp8>}};

}  // namespace

EXMY_OPTIM_FAMILY_ENTRIES(torchao) {
  return kEntries;
}

}  // namespace exmy::optim
