// Seed 002's error analysis: quantize Adam's two states with an 8-bit codebook and bin the error
// of the update u = m / (sqrt(v) + eps) by the pair (code of m, code of v).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "reports/mlp_adam.hpp"
#include "sim/format/codebook.hpp"

namespace exmy::reports {

struct StateQuantMethod {
  std::string name;        // linear / dynamic_tree / dynamic
  const Codebook* m_book;  // first state (signed)
  const Codebook* v_book;  // second state
};
// linear: linear maps (signed m, unsigned v); dynamic_tree: the signed dynamic map for both
// states; dynamic: signed for m, unsigned (the extra fraction bit) for v.
std::vector<StateQuantMethod> state_quant_methods();

struct ErrorGrid {
  std::string method;
  int block = 0;  // 0: tensor-wise (one absmax per parameter tensor), else block size
  std::vector<std::int64_t> count;  // [code_m * 256 + code_v]
  std::vector<double> sum_abs;      // sum |u32 - u8|
  std::vector<double> sum_rel;      // sum |u32 - u8| / |u32| over elements with u32 != 0
  std::vector<std::int64_t> rel_count;
  std::int64_t elements = 0;
  double total_abs = 0, total_rel = 0;
  std::int64_t total_rel_count = 0;
  // The artefact that dominates the means: elements whose second state is positive but
  // quantizes to 0, so that u8 = m^ / eps. Their count and their share of the abs error.
  std::int64_t vzero = 0;
  double vzero_abs = 0;
  std::vector<float> abs_err;  // every |u32 - u8|, in accumulation order (tails)
};

// Tail statistics of one grid: quantiles of |u32 - u8| and the mean without the v^ = 0 elements.
struct ErrorTails {
  double p50 = 0, p99 = 0, p9999 = 0, max = 0;
  double vzero_rate = 0;       // vzero / elements
  double vzero_abs_share = 0;  // vzero_abs / total_abs
  double mean_abs_without_vzero = 0;
};
ErrorTails error_tails(const ErrorGrid& g);

// Quantizes every snapshot's (m, v) with the method at the block size (0 = tensor-wise) and
// accumulates the grid in snapshot, tensor, element order. Per element (SEMANTICS 14.2):
// a = absmax of the group (fp32), n = RN32(x * RN32(1/a)), code = nearest (ties to even index),
// x^ = RN32(value[code] * a); u = RN32(m / RN32(sqrt(v) + eps)) for both (m, v) and (m^, v^).
ErrorGrid adam_error_grid(const std::vector<AdamSnapshot>& snaps, const StateQuantMethod& method,
                          int block, float eps);

}  // namespace exmy::reports
