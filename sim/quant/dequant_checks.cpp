#include "sim/quant/dequant_checks.hpp"

#include <cmath>
#include <cstdio>
#include <string>

#include "sim/common/error.hpp"

namespace exmy::quant {

namespace {
std::string float_text(float v) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(v));
  return buf;
}
}  // namespace

void check_dequantize_inputs(const Quantized& q, const Options& opt) {
  check_dequantize_inputs(q, codes_of(q.codes), opt);
}

void check_dequantize_inputs(const Quantized& q, const Codes& codes, const Options& opt) {
  check_codes(codes, opt);  // sub-byte float formats: the code fits its width
  if (opt.target.kind == FormatKind::integer && opt.target.in.bits == 8 &&
      opt.target.in.is_signed && opt.target.in.symmetric) {
    for (std::size_t i = 0; i < codes.size; ++i) {
      if (codes[i] == 0x80) {
        throw InputError("codes: element " + std::to_string(i) +
                         " is -128, a code int8 quantization never writes (it saturates to "
                         "[-127, 127], SEMANTICS 7)");
      }
    }
  }
  if (make_plan(opt).scale_format() == native::ScaleFormat::e4m3) {  // NVFP4's block scales
    for (std::size_t g = 0; g < q.scale_codes.size(); ++g) {
      if (q.scale_codes[g] & 0x80) {
        char hex[8];
        std::snprintf(hex, sizeof hex, "0x%02x", q.scale_codes[g]);
        throw InputError(std::string("state: scale ") + std::to_string(g) + " is " + hex +
                         ", an E4M3 code with its sign bit set (NVFP4 block scales are "
                         "nonnegative UE4M3)");
      }
    }
  }
  // Codebook targets read bitsandbytes' files too, whose all-NaN blocks hold absmax -FLT_MAX
  // (SEMANTICS 7.5): their states are not checked for sign.
  const bool codebook = opt.target.kind == FormatKind::codebook;
  for (std::size_t g = 0; g < q.state.size() && !codebook; ++g) {
    const float v = q.state[g];
    if (std::signbit(v) && !std::isnan(v) && v != 0.0f) {
      throw InputError("state: entry " + std::to_string(g) + " is " + float_text(v) +
                       ", expected an absmax or scale >= 0 (no quantization writes a negative "
                       "one)");
    }
  }
  if (opt.two_level && !(q.tensor_scale >= 0.0f && std::isfinite(q.tensor_scale))) {
    throw InputError("tensor scale: " + float_text(q.tensor_scale) +
                     ", expected a finite scale >= 0");
  }
}

}  // namespace exmy::quant
