// The bridge from the CLI's quantization options (quant::Options) to the quantization oracle's
// own description (oracle::steps::quant::Spec): used by the steps campaign and the GPU properties
// against the oracle. It translates names only; nothing here computes.
#pragma once

#include <cstddef>
#include <memory>

#include "sim/oracle/steps/quant.hpp"
#include "sim/quant/quantize.hpp"

namespace exmy::verify {

struct OracleQuant {
  oracle::steps::quant::Spec spec;
  // What spec.format and spec.codebook point to: owned here (shared, so copies stay valid), so
  // the spec does not depend on `opt` outliving it.
  std::shared_ptr<const FloatFormat> format;
  std::shared_ptr<const oracle::steps::Codebook> codebook;
};
// The oracle's spec of `opt` on a rows × cols matrix view.
OracleQuant oracle_quant_spec(const quant::Options& opt, std::size_t rows, std::size_t cols);

}  // namespace exmy::verify
