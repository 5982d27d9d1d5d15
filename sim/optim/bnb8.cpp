// bitsandbytes 8-bit block-wise Adam/AdamW/Momentum/RMSprop/Adagrad/Lion/AdEMAMix reference steps
// (docs/SEMANTICS.md 9.4).
#include <cfloat>
#include <cmath>

#include "sim/common/error.hpp"
#include "sim/format/codebook.hpp"
#include "sim/native/optim_bnb8_search.hpp"
#include "sim/optim/optim.hpp"
#include "sim/sfu/sfu_tables.hpp"

namespace exmy::optim {

Bnb8State bnb8_init(std::size_t n, bool two_states, int block, bool small_fallback) {
  if (block != 256 && block != 2048) {
    throw InputError("--block: expected 256 or 2048, got " + std::to_string(block));
  }
  Bnb8State s;
  s.block = block;
  s.two_states = two_states;
  s.is_8bit = !(small_fallback && n < kMin8bitSize);
  if (s.is_8bit) {
    const std::size_t blocks = (n + block - 1) / block;
    s.q1.assign(n, 0);
    s.absmax1.assign(blocks, 0.0f);
    if (two_states) {
      s.q2.assign(n, 0);
      s.absmax2.assign(blocks, 0.0f);
    }
  } else {
    s.s1.assign(n, 0.0f);
    if (two_states) s.s2.assign(n, 0.0f);
  }
  return s;
}

native::Bnb8Scalars bnb8_scalars(const AdamHyper& h, long step, bool torch_order) {
  native::Bnb8Scalars s;
  s.torch_order = torch_order;
  s.step = static_cast<int>(step);
  s.beta1 = static_cast<float>(h.beta1);
  s.beta2 = static_cast<float>(h.beta2);
  s.eps = static_cast<float>(h.eps);
  s.lr = static_cast<float>(h.lr);
  s.wd = static_cast<float>(h.wd);
  s.beta3 = static_cast<float>(h.beta3);
  s.alpha = static_cast<float>(h.alpha);
  const double t = static_cast<double>(step);
  s.neg_step = static_cast<float>(-(h.lr / (1.0 - std::pow(h.beta1, t))));
  s.bc2_sqrt = static_cast<float>(std::pow(1.0 - std::pow(h.beta2, t), 0.5));
  s.torch_decay = static_cast<float>(1.0 - h.lr * h.wd);
  if (h.bnb == native::BnbKernels::cuda_sm90) {
    // bitsandbytes' kernels as compiled: __powf, sqrt.approx, rcp.approx, FTZ (section 17).
    s.sm90 = true;
    s.sfu = sfu::sm90_view();
    native::bnb_sm90_scalars(s);
    return s;
  }
  s.one_minus_beta1 = 1.0f - s.beta1;
  s.one_minus_beta2 = 1.0f - s.beta2;
  s.one_minus_beta3 = 1.0f - s.beta3;
  // The kernel's powf(beta, step) in fp32, here correctly rounded (fp64 pow of the fp32 beta,
  // then RN32); bitsandbytes' __powf/__fdividef are approximations (section 12).
  const float pw1 = static_cast<float>(std::pow(static_cast<double>(s.beta1), t));
  const float pw2 = static_cast<float>(std::pow(static_cast<double>(s.beta2), t));
  const float c1 = 1.0f - pw1;
  s.c1 = c1;
  s.c2 = std::sqrt(1.0f - pw2);
  s.c2_eps = s.c2 * s.eps;
  s.step_size = (-s.lr * s.c2) / c1;
  s.decay = 1.0f - s.lr * s.wd;
  return s;
}

namespace {

void check(std::size_t n, std::size_t a, const char* what) {
  if (a != n) {
    throw InputError(std::string(what) + ": expected " + std::to_string(n) + " elements, got " +
                     std::to_string(a));
  }
}

// A dynamic map's requantization search, built once: its midpoints (bnb_quant_signed/_unsigned's
// binary search) and, where they apply, the bucketed thresholds of the GPU kernels
// (sim/native/optim_bnb8_search.hpp: the same code for every fp32 input, checked over all 2^32
// patterns of both maps by tests/optim/test_bnb8_search_exhaustive.cpp), which need one table
// load and one compare per element instead of 8 dependent probes and a tie test.
struct MapSearch {
  const float* code = nullptr;
  float mids[256];
  float t[native::kBucketMids];
  std::uint8_t start[native::kBucketTable];
  bool bucketed = false;
  int z = -1;  // the signed map's negative prefix (bnb_negative_prefix)

  explicit MapSearch(bool is_signed) : code(dynamic_codebook(is_signed).values.data()) {
    native::bnb_midpoints(code, mids);
    z = is_signed ? native::bnb_negative_prefix(code) : 0;
    bucketed = z >= 0 && native::bnb_thresholds(mids, t) && native::bnb_bucket_build(t, start) <= 1;
  }
  // bnb_quant_signed(s, code, mids, x, absmax) for a block normalised by n = bnb_norm(s, absmax).
  std::uint8_t quant_signed(const native::Bnb8Scalars& s, const native::BnbNorm& n, float x,
                            float absmax) const {
    return bucketed ? native::bnb_quant_signed_bucketed(n, z, t, start, x)
                    : native::bnb_quant_signed(s, code, mids, x, absmax);
  }
  // bnb_quant_unsigned(s, mids, x, absmax), likewise.
  std::uint8_t quant_unsigned(const native::Bnb8Scalars& s, const native::BnbNorm& n, float x,
                              float absmax) const {
    return bucketed ? native::bnb_quant_unsigned_bucketed(n, t, start, x)
                    : native::bnb_quant_unsigned(s, mids, x, absmax);
  }
};
const MapSearch& map_search(bool is_signed) {
  static const MapSearch signed_map(true), unsigned_map(false);
  return is_signed ? signed_map : unsigned_map;
}

}  // namespace

// The gradient has the parameters' dtype in bitsandbytes (p.grad): it is rounded to `st` first, as
// the GPU engine's 16-bit upload does.
void bnb_adam8_step(const native::Bnb8Scalars& s, Storage st, std::span<float> p,
                    std::span<const float> g, Bnb8State& S) {
  const std::size_t n = p.size();
  check(n, g.size(), "gradient");
  if (!S.is_8bit) {
    check(n, S.s1.size(), "state1");
    for (std::size_t i = 0; i < n; ++i) {
      native::bnb_adam32_element(s, st, p[i], native::to_storage(g[i], st), S.s1[i], S.s2[i]);
    }
    return;
  }
  check(n, S.q1.size(), "state1");
  const MapSearch& map1 = map_search(true);
  const MapSearch& map2 = map_search(false);
  const float* c1 = map1.code;
  const float* c2 = map2.code;
  const std::size_t B = static_cast<std::size_t>(S.block);
  std::vector<float> s1(B), s2(B);
  std::vector<char> ok(B);
  for (std::size_t lo = 0, b = 0; lo < n; lo += B, ++b) {
    const std::size_t cnt = std::min(B, n - lo);
    const float a1 = S.absmax1[b], a2 = S.absmax2[b];
    float m1 = -FLT_MAX, m2 = -FLT_MAX;
    for (std::size_t j = 0; j < cnt; ++j) {
      s1[j] = native::bnb_dequant(s, c1, S.q1[lo + j], a1);
      s2[j] = native::bnb_dequant(s, c2, S.q2[lo + j], a2);
      ok[j] = native::bnb_adam8_states(s, st, native::to_storage(g[lo + j], st), s1[j], s2[j]);
      m1 = native::f32_fmax(m1, native::f32_abs(s1[j]));
      m2 = native::f32_fmax(m2, native::f32_abs(s2[j]));
    }
    if (cnt < B) {
      float ps1, ps2;
      native::bnb_adam8_padding(s, st, c1, c2, a1, a2, ps1, ps2);
      m1 = native::f32_fmax(m1, native::f32_abs(ps1));
      m2 = native::f32_fmax(m2, native::f32_abs(ps2));
    }
    S.absmax1[b] = m1;
    S.absmax2[b] = m2;
    const native::BnbNorm n1 = native::bnb_norm(s, m1), n2 = native::bnb_norm(s, m2);
    for (std::size_t j = 0; j < cnt; ++j) {
      if (ok[j]) p[lo + j] = native::bnb_adam8_param(s, st, p[lo + j], s1[j], s2[j]);
      S.q1[lo + j] = map1.quant_signed(s, n1, s1[j], m1);
      S.q2[lo + j] = map2.quant_unsigned(s, n2, s2[j], m2);
    }
  }
}

void bnb_momentum8_step(const native::Bnb8Scalars& s, Storage st, std::span<float> p,
                        std::span<const float> g, Bnb8State& S) {
  const std::size_t n = p.size();
  check(n, g.size(), "gradient");
  if (!S.is_8bit) {
    check(n, S.s1.size(), "state1");
    for (std::size_t i = 0; i < n; ++i)
      native::bnb_momentum32_element(s, st, p[i], native::to_storage(g[i], st), S.s1[i],
                                     static_cast<int>(i % 4));
    return;
  }
  check(n, S.q1.size(), "state1");
  const MapSearch& map1 = map_search(true);
  const float* c1 = map1.code;
  const std::size_t B = static_cast<std::size_t>(S.block);
  std::vector<float> s1(B);
  for (std::size_t lo = 0, b = 0; lo < n; lo += B, ++b) {
    const std::size_t cnt = std::min(B, n - lo);
    const float a1 = S.absmax1[b];
    float m1 = -FLT_MAX;
    for (std::size_t j = 0; j < cnt; ++j) {
      s1[j] = native::bnb_momentum8_state(s, p[lo + j], native::to_storage(g[lo + j], st),
                                          native::bnb_dequant(s, c1, S.q1[lo + j], a1));
      m1 = native::f32_fmax(m1, native::f32_abs(s1[j]));
    }
    if (cnt < B)
      m1 = native::f32_fmax(m1, native::f32_abs(native::bnb_momentum8_padding(s, c1, a1)));
    S.absmax1[b] = m1;
    const native::BnbNorm n1 = native::bnb_norm(s, m1);
    for (std::size_t j = 0; j < cnt; ++j) {
      p[lo + j] = native::bnb_momentum8_param(s, st, p[lo + j], s1[j]);
      S.q1[lo + j] = map1.quant_signed(s, n1, s1[j], m1);
    }
  }
}

// RMSprop, Adagrad, Lion (9.4.1): the block loop of bnb_momentum8_step around the operation's
// phase functions.
void bnb1_step(const native::Bnb8Scalars& s, native::Bnb1Op op, Storage st, std::span<float> p,
               std::span<const float> g, Bnb8State& S) {
  const std::size_t n = p.size();
  check(n, g.size(), "gradient");
  if (!S.is_8bit) {
    check(n, S.s1.size(), "state1");
    for (std::size_t i = 0; i < n; ++i)
      native::bnb1_element32(s, op, st, p[i], native::to_storage(g[i], st), S.s1[i],
                             static_cast<int>(i % 4));
    return;
  }
  check(n, S.q1.size(), "state1");
  const MapSearch& map1 = map_search(true);
  const float* c1 = map1.code;
  const std::size_t B = static_cast<std::size_t>(S.block);
  std::vector<float> s1(B), l(B);
  for (std::size_t lo = 0, b = 0; lo < n; lo += B, ++b) {
    const std::size_t cnt = std::min(B, n - lo);
    const float a1 = S.absmax1[b];
    float m1 = -FLT_MAX;
    for (std::size_t j = 0; j < cnt; ++j) {
      s1[j] = native::bnb1_state8(s, op, st, p[lo + j], native::to_storage(g[lo + j], st),
                                  native::bnb_dequant(s, c1, S.q1[lo + j], a1), l[j]);
      m1 = native::f32_fmax(m1, native::f32_abs(s1[j]));
    }
    if (cnt < B)
      m1 = native::f32_fmax(m1, native::f32_abs(native::bnb1_padding8(s, op, st, c1, a1)));
    S.absmax1[b] = m1;
    const native::BnbNorm n1 = native::bnb_norm(s, m1);
    for (std::size_t j = 0; j < cnt; ++j) {
      p[lo + j] =
          native::bnb1_param8(s, op, st, p[lo + j], native::to_storage(g[lo + j], st), s1[j], l[j]);
      S.q1[lo + j] = map1.quant_signed(s, n1, s1[j], m1);
    }
  }
}

Bnb8State bnb_ademamix_init(std::size_t n, int block, bool small_fallback) {
  Bnb8State s = bnb8_init(n, true, block, small_fallback);
  s.ademamix = true;
  if (s.is_8bit) {
    s.q1.assign(2 * n, 0);
    s.absmax1.assign(2 * s.absmax2.size(), 0.0f);
  } else {
    s.s1.assign(2 * n, 0.0f);
  }
  return s;
}

// 9.4.2: Adam's block loop with a third state, m2 = state 1's second half, whose block absmax is
// absmax1[blocks + b].
void bnb_ademamix_step(const native::Bnb8Scalars& s, Storage st, std::span<float> p,
                       std::span<const float> g, Bnb8State& S) {
  const std::size_t n = p.size();
  check(n, g.size(), "gradient");
  if (!S.is_8bit) {
    check(2 * n, S.s1.size(), "state1");
    for (std::size_t i = 0; i < n; ++i) {
      native::bnb_ademamix32_element(s, st, p[i], native::to_storage(g[i], st), S.s1[i], S.s2[i],
                                     S.s1[n + i]);
    }
    return;
  }
  check(2 * n, S.q1.size(), "state1");
  const MapSearch& map1 = map_search(true);
  const MapSearch& map2 = map_search(false);
  const float* c1 = map1.code;
  const float* c2 = map2.code;
  const std::size_t B = static_cast<std::size_t>(S.block), nb = S.absmax2.size();
  std::vector<float> s1(B), s2(B), s3(B);
  std::vector<char> ok(B);
  for (std::size_t lo = 0, b = 0; lo < n; lo += B, ++b) {
    const std::size_t cnt = std::min(B, n - lo);
    const float a1 = S.absmax1[b], a2 = S.absmax2[b], a3 = S.absmax1[nb + b];
    float m1 = -FLT_MAX, m2 = -FLT_MAX, m3 = -FLT_MAX;
    for (std::size_t j = 0; j < cnt; ++j) {
      s1[j] = native::bnb_dequant(s, c1, S.q1[lo + j], a1);
      s2[j] = native::bnb_dequant(s, c2, S.q2[lo + j], a2);
      s3[j] = native::bnb_dequant(s, c1, S.q1[n + lo + j], a3);
      ok[j] = native::bnb_ademamix8_states(s, st, native::to_storage(g[lo + j], st), s1[j], s2[j],
                                           s3[j]);
      m1 = native::f32_fmax(m1, native::f32_abs(s1[j]));
      m2 = native::f32_fmax(m2, native::f32_abs(s2[j]));
      m3 = native::f32_fmax(m3, native::f32_abs(s3[j]));
    }
    if (cnt < B) {
      float ps1, ps2, ps3;
      native::bnb_ademamix8_padding(s, st, c1, c2, a1, a2, a3, ps1, ps2, ps3);
      m1 = native::f32_fmax(m1, native::f32_abs(ps1));
      m2 = native::f32_fmax(m2, native::f32_abs(ps2));
      m3 = native::f32_fmax(m3, native::f32_abs(ps3));
    }
    S.absmax1[b] = m1;
    S.absmax2[b] = m2;
    S.absmax1[nb + b] = m3;
    const native::BnbNorm n1 = native::bnb_norm(s, m1), n2 = native::bnb_norm(s, m2),
                          n3 = native::bnb_norm(s, m3);
    for (std::size_t j = 0; j < cnt; ++j) {
      if (ok[j]) p[lo + j] = native::bnb_ademamix_param(s, st, p[lo + j], s1[j], s2[j], s3[j]);
      S.q1[lo + j] = map1.quant_signed(s, n1, s1[j], m1);
      S.q2[lo + j] = map2.quant_unsigned(s, n2, s2[j], m2);
      S.q1[n + lo + j] = map1.quant_signed(s, n3, s3[j], m3);
    }
  }
}

}  // namespace exmy::optim
