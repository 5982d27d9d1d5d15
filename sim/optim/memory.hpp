// Training-memory arithmetic per parameter (docs/SEMANTICS.md 9.8): weights, master copy, extra
// bits, gradients, optimizer states and block absmax, as seeds 002 and 004 count them.
#pragma once

#include <string>
#include <vector>

namespace exmy::optim {

struct MemoryConfig {
  double params = 1e9;
  std::string optimizer = "adamw";  // adamw adam stableadamw sgd adamw8bit adam8bit momentum8bit
  int weight_bytes = 4;             // 4 (fp32) or 2 (bf16/fp16)
  bool master = false;              // fp32 master copy beside 16-bit weights (mixed precision)
  int extra_bits = -1;              // seed 004: k extra bits per weight (-1: none)
  bool sr = false;                  // one more bit per weight (stochastic rounding)
  int grad_bytes = -1;              // -1: 4 with fp32 weights or a master copy, else 2
  bool fused_backward = false;      // seed 004 3.2: gradients are never all stored
  int block = 256;                  // 8-bit absmax block size
};

struct MemoryRow {
  std::string item;
  double bytes_per_param;
};

std::vector<MemoryRow> memory_breakdown(const MemoryConfig& c);  // InputError on bad config
double memory_total_per_param(const std::vector<MemoryRow>& rows);

}  // namespace exmy::optim
