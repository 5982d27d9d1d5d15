// torchao 0.18's low-bit optimizers (torchao.optim AdamW8bit, AdamW4bit, AdamWFp8 and their Adam
// forms; docs/SEMANTICS.md 9.2.7) per element and per block, as torch 2.11's torch.compile
// (Inductor) generates torchao's single_param_adam: its C++ code on the CPU, its Triton code on
// CUDA. Written from torchao 0.18.0's torchao/optim/{adam.py, quant_utils.py, subclass_8bit.py,
// subclass_4bit.py, subclass_fp8.py} and from the code Inductor generated for it (torch 2.11.0,
// git 70d99e998b49; the CPU modules read locally, the Triton modules captured on an H200 by
// bench/peers/torchao_optim_capture.py). The host loop (sim/optim/family_torchao.cpp) calls these
// functions.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/native/bnb_dynamic_map.hpp"
#include "sim/native/fp32_ops.hpp"
#include "sim/native/optim_storage.hpp"
#include "sim/native/sfu_sm90.hpp"
#include "sim/native/torch_casts.hpp"

namespace exmy::native {

// What holds an Adam state: torchao's OptimState8bit (dynamic map, block 256), OptimState4bit
// (its 4-bit maps, block 128, two codes per byte, first in the high nibble), OptimStateFp8
// (float8_e4m3fn codes, block 256), or the plain tensor torchao keeps for a parameter of fewer
// than 4096 elements or of a size that is not a multiple of the block (zeros_like(p): p's dtype).
enum class TorchaoQuant : std::uint8_t { q8, q4, fp8 };

// Which code generator's arithmetic (the --compat profile): Inductor's C++ (CPU, torchao-cpu) or
// Triton (CUDA, torchao-cuda).
enum class TorchaoEngine : std::uint8_t { inductor_cpp, inductor_triton };

// ---- the maps (host) -------------------------------------------------------------------------

// torchao create_dynamic_map(signed, max_exponent_bits, total_bits): bitsandbytes' map without
// its zero padding. non_sign_bits = total_bits - 1 for both signs (the source reads
// `total_bits - (1 if signed else 1)`); additional_items = 2^(non_sign_bits - max_exponent_bits)
// - 1. Group i = 0..max_exponent_bits-1 takes n = 2^(i + nsb - meb) + 1 (signed) or
// 2^(i + nsb - meb + 1) + 1 (unsigned) boundaries torch.linspace(0.1, 1, n), their fp32 means
// RN32(b_k + b_k+1) / 2, scaled by 10**(i - (meb - 1)) (a Python float, cast to fp32, one fp32
// multiply; the int 1 for the last group). The additional items reuse the last group's scale
// (the loop variable i leaks). 0 and 1.0 are appended and the list sorted.
inline std::vector<float> torchao_dynamic_map(bool is_signed, int max_exponent_bits,
                                              int total_bits) {
  const int nsb = total_bits - 1;
  const int additional = (1 << (nsb - max_exponent_bits)) - 1;
  std::vector<float> data;
  const auto scale_of = [&](int i) {
    const int e = i - (max_exponent_bits - 1);
    const double d = e == 0 ? 1.0 : std::strtod(("1e" + std::to_string(e)).c_str(), nullptr);
    return static_cast<float>(d);
  };
  const auto add_group = [&](int n, float scale) {
    const std::vector<float> b = torch_linspace_f32(0.1, 1.0, n);
    for (int k = 0; k + 1 < n; ++k) {
      const float mean =
          (b[static_cast<std::size_t>(k)] + b[static_cast<std::size_t>(k + 1)]) / 2.0f;
      data.push_back(scale * mean);
      if (is_signed) data.push_back(-scale * mean);
    }
  };
  int i = 0;
  for (i = 0; i < max_exponent_bits; ++i) {
    const int sh = i + nsb - max_exponent_bits + (is_signed ? 0 : 1);
    add_group((1 << sh) + 1, scale_of(i));
  }
  if (additional > 0) add_group(additional + 1, scale_of(i - 1));
  data.push_back(0.0f);
  data.push_back(1.0f);
  if (data.size() != (std::size_t{1} << total_bits)) {
    throw std::logic_error("torchao dynamic map: expected 2^total_bits entries");
  }
  std::sort(data.begin(), data.end());
  return data;
}

// The map of a state: 8-bit create_dynamic_map(signed) (7 exponent bits); 4-bit signed
// create_dynamic_map(True, 3, 4); 4-bit unsigned torch.linspace(0, 1, 17)[1:] (no zero: 1/16..1).
inline std::vector<float> torchao_qmap(TorchaoQuant q, bool is_signed) {
  if (q == TorchaoQuant::q8) return torchao_dynamic_map(is_signed, 7, 8);
  if (is_signed) return torchao_dynamic_map(true, 3, 4);
  std::vector<float> l = torch_linspace_f32(0.0, 1.0, 17);
  return std::vector<float>(l.begin() + 1, l.end());
}

// ---- quantization (host and device) ------------------------------------------------------------

// quantize_{8,4}bit_with_qmap on one scaled value x (bits = 8 or 4, q the 2^bits ascending map):
// the branchless binary search codes = where(x >= q[c + s], c + s, c) for s = 2^(bits-1)..1,
// then the rounding: up = min(c + 1, 2^bits - 1), code = up where RN(x - q[c]) >=
// RN(q[up] - q[c]) * 0.5 (exact), else c. So a tie (x exactly halfway) rounds up, x below q[0]
// gives 0, x above the top entry 2^bits - 1, and NaN 0 (every comparison false). Both code
// generators emit these comparisons and the two subtractions as written (no multiply feeds an
// add: nothing to contract).
EXMY_HD std::uint8_t torchao_qmap_code(const float* q, int bits, float x) {
  const int n = 1 << bits;
  int c = x >= q[n / 2] ? n / 2 : 0;
  for (int s = n / 4; s >= 1; s >>= 1) c += x >= q[c + s] ? s : 0;
  const int up = c + 1 > n - 1 ? n - 1 : c + 1;
  const float down = q[c];
  const float residual = rn_sub(x, down);
  const float half_gap = rn_mul(rn_sub(q[up], down), 0.5f);
  return static_cast<std::uint8_t>(residual >= half_gap ? up : c);
}

// scale_tensor's per-block scale: amax(|x|) over the block, clip(1e-12) (max_propagate_nan: a
// NaN amax stays NaN). amax is a max: exact in any reduction order. Fp8 divides it by
// finfo(float8_e4m3fn).max = 448 (an fp32 division on the CPU; see torchao_div).
EXMY_HD float torchao_clip_scale(float amax) {
  if (f32_is_nan(amax)) return amax;
  return amax > 1e-12f ? amax : 1e-12f;
}

// The division x / y as the engine's code computes it: IEEE (C++ Vectorized operator/, RN) on the
// CPU; Triton's `/` on fp32 is div.full.f32 (torch 2.11 Inductor emits `x / y`, not div_rn,
// unless TORCHINDUCTOR_EMULATE_DIVISION_ROUNDING=1), modelled by sfu_div_full_f (sfu: the sm_90
// tables; null: IEEE).
EXMY_HD float torchao_div(const SfuTables* sfu, float a, float b) {
  return sfu == nullptr ? rn_div(a, b) : sfu_div_full_f(*sfu, a, b);
}

// The element count of a block: 256 (8-bit, fp8), 128 (4-bit), torchao's block_size defaults.
EXMY_HD constexpr int torchao_block(TorchaoQuant q) {
  return q == TorchaoQuant::q4 ? 128 : 256;
}

// _new_buffer: a quantized state where numel >= 4096 and numel % block == 0, else a plain one.
EXMY_HD constexpr bool torchao_quantized(TorchaoQuant q, std::size_t n) {
  return n >= 4096 && n % static_cast<std::size_t>(torchao_block(q)) == 0;
}

// float8_e4m3fn code -> its value (exact; 0x7F / 0xFF: NaN).
EXMY_HD float torchao_e4m3fn_value(std::uint8_t c) {
  const std::uint32_t sign = static_cast<std::uint32_t>(c & 0x80u) << 24;
  const std::uint32_t e = (c >> 3) & 0xFu, f = c & 7u;
  if (e == 15 && f == 7) return f32_from_bits(sign | 0x7FC00000u);
  if (e == 0) {  // f * 2^-9
    const float mag = rn_mul(static_cast<float>(f), f32_from_bits((127u - 9u) << 23));
    return f32_from_bits(f32_bits(mag) | sign);
  }
  return f32_from_bits(sign | ((e + 120u) << 23) | (f << 20));
}

// dequant_with_qmap / OptimStateFp8.dequantize of element i of a block with scale `scale`:
// qmap[code] * scale, e4m3fn value * scale (one fp32 multiply). codes: 4-bit packs element 2k in
// the high nibble of byte k.
EXMY_HD float torchao_code_value(TorchaoQuant q, const float* qmap, const std::uint8_t* codes,
                                 std::size_t i) {
  if (q == TorchaoQuant::fp8) return torchao_e4m3fn_value(codes[i]);
  if (q == TorchaoQuant::q8) return qmap[codes[i]];
  const std::uint8_t b = codes[i >> 1];
  return qmap[(i & 1) == 0 ? b >> 4 : b & 0xFu];
}
EXMY_HD float torchao_dequant(TorchaoQuant q, const float* qmap, const std::uint8_t* codes,
                              std::size_t i, float scale) {
  return rn_mul(torchao_code_value(q, qmap, codes, i), scale);
}

// aten.copy_ into a quantized state, one block of `len` fp32 values x starting at element
// `first` (a multiple of the block): scale_tensor (amax, clip, and fp8's / 448), x / scale, the
// code; writes the codes (4-bit: packed) and returns the block's scale.
EXMY_HD float torchao_quantize_block(TorchaoQuant q, const SfuTables* sfu, const float* qmap,
                                     const float* x, int len, std::size_t first,
                                     std::uint8_t* codes) {
  float amax = 0.0f;
  bool nan = false;
  for (int k = 0; k < len; ++k) {
    if (f32_is_nan(x[k])) nan = true;
    const float a = f32_abs(x[k]);
    amax = a > amax ? a : amax;
  }
  if (nan) amax = f32_from_bits(0x7FC00000u);
  float scale = torchao_clip_scale(amax);
  if (q == TorchaoQuant::fp8) scale = torchao_div(sfu, scale, 448.0f);
  for (int k = 0; k < len; ++k) {
    const float y = torchao_div(sfu, x[k], scale);
    const std::size_t i = first + static_cast<std::size_t>(k);
    if (q == TorchaoQuant::fp8) {
      constexpr FloatFormat kE4m3 = formats::e4m3fn;
      codes[i] = torch_fp8_from_fp32(kE4m3, f32_bits(y));
    } else if (q == TorchaoQuant::q8) {
      codes[i] = torchao_qmap_code(qmap, 8, y);
    } else {
      const std::uint8_t c = torchao_qmap_code(qmap, 4, y);
      std::uint8_t& b = codes[i >> 1];
      b = (i & 1) == 0 ? static_cast<std::uint8_t>((b & 0x0Fu) | (c << 4))
                       : static_cast<std::uint8_t>((b & 0xF0u) | c);
    }
  }
  return scale;
}

// ---- the step (host and device) ----------------------------------------------------------------

// The per-step values single_param_adam's graph computes once (fp32 like its tensors).
//   lr       the group's lr tensor: torch.tensor(lr, dtype=float32), RN32(lr)
//   lr_wd    AdamW: lr * weight_decay, the fp32 tensor times the Python float cast to fp32
//   wd       Adam (L2): RN32(weight_decay)
//   w1, w2   lerp weights 1 - beta1, 1 - beta2: Python doubles, RN32 as lerp's weight tensor
//   bc1      1 - beta1**step: the step tensor (fp32) as exponent of RN32(beta1), fp32 pow, fp32
//            subtraction; sbc2 = sqrt(1 - beta2**step) likewise
//   eps      RN32(eps)
struct TorchaoScalars {
  TorchaoEngine eng = TorchaoEngine::inductor_cpp;
  bool decoupled = true;
  bool amsgrad = false;
  float lr = 0.0f, lr_wd = 0.0f, wd = 0.0f;
  float w1 = 0.0f, w2 = 0.0f;
  float bc1 = 1.0f, sbc2 = 1.0f, eps = 0.0f;
  const SfuTables* sfu = nullptr;  // the Triton engine's division tables (torchao_div)
  bool v_param_split = false;      // Triton, quantized v: the update reads the state's v
  bool update_unfused = false;     // Triton: p1 - num/denom rounded twice (no FMA)
  bool v_state_g = false;          // Triton, quantized v: the state's v from fma(g, g, -RN(q*s))
};

// An old state's value as the step reads it: a plain state's value, or a quantized state's
// dequantization RN(q[code] * scale) with its two factors (the Triton code contracts the
// product into the lerp's difference).
struct TorchaoOld {
  float v = 0.0f;
  float q = 0.0f, s = 0.0f;
  bool split = false;  // v = RN(q * s)
};

// torch._refs.lerp (the decomposition Inductor lowers aten.lerp.Scalar with): mask =
// |weight| >= 0.5, coeff = mask ? weight - 1 : weight, base = mask ? end : start,
// coeff * (end - start) + base. The mask is a compile-time constant (the weight is a Python
// float). C++: every op rounded. Triton (SASS of the captured sm_90 kernels): the product is
// contracted with the sum, fma(coeff, end - start, base), and the difference with the product
// before it: end - q*s = fma(-q, s, end) for a quantized start (the first moment), g*g - start =
// fma(g, g, -start) for the second moment's end g*g (end_g: its factor; end = RN(g*g)).
EXMY_HD float torchao_lerp(const TorchaoOld& start, float end, float w, TorchaoEngine eng,
                           const float* end_g = nullptr) {
  const bool big = f32_abs(w) >= 0.5f;
  const float coeff = big ? rn_sub(w, 1.0f) : w;
  const float base = big ? end : start.v;
  if (eng == TorchaoEngine::inductor_cpp) {
    return rn_add(rn_mul(coeff, rn_sub(end, start.v)), base);
  }
  float diff;
  if (end_g != nullptr) {
    diff = rn_fma(*end_g, *end_g, -start.v);
  } else if (start.split) {
    diff = rn_fma(-start.q, start.s, end);
  } else {
    diff = rn_sub(end, start.v);
  }
  return rn_fma(coeff, diff, base);
}

// div.full.f32 as ptxas lays it out (SASS of the captured kernels): |b| > 2^126 scales both
// operands by 1/4, a subnormal |b| both by 2^24, r = MUFU.RCP(b'), a / b = a' ⊗ r; where an add
// follows, the multiply is contracted into it (fma(a', r, c)).
struct TorchaoRcp {
  float a, r;
};
EXMY_HD TorchaoRcp torchao_div_parts(const SfuTables& t, float a, float b) {
  const float ab = f32_abs(b);
  if (ab > 0x1p126f) {
    a = rn_mul(a, 0.25f);
    b = rn_mul(b, 0.25f);
  } else if (ab < f32_from_bits(0x00800000u)) {
    a = rn_mul(a, 16777216.0f);
    b = rn_mul(b, 16777216.0f);
  }
  return {a, sfu_rcp_f(t, b)};
}

// One element of single_param_adam: p and g the parameter and gradient values (of the
// parameter's dtype, as fp32), m, v, vmax the old states in; the new fp32 values out
// (exp_avg_f32, exp_avg_sq_f32, max_exp_avg_sq_f32: what the states then quantize or round to
// the dtype). Returns p_f32 after the step (the caller rounds it to the dtype, or stochastically).
//   AdamW: p = p - (lr*wd)*p;  Adam: g = g + wd*p
//   m = lerp(m, g, 1-beta1); v = lerp(v, g*g, 1-beta2); amsgrad: vmax = maximum(vmax, v)
//   denom = sqrt(v or vmax) / sbc2 + eps
//   p = p - (lr * (m / bc1)) / denom
// C++: each op rounded, IEEE division. Triton: p - c*p = fma(-c, p, p); the lerps as
// torchao_lerp; m / bc1 = div.full; denom = fma(sqrt(v)', rcp(sbc2'), eps) and
// p = fma(-num', rcp(denom'), p1) (div.full's multiply contracted into the add that follows).
EXMY_HD float torchao_adam_element(const TorchaoScalars& s, float p, float g, TorchaoOld m0,
                                   TorchaoOld v0, TorchaoOld vmax0, float& m, float& v,
                                   float& vmax) {
  const bool triton = s.eng == TorchaoEngine::inductor_triton;
  if (s.decoupled) {
    p = triton ? rn_fma(-s.lr_wd, p, p) : rn_sub(p, rn_mul(s.lr_wd, p));
  } else {
    g = triton ? rn_fma(s.wd, p, g) : rn_add(g, rn_mul(s.wd, p));
  }
  m = torchao_lerp(m0, g, s.w1, s.eng);
  // The second moment. Triton with a quantized v: LLVM contracts g*g - q*s either way. The new
  // state takes v = fma(w2, fma(-q, s, RN(g*g)), RN(q*s)) (the persistent reduction that
  // quantizes it: g*g passed through shared memory; PTX of the captured fp32 AdamW8bit kernels).
  // The update reads that v where the step is one kernel that keeps it (v_param_split: AdamW4bit;
  // fp32 AdamW8bit with more than 16 blocks and p.shape[-1] % 256 == 0, 17x256 and 256x256,
  // whose update also goes through a shared-memory layout change and stays unfused:
  // update_unfused), else recomputes fma(w2, fma(g, g, -RN(q*s)), RN(q*s)) (end_g; the
  // pointwise kernel's PTX). The forms differ only in fp32 (a 16-bit g*g is exact). fp32
  // AdamWFp8 on a (-1, 256) view of p (4096, 17x256) takes the recomputed form for the state as
  // well (v_state_g: of the 12 pairs of forms for state and update, the only one that gives the
  // H200 captures' bits, bench/results/2026-12-02-h200-torchao-optim.md).
  float vp = torchao_lerp(v0, rn_mul(g, g), s.w2, s.eng, triton ? &g : nullptr);
  v = triton && v0.split && !s.v_state_g ? torchao_lerp(v0, rn_mul(g, g), s.w2, s.eng) : vp;
  if (triton && v0.split && s.v_param_split) vp = v;
  const auto nan_max = [](float a, float b) {  // torch.maximum: NaN if either is NaN
    return f32_is_nan(a) || f32_is_nan(b) ? (f32_is_nan(a) ? a : b) : (a > b ? a : b);
  };
  float vd = vp;
  vmax = vmax0.v;
  if (s.amsgrad) {
    vmax = nan_max(vmax, v);
    vd = nan_max(vmax0.v, vp);
  }
  if (!triton) {
    const float denom = rn_add(rn_div(rn_sqrt(vd), s.sbc2), s.eps);
    return rn_sub(p, rn_div(rn_mul(s.lr, rn_div(m, s.bc1)), denom));
  }
  const TorchaoRcp q1 = torchao_div_parts(*s.sfu, m, s.bc1);
  const float num = rn_mul(rn_mul(q1.r, q1.a), s.lr);
  const TorchaoRcp q2 = torchao_div_parts(*s.sfu, rn_sqrt(vd), s.sbc2);
  const float denom = rn_fma(q2.r, q2.a, s.eps);
  const TorchaoRcp q3 = torchao_div_parts(*s.sfu, num, denom);
  if (s.update_unfused) return rn_sub(p, rn_mul(q3.r, q3.a));
  return rn_fma(q3.r, -q3.a, p);
}

// _fp32_to_bf16_sr on one value with its random r in [0, 2^16): on the int32 bits x, round away
// from zero (add 0x10000 to the truncated bits, wrapping as the int32 addition does) where
// r < x & 0xFFFF, then .bfloat16() of a value whose low half is zero (exact; a NaN stays NaN).
// Returns the bf16 code.
EXMY_HD std::uint16_t torchao_bf16_sr(float x, std::uint32_t r) {
  const std::uint32_t u = f32_bits(x);
  const std::uint32_t trunc = u & 0xFFFF0000u;
  const std::uint32_t y = r < (u & 0xFFFFu) ? trunc + 0x10000u : trunc;
  return bf16_from_f32(f32_from_bits(y));
}

}  // namespace exmy::native
