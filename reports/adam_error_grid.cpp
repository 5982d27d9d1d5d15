#include "reports/adam_error_grid.hpp"

#include <algorithm>
#include <cmath>

namespace exmy::reports {

std::vector<StateQuantMethod> state_quant_methods() {
  return {{"linear", &linear_codebook(true), &linear_codebook(false)},
          {"dynamic_tree", &dynamic_codebook(true), &dynamic_codebook(true)},
          {"dynamic", &dynamic_codebook(true), &dynamic_codebook(false)}};
}

namespace {
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
        g.abs_err.push_back(static_cast<float>(err));
        if (s.v[t][i] > 0.0f && qv[i] == 0.0f) {
          ++g.vzero;
          g.vzero_abs += err;
        }
      }
    }
  }
  return g;
}

ErrorTails error_tails(const ErrorGrid& g) {
  ErrorTails t;
  if (g.abs_err.empty()) return t;
  std::vector<float> e = g.abs_err;
  std::sort(e.begin(), e.end());
  const auto q = [&](double p) {
    return static_cast<double>(e[static_cast<std::size_t>(p * static_cast<double>(e.size() - 1))]);
  };
  t.p50 = q(0.5);
  t.p99 = q(0.99);
  t.p9999 = q(0.9999);
  t.max = e.back();
  t.vzero_rate = static_cast<double>(g.vzero) / static_cast<double>(g.elements);
  t.vzero_abs_share = g.total_abs > 0 ? g.vzero_abs / g.total_abs : 0.0;
  const double n = static_cast<double>(g.elements - g.vzero);
  t.mean_abs_without_vzero = n > 0 ? (g.total_abs - g.vzero_abs) / n : 0.0;
  return t;
}

}  // namespace exmy::reports
