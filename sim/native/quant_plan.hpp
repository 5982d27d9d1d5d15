// The quantization plan: one device-safe description of a tensor quantization (groups, scale rule
// and scale format, element target, rounding, NaN policy), built once on the host from the
// options (sim/quant), and the three functions that read it:
//   group_state(plan, amax)               the state word of a group from its absmax
//   quant_element(plan, x, state, word)   the code of one element
//   dequant_element(plan, code, state)    the fp32 value of one code
//   stored_state(plan, state)             the fp32 value the state file holds for a state word
// The CPU reference loops (sim/quant/quantize.cpp) and the CUDA kernels (gpu/quant/*.cu) call
// exactly these; a GPU fast path is a specialisation that must give the same bits
// (docs/SEMANTICS.md 7; 7.9 lists the fast paths). Adding a scale rule or a target means adding
// a case here, nowhere else.
//
// The state word of a group is its scale in the plan's scale format: fp32 bits (absmax, te,
// te-current, torchao, the 2-D block rules), an E8M0 code (MX) or an E4M3 code (NVFP4).
#pragma once

#include <cstdint>

#include "sim/native/codebook_lookup.hpp"
#include "sim/native/convert.hpp"
#include "sim/native/float_format.hpp"
#include "sim/native/hd.hpp"
#include "sim/native/philox.hpp"
#include "sim/native/quant_absmax.hpp"
#include "sim/native/quant_block2d.hpp"
#include "sim/native/quant_codebook.hpp"
#include "sim/native/quant_fp32.hpp"
#include "sim/native/quant_int8.hpp"
#include "sim/native/quant_mx.hpp"
#include "sim/native/quant_mx_te.hpp"
#include "sim/native/quant_mx_torchao.hpp"
#include "sim/native/quant_nvfp4.hpp"
#include "sim/native/quant_scaled_cast.hpp"
#include "sim/native/rounding.hpp"

namespace exmy::native {

// How elements are grouped under one state (SEMANTICS 7.1). MX and NVFP4 are `block` groups with
// a byte scale rule; `tile` groups are tile_rows × tile_cols tiles of the 2-d view (7.12).
enum class GroupShape : std::uint8_t { tensor, row, col, block, tile };

enum class ElementKind : std::uint8_t { int8, float_format, codebook };

// Where the state comes from and what format holds it.
enum class ScaleRule : std::uint8_t {
  absmax,          // fp32 absmax (int8, float absmax variant, codebooks)
  te,              // fp32 scale, TransformerEngine delayed-scaling formula
  te_current,      // fp32 scale, TransformerEngine current scaling
  torchao,         // fp32 scale, torchao.float8
  mx,              // E8M0 code, OCP MX v1.0 arithmetic (exact scaling), mode mx_mode
  mx_torchao,      // E8M0 code, torchao to_mx arithmetic, mode mx_mode
  mx_te,           // E8M0 code, TransformerEngine MXFP8 quantizer arithmetic (quant_mx_te.hpp)
  nvfp4_torchao,   // E4M3 code, torchao nvfp4_quantize
  nvfp4_te,        // E4M3 code, TransformerEngine's NVFP4 reference quantizer
  block_deepgemm,  // fp32 sf, DeepGEMM's per_token / per_block casts (tiles)
  block_te,        // fp32 scale, TransformerEngine's blockwise reference quantizer (tiles)
  block_torchao,   // fp32 scale, torchao's blockwise FP8 training kernels (tiles)
};

enum class ScaleFormat : std::uint8_t { fp32, e8m0, e4m3 };

EXMY_HD constexpr ScaleFormat scale_format_of(ScaleRule r) {
  switch (r) {
    case ScaleRule::mx:
    case ScaleRule::mx_torchao:
    case ScaleRule::mx_te:
      return ScaleFormat::e8m0;
    case ScaleRule::nvfp4_torchao:
    case ScaleRule::nvfp4_te:
      return ScaleFormat::e4m3;
    default:
      return ScaleFormat::fp32;
  }
}

// Random streams (SEMANTICS 3.2): element casts of tensor quantization (int8, float, MX, NVFP4)
// draw from stream 16 at the element's flat row-major index in the *input* tensor; the codebook
// stochastic lookup from stream 17.
inline constexpr std::uint32_t kStreamQuantCast = 16;
inline constexpr std::uint32_t kStreamQuantCodebook = 17;

struct QuantPlan {
  // ---- groups
  GroupShape groups = GroupShape::tensor;
  std::uint32_t block = 0;                     // elements per block (block shape)
  std::uint32_t tile_rows = 0, tile_cols = 0;  // tile shape
  // ---- element target
  ElementKind element = ElementKind::int8;
  FloatFormat fmt{};  // float_format elements
  float fmax = 0.0f;  // fmt's largest finite value as fp32 (float_format)
  // ---- scale
  ScaleRule rule = ScaleRule::absmax;
  MxScaleMode mx_mode = MxScaleMode::floor;
  ScaleOrder order = ScaleOrder::div_mul;  // absmax rule, int8 and float targets
  NanPolicy nan = NanPolicy::propagate;
  int te_margin = 0;
  float te_prev_scale = 1.0f;
  bool torchao_fp16_source = false;
  bool pow2_scale = false;
  float te_amax_epsilon = 0.0f;
  bool given = false;  // te / te_current / torchao: given_scale replaces the computed scale
  float given_scale = 0.0f;
  Nvfp4Tensor tensor{};  // NVFP4: the per-tensor scale (one level when !tensor.two_level)
  // 2-D block rules: the scale form, the amax floor (te: amax_epsilon; torchao: its eps in the
  // source's compute type) and the largest finite value of the source dtype (te).
  BlockScaleFormat block_scale = BlockScaleFormat::fp32;
  float block_eps = 0.0f;
  float source_max = 0.0f;
  // ---- rounding
  RoundMode mode = RoundMode::rne;
  int sr_bits = 0;
  std::uint64_t seed = 0;
  // ---- codebooks
  NormOrder norm = NormOrder::recip_mul;
  SfuTables
      sfu{};  // NormOrder::bnb_cuda on the host: the rcp.approx table (device: the instruction)
  TieRule tie = TieRule::even_index;
  float codebook[256] = {};

  EXMY_HD constexpr ScaleFormat scale_format() const { return scale_format_of(rule); }
  EXMY_HD constexpr bool byte_scales() const { return scale_format() != ScaleFormat::fp32; }
  EXMY_HD constexpr std::uint32_t stream() const {
    return element == ElementKind::codebook ? kStreamQuantCodebook : kStreamQuantCast;
  }
};

// The state word of a tile of the 2-D block rules (block_deepgemm, block_te, block_torchao; the
// plan's rule is one of them): group_state's cases for these rules, apart so that the GPU's fast
// tile kernels (gpu/quant/quantize_tile.cu) inline these three and not the switch over every rule.
EXMY_HD std::uint32_t block_group_state(const QuantPlan& p, float amax) {
  if (p.rule == ScaleRule::block_deepgemm) {
    return bits_of(deepgemm_sf(amax, p.block_scale == BlockScaleFormat::ue8m0));
  }
  if (p.rule == ScaleRule::block_te) {
    return bits_of(te_block_scale(amax, p.fmax, p.block_eps, p.source_max,
                                  p.block_scale == BlockScaleFormat::pow2));
  }
  return bits_of(torchao_block_scale(amax, p.fmax, p.block_eps));
}

// The state word of a group with absmax `amax` (the fold of absmax_combine under plan.nan).
EXMY_HD std::uint32_t group_state(const QuantPlan& p, float amax) {
  const auto scale = [&](float computed) { return bits_of(p.given ? p.given_scale : computed); };
  switch (p.rule) {
    case ScaleRule::absmax:
      // ignore_ftz: the max of flushed magnitudes is the flushed max (a GPU reduction may take
      // the plain max first).
      if (p.nan == NanPolicy::ignore_ftz && (bits_of(amax) & 0x7F800000u) == 0) return 0u;
      return bits_of(amax);
    case ScaleRule::te:
      return scale(te_scale(amax, p.fmax, p.te_margin, p.te_prev_scale));
    case ScaleRule::te_current:
      return scale(te_current_scale(amax, p.fmax, p.pow2_scale, p.te_amax_epsilon));
    case ScaleRule::torchao:
      return scale(torchao_scale(amax, p.fmax, p.torchao_fp16_source, p.pow2_scale));
    case ScaleRule::mx:
      return mx_scale_code(amax, p.fmt, p.mx_mode, p.fmax);
    case ScaleRule::mx_torchao:
      return mx_torchao_scale_code(amax, p.fmt, p.mx_mode, p.fmax);
    case ScaleRule::mx_te:
      return mx_te_scale_code(amax, p.fmax);
    case ScaleRule::nvfp4_torchao:
      return nvfp4_torchao_scale_code(amax, p.tensor);
    case ScaleRule::nvfp4_te:
      return nvfp4_te_scale_code(amax, p.tensor);
    case ScaleRule::block_deepgemm:
    case ScaleRule::block_te:
    case ScaleRule::block_torchao:
      return block_group_state(p, amax);
  }
  return 0;
}

// The fp32 value the state file holds for a state word: the state itself, except the 2-D te and
// torchao rules, whose files hold their dequantization scale RN32(1 / s) (TE's scale_inv,
// torchao's reciprocal scale). Byte states are not fp32 values (callers store the code).
EXMY_HD float stored_state(const QuantPlan& p, std::uint32_t state) {
  if (p.rule == ScaleRule::block_te || p.rule == ScaleRule::block_torchao) {
    return rn32_div(1.0f, float_of(state));
  }
  return float_of(state);
}

// NVFP4 elements are x times a per-group factor (torchao: RN32(1/S) or RN32(RN32(1/pts)/S); te:
// the encode scale), then clamped and encoded: the factor of a group with scale code `state`, and
// the element given the factor. Kernels take the factor once per group.
EXMY_HD float nvfp4_element_scale(const QuantPlan& p, std::uint32_t state) {
  const auto code = static_cast<std::uint8_t>(state);
  return p.rule == ScaleRule::nvfp4_te ? nvfp4_te_element_scale(code, p.tensor)
                                       : nvfp4_torchao_element_scale(code, p.tensor);
}
EXMY_HD Encoded nvfp4_element_scaled(const QuantPlan& p, float x, float factor) {
  return p.rule == ScaleRule::nvfp4_te ? nvfp4_te_scaled(x, factor)
                                       : nvfp4_torchao_scaled(x, factor);
}

// The code of element x (fp32) of a group with state word `state`. `word` is the element's
// 32-bit Philox word of p.stream() at its flat input index (read only under sr). `table` holds
// p.codebook's 256 values wherever the caller keeps them (kernels: shared memory).
EXMY_HD Encoded quant_element(const QuantPlan& p, const float* table, float x, std::uint32_t state,
                              std::uint32_t word) {
  const bool sr = p.mode == RoundMode::sr;
  const std::uint32_t rand = sr ? sr_word(word, p.sr_bits) : 0u;
  switch (p.rule) {
    case ScaleRule::mx:
      return mx_element(p.fmt, x, static_cast<std::uint8_t>(state), p.mode, p.sr_bits, rand);
    case ScaleRule::mx_torchao:
      return mx_torchao_element(p.fmt, x, static_cast<std::uint8_t>(state), p.mx_mode);
    case ScaleRule::mx_te:
      return mx_te_element(p.fmt, x, static_cast<std::uint8_t>(state));
    case ScaleRule::nvfp4_torchao:
    case ScaleRule::nvfp4_te:
      return nvfp4_element_scaled(p, x, nvfp4_element_scale(p, state));
    case ScaleRule::block_deepgemm:
      return {deepgemm_element(x, float_of(state)), 0};
    case ScaleRule::block_te:
      return te_block_element(p.fmt, p.fmax, x, float_of(state));
    case ScaleRule::block_torchao:
      return torchao_block_element(p.fmt, p.fmax, x, float_of(state));
    default:
      break;
  }
  const float s = float_of(state);
  switch (p.element) {
    case ElementKind::int8: {
      if (s == 0.0f) return {0, 0};  // all-zero group: codes 0, no division
      const Int8Encoded e =
          round_to_int8(absmax_scale(x, s, static_cast<float>(kInt8Max), p.order, p.sfu),
                        Rounding{p.mode, p.sr_bits}, rand);
      return {static_cast<std::uint8_t>(e.code), e.flags};
    }
    case ElementKind::float_format: {
      if (p.rule != ScaleRule::absmax) return scaled_cast_mul(p.fmt, x, s, p.mode, p.sr_bits, rand);
      // All-zero group: no scaling, the signed zero itself is cast.
      const float y = s == 0.0f ? x : absmax_scale(x, s, p.fmax, p.order);
      return cast_fp32(p.fmt, y, Rounding{p.mode, p.sr_bits, Overflow::satfinite}, rand);
    }
    case ElementKind::codebook: {
      const float n = codebook_normalize(x, s, p.norm, p.sfu);
      if (sr) return {codebook_stochastic(table, n, uniform_from_word(word)), 0};
      return {codebook_nearest(table, n, p.tie), 0};
    }
  }
  return {0, 0};
}
EXMY_HD Encoded quant_element(const QuantPlan& p, float x, std::uint32_t state,
                              std::uint32_t word) {
  return quant_element(p, p.codebook, x, state, word);
}

// The fp32 value of `code` in a group with state word `state` (`table` as for quant_element).
// The 2-D block rules read the stored state (stored_state), their dequantization scale.
EXMY_HD float dequant_element(const QuantPlan& p, const float* table, std::uint32_t code,
                              std::uint32_t state) {
  switch (p.rule) {
    case ScaleRule::mx:
    case ScaleRule::mx_torchao:  // torchao's to_dtype is the OCP dequantization
    case ScaleRule::mx_te:
      return mx_dequant(p.fmt, code, static_cast<std::uint8_t>(state));
    case ScaleRule::nvfp4_torchao:
      return nvfp4_torchao_dequant(code, static_cast<std::uint8_t>(state), p.tensor);
    case ScaleRule::nvfp4_te:
      return nvfp4_te_dequant(code, static_cast<std::uint8_t>(state), p.tensor);
    case ScaleRule::block_deepgemm:
    case ScaleRule::block_te:
    case ScaleRule::block_torchao:
      return rn32_mul(to_float(p.fmt, code), float_of(state));
    default:
      break;
  }
  const float s = float_of(state);
  switch (p.element) {
    case ElementKind::int8:
      return dequant_absmax(static_cast<float>(static_cast<std::int8_t>(code)), s,
                            static_cast<float>(kInt8Max));
    case ElementKind::float_format: {
      const float v = to_float(p.fmt, code);
      switch (p.rule) {
        case ScaleRule::absmax:
          return dequant_absmax(v, s, p.fmax);
        case ScaleRule::torchao:
          return dequant_torchao(v, s);
        default:  // te, te_current
          return dequant_te(v, s);
      }
    }
    case ElementKind::codebook:
      return codebook_dequant(table, static_cast<std::uint8_t>(code), s, p.norm);
  }
  return 0.0f;
}
EXMY_HD float dequant_element(const QuantPlan& p, std::uint32_t code, std::uint32_t state) {
  return dequant_element(p, p.codebook, code, state);
}

}  // namespace exmy::native
