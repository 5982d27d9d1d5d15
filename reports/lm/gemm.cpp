// The language model's GEMM and operand casts (gemm.hpp, lm_model.hpp).
#include "reports/lm/gemm.hpp"

#include <cstring>
#include <vector>

#include "sim/native/convert.hpp"
#include "sim/native/fast_cast.hpp"
#include "sim/native/float_format.hpp"
#include "sim/native/rounding.hpp"

namespace exmy::reports::lm {

namespace {

constexpr int kMr = 4, kNr = 8;

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

float rne_cast(float x, int E, int M) {
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
  const std::uint32_t u = native::bits_of(x);
  if (cache.fast) {
    return native::fast_decode_fp32(cache.plan, native::fast_cast_fp32(cache.plan, cache.r, u, 0));
  }
  const Encoded e = native::convert(formats::fp32, cache.f, cache.r, u);
  return native::to_float(cache.f, e.code);
}

bool is_identity(const OperandCast& c) {
  return c.mode == CastMode::identity;
}

// dst[r * cols + c] = cast(src[r * ld + c]) (or of src[c * ld + r] when transposed).
void pack_rows(const float* src, int ld, bool trans, int rows, int cols, const OperandCast& c,
               float* dst) {
  for (int r = 0; r < rows; ++r) {
    for (int k = 0; k < cols; ++k) {
      const float x = trans ? src[static_cast<std::size_t>(k) * ld + r]
                            : src[static_cast<std::size_t>(r) * ld + k];
      dst[static_cast<std::size_t>(r) * cols + k] = is_identity(c) ? x : cast_operand(x, c);
    }
  }
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

void gemm(const GemmCall& call, int M, int N, int K, const float* A, int lda, bool tA,
          const float* B, int ldb, bool tB, float* C, int ldc, bool accumulate) {
  static const OperandCast kIdentity{};
  const OperandCast& ca = call.policy ? call.policy->at(call.site, call.pass, 0) : kIdentity;
  const OperandCast& cb = call.policy ? call.policy->at(call.site, call.pass, 1) : kIdentity;
  const int Mp = (M + kMr - 1) / kMr * kMr, Np = (N + kNr - 1) / kNr * kNr;
  thread_local std::vector<float> ra, rb, pa, pb;
  // Row-major op(A) (M x K) and op(B) (K x N), cast; then panels: A in kMr-row panels with k
  // outer (pa[(i / kMr) K kMr + k kMr + i % kMr]), B in kNr-column panels likewise. The padding
  // rows and columns are +0 and never reach C.
  ra.resize(static_cast<std::size_t>(M) * K);
  rb.resize(static_cast<std::size_t>(K) * N);
  pack_rows(A, lda, tA, M, K, ca, ra.data());
  pack_rows(B, ldb, tB, K, N, cb, rb.data());
  pa.assign(static_cast<std::size_t>(Mp) * K, 0.0f);
  pb.assign(static_cast<std::size_t>(Np) * K, 0.0f);
  for (int i = 0; i < M; ++i) {
    float* panel = pa.data() + static_cast<std::size_t>(i / kMr) * K * kMr + i % kMr;
    const float* row = ra.data() + static_cast<std::size_t>(i) * K;
    for (int k = 0; k < K; ++k) panel[static_cast<std::size_t>(k) * kMr] = row[k];
  }
  for (int k = 0; k < K; ++k) {
    const float* row = rb.data() + static_cast<std::size_t>(k) * N;
    for (int j = 0; j < N; ++j) {
      pb[static_cast<std::size_t>(j / kNr) * K * kNr + static_cast<std::size_t>(k) * kNr +
         j % kNr] = row[j];
    }
  }
  for (int i0 = 0; i0 < Mp; i0 += kMr) {
    const float* ap = pa.data() + static_cast<std::size_t>(i0) * K;
    for (int j0 = 0; j0 < Np; j0 += kNr) {
      const float* bp = pb.data() + static_cast<std::size_t>(j0) * K;
      float acc[kMr][kNr] = {};
      for (int k = 0; k < K; ++k) {
        const float* a = ap + static_cast<std::size_t>(k) * kMr;
        const float* b = bp + static_cast<std::size_t>(k) * kNr;
        for (int r = 0; r < kMr; ++r) {
          for (int c = 0; c < kNr; ++c) {
            const float prod = a[r] * b[c];
            acc[r][c] = acc[r][c] + prod;
          }
        }
      }
      for (int r = 0; r < kMr && i0 + r < M; ++r) {
        float* crow = C + static_cast<std::size_t>(i0 + r) * ldc;
        for (int c = 0; c < kNr && j0 + c < N; ++c) {
          crow[j0 + c] = accumulate ? crow[j0 + c] + acc[r][c] : acc[r][c];
        }
      }
    }
  }
}

}  // namespace exmy::reports::lm
