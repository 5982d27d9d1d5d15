// TransformerEngine's NVFP4 training pieces (docs/SEMANTICS.md 7.18-7.20). Written from TE's
// sources at commit d0067d0d (NVIDIA/TransformerEngine, 2.20.0.dev0): custom_recipes/
// reference_nvfp4.py (RHT, 4over6), tensor/nvfp4_tensor.py (sign vector, RHT matrix), common/util/
// curanddx.hpp (Philox), common/cast/nvfp4/specialized/quantize_transpose_nvfp4_tuned_1D.cuh and
// common/util/ptx_arch_spec.cuh (the stochastic-rounding kernel's words and cvt.rs operands).
#include "sim/layer/nvfp4_train.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "sim/common/error.hpp"
#include "sim/gemm/accum_model.hpp"
#include "sim/gemm/gemm.hpp"
#include "sim/native/philox.hpp"
#include "sim/native/quant_absmax.hpp"
#include "sim/native/quant_fp32.hpp"
#include "sim/native/quant_nvfp4.hpp"

namespace exmy::layer {

using native::CvtRsTarget;

std::uint16_t te_rht_sign_mask() {
  std::uint16_t m = 0;
  for (int i = 0; i < 16; ++i) {
    if (kTeRhtSigns[i] == -1) m = static_cast<std::uint16_t>(m | (1u << i));
  }
  return m;
}

std::array<std::uint16_t, 256> te_rht_matrix_bf16(bool with_signs) {
  std::array<std::uint16_t, 256> r{};
  for (int i = 0; i < 16; ++i) {
    for (int j = 0; j < 16; ++j) {
      const bool neg = ((__builtin_popcount(static_cast<unsigned>(i & j)) & 1) != 0) !=
                       (with_signs && kTeRhtSigns[i] == -1);
      r[static_cast<std::size_t>(16 * i + j)] = neg ? 0xBE80u : 0x3E80u;  // -0.25 / +0.25
    }
  }
  return r;
}

std::vector<std::uint16_t> te_rht_apply(const std::vector<std::uint16_t>& x, std::size_t rows,
                                        std::size_t cols, const std::string& accum,
                                        bool with_signs) {
  if (cols % 16 != 0 || x.size() != rows * cols) {
    throw InputError("--rht: expected a last dimension divisible by 16, got " +
                     std::to_string(cols));
  }
  const std::size_t m = rows * (cols / 16);
  std::vector<std::uint16_t> out(x.size());
  if (m == 0) return out;
  const gemm::AccumModel model = gemm::parse_accum_model(accum, 16);
  const std::array<std::uint16_t, 256> r = te_rht_matrix_bf16(with_signs);
  std::vector<std::uint16_t> bt(256);  // B = R^T: B[j][i] = R[i][j]
  for (int i = 0; i < 16; ++i) {
    for (int j = 0; j < 16; ++j) bt[16 * j + i] = r[16 * i + j];
  }
  const gemm::Operand b = gemm::operand_from_codes(bt, 16, 16, formats::bf16);
  // A block of rows of the (m x 16) view at a time: the operand holds doubles.
  constexpr std::size_t kRows = std::size_t{1} << 16;
  for (std::size_t r0 = 0; r0 < m; r0 += kRows) {
    const std::size_t r1 = r0 + kRows < m ? r0 + kRows : m;
    const std::vector<std::uint16_t> part(x.begin() + static_cast<std::ptrdiff_t>(16 * r0),
                                          x.begin() + static_cast<std::ptrdiff_t>(16 * r1));
    const gemm::Operand a = gemm::operand_from_codes(part, r1 - r0, 16, formats::bf16);
    const std::vector<std::uint32_t> c = gemm::gemm(a, b, model, gemm::OutFormat::bf16);
    for (std::size_t k = 0; k < c.size(); ++k) out[16 * r0 + k] = static_cast<std::uint16_t>(c[k]);
  }
  return out;
}

std::uint32_t te_philox_word(std::uint64_t seed, std::uint64_t offset, std::uint64_t subsequence,
                             std::uint64_t n) {
  // init: ctr = (0, 0, 0, 0); skip_subsequence adds to (z, w), skip_offset to (x, y) (from zero
  // neither carries); generate4 returns the block at ctr and increments ctr as 128 bits.
  const std::uint64_t lo = offset + n / 4;
  const std::uint64_t hi = subsequence + (lo < offset ? 1u : 0u);
  const native::Philox4 ctr{{static_cast<std::uint32_t>(lo), static_cast<std::uint32_t>(lo >> 32),
                             static_cast<std::uint32_t>(hi), static_cast<std::uint32_t>(hi >> 32)}};
  return native::philox4x32_10(ctr, static_cast<std::uint32_t>(seed),
                               static_cast<std::uint32_t>(seed >> 32))
      .w[n % 4];
}

TeSrWord te_tuned_1d_word(std::size_t rows, std::size_t cols, std::size_t r, std::size_t c,
                          bool transposed_too, bool columnwise_output) {
  // The kernel's constants: CHUNK 128 x 128, TILE 64 x 64 (STAGES_X = 2), THREADS_NUM 128.
  constexpr std::size_t kChunk = 128, kTile = 64, kThreads = 128;
  (void)rows;
  const std::size_t grid_x = (cols + kChunk - 1) / kChunk;
  const std::size_t bx = c / kChunk, by = r / kChunk;
  const std::size_t rr = r % kChunk, cc = c % kChunk;
  const std::size_t stage = (rr / kTile) * 2 + cc / kTile;
  const std::size_t tr = rr % kTile, tc = cc % kTile;
  const std::size_t per_stage = transposed_too ? 16 : 8;  // words a thread draws per stage
  TeSrWord w;
  std::size_t thread = 0;
  if (!columnwise_output) {
    // rowwise_scaling: thread (tid_Y, tid_X) = (t / 4, t % 4) quantizes the 16-block at columns
    // 16 tid_X of rows tid_Y + 32 it; its two waves hold the block's 8-element halves in the
    // order ((w + bank_group) 8) mod 16, bank_group = lane / 16; each wave draws two words
    // (elements 0-3, 4-7 of the half).
    const std::size_t it = tr / 32, tid_y = tr % 32, tid_x = tc / 16;
    thread = tid_y * 4 + tid_x;
    const std::size_t bank_group = (thread % 32) / 16;
    const std::size_t o = tc % 16, half = o / 8;
    const std::size_t wave = half ^ bank_group;
    const std::size_t j = o % 8;
    w.n = stage * per_stage + it * 4 + wave * 2 + j / 4;
    w.slot = static_cast<int>(j % 4);
  } else {
    // colwise_scaling (after the stage's rowwise words): lane l holds columns 2l, 2l + 1 of the
    // tile, warp v the 16-row block (l / 2 + v) mod 4; per column w, two 8-row halves e, two
    // words each.
    const std::size_t lane = tc / 2, col = tc % 2, yb = tr / 16;
    const std::size_t warp = (yb + 4 - (lane / 2) % 4) % 4;
    thread = warp * 32 + lane;
    const std::size_t o = tr % 16;
    w.n = stage * per_stage + 8 + col * 4 + (o / 8) * 2 + (o % 8) / 4;
    w.slot = static_cast<int>(o % 4);
  }
  w.subsequence = thread + bx * kThreads + by * grid_x * kThreads;
  return w;
}

void check_train_options(const quant::Options& opt, const Nvfp4TrainOptions& t, bool bf16_input) {
  if (!t.given()) return;
  if (!t.any()) {
    throw InputError(
        "--rht-accum, --rht-no-signs, --philox-offset, --sr-both, --sr-arch, "
        "--four-over-six-err, --e4m3-max: expected --rht, --sr or --four-over-six");
  }
  const bool s1d = opt.scheme.kind == quant::Granularity::nvfp4;
  const bool s2d = opt.scheme.kind == quant::Granularity::nvfp4_2d;
  if (!(s1d || s2d) || opt.variant != native::CastVariant::te || !opt.two_level) {
    throw InputError(
        "--columnwise, --rht, --sr and --four-over-six are TransformerEngine's NVFP4 options: "
        "expected --scheme nvfp4 (or nvfp4:16x16) --to e2m1fn --variant te --two-level");
  }
  if (opt.transpose) throw InputError("--transpose: does not apply with --columnwise/--rht/--sr");
  if (t.rht && !t.columnwise) {
    throw InputError(
        "--rht: TransformerEngine applies the RHT to the columnwise (wgrad) copy "
        "only; add --columnwise");
  }
  if (t.rht && !bf16_input) {
    throw InputError("--rht: TransformerEngine's RHT takes bf16 input only (--in-format bf16)");
  }
  if (t.rht && s2d) {
    throw InputError("--rht: not with --scheme nvfp4:16x16 (TE's 2-D weight tiles take no RHT)");
  }
  if (t.four_over_six && (t.rht || t.sr)) {
    throw InputError(
        "--four-over-six: TransformerEngine's 4over6 supports neither RHT nor "
        "stochastic rounding (--rht, --sr)");
  }
  if (t.four_over_six && t.e4m3_max != 256 && t.e4m3_max != 448) {
    throw InputError("--e4m3-max: expected 256 or 448");
  }
  if (!t.four_over_six && (t.e4m3_max != 256 || t.mse || t.err_fast)) {
    throw InputError("--e4m3-max, --four-over-six-err: expected --four-over-six");
  }
  if (t.sr) {
    if (!bf16_input) {
      throw InputError(
          "--sr: the modelled kernel (TE's tuned 1-D NVFP4 kernel) takes bf16 "
          "input; TE quantizes other dtypes with another kernel (not modelled)");
    }
    if (s2d) {
      throw InputError(
          "--sr: not with --scheme nvfp4:16x16 (TE's 2-D kernel's words are not "
          "modelled; its recipe rounds weights to nearest)");
    }
    if (t.rht && t.sr_transposed_too) {
      throw InputError(
          "--sr-both: the RHT copy is quantized by a launch of its own (TE's "
          "unfused RHT path); drop --sr-both");
    }
    if (t.columnwise && !t.rht && !t.sr_transposed_too) {
      throw InputError(
          "--columnwise --sr without --rht: TE's tuned kernel writes the "
          "columnwise copy only with the rowwise one; add --sr-both");
    }
  } else if (t.sr_transposed_too || t.philox_offset != 0 || t.arch != native::CvtRsArch::sm100a) {
    throw InputError("--sr-both, --sr-arch, --philox-offset: expected --sr");
  }
  if (!t.rht && (!t.rht_signs || t.rht_accum != "sm100")) {
    throw InputError("--rht-accum, --rht-no-signs: expected --rht");
  }
}

namespace {

float tensor_amax_of(const std::vector<float>& x, const quant::Options& opt) {
  if (opt.tensor_amax == opt.tensor_amax) return opt.tensor_amax;  // given
  float a = native::kAbsmaxInit;                                   // torch.max(|x|): NaN propagates
  for (const float v : x) a = native::absmax_combine(a, v, native::NanPolicy::propagate);
  return a;
}

// 4over6 (reference_nvfp4.py _quantize_blockwise_4over6_reference, MAE/MSE, not fast math) on
// the rows x cols matrix t, 1 x 16 or 16 x 16 tiles (padded with zeros as _pad_tensor does).
quant::Quantized four_over_six(const std::vector<float>& t, std::size_t rows, std::size_t cols,
                               const quant::Options& opt, const Nvfp4TrainOptions& o) {
  using native::rn_add;
  using native::rn_div;
  using native::rn_mul;
  using native::rn_sub;
  const bool tile2d = opt.scheme.kind == quant::Granularity::nvfp4_2d;
  const std::size_t ty = tile2d ? 16 : 1;
  const std::size_t rp = (rows + ty - 1) / ty * ty, cp = (cols + 15) / 16 * 16;
  const std::size_t nbx = cp / 16, nby = rp / ty;
  const auto at = [&](std::size_t r, std::size_t c) {
    return r < rows && c < cols ? t[r * cols + c] : 0.0f;
  };
  const float g = tensor_amax_of(t, opt);
  const float denom = static_cast<float>(6 * o.e4m3_max);  // 1536 or 2688, exact
  float ges = rn_div(denom, g);
  if (ges > native::kFltMax) ges = native::kFltMax;
  if (ges == 0.0f) ges = 1.0f;
  native::Nvfp4Tensor level;
  level.two_level = true;
  level.global_encode = ges;
  level.global_decode = rn_div(1.0f, ges);
  constexpr FloatFormat kE2m1 = formats::e2m1fn;
  quant::Quantized q;
  q.shape = {rows, cols};
  q.codes.assign(rows * cols, 0);
  q.scale_codes.assign(nby * nbx, 0);
  q.tensor_scale = level.global_decode;
  std::vector<float> err_row[2];
  for (std::size_t by = 0; by < nby; ++by) {
    for (std::size_t bx = 0; bx < nbx; ++bx) {
      float vmax = native::kAbsmaxInit;
      for (std::size_t r = by * ty; r < (by + 1) * ty; ++r) {
        for (std::size_t c = bx * 16; c < bx * 16 + 16; ++c) {
          vmax = native::absmax_combine(vmax, at(r, c), native::NanPolicy::propagate);
        }
      }
      const float base = rn_mul(rn_div(vmax, 6.0f), ges);
      std::uint8_t code[2];
      float es[2], sf[2];
      for (int k = 0; k < 2; ++k) {  // 0: map-to-4 (base * 1.5), 1: map-to-6
        float d = k == 0 ? rn_mul(base, 1.5f) : base;
        if (d == d)
          d = d > native::kE4m3Max    ? native::kE4m3Max
              : d < -native::kE4m3Max ? -native::kE4m3Max
                                      : d;
        code[k] = native::e4m3_from_clamped(d);
        sf[k] = native::e4m3_value(code[k]);
        es[k] = native::nvfp4_te_factor(sf[k], level);
        err_row[k].assign(ty, 0.0f);
      }
      for (std::size_t i = 0; i < ty; ++i) {
        const std::size_t r = by * ty + i;
        for (std::size_t c = bx * 16; c < bx * 16 + 16; ++c) {
          const float x = at(r, c);
          // fast math: the candidate's exact E2M1 x E4M3 product (an fp16 value in the kernel)
          // against RN32(x ges); otherwise the candidate's value in x's domain against x.
          const float xs = o.err_fast ? rn_mul(x, ges) : x;
          for (int k = 0; k < 2; ++k) {
            const std::uint8_t e = native::nvfp4_te_scaled(x, es[k]).code;
            const float p = rn_mul(native::to_float(kE2m1, e), sf[k]);
            const float v = o.err_fast ? p : rn_div(rn_mul(p, g), denom);
            const float diff = rn_sub(v, xs);
            err_row[k][i] = rn_add(err_row[k][i], o.mse ? rn_mul(diff, diff) : native::abs32(diff));
          }
        }
      }
      float err[2];
      for (int k = 0; k < 2; ++k) {
        std::vector<float>& e = err_row[k];
        if (ty == 1) {
          err[k] = e[0];
        } else {  // _sum_4over6_2d_error: the warp's halving tree over the 16 rows
          for (std::size_t h = 8; h >= 1; h /= 2) {
            for (std::size_t i = 0; i < h; ++i) e[i] = rn_add(e[i], e[i + h]);
          }
          err[k] = e[0];
        }
      }
      const int pick = err[0] < err[1] ? 0 : 1;  // ties and NaN: map-to-6
      q.scale_codes[by * nbx + bx] = code[pick];
      for (std::size_t r = by * ty; r < (by + 1) * ty && r < rows; ++r) {
        for (std::size_t c = bx * 16; c < bx * 16 + 16 && c < cols; ++c) {
          q.codes[r * cols + c] = native::nvfp4_te_scaled(t[r * cols + c], es[pick]).code;
        }
      }
    }
  }
  q.state_shape = quant::state_shape(opt.scheme, {rows, cols});
  return q;
}

}  // namespace

namespace {

// Rows [r0, r1) of the tensor quantized (X, X^T or RHT(X^T), R x C) as fp32 values, made from the
// input when asked: the whole tensor is never held in fp32 (issue 36's memory bound). With t.rht
// the bf16 codes of RHT(X^T)'s rows are appended to rht_bits when given.
std::vector<float> train_rows(const quant::Values& x, std::span<const std::uint16_t> x_bf16,
                              std::size_t rows, std::size_t cols, const Nvfp4TrainOptions& t,
                              std::size_t r0, std::size_t r1,
                              std::vector<std::uint16_t>* rht_bits) {
  const std::size_t C = t.columnwise ? rows : cols;
  std::vector<float> v((r1 - r0) * C);
  if (t.rht) {
    // Row r of X^T is column r of X; the RHT mixes 16 consecutive elements of a row (te_rht_apply),
    // so a block of rows is transformed on its own.
    std::vector<std::uint16_t> xt((r1 - r0) * C);
    for (std::size_t r = r0; r < r1; ++r) {
      for (std::size_t c = 0; c < C; ++c) xt[(r - r0) * C + c] = x_bf16[c * cols + r];
    }
    const std::vector<std::uint16_t> y = te_rht_apply(xt, r1 - r0, C, t.rht_accum, t.rht_signs);
    for (std::size_t k = 0; k < y.size(); ++k) v[k] = native::to_float(formats::bf16, y[k]);
    if (rht_bits != nullptr) rht_bits->insert(rht_bits->end(), y.begin(), y.end());
  } else {
    for (std::size_t r = r0; r < r1; ++r) {
      for (std::size_t c = 0; c < C; ++c) {
        v[(r - r0) * C + c] = t.columnwise ? x[c * cols + r] : x[r * cols + c];
      }
    }
  }
  return v;
}

// The quantization of rows [r0, r0 + R) of the tensor (v, R x C) as nvfp4_train_quantize defines
// it; r0 places the rows' stochastic-rounding words (TE's words depend on the element's place in
// the whole tensor of `rows` x `cols` input elements, R_all x C quantized).
quant::Quantized train_block(const std::vector<float>& v, std::size_t R, std::size_t C,
                             std::size_t r0, std::size_t R_all, std::size_t rows, std::size_t cols,
                             const quant::Options& opt, const Nvfp4TrainOptions& t) {
  if (t.four_over_six) return four_over_six(v, R, C, opt, t);
  quant::Quantized q = quant::quantize(quant::Values(v), {R, C}, opt, false);
  if (!t.sr) return q;
  // The scales are the te rule's (quantize() above); the elements are rounded by cvt.rs with
  // the words of the kernel's launch on its input (X for the rowwise copy and for the columnwise
  // copy of a launch that writes both; RHT(X^T) for TE's separate RHT launch).
  const native::Nvfp4Tensor level = quant::nvfp4_tensor_level(opt, tensor_amax_of(v, opt));
  if (native::bits_of(quant::nvfp4_stored_scale(opt, level)) != native::bits_of(q.tensor_scale)) {
    throw std::logic_error("nvfp4 --sr: tensor level differs from quantize()'s");
  }
  const bool from_x = t.columnwise && !t.rht;  // the colwise output of a launch on X
  for (std::size_t r = 0; r < R; ++r) {
    const std::size_t rg = r0 + r;  // the row in the whole tensor
    for (std::size_t c = 0; c < C; ++c) {
      const float es = native::nvfp4_te_element_scale(q.scale_codes[r * (C / 16) + c / 16], level);
      const float y = native::rn_mul(v[r * C + c], es);
      const TeSrWord w = from_x ? te_tuned_1d_word(rows, cols, c, rg, true, true)
                                : te_tuned_1d_word(R_all, C, rg, c, t.sr_transposed_too, false);
      const std::uint32_t word = te_philox_word(t.seed, t.philox_offset, w.subsequence, w.n);
      const std::uint32_t bits = native::cvt_rs_x4_byte(CvtRsTarget::e2m1, t.arch, w.slot, word);
      q.codes[r * C + c] = static_cast<std::uint8_t>(
          native::cvt_rs_element(CvtRsTarget::e2m1, native::bits_of(y), bits));
    }
  }
  return q;
}

// The tensor's absmax two ways, a block of rows at a time: `elements` over every element with NaN
// propagating (torch.max(|x|), what 4over6 and the SR level read), `groups` as quantize() combines
// it (each NVFP4 group's absmax under the plan's NaN rule, the groups under opt.nan).
struct TrainAmax {
  float elements = native::kAbsmaxInit, groups = native::kAbsmaxInit;
};
void add_amax(TrainAmax& a, const std::vector<float>& v, std::size_t R, std::size_t C,
              const quant::Options& opt) {
  const native::NanPolicy group_nan = quant::make_plan(opt).nan;
  const bool tile2d = opt.scheme.kind == quant::Granularity::nvfp4_2d;
  for (const float e : v)
    a.elements = native::absmax_combine(a.elements, e, native::NanPolicy::propagate);
  const std::size_t ty = tile2d ? 16 : 1;  // blocks start at multiples of 16 rows
  for (std::size_t by = 0; by * ty < R; ++by) {
    for (std::size_t bx = 0; bx * 16 < C; ++bx) {
      float g = native::kAbsmaxInit;
      for (std::size_t r = by * ty; r < (by + 1) * ty && r < R; ++r) {
        for (std::size_t c = bx * 16; c < bx * 16 + 16 && c < C; ++c) {
          g = native::absmax_combine(g, v[r * C + c], group_nan);
        }
      }
      a.groups = native::absmax_combine(a.groups, g, opt.nan);
    }
  }
}

}  // namespace

quant::Quantized nvfp4_train_quantize(const quant::Values& x, std::span<const std::uint16_t> x_bf16,
                                      const std::vector<std::size_t>& shape,
                                      const quant::Options& opt, const Nvfp4TrainOptions& t,
                                      std::vector<std::uint16_t>* rht_out, bool pack_codes) {
  return detail::nvfp4_train_quantize_blocked(x, x_bf16, shape, opt, t, rht_out, pack_codes,
                                              std::size_t{1} << 20);
}

namespace detail {

quant::Quantized nvfp4_train_quantize_blocked(const quant::Values& x,
                                              std::span<const std::uint16_t> x_bf16,
                                              const std::vector<std::size_t>& shape,
                                              const quant::Options& opt, const Nvfp4TrainOptions& t,
                                              std::vector<std::uint16_t>* rht_out, bool pack_codes,
                                              std::size_t block_elements) {
  check_train_options(opt, t, !x_bf16.empty());
  std::size_t rows, cols;
  quant::matrix_view(shape, rows, cols);
  // The tensor quantized: X, X^T or RHT(X^T), R x C.
  const std::size_t R = t.columnwise ? cols : rows, C = t.columnwise ? rows : cols;
  if (t.rht && C % 16 != 0) {
    throw InputError("--rht: expected a last dimension divisible by 16, got " + std::to_string(C));
  }
  const std::vector<std::size_t> tshape{R, C};
  quant::check_shape(opt, tshape);
  if (t.sr && (rows % 32 != 0 || cols % 32 != 0)) {
    throw InputError(
        "--sr: TE's tuned 1-D kernel needs rows and columns that are multiples of "
        "32; TE quantizes other shapes with quantize_transpose_vector_blockwise_fp4 "
        "(not modelled)");
  }
  if (rht_out != nullptr) rht_out->clear();
  std::vector<std::uint16_t>* rht_bits = t.rht ? rht_out : nullptr;
  // Blocks of whole 16-row tiles of about block_elements elements (2^20). The codes of a block are
  // the whole tensor's: NVFP4's groups (1 x 16, or 16 x 16 tiles) lie in one block, TE's words take
  // the row's place in the whole tensor, and the tensor level is the whole tensor's absmax, found
  // in a first pass over the blocks (the RHT is computed twice) and passed on as a given amax: the
  // level quantize() derives from a given amax is the one it derives from its own.
  const std::size_t rb = C == 0 ? R : std::max<std::size_t>(16, block_elements / C / 16 * 16);
  quant::Options o = opt;
  bool streamed = R > rb && opt.mode != RoundMode::sr;  // exmy's own SR words index the whole
  const bool level_given =
      quant::option_given(opt.tensor_amax) || quant::option_given(opt.tensor_scale);
  if (streamed && !level_given) {
    TrainAmax a;
    for (std::size_t r0 = 0; r0 < R; r0 += rb) {
      const std::size_t r1 = std::min(R, r0 + rb);
      add_amax(a, train_rows(x, x_bf16, rows, cols, t, r0, r1, nullptr), r1 - r0, C, opt);
    }
    const float amax = t.four_over_six ? a.elements : a.groups;
    // A NaN, infinite or zero absmax, or (with --sr) a NaN the groups ignore: one block, as
    // before, so that the degenerate levels keep their whole-tensor results.
    const bool usable = amax > 0.0f && native::is_finite32(amax) &&
                        (!t.sr || native::bits_of(a.elements) == native::bits_of(a.groups));
    if (usable) {
      o.tensor_amax = amax;
    } else {
      streamed = false;
    }
  }
  if (!streamed) {
    const std::vector<float> v = train_rows(x, x_bf16, rows, cols, t, 0, R, rht_bits);
    quant::Quantized q = train_block(v, R, C, 0, R, rows, cols, opt, t);
    if (pack_codes) {
      native::pack4(q.codes.data(), q.codes.size(), q.codes.data());
      q.codes.resize(native::packed4_bytes(q.codes.size()));
      q.packed = true;
    }
    return q;
  }
  quant::Quantized q;
  q.shape = tshape;
  q.state_shape = quant::state_shape(opt.scheme, tshape);
  q.packed = pack_codes;
  q.codes.reserve(pack_codes ? native::packed4_bytes(R * C) : R * C);
  if (rht_bits != nullptr) rht_bits->reserve(R * C);
  for (std::size_t r0 = 0; r0 < R; r0 += rb) {
    const std::size_t r1 = std::min(R, r0 + rb);
    const std::vector<float> v = train_rows(x, x_bf16, rows, cols, t, r0, r1, rht_bits);
    quant::Quantized b = train_block(v, r1 - r0, C, r0, R, rows, cols, o, t);
    if (pack_codes) {  // C is a multiple of 16: a block's codes fill whole bytes
      const std::size_t at = q.codes.size();
      q.codes.resize(at + b.codes.size() / 2);
      native::pack4(b.codes.data(), b.codes.size(), q.codes.data() + at);
    } else {
      q.codes.insert(q.codes.end(), b.codes.begin(), b.codes.end());
    }
    q.scale_codes.insert(q.scale_codes.end(), b.scale_codes.begin(), b.scale_codes.end());
    q.state.insert(q.state.end(), b.state.begin(), b.state.end());
    q.flags |= b.flags;
    q.tensor_scale = b.tensor_scale;  // the same level in every block
  }
  return q;
}

}  // namespace detail

}  // namespace exmy::layer
