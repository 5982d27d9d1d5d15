#include "sim/format/compat.hpp"

#include "sim/common/error.hpp"

namespace exmy {

const char* compat_op_name(CompatOp op) {
  switch (op) {
    case CompatOp::cast:
      return "cast";
    case CompatOp::step:
      return "step";
    case CompatOp::quantize:
      return "quantize";
    case CompatOp::gemm:
      return "gemm";
  }
  return "?";
}

namespace {
// One rule for the torch.optim families (each says which kernels it models).
CompatProfile step_profile(const char* name, const char* source, native::TorchKernels k) {
  CompatEntry e{CompatOp::step, kTorchOptim.data()};
  e.kernels = k;
  return CompatProfile{name, source, {e}};
}
// torch on CUDA: the foreach=False optimizer kernels, and its matrix products, which cuBLASLt
// runs (torch.mm / torch._scaled_mm on sm_90: the probed `cublas-sm90` models, SEMANTICS 15).
CompatProfile torch_cuda_profile() {
  CompatProfile p = step_profile("torch-cuda",
                                 "PyTorch 2.11 CUDA TensorIterator kernels (_single_tensor_adam/"
                                 "_sgd, foreach=False); torch.mm/_scaled_mm through cuBLASLt "
                                 "on sm_90",
                                 native::TorchKernels::cuda);
  p.entries.push_back(CompatEntry{CompatOp::gemm, "cublas-sm90"});
  return p;
}

}  // namespace

const std::vector<CompatProfile>& compat_profiles() {
  // Add a profile here, with its rules in sim/native/compat_*.hpp, a golden table in tests/cli
  // and a row in docs/SEMANTICS.md section 12.
  static const std::vector<CompatProfile> profiles = {
      {"torch",
       "PyTorch 2.11 c10::detail::fp8e8m0fnu_from_fp32_value (c10/util/Float8_e8m0fnu.h)",
       {{CompatOp::cast, "e8m0fnu", native::CompatCast::e8m0_torch}}},
      {"ml_dtypes",
       "ml_dtypes 0.6 ConvertImpl<float, float8_e8m0fnu> (ml_dtypes/include/float8.h)",
       {{CompatOp::cast, "e8m0fnu", native::CompatCast::e8m0_ml_dtypes}}},
      // AMD gfx950's OCP conversions with scale (docs/SEMANTICS.md 12.1): here at scale 0,
      // nearest; `exmy cast --compat amd-gfx950` adds --scale-exp, --sr-seed, --decode-to.
      {"amd-gfx950",
       "AMD HIP host model of gfx950's cvt_scalef32 conversions (amd_hip_ocp_host.hpp "
       "fcbx::from_float/from_float_sr/to_float, ROCm/rocm-systems 20d6c1cc; encodings per "
       "amd_hip_ocp_fp.hpp 0e2eede0)",
       {{CompatOp::cast, "e4m3fn", native::CompatCast::amd_e4m3},
        {CompatOp::cast, "e5m2", native::CompatCast::amd_e5m2},
        {CompatOp::cast, "e2m3fn", native::CompatCast::amd_e2m3},
        {CompatOp::cast, "e3m2fn", native::CompatCast::amd_e3m2},
        {CompatOp::cast, "e2m1fn", native::CompatCast::amd_e2m1}}},
      // torch.optim Adam/AdamW/SGD on the kernels that ran them (docs/SEMANTICS.md 9.2, 9.3).
      step_profile("torch-cpu", "PyTorch 2.11 ATen CPU kernels (_single_tensor_adam/_sgd)",
                   native::TorchKernels::cpu),
      torch_cuda_profile(),
      step_profile("torch-cuda-foreach",
                   "PyTorch 2.11 CUDA multi_tensor_apply kernels (_multi_tensor_adam/_sgd, "
                   "foreach=True, the CUDA default)",
                   native::TorchKernels::cuda_foreach),
      {"torch-cuda-fused",
       "PyTorch 2.11 CUDA fused Adam/AdamW/SGD kernels (FusedAdamMathFunctor, "
       "FusedSgdMathFunctor; fused=True) as compiled for sm_90",
       {{CompatOp::step, kTorchOptim.data(), native::CompatCast::e8m0_torch,
         native::TorchKernels::cuda_fused}}},
      // SwitchBack's Triton kernels (quantize_rowwise / _columnwise): Triton's fp32 division.
      {"triton",
       "SwitchBack's Triton int8 kernels (quantize_rowwise, quantize_columnwise) as Triton 3.x "
       "compiles `x / max_val` (div.full.f32)",
       {{.op = CompatOp::quantize, .format = "int8", .quant = CompatQuant::triton_div_full}}},
      // bitsandbytes' 8-bit optimizers on the GPU (docs/SEMANTICS.md 9.4, 17); the 32-bit
      // fallback below 4096 elements included.
      {"bnb-cuda",
       "bitsandbytes 0.50.2 CUDA kernels (kOptimizerStatic8bit2StateBlockwise, "
       "kOptimizerStatic8bit1StateBlockwise, kOptimizer32bit2State/1State, kInt8VectorQuant, "
       "kQuantizeBlockwise) as compiled for sm_90 with --use_fast_math",
       {// every bitsandbytes optimizer (8-bit and 32-bit states, paged or not)
        {CompatOp::step, kBitsandbytes.data(), native::CompatCast::e8m0_torch,
         native::TorchKernels::cpu, native::BnbKernels::cuda_sm90},
        // int8_vectorwise_quant (kInt8VectorQuant: LLM.int8()'s row-wise int8)
        {.op = CompatOp::quantize, .format = "int8", .quant = CompatQuant::bnb_int8_fdividef},
        // quantize_blockwise / dequantize_blockwise (kQuantizeBlockwise, kDequantizeBlockwise)
        {.op = CompatOp::quantize, .format = "dynamic", .quant = CompatQuant::bnb_codebook},
        {.op = CompatOp::quantize,
         .format = "dynamic-unsigned",
         .quant = CompatQuant::bnb_codebook},
        {.op = CompatOp::quantize, .format = "linear", .quant = CompatQuant::bnb_codebook},
        {.op = CompatOp::quantize, .format = "linear-unsigned", .quant = CompatQuant::bnb_codebook},
        // quantize_4bit / dequantize_4bit (kQuantizeBlockwise<..., NF4|FP4>,
        // kQuantizeBlockwiseSmall, kDequantizeBlockwise; sim/quant/bnb4bit.hpp)
        {.op = CompatOp::quantize, .format = "nf4", .quant = CompatQuant::bnb_4bit},
        {.op = CompatOp::quantize, .format = "fp4", .quant = CompatQuant::bnb_4bit}}},
      // torchao's low-bit optimizers as torch.compile generates their step (docs/SEMANTICS.md
      // 9.2.7): Inductor's C++ code (the default) and its Triton code.
      {"torchao-cpu",
       "torchao 0.18.0 torchao.optim (AdamW8bit, AdamW4bit, AdamWFp8) through torch 2.11.0's "
       "torch.compile on the CPU: Inductor's C++ code (ffp-contract=off, glibc powf)",
       {{CompatOp::step, kTorchao.data(), native::CompatCast::e8m0_torch,
         native::TorchKernels::cpu}}},
      {"torchao-cuda",
       "torchao 0.18.0 torchao.optim (AdamW8bit, AdamW4bit, AdamWFp8) through torch 2.11.0's "
       "torch.compile on CUDA: Inductor's Triton code (Triton 3.6.0, sm_90)",
       {{CompatOp::step, kTorchao.data(), native::CompatCast::e8m0_torch,
         native::TorchKernels::cuda}}},
  };
  return profiles;
}

namespace {

std::string known_names() {
  std::string names;
  for (const CompatProfile& p : compat_profiles())
    names += (names.empty() ? "" : ", ") + std::string(p.name);
  return names;
}

}  // namespace

std::string compat_profile_names(CompatOp op, std::string_view sep) {
  std::string names;
  for (const CompatProfile& p : compat_profiles()) {
    for (const CompatEntry& e : p.entries) {
      if (e.op != op) continue;
      names.append(names.empty() ? "" : sep).append(p.name);
      break;
    }
  }
  return names;
}

const CompatProfile& compat_profile(std::string_view name) {
  for (const CompatProfile& p : compat_profiles()) {
    if (name == p.name) return p;
  }
  throw InputError("--compat '" + std::string(name) +
                   "': unknown profile (known: " + known_names() + ")");
}

native::CompatCast compat_rule(const CompatProfile& p, CompatOp op, const Format& f) {
  std::string covers;
  for (const CompatEntry& e : p.entries) {
    if (e.op != CompatOp::cast) {  // step and quantize entries name optimizers and codebooks
      covers += (covers.empty() ? "" : ", ") + std::string(compat_op_name(e.op)) + " " + e.format;
      continue;
    }
    const Format g = parse_format(e.format);
    if (e.op == op && f.kind == g.kind && f.kind == FormatKind::floating && f.fp == g.fp) {
      return e.rule;
    }
    covers += (covers.empty() ? "" : ", ") + std::string(compat_op_name(e.op)) + " " + e.format;
  }
  throw InputError("--compat " + std::string(p.name) + " does not cover " + compat_op_name(op) +
                   " to " + f.name + " (it covers: " + covers + ")");
}

bool compat_is_default(std::string_view name) {
  return name.empty() || name == "default";
}

const CompatEntry& compat_quantize_entry(const CompatProfile& p, std::string_view target) {
  std::string covers;
  for (const CompatEntry& e : p.entries) {
    if (e.op == CompatOp::quantize && target == e.format) return e;
    covers += (covers.empty() ? "" : ", ") + std::string(compat_op_name(e.op)) + " " + e.format;
  }
  throw InputError("--compat " + std::string(p.name) + " does not cover quantize to " +
                   std::string(target) + " (it covers: " + covers + ")");
}

std::string compat_gemm_accum(const CompatProfile& p) {
  std::string covers;
  for (const CompatEntry& e : p.entries) {
    if (e.op == CompatOp::gemm) return e.format;
    covers += (covers.empty() ? "" : ", ") + std::string(compat_op_name(e.op)) + " " + e.format;
  }
  throw InputError("--compat " + std::string(p.name) +
                   " does not cover gemm (it covers: " + covers + ")");
}

const CompatEntry& compat_step_entry(const CompatProfile& p, std::string_view library,
                                     std::string_view optimizer) {
  std::string covers;
  for (const CompatEntry& e : p.entries) {
    if (e.op == CompatOp::step && !library.empty() && library == e.format) return e;
    covers += (covers.empty() ? "" : ", ") + std::string(compat_op_name(e.op)) + " " + e.format;
  }
  throw InputError("--compat " + std::string(p.name) + " does not cover step --optimizer " +
                   std::string(optimizer) + " (it covers: " + covers + ")");
}

}  // namespace exmy
