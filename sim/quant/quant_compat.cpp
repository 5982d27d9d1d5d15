// quant::apply_compat (sim/quant/quantize.hpp): a --compat profile's quantize rules.
#include <string>

#include "sim/common/error.hpp"
#include "sim/format/compat.hpp"
#include "sim/quant/quantize.hpp"

namespace exmy::quant {

void apply_compat(Options& o, std::string_view profile, const CompatGiven& given) {
  if (compat_is_default(profile)) return;
  const std::string name(profile);
  const CompatEntry& e = compat_quantize_entry(compat_profile(profile), o.target.name);
  const bool row_or_col = o.scheme.kind == Granularity::row || o.scheme.kind == Granularity::col;
  switch (e.quant) {
    case CompatQuant::none:
      return;
    case CompatQuant::triton_div_full:
      // SwitchBack's row/column-wise Triton kernels divide in-kernel (docs/SEMANTICS.md 7.3).
      if (given.order) throw InputError("--compat " + name + " fixes the order: drop --order");
      if (!row_or_col) {
        throw InputError("--compat " + name +
                         ": expected --scheme rowwise or colwise (SwitchBack's "
                         "quantize_global multiplies by a torch reciprocal: --order recip-mul)");
      }
      o.order = native::ScaleOrder::div_full_mul;
      return;
    case CompatQuant::bnb_int8_fdividef:
      // bitsandbytes' int8_vectorwise_quant (kInt8VectorQuant, LLM.int8()): x * __fdividef(127,
      // absmax) under --use_fast_math (docs/SEMANTICS.md 7.3).
      if (given.dequantize) {
        throw InputError("--compat " + name +
                         ": dequantize to int8 is not covered "
                         "(bitsandbytes dequantizes int8 in its matmul epilogue)");
      }
      if (given.order) throw InputError("--compat " + name + " fixes the order: drop --order");
      if (!row_or_col) {
        throw InputError("--compat " + name +
                         ": expected --scheme rowwise or colwise "
                         "(int8_vectorwise_quant of the matrix or of its transpose)");
      }
      o.order = native::ScaleOrder::fdividef_mul;
      return;
    case CompatQuant::bnb_4bit:
      // nf4 / fp4 are not targets of Options: the CLI and the Python module run them through
      // sim/quant/bnb4bit.hpp, whose model is the profile itself (docs/SEMANTICS.md 7.14).
      throw InputError("--compat " + name + ": " + o.target.name +
                       " runs through quant::bnb4_quantize, not quant::quantize");
    case CompatQuant::bnb_codebook:
      // bitsandbytes' CUDA kernels as compiled (docs/SEMANTICS.md 7.5): rcp.approx
      // normalization, FTZ arithmetic, fmaxf absmax. The profile fixes what --norm and --nan
      // would choose.
      if (given.norm_or_nan) {
        throw InputError("--compat " + name +
                         " fixes the normalization and the NaN rule: "
                         "drop --norm / --nan");
      }
      o.norm = native::NormOrder::bnb_cuda;
      o.nan = native::NanPolicy::ignore_ftz;
      return;
  }
}

}  // namespace exmy::quant
