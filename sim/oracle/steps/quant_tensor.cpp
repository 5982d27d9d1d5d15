// docs/SEMANTICS.md 7 on whole tensors: the groups of 7.1, the states of each scheme, the codes in
// the input layout or transposed (7.7), and the dequantization back to the input layout.
#include <stdexcept>

#include "sim/oracle/steps/quant_detail.hpp"

namespace exmy::oracle::steps::quant {
namespace {

enum class Kind { int8, cast, codebook, mx, nvfp4, tile };
Kind kind_of(const Spec& s) {
  if (s.layout.groups == Groups::tile && s.tile_rule != TileRule::none) return Kind::tile;
  if (s.layout.groups == Groups::mx) return Kind::mx;
  if (s.layout.groups == Groups::nvfp4) return Kind::nvfp4;
  switch (s.target) {
    case Target::int8:
      return Kind::int8;
    case Target::float_format:
      return Kind::cast;
    case Target::codebook:
      return Kind::codebook;
  }
  return Kind::int8;
}
// Where the code of input element i is stored: i, or (c, r) of the transposed matrix (7.7).
std::size_t code_index(const Spec& s, std::size_t i) {
  if (!s.transpose) return i;
  const std::size_t r = i / s.layout.cols, c = i % s.layout.cols;
  return c * s.layout.rows + r;
}
Real tensor_absmax(const Tensor& x, NanRule nan) {
  Layout all;
  all.rows = 1;
  all.cols = x.size();
  return group_absmax(x, all, nan)[0];
}

}  // namespace

Quantized quantize(const Tensor& x, const Spec& s) {
  using namespace detail;
  const Layout& l = s.layout;
  if (x.size() != l.size()) throw std::logic_error("quant oracle: tensor size and layout differ");
  const Kind k = kind_of(s);
  // TE's MXFP8 amax (fmaxf / __hmax from 0) skips NaN elements (7.6 `te`).
  const NanRule nan = k == Kind::tile                             ? tile_nan(s)
                      : k == Kind::mx && s.variant == Variant::te ? NanRule::ignore
                                                                  : s.nan;
  const Tensor a = group_absmax(x, l, nan);
  Quantized q;
  q.codes.assign(x.size(), 0);
  Nvfp4Level level;
  Tensor tile_scales;  // 7.15: the scale the elements use (the state holds the stored one)
  if (k == Kind::tile) {
    for (const Real& ag : a) {
      tile_scales.push_back(tile_scale(s, ag));
      q.state.push_back(tile_stored(s, tile_scales.back()));
    }
  } else if (k == Kind::mx || k == Kind::nvfp4) {
    if (k == Kind::nvfp4) level = nvfp4_level(s, tensor_absmax(x, s.nan));
    for (const Real& ag : a) {
      q.scale_codes.push_back(k == Kind::mx ? mx_scale(s, ag) : nvfp4_scale(s, level, ag));
    }
    if (k == Kind::nvfp4) q.tensor_scale = nvfp4_stored(s, level);
  } else {
    for (const Real& ag : a) q.state.push_back(k == Kind::cast ? cast_state(s, ag) : ag);
  }
  for (std::size_t i = 0; i < x.size(); ++i) {
    const std::size_t g = group_of(l, i);
    std::uint64_t c = 0;
    switch (k) {
      case Kind::int8:
        c = int8_code(s, x[i], q.state[g], i);
        break;
      case Kind::cast:
        c = cast_code(s, x[i], q.state[g], i);
        break;
      case Kind::codebook:
        c = codebook_code(s, x[i], q.state[g], i);
        break;
      case Kind::mx:
        c = mx_code(s, x[i], q.scale_codes[g], i);
        break;
      case Kind::nvfp4:
        c = nvfp4_code(s, level, x[i], q.scale_codes[g]);
        break;
      case Kind::tile:
        c = tile_code(s, x[i], tile_scales[g]);
        break;
    }
    q.codes[code_index(s, i)] = c;
  }
  return q;
}

Tensor dequantize(const Quantized& q, const Spec& s) {
  using namespace detail;
  const Layout& l = s.layout;
  const Kind k = kind_of(s);
  const Nvfp4Level level = nvfp4_level_from_stored(s, q.tensor_scale);
  Tensor out(l.size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    const std::size_t g = group_of(l, i);
    const std::uint64_t c = q.codes[code_index(s, i)];
    switch (k) {
      case Kind::int8:
        out[i] = int8_dequant(c, q.state[g]);
        break;
      case Kind::cast:
        out[i] = cast_dequant(s, c, q.state[g]);
        break;
      case Kind::codebook:
        out[i] = codebook_dequant(s, c, q.state[g]);
        break;
      case Kind::mx:
        out[i] = mx_dequant(s, c, q.scale_codes[g]);
        break;
      case Kind::nvfp4:
        out[i] = nvfp4_dequant(s, level, c, q.scale_codes[g]);
        break;
      case Kind::tile:
        out[i] = tile_dequant(s, c, q.state[g]);
        break;
    }
  }
  return out;
}

}  // namespace exmy::oracle::steps::quant
