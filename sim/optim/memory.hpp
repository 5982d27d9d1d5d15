// Training-memory arithmetic per parameter (docs/SEMANTICS.md 9.8): weights, master copy, extra
// bits, gradients, optimizer states and block absmax, as seeds 002 and 004 count them. The
// optimizer-state figures come from the optimizer registry (sim/optim/registry.hpp).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace exmy::optim {

// The one name `exmy memory` accepts besides the registry's: no optimizer state at all (weights,
// master copy, extra bits and gradients only, e.g. seed 004's comparison). Not an optimizer, so
// `exmy step` refuses it.
inline constexpr std::string_view kNoOptimizer = "none";

struct MemoryConfig {
  double params = 1e9;
  std::string optimizer = "adamw";  // a registry name (optimizer_names()) or kNoOptimizer
  int weight_bytes = 0;             // 4 (fp32), 2 (bf16/fp16), 0: not given (fp32; a split
                                    // optimizer name's 16-bit format)
  bool master = false;              // fp32 master copy beside 16-bit weights (mixed precision)
  int extra_bits = -1;              // seed 004: k extra bits per weight (-1: none)
  bool sr = false;                  // one more bit per weight (stochastic rounding)
  int grad_bytes = -1;              // -1: 4 with fp32 weights or a master copy, else 2
  bool fused_backward = false;      // seed 004 3.2: gradients are never all stored
  int block = 256;                  // 8-bit absmax block size
  bool amsgrad = false;             // Adam/AdamW amsgrad=True: max_exp_avg_sq, a fourth state
  // The parameters' shape (Adafactor factors >= 2-d ones into R + C values per R x C matrix);
  // empty: one dimension.
  std::vector<std::size_t> shape;
};

struct MemoryRow {
  std::string item;
  double bytes_per_param;
};

std::vector<MemoryRow> memory_breakdown(const MemoryConfig& c);  // InputError on bad config
double memory_total_per_param(const std::vector<MemoryRow>& rows);
// "NAMES, or none (no optimizer state)": the names memory_breakdown accepts.
std::string memory_optimizer_names();

}  // namespace exmy::optim
