#include "sim/optim/memory.hpp"

#include "sim/common/error.hpp"

namespace exmy::optim {

std::vector<MemoryRow> memory_breakdown(const MemoryConfig& c) {
  if (c.weight_bytes != 2 && c.weight_bytes != 4) {
    throw InputError("--weights: expected fp32, bf16 or fp16");
  }
  if (c.extra_bits > 16 || c.extra_bits < -1) throw InputError("--extra-bits: expected 0..16");
  if (c.extra_bits >= 0 && c.weight_bytes != 2) {
    throw InputError("--extra-bits needs 16-bit weights (--weights bf16|fp16)");
  }
  if (c.block <= 0) throw InputError("--block: expected a positive block size");
  std::vector<MemoryRow> rows;
  rows.push_back({c.weight_bytes == 4 ? "weights (fp32)" : "weights (16-bit)",
                  static_cast<double>(c.weight_bytes)});
  const bool master = c.master && c.weight_bytes == 2 && c.extra_bits < 0;
  if (master) rows.push_back({"fp32 master copy", 4.0});
  if (c.extra_bits >= 0) {
    const int bits = c.extra_bits + (c.sr ? 1 : 0);
    rows.push_back({"extra bits (" + std::to_string(bits) + " per weight)", bits / 8.0});
  }
  int g = c.grad_bytes;
  if (g < 0) g = (c.weight_bytes == 4 || master) ? 4 : 2;
  rows.push_back({c.fused_backward ? "gradients (fused backward: not stored)" : "gradients",
                  c.fused_backward ? 0.0 : static_cast<double>(g)});
  const std::string& o = c.optimizer;
  double state = 0.0;
  int quant_states = 0;
  if (o == "adamw" || o == "adam" || o == "stableadamw") {
    state = 8.0;  // two fp32 moments
  } else if (o == "sgd" || o == "momentum") {
    state = 4.0;  // one fp32 momentum buffer
  } else if (o == "adamw8bit" || o == "adam8bit") {
    state = 2.0;  // two 8-bit codes
    quant_states = 2;
  } else if (o == "momentum8bit") {
    state = 1.0;
    quant_states = 1;
  } else if (o == "none") {
    state = 0.0;
  } else {
    throw InputError("--optimizer '" + o +
                     "': expected adamw, adam, stableadamw, sgd, adamw8bit, adam8bit, "
                     "momentum8bit or none");
  }
  rows.push_back({"optimizer state", state});
  if (quant_states > 0) {
    rows.push_back({"block absmax (fp32 per " + std::to_string(c.block) + " per state)",
                    quant_states * 4.0 / c.block});
  }
  return rows;
}

double memory_total_per_param(const std::vector<MemoryRow>& rows) {
  double t = 0.0;
  for (const auto& r : rows) t += r.bytes_per_param;
  return t;
}

}  // namespace exmy::optim
