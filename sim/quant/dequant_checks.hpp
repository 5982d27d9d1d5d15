// What `exmy dequantize` accepts: codes and states that a quantization could have written
// (docs/SEMANTICS.md 7). Anything else is a foreign or tampered file whose dequantized values
// would be silent garbage, so it is refused by element: an int8 code of -128 (encode saturates
// to [-127, 127]), a code wider than a sub-byte float format, an NVFP4 (UE4M3) scale code with
// its sign bit set, a negative fp32 absmax or scale of an int8 or float target (NaN is kept: a
// NaN group writes it; codebook targets also read bitsandbytes' states, whose all-NaN blocks
// hold -FLT_MAX), a negative or non-finite two-level tensor scale. Run by the CLI before either
// device dequantizes.
#pragma once

#include "sim/quant/quantize.hpp"

namespace exmy::quant {

void check_dequantize_inputs(const Quantized& q, const Options& opt);
// The same checks of codes read in place (q.codes is not read).
void check_dequantize_inputs(const Quantized& q, const Codes& codes, const Options& opt);

}  // namespace exmy::quant
