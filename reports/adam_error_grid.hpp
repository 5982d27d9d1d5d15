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
};

// Quantizes every snapshot's (m, v) with the method at the block size (0 = tensor-wise) and
// accumulates the grid in snapshot, tensor, element order. Per element (SEMANTICS 14.2):
// a = absmax of the group (fp32), n = RN32(x * RN32(1/a)), code = nearest (ties to even index),
// x^ = RN32(value[code] * a); u = RN32(m / RN32(sqrt(v) + eps)) for both (m, v) and (m^, v^).
ErrorGrid adam_error_grid(const std::vector<AdamSnapshot>& snaps, const StateQuantMethod& method,
                          int block, float eps);

}  // namespace exmy::reports
