// Tensor quantization and dequantization, the CPU reference (docs/SEMANTICS.md 7). The loops
// here only decide groups, states and layout; each element goes through the native:: functions
// the CUDA kernels use.
#include "sim/quant/quantize.hpp"

#include <string>

#include "sim/common/error.hpp"
#include "sim/native/convert.hpp"
#include "sim/native/philox.hpp"
#include "sim/native/quant_mx.hpp"

namespace exmy::quant {

void matrix_view(const std::vector<std::size_t>& shape, std::size_t& rows, std::size_t& cols) {
  if (shape.empty()) {
    rows = cols = 1;
    return;
  }
  cols = shape.back();
  rows = 1;
  for (std::size_t d = 0; d + 1 < shape.size(); ++d) rows *= shape[d];
}

std::size_t group_count(const Scheme& s, std::size_t rows, std::size_t cols) {
  switch (s.kind) {
    case Granularity::tensor:
      return 1;
    case Granularity::row:
      return rows;
    case Granularity::col:
      return cols;
    case Granularity::block:
    case Granularity::mx:
      return (rows * cols + s.block - 1) / s.block;
  }
  return 0;
}

std::size_t group_of(const Scheme& s, std::size_t /*rows*/, std::size_t cols, std::size_t r,
                     std::size_t c) {
  switch (s.kind) {
    case Granularity::tensor:
      return 0;
    case Granularity::row:
      return r;
    case Granularity::col:
      return c;
    case Granularity::block:
    case Granularity::mx:
      return (r * cols + c) / s.block;
  }
  return 0;
}

void validate_options(const Options& opt) {
  if (opt.scheme.kind == Granularity::mx && opt.target.kind != TargetKind::float_format) {
    throw InputError("scheme mx: expected a float element format (e4m3fn, e5m2, e2m1fn, ...)");
  }
  if (opt.scheme.kind == Granularity::mx && opt.variant != native::CastVariant::absmax) {
    throw InputError("scheme mx: its power-of-two scale is fixed; --variant does not apply");
  }
  if (opt.target.kind != TargetKind::float_format && opt.variant != native::CastVariant::absmax) {
    throw InputError("--variant te/torchao: expected a float target format");
  }
  if (opt.mode == RoundMode::sr && (opt.sr_bits < 1 || opt.sr_bits > 32)) {
    throw InputError("rounding sr:R: expected R in 1..32");
  }
}

namespace {

// The scale factor of a te / te_current / torchao group from its amax.
float variant_scale(const Options& opt, float amax, float fmax) {
  switch (opt.variant) {
    case native::CastVariant::te:
      return native::te_scale(amax, fmax, opt.te_margin, opt.te_prev_scale);
    case native::CastVariant::te_current:
      return native::te_current_scale(amax, fmax, opt.pow2_scale, opt.te_amax_epsilon);
    default:  // torchao
      return native::torchao_scale(amax, fmax, opt.torchao_fp16_source, opt.pow2_scale);
  }
}

// The random word of element i (flat input index) for the element casts.
std::uint32_t cast_word(const Options& opt, std::size_t i) {
  if (opt.mode != RoundMode::sr) return 0;
  return native::sr_word(native::philox_word(opt.seed, kStreamQuantCast, i), opt.sr_bits);
}

std::vector<float> group_absmax(const std::vector<float>& x, const Scheme& s, std::size_t rows,
                                std::size_t cols, native::NanPolicy nan) {
  std::vector<float> amax(group_count(s, rows, cols), native::kAbsmaxInit);
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < cols; ++c) {
      float& a = amax[group_of(s, rows, cols, r, c)];
      a = native::absmax_combine(a, x[r * cols + c], nan);
    }
  }
  return amax;
}

}  // namespace

std::vector<std::size_t> codes_shape(const std::vector<std::size_t>& shape, const Options& opt) {
  if (!opt.transpose) return shape;
  if (shape.size() != 2) {
    throw InputError("--transpose: expected a 2-d tensor, got " + std::to_string(shape.size()) +
                     " dimensions");
  }
  return {shape[1], shape[0]};
}

Quantized quantize(const std::vector<float>& x, const std::vector<std::size_t>& shape,
                   const Options& opt) {
  const std::vector<std::size_t> out_shape = codes_shape(shape, opt);
  validate_options(opt);
  std::size_t rows, cols;
  matrix_view(shape, rows, cols);
  if (rows * cols != x.size()) {
    throw InputError("input: shape has " + std::to_string(rows * cols) + " elements but " +
                     std::to_string(x.size()) + " values were given");
  }
  const Scheme& s = opt.scheme;
  const Target& t = opt.target;
  Quantized q;
  q.shape = out_shape;
  q.codes.assign(x.size(), 0);
  q.state_shape = {group_count(s, rows, cols)};
  const std::vector<float> amax = group_absmax(x, s, rows, cols, opt.nan);

  const float fmax = t.kind == TargetKind::float_format ? native::format_max32(t.fmt) : 0.0f;
  // The per-group state: absmax, or the scale factor of te / te_current / torchao.
  const bool given = opt.given_scale == opt.given_scale;
  if (s.kind == Granularity::mx) {
    q.mx_scales.resize(amax.size());
    for (std::size_t g = 0; g < amax.size(); ++g)
      q.mx_scales[g] = native::mx_scale_code(amax[g], t.fmt);
  } else if (opt.variant == native::CastVariant::absmax) {
    q.state = amax;
  } else {
    q.state.resize(amax.size());
    for (std::size_t g = 0; g < amax.size(); ++g) {
      q.state[g] = given ? opt.given_scale : variant_scale(opt, amax[g], fmax);
    }
  }

  const Rounding cast_rounding{opt.mode, opt.sr_bits, Overflow::satfinite};
  const bool codebook_sr = t.kind == TargetKind::codebook && opt.mode == RoundMode::sr;
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < cols; ++c) {
      const std::size_t i = r * cols + c;
      const std::size_t g = group_of(s, rows, cols, r, c);
      const float xi = x[i];
      std::uint8_t code = 0;
      std::uint32_t flags = 0;
      if (s.kind == Granularity::mx) {
        const Encoded e =
            native::mx_element(t.fmt, xi, q.mx_scales[g], opt.mode, opt.sr_bits, cast_word(opt, i));
        code = static_cast<std::uint8_t>(e.code);
        flags = e.flags;
      } else if (t.kind == TargetKind::int8) {
        const float a = q.state[g];
        if (a != 0.0f) {
          const native::Int8Encoded e =
              native::round_to_int8(native::absmax_scale(xi, a, 127.0f, opt.order),
                                    {opt.mode, opt.sr_bits}, cast_word(opt, i));
          code = static_cast<std::uint8_t>(e.code);
          flags = e.flags;
        }
      } else if (t.kind == TargetKind::float_format) {
        Encoded e;
        switch (opt.variant) {
          case native::CastVariant::absmax: {
            const float a = q.state[g];
            // All-zero group: no scaling, the signed zero itself is cast.
            const float y = a == 0.0f ? xi : native::absmax_scale(xi, a, fmax, opt.order);
            e = native::cast_fp32(t.fmt, y, cast_rounding, cast_word(opt, i));
            break;
          }
          case native::CastVariant::te:
          case native::CastVariant::te_current:
          case native::CastVariant::torchao:
            e = native::scaled_cast_mul(t.fmt, xi, q.state[g], opt.mode, opt.sr_bits,
                                        cast_word(opt, i));
            break;
        }
        code = static_cast<std::uint8_t>(e.code);
        flags = e.flags;
      } else {  // codebook
        const float n = native::codebook_normalize(xi, q.state[g], opt.norm);
        const float* v = t.codebook.values.data();
        if (codebook_sr) {
          const float u = uniform_from_word(native::philox_word(opt.seed, kStreamQuantCodebook, i));
          code = codebook_stochastic(v, n, u);
        } else {
          code = codebook_nearest(v, n, opt.tie);
        }
      }
      q.flags |= flags;
      q.codes[opt.transpose ? c * rows + r : i] = code;
    }
  }
  return q;
}

std::vector<float> dequantize(const Quantized& q, const Options& opt) {
  const Scheme& s = opt.scheme;
  const Target& t = opt.target;
  // The input layout: undo the transpose of the codes' shape.
  std::vector<std::size_t> in_shape = q.shape;
  if (opt.transpose) {
    if (q.shape.size() != 2) throw InputError("--transpose: expected 2-d codes");
    in_shape = {q.shape[1], q.shape[0]};
  }
  std::size_t rows, cols;
  matrix_view(in_shape, rows, cols);
  if (q.codes.size() != rows * cols) {
    throw InputError("codes: shape has " + std::to_string(rows * cols) + " elements but " +
                     std::to_string(q.codes.size()) + " codes were given");
  }
  const std::size_t groups = group_count(s, rows, cols);
  const std::size_t have = s.kind == Granularity::mx ? q.mx_scales.size() : q.state.size();
  if (have != groups) {
    throw InputError("state: scheme " + scheme_name(s) + " on " + std::to_string(rows) + "x" +
                     std::to_string(cols) + " expects " + std::to_string(groups) +
                     " entries, got " + std::to_string(have));
  }
  const float fmax = t.kind == TargetKind::float_format ? native::format_max32(t.fmt) : 0.0f;
  std::vector<float> out(rows * cols);
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < cols; ++c) {
      const std::size_t i = r * cols + c;
      const std::size_t g = group_of(s, rows, cols, r, c);
      const std::uint8_t code = q.codes[opt.transpose ? c * rows + r : i];
      float v = 0.0f;
      if (s.kind == Granularity::mx) {
        v = native::mx_dequant(t.fmt, code, q.mx_scales[g]);
      } else if (t.kind == TargetKind::int8) {
        const float qv = static_cast<float>(static_cast<std::int8_t>(code));
        v = native::dequant_absmax(qv, q.state[g], 127.0f);
      } else if (t.kind == TargetKind::float_format) {
        const float cv = native::to_float(t.fmt, code);
        switch (opt.variant) {
          case native::CastVariant::absmax:
            v = native::dequant_absmax(cv, q.state[g], fmax);
            break;
          case native::CastVariant::te_current:
          case native::CastVariant::te:
            v = native::dequant_te(cv, q.state[g]);
            break;
          case native::CastVariant::torchao:
            v = native::dequant_torchao(cv, q.state[g]);
            break;
        }
      } else {
        v = native::codebook_dequant(t.codebook.values.data(), code, q.state[g]);
      }
      out[i] = v;
    }
  }
  return out;
}

}  // namespace exmy::quant
