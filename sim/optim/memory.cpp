#include "sim/optim/memory.hpp"

#include "sim/common/error.hpp"
#include "sim/optim/registry.hpp"

namespace exmy::optim {

std::string memory_optimizer_names() {
  return optimizer_names() + ", or " + std::string(kNoOptimizer) + " (no optimizer state)";
}

std::vector<MemoryRow> memory_breakdown(const MemoryConfig& config) {
  MemoryConfig c = config;
  std::optional<Selected> opt;
  if (c.optimizer != kNoOptimizer) {
    opt = lookup_optimizer(c.optimizer);
    if (!opt) {
      throw InputError("--optimizer '" + c.optimizer +
                       "': expected one of: " + memory_optimizer_names());
    }
  }
  if (c.weight_bytes != 0 && c.weight_bytes != 2 && c.weight_bytes != 4) {
    throw InputError("--weights: expected fp32, bf16 or fp16");
  }
  if (opt && opt->entry->split) {
    // A split optimizer's name fixes the weights: 16-bit codes plus the format's extra bits
    // (section 6); the flags may repeat them but not contradict them.
    const SplitFormat& f = opt->split;
    if (c.weight_bytes == 4 || (c.extra_bits >= 0 && c.extra_bits != f.k) || (c.sr && !f.sr)) {
      throw InputError("--optimizer '" + c.optimizer +
                       "': its split format fixes 16-bit weights with " + std::to_string(f.k) +
                       " extra bits" + (f.sr ? " and :sr" : "") +
                       "; drop the contradicting --weights/--extra-bits/--sr");
    }
    c.weight_bytes = f.fp8 ? 1 : 2;  // e5m2+k stores one byte per weight plus the extra bits
    c.extra_bits = f.k;
    c.sr = f.sr;
  }
  if (c.weight_bytes == 0) c.weight_bytes = 4;
  if (c.extra_bits > 16 || c.extra_bits < -1) throw InputError("--extra-bits: expected 0..16");
  if (c.extra_bits >= 0 && c.weight_bytes != 2 && c.weight_bytes != 1) {
    throw InputError("--extra-bits needs 16-bit weights (--weights bf16|fp16)");
  }
  if (c.block <= 0) throw InputError("--block: expected a positive block size");
  std::vector<MemoryRow> rows;
  rows.push_back({c.weight_bytes == 4   ? "weights (fp32)"
                  : c.weight_bytes == 1 ? "weights (e5m2)"
                                        : "weights (16-bit)",
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
  rows.push_back({"optimizer state", opt ? opt->entry->state_bytes : 0.0});
  if (opt && opt->entry->absmax_states > 0) {
    rows.push_back({"block absmax (fp32 per " + std::to_string(c.block) + " per state)",
                    opt->entry->absmax_states * 4.0 / c.block});
  }
  return rows;
}

double memory_total_per_param(const std::vector<MemoryRow>& rows) {
  double t = 0.0;
  for (const auto& r : rows) t += r.bytes_per_param;
  return t;
}

}  // namespace exmy::optim
