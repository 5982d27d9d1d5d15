// Training recipes, the CPU reference (docs/SEMANTICS.md 16.1). Written from torchao 0.18.0's
// torchao/float8/{config,float8_linear,float8_ops,float8_utils,float8_training_tensor}.py and
// TransformerEngine (NVIDIA/TransformerEngine d0067d0, August 2026):
// common/recipe/{__init__.py,delayed_scaling.cu}, pytorch/quantization.py, pytorch/module/
// {linear,base}.py; te-block and te-mxfp8 also pytorch/tensor/{float8_blockwise_tensor,
// mxfp8_tensor}.py (is_quantizable),
// TransformerEngine/tests/pytorch/references/blockwise_quantizer_reference.py
// and blockwise_fp8_gemm_reference.py, common/cast/mxfp8/quantize_mxfp8.cuh.
#include "sim/layer/recipe.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>

#include "sim/common/error.hpp"
#include "sim/format/registry.hpp"
#include "sim/gemm/gemm.hpp"
#include "sim/native/convert.hpp"
#include "sim/native/quant_fp32.hpp"
#include "sim/native/quant_scaled_cast.hpp"
#include "sim/quant/quantize.hpp"

namespace exmy::layer {

namespace {

using native::CastVariant;

struct RecipeNameEntry {
  const char* name;
  Recipe r;
};
constexpr RecipeNameEntry kRecipes[] = {{"torchao-tensorwise", Recipe::torchao_tensorwise},
                                        {"torchao-rowwise", Recipe::torchao_rowwise},
                                        {"torchao-rowwise-gw-hp", Recipe::torchao_rowwise_gw_hp},
                                        {"te-delayed", Recipe::te_delayed},
                                        {"te-current", Recipe::te_current},
                                        {"te-block", Recipe::te_block},
                                        {"te-mxfp8", Recipe::te_mxfp8}};

// One FP8 operand of a product: codes (rows x cols, the GEMM's row-major operand), their format
// and the multiplicative scale(s) of the cast (codes ~ x * scale): one, or one per row.
struct Fp8 {
  FloatFormat f;
  const char* name;
};
const Fp8 kE4{formats::e4m3fn, "e4m3fn"}, kE5{formats::e5m2, "e5m2"};

struct Cast {
  std::vector<std::uint16_t> codes;
  std::size_t rows = 0, cols = 0;
  Fp8 fmt;
  std::vector<float> scale;
};

enum class Axis : std::uint8_t { tensor, row, col };

// The scaled cast of the rows x cols matrix v (section 7.4's variant), groups by axis. `t`: the
// codes of the transpose (cols x rows), as the GEMM reads a transposed operand. `given`: the
// scale to use (delayed scaling), NaN for the computed one.
Cast cast(const std::vector<float>& v, std::size_t rows, std::size_t cols, Axis axis, bool t,
          const Fp8& f, CastVariant variant, bool pow2, float given = std::nanf(""),
          float epsilon = 0.0f) {
  quant::Options opt;
  opt.scheme.kind = axis == Axis::tensor ? quant::Granularity::tensor
                    : axis == Axis::row  ? quant::Granularity::row
                                         : quant::Granularity::col;
  opt.target = quant::float_target(f.f);
  opt.variant = variant;
  opt.pow2_scale = pow2;
  opt.given_scale = given;
  opt.te_amax_epsilon = epsilon;
  opt.transpose = t;
  const quant::Quantized q = quant::quantize(v, {rows, cols}, opt);
  Cast c;
  c.rows = t ? cols : rows;
  c.cols = t ? rows : cols;
  c.fmt = f;
  c.codes.assign(q.codes.begin(), q.codes.end());
  c.scale = q.state;
  return c;
}

// RN32(1 / s): torch's Tensor.reciprocal() (torchao's a_scale.reciprocal()) and TE's scale_inv.
float inv(float s) {
  return native::rn32_div(1.0f, s);
}
std::vector<float> inv(const std::vector<float>& s) {
  std::vector<float> r(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) r[i] = inv(s[i]);
  return r;
}

gemm::Operand operand(const Cast& c) {
  gemm::Operand o = gemm::operand_from_codes(c.codes, c.rows, c.cols, c.fmt.f);
  o.type = c.fmt.name;
  return o;
}

// torch._scaled_mm(a, b^T, scale_a, scale_b, out_dtype=dtype): per-tensor scales as cuBLASLt's
// alpha RN32(sa sb) (SEMANTICS 15.1); per-row scales (a_rows: one per row of A, b_cols: one per
// row of B) in the epilogue's `product` order. Output rounded to d.
std::vector<float> scaled_mm(const Cast& a, const Cast& b, const gemm::AccumModel& m, float sa,
                             float sb, const std::vector<float>& a_rows,
                             const std::vector<float>& b_cols, DType d) {
  const gemm::Operand A = operand(a), B = operand(b);
  gemm::RowColScales rc;
  rc.a_rows = a_rows;
  rc.b_cols = b_cols;
  const bool rows = !a_rows.empty() || !b_cols.empty();
  const double alpha = native::rn32_mul(sa, sb);
  return decode_output(gemm::gemm(A, B, m, out_format(d), alpha, rows ? &rc : nullptr), d);
}

// torchao's row-wise product without fast accumulation (float8_ops.addmm_float8_unwrapped):
// torch._scaled_mm with scales 1 (the tensor-wise cuBLAS kernel), the output rounded to d, then
// `output *= post_inverse_scale` with post_inverse_scale = RN32(inv_a[i] inv_b[j]) (fp32): each
// output RN_d(RN32(out * post)).
std::vector<float> scaled_mm_post(const Cast& a, const Cast& b, const gemm::AccumModel& m,
                                  const std::vector<float>& inv_a, const std::vector<float>& inv_b,
                                  DType d) {
  std::vector<float> out = scaled_mm(a, b, m, 1.0f, 1.0f, {}, {}, d);
  const std::size_t M = a.rows, N = b.rows;
  for (std::size_t i = 0; i < M; ++i) {
    const float ia = inv_a.size() == 1 ? inv_a[0] : inv_a[i];
    for (std::size_t j = 0; j < N; ++j) {
      const float ib = inv_b.size() == 1 ? inv_b[0] : inv_b[j];
      const float post = native::rn32_mul(ia, ib);
      out[i * N + j] = to_dtype(native::rn32_mul(out[i * N + j], post), d);
    }
  }
  return out;
}

std::vector<float> hp_mm(const std::vector<float>& a, std::size_t rows, const std::vector<float>& b,
                         std::size_t cols, std::size_t k, const gemm::AccumModel& m, DType d) {
  gemm::Operand A, B;
  gemm_operands(a, rows, b, cols, k, d, A, B);
  return decode_output(gemm::gemm(A, B, m, out_format(d)), d);
}

std::vector<float> transpose(const std::vector<float>& v, std::size_t rows, std::size_t cols) {
  std::vector<float> t(v.size());
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) t[c * rows + r] = v[r * cols + c];
  return t;
}

void check_fp8_shape(const char* what, std::size_t M, std::size_t N, std::size_t K) {
  // torch._scaled_mm (and TE's cuBLAS FP8 GEMMs) need K and N multiples of 16.
  if (K % 16 != 0 || N % 16 != 0) {
    throw InputError(std::string("--recipe: the FP8 product ") + what + " (" + std::to_string(M) +
                     " x " + std::to_string(N) + " x " + std::to_string(K) +
                     ") needs K and N multiples of 16, as torch._scaled_mm does");
  }
}

StateArray named(const char* name, const std::vector<float>& v) {
  return {name, {v.size()}, v, {}};
}

// ---- te-block, te-mxfp8 -------------------------------------------------------------------

// One operand of a blockwise-scaled FP8 GEMM as the GEMM reads it (rows x K, K contiguous): the
// codes and the quantizer's scales (te-block: the fp32 dequantization scales S of each tile_rows x
// 128 tile; te-mxfp8: the E8M0 code of each 1 x 32 block).
struct BlockCast {
  std::vector<std::uint16_t> codes;
  std::size_t rows = 0, cols = 0;
  Fp8 fmt;
  std::size_t tile_rows = 0;       // te-block: 1 or 128
  std::vector<float> scale_inv;    // te-block: ceil(rows / tile_rows) x ceil(cols / 128)
  std::vector<std::uint8_t> e8m0;  // te-mxfp8: rows x cols / 32
};

constexpr std::size_t kTeTile = 128;  // Float8BlockQuantizer's block_len
constexpr std::size_t kMxfp8Block = 32;

// Float8BlockQuantizer (blockwise_quantizer_reference.py, SEMANTICS 7.15's te rule): the rows x
// cols matrix v cut into tile_rows x 128 tiles (1x128 "1-D", 128x128 "2-D").
BlockCast te_tile_cast(const std::vector<float>& v, std::size_t rows, std::size_t cols,
                       std::size_t tile_rows, const Fp8& f, const RecipeConfig& cfg) {
  quant::Options opt;
  opt.scheme =
      quant::parse_scheme("block:" + std::to_string(tile_rows) + "x" + std::to_string(kTeTile));
  opt.target = quant::float_target(f.f);
  opt.variant = CastVariant::te;
  opt.scale_format =
      cfg.fp32_scales ? native::BlockScaleFormat::fp32 : native::BlockScaleFormat::pow2;
  opt.te_amax_epsilon = cfg.amax_epsilon;
  opt.source = native::Storage::bf16;  // torch.finfo(x.dtype).max of the bf16 activations
  const quant::Quantized q = quant::quantize(v, {rows, cols}, opt);
  BlockCast c;
  c.codes.assign(q.codes.begin(), q.codes.end());
  c.rows = rows;
  c.cols = cols;
  c.fmt = f;
  c.tile_rows = tile_rows;
  c.scale_inv = q.state;
  return c;
}

// A 128x128-tiled operand's columnwise copy: the codes and the tile scales transposed (TE's
// _quantize_square_block_tiling: "valid because of square block sizes").
BlockCast transpose_square(const BlockCast& c) {
  BlockCast t = c;
  t.rows = c.cols;
  t.cols = c.rows;
  for (std::size_t r = 0; r < c.rows; ++r)
    for (std::size_t k = 0; k < c.cols; ++k) t.codes[k * c.rows + r] = c.codes[r * c.cols + k];
  const std::size_t tr = (c.rows + kTeTile - 1) / kTeTile, tc = (c.cols + kTeTile - 1) / kTeTile;
  for (std::size_t i = 0; i < tr; ++i)
    for (std::size_t j = 0; j < tc; ++j) t.scale_inv[j * tr + i] = c.scale_inv[i * tc + j];
  return t;
}

// MXFP8Quantizer rowwise (SEMANTICS 7.6's te rule): 1x32 blocks along the rows of v. The
// columnwise copy of a tensor (32x1 blocks down its columns) is this applied to its transpose:
// the same blocks, so the same scale and codes, in the GEMM's K-contiguous layout.
BlockCast te_mx_cast(const std::vector<float>& v, std::size_t rows, std::size_t cols,
                     const Fp8& f) {
  quant::Options opt;
  opt.scheme = quant::parse_scheme("mx");
  opt.target = quant::float_target(f.f);
  opt.variant = CastVariant::te;
  const quant::Quantized q = quant::quantize(v, {rows, cols}, opt);
  BlockCast c;
  c.codes.assign(q.codes.begin(), q.codes.end());
  c.rows = rows;
  c.cols = cols;
  c.fmt = f;
  c.e8m0 = q.scale_codes;
  return c;
}

gemm::Operand block_operand(const BlockCast& c) {
  gemm::Operand o = gemm::operand_from_codes(c.codes, c.rows, c.cols, c.fmt.f);
  o.type = c.fmt.name;
  if (!c.scale_inv.empty()) {
    o.tile_scales = c.scale_inv;
    o.tile_rows = c.tile_rows;
    o.tile_cols = kTeTile;
  } else {
    constexpr FloatFormat kE8m0 = formats::e8m0fnu;
    o.scale_table.resize(256);
    for (unsigned k = 0; k < 256; ++k) o.scale_table[k] = native::to_double(kE8m0, k);
    o.scale_codes = c.e8m0;
    o.scale_block = kMxfp8Block;
    o.scale_emin = -127;
  }
  return o;
}

// TE's general_gemm of two block-scaled operands, C = A B^T, output rounded to d (bf16).
std::vector<float> block_mm(const BlockCast& a, const BlockCast& b, const gemm::AccumModel& m,
                            DType d) {
  return decode_output(gemm::gemm(block_operand(a), block_operand(b), m, out_format(d)), d);
}

void check_multiple(const char* recipe, const char* why, std::size_t q, std::size_t b,
                    std::size_t n, std::size_t m) {
  if (b % q != 0 || n % q != 0 || m % q != 0) {
    throw InputError(std::string("--recipe ") + recipe + ": b, n, m (" + std::to_string(b) + ", " +
                     std::to_string(n) + ", " + std::to_string(m) + ") must be multiples of " +
                     std::to_string(q) + " (" + why + ")");
  }
}

StateArray tile_state(const char* name, const BlockCast& c) {
  return {name,
          {(c.rows + c.tile_rows - 1) / c.tile_rows, (c.cols + kTeTile - 1) / kTeTile},
          c.scale_inv,
          {}};
}
StateArray e8m0_state(const char* name, const BlockCast& c) {
  return {name, {c.rows, c.cols / kMxfp8Block}, {}, c.e8m0};
}

// TransformerEngine's fused delayed-scaling update (common/recipe/delayed_scaling.cu,
// amax_and_scale_update_impl::kernel_bulk) of one tensor's history column h (length L, row 0
// the step's amax): amax = max (fmaxf from 0: NaN entries skipped) over the history, or h[0]
// (most_recent); the history rolled by -1 (h'[i] = h[i+1], h'[L-1] = h[0]) and h'[0] = 0;
// scale = RN32(scaled_max / amax) with scaled_max = RN32(fmax 2^-margin) where amax is finite
// and > 0, else the previous scale; an infinite scale becomes FLT_MAX.
float te_delayed_update(std::vector<float>& h, float prev_scale, float fmax, int margin,
                        bool amax_max) {
  const std::size_t L = h.size();
  const float last = h[0];
  float amax = 0.0f;
  std::vector<float> r(L);
  for (std::size_t i = 0; i < L; ++i) {
    const float a = i + 1 < L ? h[i + 1] : last;
    amax = std::fmax(amax, a);
    r[i] = i > 0 ? a : 0.0f;
  }
  h = r;
  if (!amax_max) amax = last;
  const float scaled_max = native::rn32_mul(fmax, std::ldexp(1.0f, -margin));
  float s = std::isfinite(amax) && amax > 0.0f ? native::rn32_div(scaled_max, amax) : prev_scale;
  if (std::isinf(s)) s = std::numeric_limits<float>::max();
  return s;
}

// The absolute maximum of a tensor as TE's cast kernels record it into amax_history[0] (fmaxf
// over |x|: NaN skipped).
float amax_of(const std::vector<float>& v) {
  float a = 0.0f;
  for (float x : v) a = std::fmax(a, std::fabs(x));
  return a;
}

}  // namespace

Recipe parse_recipe(const std::string& text) {
  for (const auto& e : kRecipes)
    if (text == e.name) return e.r;
  throw InputError("--recipe '" + text + "': expected " + recipe_list());
}

std::string recipe_name(Recipe r) {
  for (const auto& e : kRecipes)
    if (e.r == r) return e.name;
  return "?";
}

const char* recipe_list() {
  return "torchao-tensorwise, torchao-rowwise, torchao-rowwise-gw-hp, te-delayed, te-current, "
         "te-block or te-mxfp8";
}

DelayedState DelayedState::fresh(std::size_t history) {
  DelayedState s;
  s.history = history;
  s.amax_history.assign(history * 3, 0.0f);
  s.scale.assign(3, 1.0f);
  return s;
}

gemm::AccumModel fast_accum_model(const gemm::AccumModel& fp8) {
  gemm::AccumModel m = fp8;
  if (fp8.library && fp8.kind == gemm::AccumKind::hw && fp8.chunk > 0) {
    m.chunk = 0;
    // Measured on an H200 (bench/results/2026-12-01-h200-recipes.md): torchao's forward
    // products (cuBLAS nvjet qqtst kernels) at 15 shapes; not part of the profile's verified set.
    m.library = false;
    m.name = fp8.name + " (fast accumulation: no promotion)";
  }
  return m;
}

RecipeResult run_recipe(const RecipeConfig& cfg, const LayerShape& s, const MatView& xv,
                        const MatView& wv, const MatView& gv, const DelayedState* prev) {
  if (cfg.dtype != DType::bf16) {
    throw InputError("--recipe " + recipe_name(cfg.recipe) + ": --dtype " + dtype_name(cfg.dtype) +
                     " (the recipes are modelled for bf16 models)");
  }
  const std::size_t b = s.b, n = s.n, m = s.m;
  const DType d = cfg.dtype;
  const std::vector<float> x = contiguous(xv), w = contiguous(wv), g = contiguous(gv);
  const Fp8& e4 = kE4;
  const Fp8& e5 = kE5;
  RecipeResult r;
  const bool gw_hp = cfg.recipe == Recipe::torchao_rowwise_gw_hp;
  if (cfg.recipe == Recipe::te_block) {
    check_multiple("te-block",
                   "Float8BlockQuantizer.is_quantizable: every tensor's dimensions "
                   "divisible by its block_len 128",
                   kTeTile, b, n, m);
  }
  if (cfg.recipe == Recipe::te_mxfp8) {
    check_multiple("te-mxfp8", "MXFP8Quantizer.is_quantizable: both dimensions divisible by 32",
                   kMxfp8Block, b, n, m);
  }
  check_fp8_shape("Y", b, m, n);
  check_fp8_shape("X_grad", b, n, m);
  if (!gw_hp) check_fp8_shape("W_grad", m, n, b);
  switch (cfg.recipe) {
    case Recipe::torchao_tensorwise: {
      // Float8LinearConfig(): every cast dynamic tensor-wise, X and W e4m3fn, G e5m2, no
      // power-of-two rounding; the forward with use_fast_accum=True, the backward without; each
      // product torch._scaled_mm with the reciprocal scales.
      constexpr CastVariant V = CastVariant::torchao;
      const Cast qx = cast(x, b, n, Axis::tensor, false, e4, V, false);
      const Cast qw = cast(w, m, n, Axis::tensor, false, e4, V, false);
      r.y = scaled_mm(qx, qw, cfg.fp8_fast, inv(qx.scale[0]), inv(qw.scale[0]), {}, {}, d);
      const Cast qg = cast(g, b, m, Axis::tensor, false, e5, V, false);
      const Cast qwt = cast(w, m, n, Axis::tensor, true, e4, V, false);
      r.x_grad = scaled_mm(qg, qwt, cfg.fp8, inv(qg.scale[0]), inv(qwt.scale[0]), {}, {}, d);
      const Cast qgt = cast(g, b, m, Axis::tensor, true, e5, V, false);
      const Cast qxt = cast(x, b, n, Axis::tensor, true, e4, V, false);
      r.w_grad = scaled_mm(qgt, qxt, cfg.fp8, inv(qgt.scale[0]), inv(qxt.scale[0]), {}, {}, d);
      r.state = {named("scale_x", qx.scale), named("scale_w", qw.scale),
                 named("scale_g", qg.scale)};
      break;
    }
    case Recipe::torchao_rowwise:
    case Recipe::torchao_rowwise_gw_hp: {
      // ROWWISE: every cast axis-wise e4m3fn (G too) with power-of-two scales. Y: X per row, W per
      // row (axiswise_dim 0 of W^T), the row-wise _scaled_mm with use_fast_accum=True. X_grad:
      // G per row; W per column (axiswise_dim -1 of W^T), or (gw-hp) W per tensor; W_grad: G per
      // column, X per column (axiswise_dim 0); both backward products without fast accumulation,
      // i.e. scales 1 and the post-scaling of float8_ops. gw-hp: W_grad = G^T X in bf16.
      constexpr CastVariant V = CastVariant::torchao;
      const Cast qx = cast(x, b, n, Axis::row, false, e4, V, true);
      const Cast qw = cast(w, m, n, Axis::row, false, e4, V, true);
      r.y = scaled_mm(qx, qw, cfg.fp8_fast, 1.0f, 1.0f, inv(qx.scale), inv(qw.scale), d);
      const Cast qg = cast(g, b, m, Axis::row, false, e4, V, true);
      const Cast qwt = gw_hp ? cast(w, m, n, Axis::tensor, true, e4, V, true)
                             : cast(w, m, n, Axis::col, true, e4, V, true);
      r.x_grad = scaled_mm_post(qg, qwt, cfg.fp8, inv(qg.scale), inv(qwt.scale), d);
      r.state = {named("scale_x", qx.scale), named("scale_w", qw.scale), named("scale_g", qg.scale),
                 named("scale_w_dgrad", qwt.scale)};
      if (gw_hp) {
        r.w_grad = hp_mm(transpose(g, b, m), m, transpose(x, b, n), n, b, cfg.hp, d);
      } else {
        const Cast qgt = cast(g, b, m, Axis::col, true, e4, V, true);
        const Cast qxt = cast(x, b, n, Axis::col, true, e4, V, true);
        r.w_grad = scaled_mm_post(qgt, qxt, cfg.fp8, inv(qgt.scale), inv(qxt.scale), d);
        r.state.push_back(named("scale_g_wgrad", qgt.scale));
        r.state.push_back(named("scale_x_wgrad", qxt.scale));
      }
      break;
    }
    case Recipe::te_current: {
      // Float8CurrentScaling: per-tensor scales from this step's amax (compute_scale_from_amax,
      // section 7.4 te-current), HYBRID (X, W e4m3fn; G e5m2) or E4M3; fprop without the split
      // accumulator, dgrad and wgrad with it; GEMMs scaled by the scale_inv's.
      constexpr CastVariant V = CastVariant::te_current;
      const Fp8& fg = cfg.te_hybrid ? e5 : e4;
      const float eps = cfg.amax_epsilon;
      const Cast qx = cast(x, b, n, Axis::tensor, false, e4, V, cfg.pow2, std::nanf(""), eps);
      const Cast qw = cast(w, m, n, Axis::tensor, false, e4, V, cfg.pow2, std::nanf(""), eps);
      const Cast qg = cast(g, b, m, Axis::tensor, false, fg, V, cfg.pow2, std::nanf(""), eps);
      const Cast qwt = cast(w, m, n, Axis::tensor, true, e4, V, cfg.pow2, std::nanf(""), eps);
      const Cast qgt = cast(g, b, m, Axis::tensor, true, fg, V, cfg.pow2, std::nanf(""), eps);
      const Cast qxt = cast(x, b, n, Axis::tensor, true, e4, V, cfg.pow2, std::nanf(""), eps);
      r.y = scaled_mm(qx, qw, cfg.fp8_fast, inv(qx.scale[0]), inv(qw.scale[0]), {}, {}, d);
      r.x_grad = scaled_mm(qg, qwt, cfg.fp8, inv(qg.scale[0]), inv(qwt.scale[0]), {}, {}, d);
      r.w_grad = scaled_mm(qgt, qxt, cfg.fp8, inv(qgt.scale[0]), inv(qxt.scale[0]), {}, {}, d);
      r.state = {named("scale_x", qx.scale), named("scale_w", qw.scale),
                 named("scale_g", qg.scale)};
      break;
    }
    case Recipe::te_block: {
      // Float8BlockScaling: x_block_scaling_dim 1, w_block_scaling_dim 2, grad_block_scaling_dim
      // 1; E4M3 (default) or HYBRID (G in E5M2); power-of-two scales unless fp32 ones are asked
      // for; amax_epsilon 0; every GEMM with the split accumulator (cfg.fp8). Each tensor is
      // quantized rowwise and columnwise from its bf16 values (the columnwise copy of a 1-D
      // tensor is its transpose in 1x128 tiles; of W, the 128x128 codes and scales transposed).
      // Y = X W^T: X 1x128 . W 128x128; X_grad = G W: G 1x128 . W^T 128x128; W_grad = G^T X:
      // G^T 1x128 . X^T 1x128 (the GEMM's K is b).
      const Fp8& fg = cfg.te_hybrid ? e5 : e4;
      const BlockCast qx = te_tile_cast(x, b, n, 1, e4, cfg);
      const BlockCast qw = te_tile_cast(w, m, n, kTeTile, e4, cfg);
      const BlockCast qg = te_tile_cast(g, b, m, 1, fg, cfg);
      const BlockCast qxt = te_tile_cast(transpose(x, b, n), n, b, 1, e4, cfg);
      const BlockCast qgt = te_tile_cast(transpose(g, b, m), m, b, 1, fg, cfg);
      const BlockCast qwt = transpose_square(qw);
      r.y = block_mm(qx, qw, cfg.fp8, d);
      r.x_grad = block_mm(qg, qwt, cfg.fp8, d);
      r.w_grad = block_mm(qgt, qxt, cfg.fp8, d);
      r.state = {tile_state("scale_inv_x", qx), tile_state("scale_inv_w", qw),
                 tile_state("scale_inv_g", qg), tile_state("scale_inv_x_t", qxt),
                 tile_state("scale_inv_g_t", qgt)};
      break;
    }
    case Recipe::te_mxfp8: {
      // MXFP8BlockScaling: E4M3 (default) or HYBRID; one E8M0 scale per 32 consecutive values
      // along the GEMM's K of each operand, the rowwise and columnwise copies both quantized from
      // the bf16 values. Y: X rowwise . W rowwise (K = n); X_grad: G rowwise . W columnwise
      // (K = m); W_grad: G columnwise . X columnwise (K = b). The GEMM is cuBLASLt's MXFP8
      // (VEC32_UE8M0) block-scaled GEMM, Blackwell only: exmy's MX GEMM model (cfg.fp8, sm100 by
      // default: kind::mxf8f6f4).
      const Fp8& fg = cfg.te_hybrid ? e5 : e4;
      const BlockCast qx = te_mx_cast(x, b, n, e4);
      const BlockCast qw = te_mx_cast(w, m, n, e4);
      const BlockCast qg = te_mx_cast(g, b, m, fg);
      const BlockCast qwt = te_mx_cast(transpose(w, m, n), n, m, e4);
      const BlockCast qgt = te_mx_cast(transpose(g, b, m), m, b, fg);
      const BlockCast qxt = te_mx_cast(transpose(x, b, n), n, b, e4);
      r.y = block_mm(qx, qw, cfg.fp8, d);
      r.x_grad = block_mm(qg, qwt, cfg.fp8, d);
      r.w_grad = block_mm(qgt, qxt, cfg.fp8, d);
      r.state = {e8m0_state("scale_x", qx),    e8m0_state("scale_w", qw),
                 e8m0_state("scale_g", qg),    e8m0_state("scale_w_t", qwt),
                 e8m0_state("scale_g_t", qgt), e8m0_state("scale_x_t", qxt)};
      break;
    }
    case Recipe::te_delayed: {
      // DelayedScaling: the casts use the scales of the state before the step (scale[0..2] for
      // X, W, G); each tensor's amax is recorded into amax_history[0]; the forward tensors'
      // update runs at fp8_autocast exit, G's at the end of the backward (delayed_scaling.cu).
      const DelayedState st = prev != nullptr ? *prev : DelayedState::fresh(cfg.history);
      if (st.scale.size() != 3 || st.amax_history.size() != st.history * 3 || st.history == 0) {
        throw InputError("--state: expected amax_history of shape (L, 3), L >= 1, and scale (3)");
      }
      constexpr CastVariant V = CastVariant::te;
      const Fp8& fg = cfg.te_hybrid ? e5 : e4;
      const Cast qx = cast(x, b, n, Axis::tensor, false, e4, V, false, st.scale[0]);
      const Cast qw = cast(w, m, n, Axis::tensor, false, e4, V, false, st.scale[1]);
      const Cast qg = cast(g, b, m, Axis::tensor, false, fg, V, false, st.scale[2]);
      const Cast qwt = cast(w, m, n, Axis::tensor, true, e4, V, false, st.scale[1]);
      const Cast qgt = cast(g, b, m, Axis::tensor, true, fg, V, false, st.scale[2]);
      const Cast qxt = cast(x, b, n, Axis::tensor, true, e4, V, false, st.scale[0]);
      r.y = scaled_mm(qx, qw, cfg.fp8_fast, inv(st.scale[0]), inv(st.scale[1]), {}, {}, d);
      r.x_grad = scaled_mm(qg, qwt, cfg.fp8, inv(st.scale[2]), inv(st.scale[1]), {}, {}, d);
      r.w_grad = scaled_mm(qgt, qxt, cfg.fp8, inv(st.scale[2]), inv(st.scale[0]), {}, {}, d);
      DelayedState out = st;
      const float amax[3] = {amax_of(x), amax_of(w), amax_of(g)};
      const float fmax[3] = {native::format_max32(e4.f), native::format_max32(e4.f),
                             native::format_max32(fg.f)};
      for (int t = 0; t < 3; ++t) {
        std::vector<float> h(st.history);
        for (std::size_t i = 0; i < st.history; ++i) h[i] = st.amax_history[i * 3 + t];
        h[0] = std::fmax(h[0], amax[t]);  // the cast kernels' atomic max into row 0
        out.scale[t] = te_delayed_update(h, st.scale[t], fmax[t], cfg.margin, cfg.amax_max);
        for (std::size_t i = 0; i < st.history; ++i) out.amax_history[i * 3 + t] = h[i];
      }
      r.state = {
          {"amax_history", {st.history, 3}, out.amax_history, {}},
          {"scale", {3}, out.scale, {}},
          {"scale_inv_used", {3}, {inv(st.scale[0]), inv(st.scale[1]), inv(st.scale[2])}, {}}};
      break;
    }
  }
  return r;
}

}  // namespace exmy::layer
