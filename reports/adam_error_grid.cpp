#include "reports/adam_error_grid.hpp"

#include <cmath>

#include "sim/native/codebook_lookup.hpp"
#include "sim/native/quant_absmax.hpp"
#include "sim/native/quant_codebook.hpp"

namespace exmy::reports {

std::vector<StateQuantMethod> state_quant_methods() {
  return {{"linear", &linear_codebook(true), &linear_codebook(false)},
          {"dynamic_tree", &dynamic_codebook(true), &dynamic_codebook(true)},
          {"dynamic", &dynamic_codebook(true), &dynamic_codebook(false)}};
}

namespace {
// Codes and dequantized values of one tensor under a codebook, group size `block` (0: all).
void quantize_state(const std::vector<float>& x, const Codebook& cb, int block,
                    std::vector<std::uint8_t>& codes, std::vector<float>& deq) {
  const std::size_t n = x.size();
  const std::size_t g = block > 0 ? static_cast<std::size_t>(block) : (n ? n : 1);
  codes.resize(n);
  deq.resize(n);
  for (std::size_t start = 0; start < n; start += g) {
    const std::size_t end = start + g < n ? start + g : n;
    float a = native::kAbsmaxInit;
    for (std::size_t i = start; i < end; ++i) {
      a = native::absmax_combine(a, x[i], native::NanPolicy::propagate);
    }
    for (std::size_t i = start; i < end; ++i) {
      const float nx = native::codebook_normalize(x[i], a, native::NormOrder::recip_mul);
      codes[i] = codebook_nearest(cb.values.data(), nx, TieRule::even_index);
      deq[i] = native::codebook_dequant(cb.values.data(), codes[i], a);
    }
  }
}

float adam_u(float m, float v, float eps) {
  return m / (std::sqrt(v) + eps);
}
}  // namespace

ErrorGrid adam_error_grid(const std::vector<AdamSnapshot>& snaps, const StateQuantMethod& method,
                          int block, float eps) {
  ErrorGrid g;
  g.method = method.name;
  g.block = block;
  g.count.assign(65536, 0);
  g.sum_abs.assign(65536, 0.0);
  g.sum_rel.assign(65536, 0.0);
  g.rel_count.assign(65536, 0);
  std::vector<std::uint8_t> cm, cv;
  std::vector<float> qm, qv;
  for (const auto& s : snaps) {
    for (std::size_t t = 0; t < s.m.size(); ++t) {
      quantize_state(s.m[t], *method.m_book, block, cm, qm);
      quantize_state(s.v[t], *method.v_book, block, cv, qv);
      for (std::size_t i = 0; i < s.m[t].size(); ++i) {
        const float u32 = adam_u(s.m[t][i], s.v[t][i], eps);
        const float u8 = adam_u(qm[i], qv[i], eps);
        const double err = std::fabs(static_cast<double>(u32) - u8);
        const std::size_t cell = static_cast<std::size_t>(cm[i]) * 256 + cv[i];
        ++g.count[cell];
        g.sum_abs[cell] += err;
        g.total_abs += err;
        if (u32 != 0.0f) {
          const double rel = err / std::fabs(static_cast<double>(u32));
          g.sum_rel[cell] += rel;
          ++g.rel_count[cell];
          g.total_rel += rel;
          ++g.total_rel_count;
        }
        ++g.elements;
      }
    }
  }
  return g;
}

}  // namespace exmy::reports
