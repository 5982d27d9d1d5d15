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
  for (const std::size_t d : c.shape) {
    if (d == 0) throw InputError("--shape: expected dimensions >= 1");
  }
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
  double state = opt ? opt->entry->state_bytes : 0.0;
  if (opt && opt->entry->factored_state) {
    // torch.optim.Adafactor: states of the weights' dtype; a >= 2-d (..., R, C) parameter keeps
    // R + C of them per R x C matrix (row_var, col_var), a 1-d one one per parameter (variance).
    const std::vector<std::size_t>& s = c.shape;
    const double per = s.size() < 2 ? 1.0
                                    : (static_cast<double>(s[s.size() - 2]) + s[s.size() - 1]) /
                                          (static_cast<double>(s[s.size() - 2]) * s[s.size() - 1]);
    state = c.weight_bytes * per;
  }
  rows.push_back({"optimizer state", state});
  if (c.amsgrad) {
    bool reads = false;
    if (opt) {
      for (const ExtraHyper& x : opt->entry->def->extras) reads = reads || x.option == "--amsgrad";
    }
    if (!reads) {
      throw InputError("--amsgrad: " + c.optimizer +
                       " has no amsgrad option (torch.optim.Adam and AdamW have)");
    }
    // max_exp_avg_sq: one more state the size of exp_avg_sq (state3 of exmy step --amsgrad)
    rows.push_back({"amsgrad max_exp_avg_sq", opt->entry->state_bytes / 2.0});
  }
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
