// bitsandbytes' 4-bit block-wise quantization (QLoRA's NF4 and bitsandbytes' own FP4), bit for bit
// with bitsandbytes 0.50.2 csrc/kernels.cu as nvcc --use_fast_math compiles it for sm_90
// (docs/SEMANTICS.md 7.14). Host and device: the CPU loops (sim/quant/bnb4bit.cpp) and the CUDA
// kernels (gpu/quant/bnb4bit.cu) call these element functions.
//
//   absmax   a = fmaxf-fold of |x| over the block under FTZ, from -FLT_MAX per thread; the
//              zero padding of a partial last block takes part (bnb4_absmax_*)
//   code     c = tree(x ⊗ rcp.approx.ftz(a))     ⊗ = FMUL.FTZ   (kQuantizeBlockwise<..., NF4|FP4>)
//   value    y = lut[c] ⊗ a  (FP4: (lut[c & 7] ⊗ ±1) ⊗ a)     (kDequantizeBlockwise<..., NF4|FP4>)
//   store    y rounded to the output dtype: fp32 as is, fp16/bf16 by cvt.rn (ties to even); a NaN
//            is the GPU's canonical NaN (0x7FFFFFFF / 0x7FFF)
//
// Two codes per byte, element 2i in the HIGH nibble (qvals[j] = code(2j) << 4 | code(2j+1)): the
// opposite of sim/native/pack4.hpp's order (PyTorch's float4_e2m1fn_x2).
#pragma once

#include <cstdint>

#include "sim/native/convert.hpp"
#include "sim/native/float_format.hpp"
#include "sim/native/hd.hpp"
#include "sim/native/quant_absmax.hpp"
#include "sim/native/quant_codebook.hpp"
#include "sim/native/sfu_sm90.hpp"

namespace exmy::native {

enum class Bnb4Type : std::uint8_t { nf4, fp4 };

// The dtypes bitsandbytes' 4-bit kernels read and write (T of kQuantizeBlockwise and
// kDequantizeBlockwise).
enum class Bnb4Dtype : std::uint8_t { fp32, fp16, bf16 };

// ---- NF4 (QLoRA, "NormalFloat"): nf4_dequantization_lut ------------------------------------
// QLoRA's create_normal_map(offset = 0.9677083, use_extra_value = True): 8 positive quantiles
// Φ⁻¹(linspace(offset, 0.5, 9)[:-1]), 7 negative ones −Φ⁻¹(linspace(offset, 0.5, 8)[:-1]) and 0,
// stored in float32, sorted and divided by their maximum (float32 division). bitsandbytes
// hard-codes the result as these decimal literals; each is the shortest decimal of an fp32 value
// (hex bits in the comments), so the literal IS the fp32 value.
// tests/quant/test_bnb4bit.cpp re-derives them from the quantiles with MPFR.
EXMY_HD float bnb_nf4_level(int code) {
  constexpr float kLevels[16] = {
      -1.0f,                  // 0xBF800000
      -0.6961928009986877f,   // 0xBF3239B1
      -0.5250730514526367f,   // 0xBF066B30
      -0.39491748809814453f,  // 0xBECA32A0
      -0.28444138169288635f,  // 0xBE91A24D
      -0.18477343022823334f,  // 0xBE3D353F
      -0.09105003625154495f,  // 0xBDBA7871
      0.0f,                   // 0x00000000
      0.07958029955625534f,   // 0x3DA2FAFF
      0.16093020141124725f,   // 0x3E24CAE3
      0.24611230194568634f,   // 0x3E7C04DD
      0.33791524171829224f,   // 0x3EAD033A
      0.44070982933044434f,   // 0x3EE1A4B8
      0.5626170039176941f,    // 0x3F1007AB
      0.7229568362236023f,    // 0x3F3913B3
      1.0f,                   // 0x3F800000
  };
  return kLevels[code & 0x0F];
}

// dQuantizeNF4's 15 thresholds in ascending order: t_k is the double midpoint (L_k + L_{k+1}) / 2
// of adjacent levels (exact in fp64, printed as the shortest decimal of that double) written with
// an f suffix: the compiler rounds the DECIMAL once to fp32. Each exact midpoint of two fp32 levels
// of one binade is an fp32 tie; its shortest decimal lies a hair off the tie, so for t0, t8, t12
// and t14 the literal rounds to the odd neighbour, not to RN32(midpoint) (0xBF591CD8, 0x3DF64862,
// 0x3F006D04, 0x3F5C89DA), and not to the fp32 sum halved either. The tree compares with `>`,
// so code = #{k : x > t_k}: x exactly on t_k takes the LOWER code, and NaN (all comparisons
// false) takes code 0 (the level -1).
EXMY_HD float bnb_nf4_threshold(int k) {
  constexpr float kThresholds[15] = {
      -0.8480964004993439f,    // 0xBF591CD9  t0 (codes 0 | 1)
      -0.6106329262256622f,    // 0xBF1C5270  t1
      -0.4599952697753906f,    // 0xBEEB8480  t2
      -0.33967943489551544f,   // 0xBEADEA76  t3
      -0.23460740596055984f,   // 0xBE703CEC  t4
      -0.13791173323988914f,   // 0xBE0D38BC  t5
      -0.045525018125772476f,  // 0xBD3A7871  t6
      0.03979014977812767f,    // 0x3D22FAFF  t7 (the root of the tree)
      0.1202552504837513f,     // 0x3DF64863  t8
      0.2035212516784668f,     // 0x3E5067E0  t9
      0.2920137718319893f,     // 0x3E9582D4  t10
      0.3893125355243683f,     // 0x3EC753F9  t11
      0.5016634166240692f,     // 0x3F006D03  t12
      0.6427869200706482f,     // 0x3F248DAF  t13
      0.8614784181118011f,     // 0x3F5C89D9  t14 (codes 14 | 15)
  };
  return kThresholds[k];
}

// ---- bitsandbytes FP4 (not OCP e2m1): fp4_dequantization_lut ---------------------------------
// 1 sign bit (bit 3) and 3 magnitude bits whose ORDER is bitsandbytes' own: the magnitudes
// {0, 0.0625, 8, 12, 4, 6, 2, 3} (create_fp8_map(signed, 2 exponent bits, 1 mantissa bit, 4 bits)
// with exponent bias 2) divided by 12, written as decimal literals (RN32 of each):
//   0b000 0            0b001 1/192 0x3BAAAAAB   0b010 2/3 0x3F2AAAAB   0b011 1
//   0b100 1/3 0x3EAAAAAB   0b101 1/2          0b110 1/6 0x3E2AAAAB   0b111 1/4
EXMY_HD float bnb_fp4_magnitude(int code) {
  constexpr float kMagnitudes[8] = {0.0f, 0.005208333333f, 0.66666667f, 1.0f, 0.33333333f,
                                    0.5f, 0.16666667f,     0.25f};
  return kMagnitudes[code & 0b111];
}

// dQuantizeFP4's 7 thresholds on |x| in ascending order: the midpoints of adjacent magnitudes (in
// units of 12: 0.03125, 1.03125, 2.5, 3.5, 5, 7, 10) divided by 12 and written with 6 to 8 decimal
// digits. Three of the literals are NOT RN32 of the exact midpoint; the fp32 values decide:
//   0.00260417f 0x3B2AAAB9 (1/384 is 0x3B2AAAAB: 14 ulps above)   0.0859375f  0x3DB00000
//   0.20833333f 0x3E555555                                       0.29166667f 0x3E955555
//   0.4166667f  0x3ED55556 (5/12 is 0x3ED55555: 1 ulp above)    0.583333f   0x3F155550 (7/12 is
//   0x3F155555: 5 ulps below)                                    0.8333333f  0x3F555555
EXMY_HD float bnb_fp4_threshold(int k) {
  constexpr float kThresholds[7] = {0.00260417f, 0.0859375f, 0.20833333f, 0.29166667f,
                                    0.4166667f,  0.583333f,  0.8333333f};
  return kThresholds[k];
}
// The magnitude code of the k-th magnitude in ascending order (k = #{thresholds below |x|}).
EXMY_HD std::uint8_t bnb_fp4_code_of_rank(int k) {
  constexpr std::uint8_t kCodes[8] = {0b000, 0b001, 0b110, 0b111, 0b100, 0b101, 0b010, 0b011};
  return kCodes[k];
}

// dQuantizeNF4, its decision tree as written (strict `>`, the root at t7).
EXMY_HD std::uint8_t bnb_nf4_code(float x) {
  if (x > bnb_nf4_threshold(7)) {
    if (x > bnb_nf4_threshold(11)) {
      if (x > bnb_nf4_threshold(13)) return x > bnb_nf4_threshold(14) ? 0b1111 : 0b1110;
      return x > bnb_nf4_threshold(12) ? 0b1101 : 0b1100;
    }
    if (x > bnb_nf4_threshold(9)) return x > bnb_nf4_threshold(10) ? 0b1011 : 0b1010;
    return x > bnb_nf4_threshold(8) ? 0b1001 : 0b1000;
  }
  if (x > bnb_nf4_threshold(3)) {
    if (x > bnb_nf4_threshold(5)) return x > bnb_nf4_threshold(6) ? 0b0111 : 0b0110;
    return x > bnb_nf4_threshold(4) ? 0b0101 : 0b0100;
  }
  if (x > bnb_nf4_threshold(1)) return x > bnb_nf4_threshold(2) ? 0b0011 : 0b0010;
  return x > bnb_nf4_threshold(0) ? 0b0001 : 0b0000;
}

// dQuantizeFP4, as written: sign = x < 0 (so -0 and NaN have sign 0), then the tree on fabsf(x).
EXMY_HD std::uint8_t bnb_fp4_code(float x) {
  const std::uint8_t sign = x < 0.0f ? 0b1000 : 0b0000;
  const float a = abs32(x);
  std::uint8_t m;
  if (a > bnb_fp4_threshold(3)) {
    if (a > bnb_fp4_threshold(5)) {
      m = a > bnb_fp4_threshold(6) ? 0b011 : 0b010;
    } else {
      m = a > bnb_fp4_threshold(4) ? 0b101 : 0b100;
    }
  } else if (a > bnb_fp4_threshold(1)) {
    m = a > bnb_fp4_threshold(2) ? 0b111 : 0b110;
  } else {
    m = a > bnb_fp4_threshold(0) ? 0b001 : 0b000;
  }
  return static_cast<std::uint8_t>(m | sign);
}

// ---- the block absmax -----------------------------------------------------------------------
// kQuantizeBlockwise / kQuantizeBlockwiseSmall start each thread at -FLT_MAX and fold
// fmaxf(acc, fabsf(x)) (FMNMX under FTZ: a subnormal |x| counts as 0, a NaN is skipped), then take
// the max over the threads. The loads pad a partial last block with zeros and every partial
// block's reduction includes a padded thread, so:
//   absmax = max(-FLT_MAX, ftz|x_i| over the non-NaN x_i [, 0 if the block is partial])
// A full block of NaNs therefore stores -FLT_MAX (0xFF7FFFFF), not 0 or NaN.
inline constexpr float kBnb4AbsmaxInit = -3.40282346638528859812e+38f;  // -FLT_MAX
EXMY_HD float bnb4_absmax_step(float acc, float x) {
  return absmax_combine(acc, x, NanPolicy::ignore_ftz);
}
EXMY_HD float bnb4_absmax_finish(float acc, bool partial_block) {
  return partial_block && acc < 0.0f ? 0.0f : acc;
}

// ---- the element functions ------------------------------------------------------------------
// The 4-bit code of x in a block of absmax a: FMUL.FTZ by rcp.approx.ftz(a) (the block's
// smem_absmax_value = 1.0f / absmax under --use_fast_math: NormOrder::bnb_cuda, the same
// normalization as the 8-bit kQuantizeBlockwise), then the tree. a = 0 gives 0·inf = NaN for
// every element: code 0 (NF4 -1, FP4 +0).
EXMY_HD std::uint8_t bnb4_code(Bnb4Type t, float x, float a, const SfuTables& sfu = {}) {
  const float n = codebook_normalize(x, a, NormOrder::bnb_cuda, sfu);
  return t == Bnb4Type::nf4 ? bnb_nf4_code(n) : bnb_fp4_code(n);
}

// The byte of two codes: element 2j in the high nibble, 2j + 1 in the low one. An odd count's
// last byte holds the padding element (0, coded like any other: NF4 code 7, or 0 when a = 0).
EXMY_HD std::uint8_t bnb4_pack(std::uint8_t first, std::uint8_t second) {
  return static_cast<std::uint8_t>(((first & 0x0Fu) << 4) | (second & 0x0Fu));
}
EXMY_HD std::uint8_t bnb4_unpack(const std::uint8_t* packed, std::uint64_t i) {
  const std::uint8_t b = packed[i >> 1];
  return static_cast<std::uint8_t>((i & 1) ? (b & 0x0Fu) : (b >> 4));
}

// The fp32 value of a code in a block of absmax a (kDequantizeBlockwise: dDequantizeNF4(c) * a;
// dDequantizeFP4Tree(c) * a = (lut[c & 7] * sign) * a with sign = 1.0f - 2 * (c >> 3); FMUL.FTZ).
EXMY_HD float bnb4_value(Bnb4Type t, std::uint8_t code, float a) {
  if (t == Bnb4Type::nf4) return ftz_mul(bnb_nf4_level(code), a);
  const float sign = (code & 0b1000) ? -1.0f : 1.0f;
  return ftz_mul(ftz_mul(bnb_fp4_magnitude(code), sign), a);
}

// The stored bits of y in dtype d (fp32: the fp32 bits; fp16/bf16: cvt.rn.f16/bf16.f32, ties to
// even, overflow to inf). GPU arithmetic makes every NaN the canonical 0x7FFFFFFF, which cvt
// turns into 0x7FFF.
EXMY_HD std::uint32_t bnb4_store(float y, Bnb4Dtype d) {
  const bool nan = y != y;
  switch (d) {
    case Bnb4Dtype::fp32:
      return nan ? 0x7FFFFFFFu : bits_of(y);
    case Bnb4Dtype::fp16: {
      constexpr FloatFormat kFp32 = formats::fp32, kFp16 = formats::fp16;
      return nan ? 0x7FFFu
                 : static_cast<std::uint32_t>(convert(kFp32, kFp16, Rounding{}, bits_of(y)).code);
    }
    case Bnb4Dtype::bf16: {
      constexpr FloatFormat kFp32 = formats::fp32, kBf16 = formats::bf16;
      return nan ? 0x7FFFu
                 : static_cast<std::uint32_t>(convert(kFp32, kBf16, Rounding{}, bits_of(y)).code);
    }
  }
  return 0;
}

}  // namespace exmy::native
