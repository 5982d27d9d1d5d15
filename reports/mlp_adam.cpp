#include "reports/mlp_adam.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <span>

#include "reports/report_context.hpp"
#include "reports/sharpness.hpp"
#include "sim/fast/simd.hpp"
#if defined(__x86_64__)
#include <immintrin.h>
#endif
#include "sim/native/codebook_lookup.hpp"
#include "sim/native/optim_bnb8.hpp"
#include "sim/native/philox.hpp"
#include "sim/native/quant_absmax.hpp"
#include "sim/native/quant_codebook.hpp"
#include "sim/native/random_normal.hpp"
#include "sim/optim/optim.hpp"

namespace exmy::reports {

namespace {

// Section 2 owns Philox streams 0x02000000..: 1 weights, 2 data z, 3 data activity, 4 teacher.
constexpr std::uint32_t kStreamInit = 0x02000001u;
constexpr std::uint32_t kStreamZ = 0x02000002u;
constexpr std::uint32_t kStreamActive = 0x02000003u;
constexpr std::uint32_t kStreamTeacher = 0x02000004u;

// A dense layer y = W^T x + b with W stored in-major (W[j * out + o]): the forward loop is an
// axpy over outputs (summation over j in order 0..in-1 for every output).
struct Layer {
  int in, out;
  std::vector<float> w, b, gw, gb, mw, vw, mb, vb;
  std::vector<float> wt;      // W transposed (out-major: wt[o * in + j]), refreshed every step
  optim::Bnb8State bw, bb;    // bnb_adam8 states of w and b
  optim::SplitTensor sw, sb;  // split_adamw: the stored weights (w, b hold their 16-bit parts)
};

optim::Bnb8State bnb_state(std::size_t n, int block, bool force32) {
  optim::Bnb8State s = optim::bnb8_init(n, true, block, true);
  if (force32 && s.is_8bit) {
    s.is_8bit = false;
    s.q1.clear();
    s.q2.clear();
    s.absmax1.clear();
    s.absmax2.clear();
    s.s1.assign(n, 0.0f);
    s.s2.assign(n, 0.0f);
  }
  return s;
}

void init_layer(Layer& L, int in, int out, std::uint64_t seed, std::uint64_t& counter) {
  L.in = in;
  L.out = out;
  const std::size_t n = static_cast<std::size_t>(in) * out;
  L.w.resize(n);
  // He initialisation: N(0, 2 / fan_in).
  const double sd = std::sqrt(2.0 / in);
  for (std::size_t i = 0; i < n; ++i) {
    L.w[i] = static_cast<float>(sd * native::normal_fp64(seed, kStreamInit, counter++));
  }
  L.b.assign(out, 0.0f);
  L.gw.assign(n, 0.0f);
  L.gb.assign(out, 0.0f);
  L.mw.assign(n, 0.0f);
  L.vw.assign(n, 0.0f);
  L.mb.assign(out, 0.0f);
  L.vb.assign(out, 0.0f);
}

// relu: max(y, 0), or with `leaky` y / 64 for y <= 0 (an exact power-of-two scaling).
void forward(const Layer& L, const float* x, float* y, bool relu, bool leaky = false) {
  for (int o = 0; o < L.out; ++o) y[o] = L.b[o];
  for (int j = 0; j < L.in; ++j) {
    const float xj = x[j];
    if (xj == 0.0f) continue;  // a +-0 product changes y only in the sign of a zero sum
    const float* wr = &L.w[static_cast<std::size_t>(j) * L.out];
    for (int o = 0; o < L.out; ++o) y[o] += wr[o] * xj;
  }
  if (relu && leaky) {
    for (int o = 0; o < L.out; ++o) y[o] = y[o] > 0.0f ? y[o] : y[o] * 0.015625f;
  } else if (relu) {
    for (int o = 0; o < L.out; ++o) y[o] = y[o] > 0.0f ? y[o] : 0.0f;
  }
}

// wt = W transposed: the backward pass reads it (see backward).
void transpose_weights(Layer& L) {
  L.wt.resize(L.w.size());
  for (int j = 0; j < L.in; ++j) {
    const float* wr = &L.w[static_cast<std::size_t>(j) * L.out];
    for (int o = 0; o < L.out; ++o) L.wt[static_cast<std::size_t>(o) * L.in + j] = wr[o];
  }
}

// Accumulates the gradient of one sample: gw += x dy^T, gb += dy; dx = W dy (if dx).
// dx[j] = (((0 + W[j,0] dy[0]) + W[j,1] dy[1]) + ...) in fp32, o ascending: the loop runs over o
// outside and j inside (on the transposed weights, so the inner loop is contiguous and
// vectorizes), which performs the same roundings in the same order for every j as the running
// sum over o would. (An o-inner running sum is one dependent add chain per j: it was most of
// the report's training time.)
//
// gw: a row with x_j = +-0 adds x_j dy_o = +-0 to every g_o when every dy_o is finite, and g + +-0
// is g (g is never -0: it starts at +0 and a sum of floats is -0 only when both addends are), so
// such rows are skipped then; a non-finite dy_o (0 x inf = NaN) keeps every row.
void backward(Layer& L, const float* x, const float* dy, float* dx) {
  bool dy_finite = true;
  for (int o = 0; o < L.out; ++o) dy_finite = dy_finite && std::isfinite(dy[o]);
  for (int j = 0; j < L.in; ++j) {
    const float xj = x[j];
    if (xj == 0.0f && dy_finite) continue;
    float* g = &L.gw[static_cast<std::size_t>(j) * L.out];
    for (int o = 0; o < L.out; ++o) g[o] += xj * dy[o];
  }
  for (int o = 0; o < L.out; ++o) L.gb[o] += dy[o];
  if (dx == nullptr) return;
  for (int j = 0; j < L.in; ++j) dx[j] = 0.0f;
  for (int o = 0; o < L.out; ++o) {
    const float d = dy[o];
    const float* wc = &L.wt[static_cast<std::size_t>(o) * L.in];
    for (int j = 0; j < L.in; ++j) dx[j] += wc[j] * d;
  }
}

// The batch forms of forward and backward (what a training step runs): every sample's outputs
// and gradients are those of the per-sample functions above, element by element, in the same
// order -- y_b[o] from b[o] over j ascending (zero inputs skipped), dx_b[j] from +0 over o
// ascending, gw[j, o] and gb[o] over samples b ascending -- since within a step the weights do
// not change and no sample reads another's values. What changes is only the loop nest: each
// output's running sum over one block of 64 columns stays in registers for its whole reduction
// (the per-sample loops loaded and stored every partial sum), and gw is visited row by row, each
// over all samples. The bodies are compiled for SSE2 and, where the CPU has it, AVX2 (lane-wise
// IEEE multiply, then add: -ffp-contract=off, the same roundings as the scalar loop).
constexpr int kColumnBlock = 64;

// 8 fp32 lanes (one AVX2 register, two SSE2 ones): a column block's running sums are 8 of them,
// held in registers over the whole reduction instead of loaded and stored per term.
typedef float F8 __attribute__((vector_size(32)));
EXMY_SIMD_INLINE F8 load8(const float* p) {
  F8 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
EXMY_SIMD_INLINE void store8(float* p, F8 v) {
  std::memcpy(p, &v, sizeof v);
}

// y_b[o] = b[o] + sum over j ascending of W[j, o] x_b[j] (zero x_b[j] skipped, as forward).
EXMY_SIMD_INLINE void forward_batch_body(const Layer& L, const float* __restrict x,
                                         float* __restrict y, int B, bool relu, bool leaky) {
  const int in = L.in, out = L.out;
  const int full = out - out % kColumnBlock;
  for (int b = 0; b < B; ++b) {
    const float* __restrict xb = x + static_cast<std::size_t>(b) * in;
    float* __restrict yb = y + static_cast<std::size_t>(b) * out;
    for (int o0 = 0; o0 < full; o0 += kColumnBlock) {
      F8 acc[8];
      for (int q = 0; q < 8; ++q) acc[q] = load8(&L.b[o0 + 8 * q]);
      for (int j = 0; j < in; ++j) {
        const float xj = xb[j];
        if (xj == 0.0f) continue;
        const float* wr = &L.w[static_cast<std::size_t>(j) * out + o0];
        for (int q = 0; q < 8; ++q) acc[q] = acc[q] + load8(wr + 8 * q) * xj;
      }
      for (int q = 0; q < 8; ++q) store8(yb + o0 + 8 * q, acc[q]);
    }
    if (full < out) {  // the last columns: the same sums, kept in memory
      for (int o = full; o < out; ++o) yb[o] = L.b[o];
      for (int j = 0; j < in; ++j) {
        const float xj = xb[j];
        if (xj == 0.0f) continue;
        const float* __restrict wr = &L.w[static_cast<std::size_t>(j) * out];
        for (int o = full; o < out; ++o) yb[o] += wr[o] * xj;
      }
    }
    if (relu && leaky) {
      for (int o = 0; o < out; ++o) yb[o] = yb[o] > 0.0f ? yb[o] : yb[o] * 0.015625f;
    } else if (relu) {
      for (int o = 0; o < out; ++o) yb[o] = yb[o] > 0.0f ? yb[o] : 0.0f;
    }
  }
}

// gw[j, o] += x_b[j] dy_b[o] and gb[o] += dy_b[o] over b ascending (rows with x_b[j] = +-0
// skipped when dy_b is finite, as backward); dx_b[j] = sum over o ascending of W[j, o] dy_b[o]
// from +0 (wt: transpose_weights). A zero dy_b[o] adds +-0 to every dx_b[j] when every weight
// is finite, and dx + +-0 is dx (dx is never -0: it starts at +0, and a sum is -0 only when both
// addends are), so such o are skipped then, as backward skips zero rows of gw.
EXMY_SIMD_INLINE void backward_batch_body(Layer& L, const float* __restrict x,
                                          const float* __restrict dy, float* __restrict dx, int B,
                                          std::uint8_t* dy_finite, bool w_finite) {
  const int in = L.in, out = L.out;
  for (int b = 0; b < B; ++b) {
    bool f = true;
    const float* d = dy + static_cast<std::size_t>(b) * out;
    for (int o = 0; o < out; ++o) f = f && std::isfinite(d[o]);
    dy_finite[b] = f ? 1 : 0;
  }
  const int gfull = out - out % kColumnBlock;
  for (int j = 0; j < in; ++j) {
    float* __restrict g = &L.gw[static_cast<std::size_t>(j) * out];
    for (int o0 = 0; o0 < gfull; o0 += kColumnBlock) {
      F8 acc[8];
      for (int q = 0; q < 8; ++q) acc[q] = load8(g + o0 + 8 * q);
      for (int b = 0; b < B; ++b) {
        const float xj = x[static_cast<std::size_t>(b) * in + j];
        if (xj == 0.0f && dy_finite[b] != 0) continue;
        const float* d = dy + static_cast<std::size_t>(b) * out + o0;
        for (int q = 0; q < 8; ++q) acc[q] = acc[q] + load8(d + 8 * q) * xj;
      }
      for (int q = 0; q < 8; ++q) store8(g + o0 + 8 * q, acc[q]);
    }
    for (int b = 0; b < B && gfull < out; ++b) {
      const float xj = x[static_cast<std::size_t>(b) * in + j];
      if (xj == 0.0f && dy_finite[b] != 0) continue;
      const float* __restrict d = dy + static_cast<std::size_t>(b) * out;
      for (int o = gfull; o < out; ++o) g[o] += xj * d[o];
    }
  }
  for (int b = 0; b < B; ++b) {
    const float* __restrict d = dy + static_cast<std::size_t>(b) * out;
    for (int o = 0; o < out; ++o) L.gb[o] += d[o];
  }
  if (dx == nullptr) return;
  const int xfull = in - in % kColumnBlock;
  for (int b = 0; b < B; ++b) {
    const float* __restrict db = dy + static_cast<std::size_t>(b) * out;
    float* __restrict xb = dx + static_cast<std::size_t>(b) * in;
    for (int j0 = 0; j0 < xfull; j0 += kColumnBlock) {
      F8 acc[8];
      for (int q = 0; q < 8; ++q) acc[q] = F8{};  // +0 in every lane
      for (int o = 0; o < out; ++o) {
        const float d = db[o];
        if (d == 0.0f && w_finite) continue;
        const float* wc = &L.wt[static_cast<std::size_t>(o) * in + j0];
        for (int q = 0; q < 8; ++q) acc[q] = acc[q] + load8(wc + 8 * q) * d;
      }
      for (int q = 0; q < 8; ++q) store8(xb + j0 + 8 * q, acc[q]);
    }
    if (xfull < in) {
      for (int j = xfull; j < in; ++j) xb[j] = 0.0f;
      for (int o = 0; o < out; ++o) {
        const float d = db[o];
        if (d == 0.0f && w_finite) continue;
        const float* __restrict wc = &L.wt[static_cast<std::size_t>(o) * in];
        for (int j = xfull; j < in; ++j) xb[j] += wc[j] * d;
      }
    }
  }
}

#if defined(__x86_64__)
EXMY_TARGET_AVX2 void forward_batch_avx2(const Layer& L, const float* x, float* y, int B, bool relu,
                                         bool leaky) {
  forward_batch_body(L, x, y, B, relu, leaky);
}
EXMY_TARGET_AVX2 void backward_batch_avx2(Layer& L, const float* x, const float* dy, float* dx,
                                          int B, std::uint8_t* dy_finite, bool w_finite) {
  backward_batch_body(L, x, dy, dx, B, dy_finite, w_finite);
}
#endif

bool use_avx2() {
#if defined(__x86_64__)
  return fast::simd::active_isa() >= fast::simd::Isa::avx2;
#else
  return false;
#endif
}

void forward_batch(const Layer& L, const float* x, float* y, int B, bool relu, bool leaky) {
#if defined(__x86_64__)
  if (use_avx2()) return forward_batch_avx2(L, x, y, B, relu, leaky);
#endif
  forward_batch_body(L, x, y, B, relu, leaky);
}

void backward_batch(Layer& L, const float* x, const float* dy, float* dx, int B) {
  std::vector<std::uint8_t> dy_finite(static_cast<std::size_t>(B));
  bool w_finite = true;
  if (dx != nullptr) {
    for (float w : L.wt) w_finite = w_finite && std::isfinite(w);
  }
#if defined(__x86_64__)
  if (use_avx2()) return backward_batch_avx2(L, x, dy, dx, B, dy_finite.data(), w_finite);
#endif
  backward_batch_body(L, x, dy, dx, B, dy_finite.data(), w_finite);
}

// Stores the states in 8 bits when the config asks for it (see MlpConfig).
void requantize(std::vector<float>& x, const Codebook* cb, int block) {
  if (cb == nullptr) return;
  std::vector<std::uint8_t> codes;
  std::vector<float> deq;
  quantize_state(x, *cb, block, codes, deq);
  x.swap(deq);
}

// fp32 Adam (torch.optim.Adam, bias-corrected step): m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
// p -= lr/(1 - b1^t) * m / (sqrt(v)/sqrt(1 - b2^t) + eps).
#if defined(__x86_64__)
// adam's element loop on 8 lanes, from element 0: per lane the same IEEE operations in the same
// order (multiplies, adds, the correctly rounded sqrt and divisions; -ffp-contract=off), the
// count of v == 0 && m != 0 from lane masks (m != 0 holds for NaN, as in C). Returns how many
// elements it did; the scalar loop does the rest.
EXMY_TARGET_AVX2 std::size_t adam_avx2(float* p, float* g, float* m, float* v, std::size_t n,
                                       const MlpConfig& c, float bc1, float bc2,
                                       long long& eps_updates) {
  const __m256 b1 = _mm256_set1_ps(c.beta1), b2 = _mm256_set1_ps(c.beta2);
  const __m256 a1 = _mm256_set1_ps(1.0f - c.beta1), a2 = _mm256_set1_ps(1.0f - c.beta2);
  const __m256 lr = _mm256_set1_ps(c.lr / bc1), s2 = _mm256_set1_ps(bc2);
  const __m256 eps = _mm256_set1_ps(c.eps), zero = _mm256_setzero_ps();
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 gi = _mm256_loadu_ps(g + i);
    const __m256 mi =
        _mm256_add_ps(_mm256_mul_ps(b1, _mm256_loadu_ps(m + i)), _mm256_mul_ps(a1, gi));
    const __m256 vi = _mm256_add_ps(_mm256_mul_ps(b2, _mm256_loadu_ps(v + i)),
                                    _mm256_mul_ps(a2, _mm256_mul_ps(gi, gi)));
    const __m256 den = _mm256_add_ps(_mm256_div_ps(_mm256_sqrt_ps(vi), s2), eps);
    const __m256 step = _mm256_mul_ps(lr, _mm256_div_ps(mi, den));
    _mm256_storeu_ps(p + i, _mm256_sub_ps(_mm256_loadu_ps(p + i), step));
    _mm256_storeu_ps(m + i, mi);
    _mm256_storeu_ps(v + i, vi);
    _mm256_storeu_ps(g + i, zero);
    const __m256 hit =
        _mm256_and_ps(_mm256_cmp_ps(vi, zero, _CMP_EQ_OQ), _mm256_cmp_ps(mi, zero, _CMP_NEQ_UQ));
    eps_updates += __builtin_popcount(static_cast<unsigned>(_mm256_movemask_ps(hit)));
  }
  return i;
}
#endif

void adam(std::vector<float>& p, std::vector<float>& g, std::vector<float>& m,
          std::vector<float>& v, const MlpConfig& c, int t, bool state32, long long& eps_updates) {
  const float bc1 = 1.0f - static_cast<float>(std::pow(c.beta1, t));
  const float bc2 = std::sqrt(1.0f - static_cast<float>(std::pow(c.beta2, t)));
  std::size_t from = 0;
#if defined(__x86_64__)
  if (!c.per_sample && use_avx2()) {
    from = adam_avx2(p.data(), g.data(), m.data(), v.data(), p.size(), c, bc1, bc2, eps_updates);
  }
#endif
  for (std::size_t i = from; i < p.size(); ++i) {
    m[i] = c.beta1 * m[i] + (1.0f - c.beta1) * g[i];
    v[i] = c.beta2 * v[i] + (1.0f - c.beta2) * (g[i] * g[i]);
    p[i] -= (c.lr / bc1) * (m[i] / (std::sqrt(v[i]) / bc2 + c.eps));
    eps_updates += (v[i] == 0.0f && m[i] != 0.0f) ? 1 : 0;
    g[i] = 0.0f;
  }
  if (!state32 && static_cast<int>(p.size()) >= c.min_8bit_size) {
    requantize(m, c.m_book, c.state_block);
    requantize(v, c.v_book, c.state_block);
  }
}

// native::bnb_nearest(mids, x) (= codebook_nearest(values, x, TieRule::even_index)) with the
// search narrowed by a table: the count of midpoints below x is monotone in x, so for the 2^16
// buckets of fp32 values sharing their top 16 bits (in value order) the counts at the bucket's
// two ends bound it, and a scan from the lower bound finds it (usually at once). A bucket
// holding NaN words gets the whole range; NaN itself is code 0, as in bnb_nearest.
class NearestTable {
 public:
  explicit NearestTable(const float* values) {
    native::bnb_midpoints(values, mids_);
    for (int k = 0; k + 1 < 256; ++k) sorted_ = sorted_ && !(mids_[k + 1] < mids_[k]);
    for (std::uint32_t b = 0; b < 65536; ++b) {
      const float first = value_of(b << 16), last = value_of((b << 16) | 0xFFFFu);
      if (first != first || last != last) {
        lo_[b] = 0;
        hi_[b] = 255;
      } else {
        lo_[b] = count_below(first);
        hi_[b] = count_below(last);
      }
    }
  }
  std::uint8_t nearest(float x) const {
    if (!sorted_) return native::bnb_nearest(mids_, x);
    if (x != x) return 0;
    const std::uint32_t b = key_of(x) >> 16;
    int lo = lo_[b];
    const int hi = hi_[b];
    while (lo < hi && mids_[lo] < x) ++lo;
    if (lo < 255 && mids_[lo] == x && (lo & 1) != 0) ++lo;
    return static_cast<std::uint8_t>(lo);
  }

 private:
  // fp32 bits -> an unsigned key in value order (-0 just below +0) and back.
  static std::uint32_t key_of(float x) {
    const std::uint32_t u = native::bits_of(x);
    return (u >> 31) != 0 ? ~u : u | 0x80000000u;
  }
  static float value_of(std::uint32_t key) {
    return native::float_of((key >> 31) != 0 ? key & 0x7FFFFFFFu : ~key);
  }
  std::uint8_t count_below(float x) const {  // bnb_nearest without the tie step
    int lo = 0;
    for (int step = 128; step > 0; step >>= 1) {
      if (mids_[lo + step - 1] < x) lo += step;
    }
    return static_cast<std::uint8_t>(lo);
  }
  float mids_[256];
  bool sorted_ = true;
  std::uint8_t lo_[65536], hi_[65536];
};

// One table per codebook (by its values' bits), built on first use.
const NearestTable& nearest_table(const Codebook& cb) {
  static std::mutex mu;
  static std::map<std::array<std::uint32_t, 256>, std::unique_ptr<NearestTable>> tables;
  std::array<std::uint32_t, 256> key;
  for (int k = 0; k < 256; ++k) key[k] = native::bits_of(cb.values[k]);
  const std::lock_guard<std::mutex> lock(mu);
  auto& t = tables[key];
  if (!t) t = std::make_unique<NearestTable>(cb.values.data());
  return *t;
}

// One sample's softmax cross-entropy, mean over the batch of B: dz = (softmax - onehot) / B, and
// the sample's shares of the loss, the count of correct argmaxes and, on logged steps, the logit
// sharpness (To FP8 and back again, eqs. 1-2, eps 5e-4). The per-sample and the batched training
// loops both call it, so the two keep the same float operations in the same order.
void softmax_ce_sample(const float* zb, int C, int label, int B, bool logged, float* dz,
                       float& loss, int& correct, double& sharp) {
  float zmax = zb[0];
  int am = 0;
  for (int c = 1; c < C; ++c) {
    if (zb[c] > zmax) {
      zmax = zb[c];
      am = c;
    }
  }
  correct += am == label ? 1 : 0;
  if (logged) {
    sharp += logit_sharpness(std::span<const float>(zb, static_cast<std::size_t>(C)),
                             static_cast<std::size_t>(label), 5e-4) /
             B;
  }
  float se = 0.0f;
  for (int c = 0; c < C; ++c) se += std::exp(zb[c] - zmax);
  loss += (std::log(se) + zmax - zb[label]) / B;
  for (int c = 0; c < C; ++c)
    dz[c] = (std::exp(zb[c] - zmax) / se - (c == label ? 1.0f : 0.0f)) / B;
}

}  // namespace

void quantize_state(const std::vector<float>& x, const Codebook& cb, int block,
                    std::vector<std::uint8_t>& codes, std::vector<float>& deq) {
  const std::size_t n = x.size();
  const std::size_t g = block > 0 ? static_cast<std::size_t>(block) : (n ? n : 1);
  codes.resize(n);
  deq.resize(n);
  // codebook_nearest(values, ., TieRule::even_index) through NearestTable (the same codes: it is
  // bnb_nearest on the precomputed midpoints, sim/native/optim_bnb8.hpp), and the reciprocal
  // RN32(1/a) once per block: codebook_normalize(x, a, recip_mul) is a == 0 ? 0 :
  // RN32(x * RN32(1/a)). Same values as the per-element calls, fewer operations.
  const NearestTable& table = nearest_table(cb);
  for (std::size_t start = 0; start < n; start += g) {
    const std::size_t end = start + g < n ? start + g : n;
    float a = native::kAbsmaxInit;
    for (std::size_t i = start; i < end; ++i) {
      a = native::absmax_combine(a, x[i], native::NanPolicy::propagate);
    }
    const float r = native::rn32_div(1.0f, a);
    for (std::size_t i = start; i < end; ++i) {
      const float nx = a == 0.0f ? 0.0f : native::rn32_mul(x[i], r);
      codes[i] = table.nearest(nx);
      deq[i] = native::codebook_dequant(cb.values.data(), codes[i], a);
    }
  }
}

std::vector<AdamSnapshot> train_mlp_adam(const MlpConfig& cfg, std::uint64_t seed, TrainLog& log) {
  const int D = cfg.in, H = cfg.hidden, C = cfg.classes, B = cfg.batch;
  std::uint64_t counter = 0;
  Layer L1, L2, L3;
  init_layer(L1, D, H, seed, counter);
  init_layer(L2, H, H, seed, counter);
  init_layer(L3, H, C, seed, counter);
  if (cfg.optimizer == MlpConfig::Optimizer::split_adamw) {
    // The initial fp32 weights are stored once in the split format; the model sees their
    // 16-bit parts.
    const native::SplitFormat f = optim::parse_split_format(cfg.split);
    std::uint64_t k = 0;
    for (Layer* L : {&L1, &L2, &L3}) {
      for (int part = 0; part < 2; ++part) {
        std::vector<float>& p = part ? L->b : L->w;
        optim::SplitTensor& sp = part ? L->sb : L->sw;
        sp = optim::split_tensor(p, f, seed ^ (0x5B100000ull + k++));
        for (std::size_t i = 0; i < p.size(); ++i) p[i] = native::split_hi_value(sp.hi[i], f);
      }
    }
  }
  std::vector<float> teacher(static_cast<std::size_t>(C) * D), scale(D);
  for (std::size_t i = 0; i < teacher.size(); ++i) {
    teacher[i] = static_cast<float>(native::normal_fp64(seed, kStreamTeacher, i));
    const int j = static_cast<int>(i % static_cast<std::size_t>(D));
    if (j < static_cast<int>(cfg.late_onsets.size()) * cfg.late_group) teacher[i] = 0.0f;
  }
  for (int j = 0; j < D; ++j) {
    scale[j] =
        cfg.unit_scales ? 1.0f : static_cast<float>(std::pow(10.0, -1.5 + 3.0 * j / (D - 1)));
  }
  std::vector<float> x(static_cast<std::size_t>(B) * D), h1(static_cast<std::size_t>(B) * H),
      h2(static_cast<std::size_t>(B) * H), z(static_cast<std::size_t>(B) * C);
  std::vector<int> label(B);
  std::vector<float> dzb(static_cast<std::size_t>(B) * C), dh2(static_cast<std::size_t>(B) * H),
      dh1(static_cast<std::size_t>(B) * H);
  std::vector<AdamSnapshot> snaps;
  std::size_t next_snap = 0;
  for (int t = 1; t <= cfg.steps; ++t) {
    throw_if_interrupted();
    // Batch t: sample b of step t has data index ((t - 1) * B + b) * D + j.
    for (int b = 0; b < B; ++b) {
      float best = -INFINITY;
      int arg = 0;
      std::vector<float> za(D);
      for (int j = 0; j < D; ++j) {
        const std::uint64_t i = (static_cast<std::uint64_t>(t - 1) * B + b) * D + j;
        bool active = cfg.dense || native::philox_word(seed, kStreamActive, i) < (1u << 30);
        const int late = j / cfg.late_group;  // late group of feature j, if any
        if (late < static_cast<int>(cfg.late_onsets.size()) && t < cfg.late_onsets[late]) {
          active = false;
        }
        za[j] = active ? static_cast<float>(native::normal_fp64(seed, kStreamZ, i)) : 0.0f;
        x[static_cast<std::size_t>(b) * D + j] = scale[j] * za[j];
      }
      for (int c = 0; c < C; ++c) {
        float s = 0.0f;
        for (int j = 0; j < D; ++j) s += teacher[static_cast<std::size_t>(c) * D + j] * za[j];
        if (s > best) {
          best = s;
          arg = c;
        }
      }
      label[b] = arg;
    }
    float loss = 0.0f;
    double sharp = 0.0;
    int correct = 0;
    transpose_weights(L2);  // L1's dx is never needed
    transpose_weights(L3);
    if (cfg.per_sample) {
      // The per-sample loops (MlpConfig::per_sample): the batch kernels' reference.
      std::vector<float> dz(C), dh2s(H), dh1s(H);
      for (int b = 0; b < B; ++b) {
        float* xb = &x[static_cast<std::size_t>(b) * D];
        float* a1 = &h1[static_cast<std::size_t>(b) * H];
        float* a2 = &h2[static_cast<std::size_t>(b) * H];
        float* zb = &z[static_cast<std::size_t>(b) * C];
        forward(L1, xb, a1, true, cfg.dense);
        forward(L2, a1, a2, true, cfg.dense);
        forward(L3, a2, zb, false);
        softmax_ce_sample(zb, C, label[b], B, t % cfg.log_every == 0 || t == 1, dz.data(), loss,
                          correct, sharp);
        backward(L3, a2, dz.data(), dh2s.data());
        if (cfg.dense) {
          for (int o = 0; o < H; ++o) dh2s[o] = a2[o] > 0.0f ? dh2s[o] : dh2s[o] * 0.015625f;
        } else {
          for (int o = 0; o < H; ++o) dh2s[o] = a2[o] > 0.0f ? dh2s[o] : 0.0f;
        }
        backward(L2, a1, dh2s.data(), dh1s.data());
        if (cfg.dense) {
          for (int o = 0; o < H; ++o) dh1s[o] = a1[o] > 0.0f ? dh1s[o] : dh1s[o] * 0.015625f;
        } else {
          for (int o = 0; o < H; ++o) dh1s[o] = a1[o] > 0.0f ? dh1s[o] : 0.0f;
        }
        backward(L1, xb, dh1s.data(), nullptr);
      }
    } else {
      forward_batch(L1, x.data(), h1.data(), B, true, cfg.dense);
      forward_batch(L2, h1.data(), h2.data(), B, true, cfg.dense);
      forward_batch(L3, h2.data(), z.data(), B, false, false);
      for (int b = 0; b < B; ++b) {
        float* zb = &z[static_cast<std::size_t>(b) * C];
        float* dz = &dzb[static_cast<std::size_t>(b) * C];
        softmax_ce_sample(zb, C, label[b], B, t % cfg.log_every == 0 || t == 1, dz, loss, correct,
                          sharp);
      }
      // The ReLU masks of dh2 and dh1 (leaky: y / 64 below zero), per sample as before.
      const auto mask = [&](const std::vector<float>& a, std::vector<float>& dh) {
        for (std::size_t i = 0; i < dh.size(); ++i) {
          dh[i] = a[i] > 0.0f ? dh[i] : cfg.dense ? dh[i] * 0.015625f : 0.0f;
        }
      };
      backward_batch(L3, h2.data(), dzb.data(), dh2.data(), B);
      mask(h2, dh2);
      backward_batch(L2, h1.data(), dh2.data(), dh1.data(), B);
      mask(h1, dh1);
      backward_batch(L1, x.data(), dh1.data(), nullptr, B);
    }
    float rms1 = 0.0f;
    if (cfg.optimizer == MlpConfig::Optimizer::bnb_adam8) {
      optim::AdamHyper h;
      h.lr = cfg.lr;
      h.beta1 = cfg.beta1;
      h.beta2 = cfg.beta2;
      h.eps = cfg.eps;
      const native::Bnb8Scalars sc = optim::bnb8_scalars(h, t, /*torch_order=*/false);
      for (Layer* L : {&L1, &L2, &L3}) {
        const bool force32 = cfg.fp32_first_layer && L == &L1;
        if (t == 1) {
          L->bw = bnb_state(L->w.size(), cfg.state_block, force32);
          L->bb = bnb_state(L->b.size(), cfg.state_block, force32);
        }
        optim::bnb_adam8_step(sc, native::Storage::f32, L->w, L->gw, L->bw);
        optim::bnb_adam8_step(sc, native::Storage::f32, L->b, L->gb, L->bb);
        std::fill(L->gw.begin(), L->gw.end(), 0.0f);
        std::fill(L->gb.begin(), L->gb.end(), 0.0f);
      }
    } else if (cfg.optimizer == MlpConfig::Optimizer::split_adamw) {
      optim::AdamHyper h;
      h.lr = cfg.lr;
      h.beta1 = cfg.beta1;
      h.beta2 = cfg.beta2;
      h.eps = cfg.eps;
      h.wd = cfg.wd;
      for (Layer* L : {&L1, &L2, &L3}) {
        for (int part = 0; part < 2; ++part) {
          std::vector<float>& p = part ? L->b : L->w;
          std::vector<float>& g = part ? L->gb : L->gw;
          optim::SplitTensor& sp = part ? L->sb : L->sw;
          optim::split_adam_step(h, /*decoupled=*/true, t, seed ^ 0x5B000000ull, sp, g,
                                 part ? L->mb : L->mw, part ? L->vb : L->vw);
          for (std::size_t i = 0; i < p.size(); ++i)
            p[i] = native::split_hi_value(sp.hi[i], sp.fmt);
          std::fill(g.begin(), g.end(), 0.0f);
        }
      }
    } else if (cfg.optimizer == MlpConfig::Optimizer::adam) {
      for (Layer* L : {&L1, &L2, &L3}) {
        const bool state32 = cfg.fp32_first_layer && L == &L1;
        adam(L->w, L->gw, L->mw, L->vw, cfg, t, state32, log.eps_updates);
        adam(L->b, L->gb, L->mb, L->vb, cfg, t, state32, log.eps_updates);
      }
    } else {
      optim::AdamHyper h;
      h.lr = cfg.lr;
      h.beta1 = cfg.beta1;
      h.beta2 = cfg.beta2;
      h.eps = cfg.eps;
      h.wd = cfg.wd;
      for (Layer* L : {&L1, &L2, &L3}) {
        for (int part = 0; part < 2; ++part) {
          std::vector<float>& p = part ? L->b : L->w;
          std::vector<float>& g = part ? L->gb : L->gw;
          std::vector<float>& m = part ? L->mb : L->mw;
          std::vector<float>& v = part ? L->vb : L->vw;
          if (cfg.optimizer == MlpConfig::Optimizer::stable_adamw) {
            const float r = optim::stable_adamw_step(h, t, p, g, m, v);
            if (L == &L1 && part == 0) rms1 = r;
          } else {
            optim::adam_step(h, /*decoupled=*/true, native::Storage::f32, t, p, g, m, v);
            if (L == &L1 && part == 0) {
              // RMS_t with AdamW's bias-corrected second moment u = v / (1 - beta2^t), summed
              // in SEMANTICS 10's tree like StableAdamW's.
              const float bc =
                  static_cast<float>(1.0 - std::pow(static_cast<double>(cfg.beta2), t));
              const float e2 = cfg.eps * cfg.eps;
              std::vector<float> terms(p.size());
              for (std::size_t i = 0; i < p.size(); ++i) {
                const float u = v[i] / bc;
                terms[i] = (g[i] * g[i]) / (u > e2 ? u : e2);
              }
              rms1 = optim::rms_from_sum(optim::tree_sum(terms), terms.size());
            }
          }
          std::fill(g.begin(), g.end(), 0.0f);
        }
      }
    }
    if (t % cfg.log_every == 0 || t == 1) {
      if (cfg.optimizer != MlpConfig::Optimizer::adam) log.rms1.push_back(rms1);
      log.step.push_back(t);
      log.loss.push_back(loss);
      log.accuracy.push_back(static_cast<float>(correct) / B);
      log.sharpness.push_back(static_cast<float>(sharp));
    }
    if (next_snap < cfg.snapshot_steps.size() && cfg.snapshot_steps[next_snap] == t) {
      AdamSnapshot s;
      s.step = t;
      s.names = {"W1", "b1", "W2", "b2", "W3", "b3"};
      s.m = {L1.mw, L1.mb, L2.mw, L2.mb, L3.mw, L3.mb};
      s.v = {L1.vw, L1.vb, L2.vw, L2.vb, L3.vw, L3.vb};
      snaps.push_back(std::move(s));
      ++next_snap;
    }
  }
  return snaps;
}

}  // namespace exmy::reports
