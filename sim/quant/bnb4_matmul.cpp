// bitsandbytes 0.50.2's 4-bit matmul dispatch and its SIMT kernel (docs/SEMANTICS.md 7.17),
// written from bitsandbytes/backends/cuda/ops.py (_gemm_4bit_use_custom_cuda, the gemm_4bit
// registration), csrc/gemm_4bit.cu and csrc/gemm_4bit_simt.cu at commit 95f9af30 (0.50.2.dev0;
// the files are unchanged from 0.50.1 except gemm_4bit.cu's sm_121 rule), as nvcc compiles them
// for sm_90 with --use_fast_math (fp32 arithmetic FTZ, `x + y * z` contracted to FMA).
#include "sim/quant/bnb4_matmul.hpp"

#include <array>
#include <string>

#include "sim/common/error.hpp"
#include "sim/native/bnb_dynamic_map.hpp"
#include "sim/native/convert.hpp"
#include "sim/native/fast_cast.hpp"
#include "sim/native/specialize/platform.hpp"

namespace exmy::quant {

const char* bnb4_path_name(Bnb4MatmulPath p) {
  switch (p) {
    case Bnb4MatmulPath::simt:
      return "simt";
    case Bnb4MatmulPath::mma_sm80:
      return "mma_sm80";
    case Bnb4MatmulPath::mma_sm75:
      return "mma_sm75";
    case Bnb4MatmulPath::dequant_linear:
      return "dequant_linear";
  }
  return "?";
}

namespace {

using native::Bnb4Dtype;

// ops.py _gemm_4bit_use_custom_cuda (the custom kernel vs dequantize + F.linear, M in 5..1536).
bool use_custom_cuda(Bnb4Dtype dt, long M, long N, long K, const Bnb4Gpu& g) {
  if (M <= 4) return true;  // _GEMM_4BIT_CUSTOM_FLOOR_M
  const long sms = g.sms, major = g.cc_major, minor = g.cc_minor;
  const long nb = (N + 63) / 64;
  if (dt == Bnb4Dtype::fp32 || major < 7) return M < 8;
  if (major == 7 && (minor < 5 || dt != Bnb4Dtype::fp16)) return M < 8;
  if ((major == 8 && minor == 7) || major == 11) return false;
  if (major == 10) {
    if (nb >= sms * 3) return M <= 32;
    if (nb >= sms) return K >= N ? false : M <= 8;
    return false;
  }
  const bool sm75 = major == 7 && minor == 5, sm80 = major == 8 && minor == 0;
  const bool sm86 = major == 8 && minor == 6, sm90 = major == 9;
  const bool sm120 = major == 12 && minor == 0, sm121 = major == 12 && minor == 1;
  const bool hbm = sm80 || sm90;
  const bool tall_k_2xn = K > N * 2;
  if (N * K < 4L * 1024 * 1024) {
    if (K * 2 < N) {
      if (hbm) {
        const bool low_wave = nb * 3 < sms;
        if (sm80) return M <= (low_wave ? 1536 : 512);
        return M <= (low_wave ? 512 : 320);
      }
      if (sm75) {
        if (nb >= sms * 3) return M <= 320;
        if (K >= 1024) return M <= 64;
        if (K >= 704) return M <= 96;
        return M <= 320;
      }
      if (nb >= sms) return M <= 320;
      return nb * K > sms * 320 ? M <= 192 : M <= 320;
    }
    const bool quarter_wave = nb * 4 <= sms;
    if (sm80 && quarter_wave) {
      if (K >= N) return M <= (nb * 8 <= sms ? 32 : 128);
      return M <= 384;
    }
    if (sm75 && nb < sms && M > 8) return M <= 64;
    if (quarter_wave) return M <= ((K < N || hbm) ? 32 : 23);
    if (nb * 2 <= sms) return M <= 16;
    return false;
  }
  if (M > 512) return false;
  if (M < 8) {
    const long thresh = sm90 ? 36 : 48;
    if (hbm && M >= 6 && nb >= thresh) {
      const bool lt75 = nb * 4 < sms * 3, lt60 = nb * 5 < sms * 3;
      if (K > N && lt75) return false;
      if (K == N) {
        if (sm80 && lt60) return false;
        if (sm90 && lt75 && !lt60) return false;
      }
    }
    return true;
  }
  if (sm75) {
    if (nb >= sms * 3) return M <= (K < N ? 128 : 64);
    if (nb >= sms / 2) return M <= 64;
    return M <= 32;
  }
  if (sm80) {
    if (nb >= sms * 3) return M <= 128;
    if (nb >= sms) return M <= (K < N ? 64 : 32);
    if (K >= N * 3 && nb * 4 > sms) return false;
    if (K == N && nb >= 48 && nb * 5 < sms * 3) return false;
    if (nb * 2 < sms) {
      if (K <= N) return M <= 128;
      if (nb * 3 >= sms) return false;
    }
    if (nb >= sms / 2 && K < N) return M <= 128;
    return M <= 16;
  }
  if (sm86) {
    if (nb >= sms) return M <= 128;
    if (nb >= sms / 2) return M <= 64;
    return M <= 16;
  }
  if (sm90) {
    if (nb >= sms * 3) return M <= 64;
    if (nb >= sms * 2) return M <= 48;
    if (nb >= sms) return M <= 32;
    if (nb >= sms / 2) {
      if (K >= N && nb * 4 < sms * 3) return false;
      return M <= 16;
    }
    return false;
  }
  if (sm121 && nb >= sms) return M <= 256;
  if (sm120) {
    if (nb >= sms * 3) return M <= 256;
    if (nb >= sms * 2) return M <= 128;
    if (nb * 5 >= sms * 4) return M <= (K >= N ? 96 : 64);
    if (nb >= sms) return M <= 64;
    if (nb >= sms / 2) return M <= ((K * 2 >= N && nb >= 128) ? 64 : 8);
    if (tall_k_2xn && nb > 64) return M <= 16;
    return M <= 8;
  }
  // sm89 and the rest (sm121 below one wave).
  if (nb >= sms * 3) return M <= 256;
  if (nb >= sms * 2) return M <= 128;
  if (nb * 5 >= sms * 4) {
    if (tall_k_2xn || nb >= 200) return M <= 128;
    if (K >= N) return M <= (sms >= 60 ? 128 : 32);
    return M <= 64;
  }
  if (nb >= sms / 2) {
    if (tall_k_2xn) return M <= 64;
    if (nb >= 64) return M <= 8;
    return M <= 32;
  }
  if (K > N && nb <= 48) return M <= (K >= N * 3 ? 12 : 10);
  return M <= ((tall_k_2xn || nb < 48) ? 16 : 8);
}

// gemm_4bit.cu's gemm_4bit<T>: SIMT or MMA for the custom kernel.
Bnb4MatmulPath kernel_choice(Bnb4Dtype dt, long M, long N, long K, const Bnb4Gpu& g) {
  if (dt == Bnb4Dtype::fp32 || M <= 3) return Bnb4MatmulPath::simt;
  const long sms = g.sms, maj = g.cc_major, min = g.cc_minor;
  const bool hbm = (maj == 8 && min == 0) || maj == 9 || maj == 10;
  const bool gddr = !hbm && maj >= 8;
  const long mma_blocks = ((M + 31) / 32) * ((N + 63) / 64);
  const bool highbw_gddr =
      (maj == 8 && (min == 6 || min == 9) && sms >= 48) || (maj == 12 && min == 0 && sms >= 48);
  const bool undersubscribed =
      (M <= 8 && mma_blocks * 3 <= sms * 2) || (hbm && M == 4 && mma_blocks <= sms);
  const bool wide_n_simt =
      M <= 6 && mma_blocks >= sms &&
      ((maj == 8 && min == 9 && sms >= 60) || (maj == 12 && min <= 1 && sms >= 48));
  const bool tall_k_simt = gddr && K > N && M <= 17 && mma_blocks * 3 < sms;
  const bool use_simt = (M == 4 && highbw_gddr) || undersubscribed || wide_n_simt || tall_k_simt ||
                        (M <= 16 && mma_blocks * 4 <= sms) || (M <= 32 && mma_blocks * 8 <= sms) ||
                        (K % 64 != 0);
  if (!use_simt) {
    if (maj >= 8) return Bnb4MatmulPath::mma_sm80;
    if (maj == 7 && min >= 5 && dt == Bnb4Dtype::fp16) return Bnb4MatmulPath::mma_sm75;
  }
  return Bnb4MatmulPath::simt;
}

// The 16-bit type's conversions (fast_cast's plan: the engine's rounding, table-free).
struct TType {
  const FloatFormat& f;
  native::FastCastPlan plan;
  explicit TType(const FloatFormat& fmt) : f(fmt), plan(native::make_fast_cast_plan(fmt, {})) {}
  // fp32 -> T by cvt.rn (__float2bfloat16_rn / __float2half_rn, static_cast<T>(float)).
  std::uint16_t from_f32(float x) const {
    return static_cast<std::uint16_t>(
        native::fast_cast_fp32(plan, Rounding{}, native::bits_of(x), 0));
  }
  float to_f32(std::uint16_t c) const { return native::fast_decode_fp32(plan, c); }
  // __hmul2 on one lane: the exact product of two T values rounded once to T (mul.rn.bf16x2 /
  // mul.rn.f16x2: no FTZ for 16-bit types). Two 16-bit significands multiply exactly in fp32
  // unless the product is below 2^-126 (bf16 only), where fp64 holds it exactly.
  std::uint16_t mul(std::uint16_t a, std::uint16_t b) const {
    const float x = to_f32(a), y = to_f32(b);
    const float p = x * y;
    const float ap = p < 0 ? -p : p;
    if (ap != 0 && ap < 0x1p-126f) {
      constexpr FloatFormat kFp64 = formats::fp64;
      const double d = static_cast<double>(x) * static_cast<double>(y);
      return static_cast<std::uint16_t>(
          native::convert(kFp64, f, Rounding{}, native::bits_of(d)).code);
    }
    return from_f32(p);
  }
};

// The kernel's FP4_LUT_F32 / NF4_LUT_F32 (csrc/gemm_4bit_common.cuh): the same fp32 values as
// dequantize_4bit's levels (7.14.1), FP4's negative half negated (code 8 is -0.0f).
float lut_f32(native::Bnb4Type t, int c) {
  if (t == native::Bnb4Type::nf4) return native::bnb_nf4_level(c);
  const float m = native::bnb_fp4_magnitude(c & 7);
  return (c & 8) ? -m : m;
}

// The shfl_down tree over 32 lane sums (offsets 16, 8, 4, 2, 1; lane 0's value).
float warp_reduce(std::array<float, 32> v) {
  for (int off = 16; off > 0; off >>= 1) {
    for (int l = 0; l < off; ++l) v[l] = native::ftz_add(v[l], v[l + off]);
  }
  return v[0];
}

}  // namespace

Bnb4MatmulPath bnb4_matmul_path(std::size_t M, std::size_t N, std::size_t K, native::Bnb4Dtype dt,
                                std::size_t block, const Bnb4Gpu& gpu) {
  if (M > 1536 || K % block != 0) return Bnb4MatmulPath::dequant_linear;
  const long m = static_cast<long>(M), n = static_cast<long>(N), k = static_cast<long>(K);
  if (!use_custom_cuda(dt, m, n, k, gpu)) return Bnb4MatmulPath::dequant_linear;
  return kernel_choice(dt, m, n, k, gpu);
}

void check_bnb4_weight(const Bnb4Weight& w) {
  check_bnb4_block(w.opt.block);
  const std::size_t n = w.N * w.K;
  if (n == 0) throw InputError("--b-shape: N and K must be positive");
  if (w.q.packed.size() != (n + 1) / 2) {
    throw InputError("--b: " + std::to_string(w.N) + "x" + std::to_string(w.K) + " codes need " +
                     std::to_string((n + 1) / 2) + " bytes, got " +
                     std::to_string(w.q.packed.size()));
  }
  const std::size_t blocks = (n + w.opt.block - 1) / w.opt.block;
  (void)bnb4_dequant_absmax(w.q, blocks, w.opt);  // checks the absmax arrays' lengths
}

std::vector<float> bnb4_simt_scales(const Bnb4Weight& w) {
  const std::size_t blocks = (w.N * w.K + w.opt.block - 1) / w.opt.block;
  if (!w.opt.double_quant) return w.q.absmax;
  std::array<float, 256> code{};
  native::bnb_dynamic_map(true, code);
  std::vector<float> s(blocks);
  for (std::size_t b = 0; b < blocks; ++b) {
    s[b] = native::ftz_fma(code[w.q.absmax_codes[b]], w.q.absmax2[b >> 8], w.q.offset);
  }
  return s;
}

std::vector<std::uint16_t> bnb4_mma_weight(const Bnb4Weight& w, native::Bnb4Dtype dt) {
  check_bnb4_weight(w);
  if (dt == Bnb4Dtype::fp32) throw InputError("the MMA kernel takes bf16 or fp16 (fp32 runs SIMT)");
  const std::vector<float> scale = bnb4_simt_scales(w);
  static constexpr FloatFormat kBf16 = formats::bf16, kFp16 = formats::fp16;
  const TType tt(dt == Bnb4Dtype::fp16 ? kFp16 : kBf16);
  const std::size_t n = w.N * w.K;
  std::vector<std::uint16_t> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint8_t c = native::bnb4_unpack(w.q.packed.data(), i);
    out[i] = tt.from_f32(native::ftz_mul(lut_f32(w.opt.type, c), scale[i / w.opt.block]));
  }
  return out;
}

std::uint32_t bnb4_kernel_store(float acc, float bias, native::Bnb4Dtype dt) {
  return native::bnb4_store(native::ftz_add(acc, bias), dt);
}

std::vector<std::uint32_t> bnb4_gemv_naive(std::span<const std::uint32_t> a, const Bnb4Weight& w,
                                           native::Bnb4Dtype dt) {
  check_bnb4_weight(w);
  const std::size_t N = w.N, K = w.K, B = w.opt.block;
  if (a.size() != K) throw InputError("A: gemv_4bit takes one row of K values");
  if (K % 2 != 0) {
    throw InputError("gemv_4bit reads rows of (K + 1) / 2 bytes, which for an odd K (" +
                     std::to_string(K) + ") lie across the packed rows: not modelled");
  }
  const std::vector<float> absmax = bnb4_dequant_absmax(w.q, (N * K + B - 1) / B, w.opt);
  const bool f32 = dt == Bnb4Dtype::fp32;
  static constexpr FloatFormat kBf16 = formats::bf16, kFp16 = formats::fp16;
  const TType tt(dt == Bnb4Dtype::fp16 ? kFp16 : kBf16);
  std::array<float, 16> lut{};
  std::array<std::uint16_t, 16> lut_t{};
  for (int c = 0; c < 16; ++c) {
    lut[c] = lut_f32(w.opt.type, c);
    lut_t[c] = tt.from_f32(lut[c]);
  }
  const std::size_t ldb = (K + 1) / 2, half_k = K / 2;
  const std::uint16_t zero_t = 0;
  std::vector<std::uint32_t> out(N);
  for (std::size_t n = 0; n < N; ++n) {
    std::array<float, 32> v{};
    for (std::size_t lane = 0; lane < 32; ++lane) {
      float acc = 0.0f;
      for (std::size_t k0 = lane * 32; k0 < K; k0 += 1024) {
        const std::size_t blk = (2 * ldb * n + k0) / B;
        const float s = blk < absmax.size() ? absmax[blk] : 0.0f;
        const std::uint16_t s_t = f32 ? 0 : tt.from_f32(s);
        for (std::size_t e = 0; e < 32; ++e) {
          const std::size_t byte_i = k0 / 2 + e / 2;
          const std::uint8_t byte = byte_i < half_k ? w.q.packed[ldb * n + byte_i] : 0x77;
          const int c = e % 2 == 0 ? byte >> 4 : byte & 15;
          const bool in = k0 + e < K;
          if (f32) {
            const float x = in ? native::f32_from_bits(a[k0 + e]) : 0.0f;
            acc = native::ftz_fma(x, native::ftz_mul(lut[c], s), acc);
          } else {
            const std::uint16_t x = in ? static_cast<std::uint16_t>(a[k0 + e]) : zero_t;
            acc = native::ftz_add(acc, tt.to_f32(tt.mul(x, tt.mul(lut_t[c], s_t))));
          }
        }
      }
      v[lane] = acc;
    }
    // cub::WarpReduce<float>::Sum: shfl_down with offsets 1, 2, 4, 8, 16 (lane 0's value).
    for (std::size_t off = 1; off < 32; off <<= 1) {
      const std::array<float, 32> old = v;
      for (std::size_t l = 0; l + off < 32; ++l) v[l] = native::ftz_add(old[l], old[l + off]);
    }
    out[n] = native::bnb4_store(v[0], dt);
  }
  return out;
}

std::vector<std::uint32_t> bnb4_gemm_simt(std::span<const std::uint32_t> a, std::size_t M,
                                          const Bnb4Weight& w, native::Bnb4Dtype dt,
                                          std::span<const std::uint32_t> bias) {
  check_bnb4_weight(w);
  const std::size_t N = w.N, K = w.K, B = w.opt.block;
  if (K % B != 0) {
    throw InputError("the SIMT kernel needs K (" + std::to_string(K) +
                     ") a multiple of the block (" + std::to_string(B) +
                     "); bitsandbytes runs dequantize + linear there");
  }
  if (a.size() != M * K) throw InputError("A: expected " + std::to_string(M * K) + " values");
  if (!bias.empty() && bias.size() != N) {
    throw InputError("--bias: expected " + std::to_string(N) + " values, got " +
                     std::to_string(bias.size()));
  }
  const std::vector<float> scale = bnb4_simt_scales(w);
  const bool f32 = dt == Bnb4Dtype::fp32;
  static constexpr FloatFormat kBf16 = formats::bf16, kFp16 = formats::fp16;
  const TType tt(dt == Bnb4Dtype::fp16 ? kFp16 : kBf16);
  // The centroids as the kernel holds them: fp32 (fp32 kernel) or static_cast<T>(lut) codes.
  std::array<float, 16> lut{};
  std::array<std::uint16_t, 16> lut_t{};
  for (int c = 0; c < 16; ++c) {
    lut[c] = lut_f32(w.opt.type, c);
    lut_t[c] = tt.from_f32(lut[c]);
  }
  constexpr std::size_t kStride = 1024, kPerLane = 32;
  const std::size_t groups = (K + kStride - 1) / kStride, blk_per_row = K / B;
  std::vector<std::uint32_t> out(M * N);
  std::vector<std::array<float, 32>> acc(M);
  for (std::size_t n = 0; n < N; ++n) {
    const std::uint8_t* row = w.q.packed.data() + n * (K / 2);
    for (auto& v : acc) v.fill(0.0f);
    for (std::size_t g = 0; g < groups; ++g) {
      for (std::size_t lane = 0; lane < 32; ++lane) {
        const std::size_t k0 = g * kStride + lane * kPerLane;
        if (k0 >= K) continue;  // inactive lane: adds nothing
        const float s = scale[n * blk_per_row + k0 / B];
        const std::uint16_t s_t = f32 ? 0 : tt.from_f32(s);
        const std::uint8_t* bytes = row + k0 / 2;
        for (std::size_t sub = 0; sub < 4; ++sub) {
          // 8 dequantized values of elements k0 + 8 sub + 0..7 (high nibble first).
          float bq[8];
          std::uint16_t bq_t[8];
          for (int j = 0; j < 4; ++j) {
            const std::uint8_t byte = bytes[sub * 4 + j];
            if (f32) {
              bq[2 * j] = native::ftz_mul(lut[byte >> 4], s);
              bq[2 * j + 1] = native::ftz_mul(lut[byte & 15], s);
            } else {
              bq_t[2 * j] = tt.mul(lut_t[byte >> 4], s_t);
              bq_t[2 * j + 1] = tt.mul(lut_t[byte & 15], s_t);
            }
          }
          for (std::size_t m = 0; m < M; ++m) {
            const std::uint32_t* ak = a.data() + m * K + k0 + sub * 8;
            float& acc_l = acc[m][lane];
            if (f32) {
              // acc = fma(A[k], B[k], acc) for k = 0, 4, 1, 5, 2, 6, 3, 7 (two uint4 loads).
              for (int k = 0; k < 4; ++k) {
                acc_l = native::ftz_fma(native::f32_from_bits(ak[k]), bq[k], acc_l);
                acc_l = native::ftz_fma(native::f32_from_bits(ak[k + 4]), bq[k + 4], acc_l);
              }
            } else {
              // p = __hmul2(a pair, b pair) in T; acc += p.x + p.y (fp32 adds, FTZ).
              for (int k = 0; k < 4; ++k) {
                const float px =
                    tt.to_f32(tt.mul(static_cast<std::uint16_t>(ak[2 * k]), bq_t[2 * k]));
                const float py =
                    tt.to_f32(tt.mul(static_cast<std::uint16_t>(ak[2 * k + 1]), bq_t[2 * k + 1]));
                acc_l = native::ftz_add(acc_l, native::ftz_add(px, py));
              }
            }
          }
        }
      }
    }
    for (std::size_t m = 0; m < M; ++m) {
      float bias_f = 0.0f;
      if (!bias.empty()) {
        bias_f =
            f32 ? native::f32_from_bits(bias[n]) : tt.to_f32(static_cast<std::uint16_t>(bias[n]));
      }
      out[m * N + n] = bnb4_kernel_store(warp_reduce(acc[m]), bias_f, dt);
    }
  }
  return out;
}

}  // namespace exmy::quant
