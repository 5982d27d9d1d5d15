// `--compat NAME`: named profiles that reproduce another library's results where they differ
// from exmy's (docs/SEMANTICS.md 11.3 and 12). One registry: each profile lists the (operation,
// format) pairs it covers and the element-wise rule that serves each (sim/native/compat_*.hpp,
// host and device). Host only. A profile is applied by one function per operation, which the
// CLI, the Python module and the golden corpus all call: compat_rule (cast), optim::apply_compat
// (step, sim/optim/registry.hpp), quant::apply_compat (quantize, sim/quant/quantize.hpp),
// compat_gemm_accum (gemm).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "sim/format/registry.hpp"
#include "sim/native/bnb_kernels.hpp"
#include "sim/native/compat_e8m0.hpp"
#include "sim/native/torch_kernels.hpp"

namespace exmy {

// The operations a profile may cover: element-wise casts (`exmy cast`), optimizer steps
// (`exmy step`), block-wise quantization (`exmy quantize`) and matrix products (`exmy gemm`).
enum class CompatOp : std::uint8_t { cast, step, quantize, gemm };
const char* compat_op_name(CompatOp op);

// What a quantize entry changes (docs/SEMANTICS.md 7.3, 7.5; applied by quant::apply_compat).
enum class CompatQuant : std::uint8_t {
  none,
  triton_div_full,    // SwitchBack's Triton kernels: x / max_val as div.full.f32 (row/colwise)
  bnb_int8_fdividef,  // bitsandbytes' kInt8VectorQuant: x * __fdividef(127, absmax)
  bnb_codebook,       // bitsandbytes' kQuantizeBlockwise: rcp.approx normalization, FTZ, fmaxf
  bnb_4bit,           // bitsandbytes' quantize_4bit / dequantize_4bit (NF4, FP4; sim/quant/bnb4bit)
};

struct CompatEntry {
  CompatOp op;
  // cast: the format's canonical name (any alias of it matches); step: the optimizers' library
  // (kTorchOptim, kBitsandbytes: a rule for every optimizer of the library's families);
  // quantize: the codebook's name; gemm: the accumulation model (sim/gemm/accum_model.hpp).
  const char* format;
  native::CompatCast rule = native::CompatCast::e8m0_torch;  // cast only
  native::TorchKernels kernels = native::TorchKernels::cpu;  // step only (torch optimizers)
  native::BnbKernels bnb = native::BnbKernels::exact;        // step only (8-bit optimizers)
  CompatQuant quant = CompatQuant::none;                     // quantize only
};

struct CompatProfile {
  const char* name;
  const char* source;  // the library, version and function the rules transcribe
  std::vector<CompatEntry> entries;
};

// Every profile, in a fixed order.
const std::vector<CompatProfile>& compat_profiles();

// The names of the profiles that cover operation op, separated by `sep` (usage texts).
std::string compat_profile_names(CompatOp op, std::string_view sep);

// The profile called `name`; an unknown name is an InputError listing the known ones.
const CompatProfile& compat_profile(std::string_view name);

// The rule of profile p for operation op on format f; an InputError naming the profile, the
// operation and the format (and what the profile covers) when p does not cover them.
native::CompatCast compat_rule(const CompatProfile& p, CompatOp op, const Format& f);

// The libraries of the optimizer families (sim/optim/registry.hpp FamilyDef::library), which
// step entries name.
inline constexpr std::string_view kTorchOptim = "torch.optim";
inline constexpr std::string_view kBitsandbytes = "bitsandbytes";
inline constexpr std::string_view kTorchao = "torchao";
// The entry of profile p for `exmy quantize/dequantize` to `target` (its name); an InputError
// naming the profile, the target and what the profile covers otherwise.
const CompatEntry& compat_quantize_entry(const CompatProfile& p, std::string_view target);

// Whether `name` means "no profile": "" or "default" (what state.json records then).
bool compat_is_default(std::string_view name);

// The entry of profile p for the optimizers of `library` (step --optimizer `optimizer`, one of
// them); an InputError naming the profile, the optimizer and what the profile covers otherwise.
const CompatEntry& compat_step_entry(const CompatProfile& p, std::string_view library,
                                     std::string_view optimizer);

// The accumulation model (`--accum` string) profile p gives `exmy gemm`; an InputError naming
// the profile and what it covers when it has no gemm entry.
std::string compat_gemm_accum(const CompatProfile& p);

}  // namespace exmy
