// The language model's GEMM and operand casts (gemm.hpp, lm_model.hpp).
#include "reports/lm/gemm.hpp"

#include <cstring>
#include <vector>

#include "sim/fast/simd.hpp"
#include "sim/native/convert.hpp"
#include "sim/native/fast_cast.hpp"
#include "sim/native/float_format.hpp"
#include "sim/native/rounding.hpp"

namespace exmy::reports::lm {

namespace {

// Register tile: kMr rows of op(A) by 2W columns of op(B), W the vector lanes (4 SSE2, 8 AVX2).
constexpr int kMr = 4;

FloatFormat exmy_format(int E, int M) {
  FloatFormat f;
  f.exp_bits = E;
  f.man_bits = M;
  f.bias = (1 << (E - 1)) - 1;
  return f;
}

// Per-thread plans of the last cast seen (the policies of one run use a handful of formats).
struct CastCache {
  int E = -1, M = -1;
  FloatFormat f;
  Rounding r;
  bool fast = false;
  native::FastCastPlan plan;
};

const CastCache& rne_plan(int E, int M) {
  thread_local CastCache cache;
  if (cache.E != E || cache.M != M) {
    cache.E = E;
    cache.M = M;
    cache.f = exmy_format(E, M);
    cache.r = Rounding{};
    cache.r.overflow = Overflow::satfinite;
    cache.fast = native::fast_cast_supported(cache.f);
    if (cache.fast) cache.plan = native::make_fast_cast_plan(cache.f, cache.r);
  }
  return cache;
}

float rne_cast(float x, int E, int M) {
  const CastCache& cache = rne_plan(E, M);
  const std::uint32_t u = native::bits_of(x);
  if (cache.fast) {
    return native::fast_decode_fp32(cache.plan, native::fast_cast_fp32(cache.plan, cache.r, u, 0));
  }
  const Encoded e = native::convert(formats::fp32, cache.f, cache.r, u);
  return native::to_float(cache.f, e.code);
}

// op(X) (rows x cols; X^T when trans) into panels of `width` rows of op(X) with the column index
// outer: dst[(r / width) cols width + c width + r % width] (rows padded to a multiple of width
// with +0). For B the panel rows are op(B)'s columns, so B is packed as op(B)^T.
void pack_panels(const float* src, int ld, bool trans, int rows, int cols, int width,
                 std::vector<float>& dst) {
  const int panels = (rows + width - 1) / width;
  const std::size_t panel_size = static_cast<std::size_t>(cols) * width;
  dst.resize(panels * panel_size);
  for (int p = 0; p < panels; ++p) {
    float* panel = dst.data() + p * panel_size;
    const int r0 = p * width, n = rows - r0 < width ? rows - r0 : width;
    if (trans) {
      // Row c of src holds op(X)'s column c: width consecutive elements per panel.
      for (int c = 0; c < cols; ++c) {
        const float* s = src + static_cast<std::size_t>(c) * ld + r0;
        float* d = panel + static_cast<std::size_t>(c) * width;
        for (int l = 0; l < n; ++l) d[l] = s[l];
        for (int l = n; l < width; ++l) d[l] = 0.0f;
      }
    } else {
      for (int l = 0; l < n; ++l) {
        const float* s = src + static_cast<std::size_t>(r0 + l) * ld;
        for (int c = 0; c < cols; ++c) panel[static_cast<std::size_t>(c) * width + l] = s[c];
      }
      for (int l = n; l < width; ++l) {
        for (int c = 0; c < cols; ++c) panel[static_cast<std::size_t>(c) * width + l] = 0.0f;
      }
    }
  }
}

// The lean rne cast and decode of sim/native/fast_cast.hpp (fast_cast_fp32_lean<rne, true, true>
// then fast_decode_fp32_lean, signed formats with -0 and decode_fast) written on W lanes, the same
// integer and fp32 operations per lane: x[i] becomes the decoded code where fast_lean_domain
// holds, and is left unchanged (returns true) elsewhere. The tail below W elements is scalar.
template <int W>
EXMY_SIMD_INLINE bool rne_lean_lanes(const native::FastCastPlan& p, float* x, std::size_t n) {
  using U = typename fast::simd::Vec<W>::u32;
  using F = typename fast::simd::Vec<W>::f32;
  const int d = p.normal_shift;
  const std::uint32_t mag_mask = static_cast<std::uint32_t>(p.f.magnitude_mask());
  const std::uint32_t min_normal = 1u << p.f.man_bits;
  const F magic = F{} + native::float_of(p.sub_magic);  // a positive normal: +0 + it is it
  U rest{};
  std::size_t i = 0;
  for (; i + W <= n; i += W) {
    const U u = fast::simd::load<U>(x + i);
    const U a = u & 0x7FFFFFFFu;
    const U in = (U)((a - p.lean_lo) <= p.lean_span);
    // fast_round_magnitude<rne>
    const U par = (((a >> d) ^ p.par_xor) | p.par_or) & 1u;
    const U tn = ((a + p.half_m1 + par) >> d) + p.cbias;
    const U ts = (((U)((F)a + magic)) - p.sub_magic) & p.below_mask;
    U t = fast::simd::select((U)(a < p.norm_min), ts, tn);
    // fast_lean_finish<true, true>
    t = fast::simd::select((U)(t > p.max_code), U{} + p.overflow[0], t);
    const U code = t | ((u >> p.sign_shift) & p.sign_bit);
    // fast_decode_fp32_lean
    const U mag = code & mag_mask;
    const U vn = (mag << d) + p.rebias;
    const U vs = (U)((F)(mag + p.sub_magic) - magic);
    U v = fast::simd::select((U)(mag >= min_normal), vn, vs);
    v |= fast::simd::select((U)((code & p.sign_bit) != 0u), U{} + 0x80000000u, U{});
    for (int s = 0; s < 3; ++s) {
      v = fast::simd::select((U)(code == p.spec_code[s]), U{} + p.spec_bits[s], v);
    }
    fast::simd::store(x + i, fast::simd::select(in, v, u));
    rest |= ~in;
  }
  bool out = false;
  for (int l = 0; l < W; ++l) out = out || rest[l] != 0;
  for (; i < n; ++i) {
    const std::uint32_t u = native::bits_of(x[i]);
    if (!native::fast_lean_domain(p, u)) {
      out = true;
      continue;
    }
    const std::uint32_t code =
        native::fast_cast_fp32_lean<native::FastMode::rne, true, true>(p, u, 0, 0);
    x[i] = native::fast_decode_fp32_lean(p, code);
  }
  return out;
}

#if defined(__x86_64__)
EXMY_TARGET_AVX2 bool rne_lean_avx2(const native::FastCastPlan& p, float* x, std::size_t n) {
  return rne_lean_lanes<8>(p, x, n);
}
#endif
bool rne_lean_sse2(const native::FastCastPlan& p, float* x, std::size_t n) {
  return rne_lean_lanes<4>(p, x, n);
}

bool use_avx2() {
#if defined(__x86_64__)
  return fast::simd::active_isa() >= fast::simd::Isa::avx2;
#else
  return false;
#endif
}

struct Tiles {
  int M, N, K;
  const float* pa;  // kMr-row panels of op(A)
  const float* pb;  // 2W-column panels of op(B)
  float* C;
  int ldc;
  bool accumulate;
};

// Every kMr x 2W tile of C: acc = +0, then for k = 0..K-1 acc = acc + RN32(a[k] b[k]), lane by
// lane (the vector operations are the scalar IEEE ones per lane; -ffp-contract=off keeps the
// multiply and the add separate), so each element's sum is the scalar k-order sum on every
// instruction set.
template <int W>
EXMY_SIMD_INLINE void run_tiles(const Tiles& g) {
  using F = typename fast::simd::Vec<W>::f32;
  constexpr int kNr = 2 * W;
  const int K = g.K;
  for (int i0 = 0; i0 < g.M; i0 += kMr) {
    const float* ap = g.pa + static_cast<std::size_t>(i0) * K;
    for (int j0 = 0; j0 < g.N; j0 += kNr) {
      const float* bp = g.pb + static_cast<std::size_t>(j0) * K;
      F acc[kMr][2];
      for (int r = 0; r < kMr; ++r) acc[r][0] = acc[r][1] = F{};
      for (int k = 0; k < K; ++k) {
        const float* a = ap + static_cast<std::size_t>(k) * kMr;
        const F b0 = fast::simd::load<F>(bp + static_cast<std::size_t>(k) * kNr);
        const F b1 = fast::simd::load<F>(bp + static_cast<std::size_t>(k) * kNr + W);
        for (int r = 0; r < kMr; ++r) {
          const F p0 = a[r] * b0, p1 = a[r] * b1;
          acc[r][0] = acc[r][0] + p0;
          acc[r][1] = acc[r][1] + p1;
        }
      }
      float out[kMr][kNr];
      for (int r = 0; r < kMr; ++r) {
        fast::simd::store(&out[r][0], acc[r][0]);
        fast::simd::store(&out[r][W], acc[r][1]);
      }
      for (int r = 0; r < kMr && i0 + r < g.M; ++r) {
        float* crow = g.C + static_cast<std::size_t>(i0 + r) * g.ldc;
        for (int c = 0; c < kNr && j0 + c < g.N; ++c) {
          crow[j0 + c] = g.accumulate ? crow[j0 + c] + out[r][c] : out[r][c];
        }
      }
    }
  }
}

#if defined(__x86_64__)
EXMY_TARGET_AVX2 void run_tiles_avx2(const Tiles& g) {
  run_tiles<8>(g);
}
#endif
void run_tiles_sse2(const Tiles& g) {
  run_tiles<4>(g);
}

}  // namespace

const char* site_name(GemmSite s) {
  static const char* n[kGemmSites] = {"qkv",    "scores",   "values", "attn_out",
                                      "mlp_up", "mlp_down", "head"};
  return n[static_cast<int>(s)];
}
const char* pass_name(Pass p) {
  static const char* n[kPasses] = {"fwd", "dgrad", "wgrad"};
  return n[static_cast<int>(p)];
}

GemmPolicy GemmPolicy::all(const OperandCast& c) {
  GemmPolicy p;
  p.cast.fill(c);
  return p;
}

float cast_operand(float x, const OperandCast& c) {
  switch (c.mode) {
    case CastMode::identity:
      return x;
    case CastMode::rne:
      return rne_cast(x, c.exp_bits, c.man_bits);
    case CastMode::mask:
      return native::float_of(
          mask_fp32(native::bits_of(x), c.exp_bits, c.man_bits, c.outer, c.inner));
  }
  return x;
}

void count_mask_limits(const float* x, std::size_t n, const OperandCast& c, MaskLimitCounts& k) {
  const std::uint32_t max_bits = native::mask_max_bits(c.exp_bits, c.man_bits);
  const std::uint32_t min_bits = native::mask_min_normal_bits(c.exp_bits);
  long long above = 0, below = 0;
  for (std::size_t i = 0; i < n; ++i) {
    // Magnitudes of non-negative fp32 order like their bit patterns; NaN is above inf's.
    const std::uint32_t mag = native::bits_of(x[i]) & 0x7FFFFFFFu;
    above += mag > max_bits && mag <= 0x7F800000u ? 1 : 0;
    below += mag != 0 && mag < min_bits ? 1 : 0;
  }
  k.elements += static_cast<long long>(n);
  k.above_max += above;
  k.below_min_normal += below;
}

void add_to_histogram(const float* x, std::size_t n, OperandHistogram& h) {
  long long zeros = 0, nans = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t mag = native::bits_of(x[i]) & 0x7FFFFFFFu;
    ++h.bin[((mag >> 23) << 1) | ((mag & 0x7FFFFFu) > 0x7F0000u ? 1u : 0u)];
    zeros += mag == 0 ? 1 : 0;
    nans += mag > 0x7F800000u ? 1 : 0;
  }
  h.zeros += zeros;
  h.nans += nans;
}

void cast_operands(float* x, std::size_t n, const OperandCast& c) {
  switch (c.mode) {
    case CastMode::identity:
      return;
    case CastMode::mask: {
      // mask_fp32 inlined with loop-invariant parameters.
      const int E = c.exp_bits, M = c.man_bits;
      const MaskOuter outer = c.outer;
      const MaskInner inner = c.inner;
      for (std::size_t i = 0; i < n; ++i) {
        x[i] = native::float_of(mask_fp32(native::bits_of(x[i]), E, M, outer, inner));
      }
      return;
    }
    case CastMode::rne: {
      const CastCache& cc = rne_plan(c.exp_bits, c.man_bits);
      if (!cc.fast) {
        for (std::size_t i = 0; i < n; ++i) x[i] = rne_cast(x[i], c.exp_bits, c.man_bits);
        return;
      }
      // sim/native/fast_cast.hpp's paths, each equal to native::convert and native::to_float
      // for every input and code, as rne_cast's any-mode path is: the branch-free lean cast and
      // decode (signed formats with -0 and decode_fast, as every E8Mm is) on every element in
      // its domain (finite inputs; overflow too, sign-symmetric here), then the mode-fixed path
      // and the general decode on the rest (inf, NaN), which the first pass leaves unchanged
      // (its results are finite, so in the domain, and are not redone).
      const native::FastCastPlan& p = cc.plan;
      const bool lean = cc.f.is_signed && p.neg_zero && p.decode_fast;
      if (lean) {
#if defined(__x86_64__)
        const bool rest = use_avx2() ? rne_lean_avx2(p, x, n) : rne_lean_sse2(p, x, n);
#else
        const bool rest = rne_lean_sse2(p, x, n);
#endif
        if (!rest) return;
      }
      for (std::size_t i = 0; i < n; ++i) {
        const std::uint32_t u = native::bits_of(x[i]);
        if (lean && native::fast_lean_domain(p, u)) continue;
        const std::uint32_t code = native::fast_cast_fp32_fixed<native::FastMode::rne>(p, u, 0, 0);
        x[i] = native::fast_decode_fp32(p, code);
      }
      return;
    }
  }
}

void gemm(const GemmCall& call, int M, int N, int K, const float* A, int lda, bool tA,
          const float* B, int ldb, bool tB, float* C, int ldc, bool accumulate) {
  static const OperandCast kIdentity{};
  const OperandCast& ca = call.policy ? call.policy->at(call.site, call.pass, 0) : kIdentity;
  const OperandCast& cb = call.policy ? call.policy->at(call.site, call.pass, 1) : kIdentity;
  const bool avx2 = use_avx2();
  const int nr = avx2 ? 16 : 8;
  thread_local std::vector<float> pa, pb;
  // op(A) in kMr-row panels, op(B) in nr-column panels (op(B)^T packed), each cast as a whole
  // (the casts are elementwise; cast(+0) = +0 on the padding, which never reaches C).
  pack_panels(A, lda, tA, M, K, kMr, pa);
  pack_panels(B, ldb, !tB, N, K, nr, pb);
  if (call.policy && call.policy->counts) {
    // Before the casts. The padding is +0, in neither region; the element count is op(A)'s and
    // op(B)'s real size.
    MaskLimitCounts k;
    if (ca.mode == CastMode::mask) count_mask_limits(pa.data(), pa.size(), ca, k);
    if (cb.mode == CastMode::mask) count_mask_limits(pb.data(), pb.size(), cb, k);
    MaskLimitCounts& total = *call.policy->counts;
    total.elements += (ca.mode == CastMode::mask ? static_cast<long long>(M) * K : 0) +
                      (cb.mode == CastMode::mask ? static_cast<long long>(N) * K : 0);
    total.above_max += k.above_max;
    total.below_min_normal += k.below_min_normal;
  }
  if (call.policy && call.policy->range) {
    // Before the casts; the padding's +0 are taken back out of the zeros.
    OperandHistogram& ha = call.policy->range->at(call.site, call.pass, 0);
    OperandHistogram& hb = call.policy->range->at(call.site, call.pass, 1);
    add_to_histogram(pa.data(), pa.size(), ha);
    add_to_histogram(pb.data(), pb.size(), hb);
    const long long pad_a = static_cast<long long>(pa.size()) - static_cast<long long>(M) * K;
    const long long pad_b = static_cast<long long>(pb.size()) - static_cast<long long>(N) * K;
    ha.zeros -= pad_a;
    ha.bin[0] -= pad_a;
    hb.zeros -= pad_b;
    hb.bin[0] -= pad_b;
  }
  cast_operands(pa.data(), pa.size(), ca);
  cast_operands(pb.data(), pb.size(), cb);
  const Tiles g{M, N, K, pa.data(), pb.data(), C, ldc, accumulate};
#if defined(__x86_64__)
  if (avx2) {
    run_tiles_avx2(g);
    return;
  }
#endif
  run_tiles_sse2(g);
}

}  // namespace exmy::reports::lm
