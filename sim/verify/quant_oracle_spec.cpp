// quant::Options → oracle::steps::quant::Spec (quant_oracle_spec.hpp).
#include "sim/verify/quant_oracle_spec.hpp"

#include <cmath>
#include <cstring>
#include <optional>
#include <string>

#include "sim/common/error.hpp"
#include "sim/quant/scheme_registry.hpp"

namespace exmy::verify {
namespace {

namespace oq = oracle::steps::quant;
using oracle::steps::Real;

Real real(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, 4);
  return Real::of_f32_bits(u);
}
std::optional<Real> given(float v) {
  if (std::isnan(v)) return std::nullopt;
  return real(v);
}
// The schemes and variants the oracle's quantization steps model, by exmy's id and name (the
// scheme registry, quant::kVariants); any other is refused by name, never mapped to a neighbour.
constexpr struct {
  quant::Granularity kind;
  oq::Groups groups;
} kOracleGroups[] = {{quant::Granularity::tensor, oq::Groups::tensor},
                     {quant::Granularity::row, oq::Groups::rowwise},
                     {quant::Granularity::col, oq::Groups::colwise},
                     {quant::Granularity::block, oq::Groups::block},
                     {quant::Granularity::mx, oq::Groups::mx},
                     {quant::Granularity::nvfp4, oq::Groups::nvfp4},
                     {quant::Granularity::tile, oq::Groups::tile}};
constexpr struct {
  const char* name;
  oq::Variant variant;
} kOracleVariants[] = {{"absmax", oq::Variant::absmax},
                       {"te", oq::Variant::te},
                       {"te-current", oq::Variant::te_current},
                       {"torchao", oq::Variant::torchao},
                       {"ocp", oq::Variant::ocp}};

oq::Groups groups_of(const quant::Scheme& s) {
  for (const auto& g : kOracleGroups) {
    if (g.kind == s.kind) return g.groups;
  }
  throw InputError(std::string("the quantization oracle does not cover ") +
                   quant::scheme_entry(s).grammar + " schemes");
}
// 7.15's library rules of a tile scheme (the other variants apply per tile as elsewhere).
oq::TileRule tile_rule_of(const quant::Options& o) {
  if (o.scheme.kind != quant::Granularity::tile) return oq::TileRule::none;
  switch (o.variant) {
    case native::CastVariant::deepgemm:
      return oq::TileRule::deepgemm;
    case native::CastVariant::te:
      return oq::TileRule::te;
    case native::CastVariant::torchao:
      return oq::TileRule::torchao;
    default:
      return oq::TileRule::none;
  }
}
oq::Variant variant_of(native::CastVariant v) {
  const std::string name = quant::variant_name(v);
  for (const auto& e : kOracleVariants) {
    if (name == e.name) return e.variant;
  }
  throw InputError("the quantization oracle does not cover --variant " + name);
}

}  // namespace

OracleQuant oracle_quant_spec(const quant::Options& o, std::size_t rows, std::size_t cols) {
  OracleQuant r;
  oq::Spec& s = r.spec;
  s.layout.rows = rows;
  s.layout.cols = cols;
  s.layout.groups = groups_of(o.scheme);
  s.layout.block = o.scheme.block;
  s.layout.tile_rows = o.scheme.tile_rows;
  s.layout.tile_cols = o.scheme.tile_cols;
  s.tile_rule = tile_rule_of(o);
  s.tile_scale = o.scale_format == native::BlockScaleFormat::pow2    ? oq::TileScale::pow2
                 : o.scale_format == native::BlockScaleFormat::ue8m0 ? oq::TileScale::ue8m0
                                                                     : oq::TileScale::fp32;
  s.source = o.source == native::Storage::bf16  ? oq::Source::bf16
             : o.source == native::Storage::f16 ? oq::Source::fp16
                                                : oq::Source::fp32;
  switch (o.target.kind) {
    case FormatKind::integer:
      s.target = oq::Target::int8;
      break;
    case FormatKind::floating:
      s.target = oq::Target::float_format;
      r.format = std::make_shared<const FloatFormat>(o.target.fp);
      s.format = r.format.get();
      break;
    case FormatKind::codebook:
      s.target = oq::Target::codebook;
      // The table is data (sim/format/codebook.cpp); the oracle derives its midpoints itself.
      r.codebook = std::make_shared<const oracle::steps::Codebook>(
          oracle::steps::make_codebook(o.target.cb->values));
      s.codebook = r.codebook.get();
      break;
  }
  // A tile's library rule is s.tile_rule (deepgemm has no variant outside tiles).
  s.variant = s.tile_rule == oq::TileRule::none ? variant_of(o.variant) : oq::Variant::absmax;
  if (s.layout.groups == oq::Groups::mx && s.variant == oq::Variant::absmax) {
    s.variant = oq::Variant::ocp;  // "absmax means the same" (7.8)
  }
  if (s.layout.groups == oq::Groups::nvfp4 && s.variant == oq::Variant::absmax) {
    s.variant = oq::Variant::torchao;
  }
  s.order = o.order == native::ScaleOrder::div_mul     ? oq::Order::div_mul
            : o.order == native::ScaleOrder::recip_mul ? oq::Order::recip_mul
                                                       : oq::Order::mul_recip;
  s.nan = o.nan == native::NanPolicy::propagate ? oq::NanRule::propagate : oq::NanRule::ignore;
  s.rounding = Rounding{o.mode, o.sr_bits, Overflow::none};
  s.seed = o.seed;
  s.margin = o.te_margin;
  s.prev_scale = real(o.te_prev_scale);
  s.amax_epsilon = real(o.te_amax_epsilon);
  s.pow2_scale = o.pow2_scale;
  s.fp16_clamp = o.torchao_fp16_source;
  s.given_scale = given(o.given_scale);
  switch (o.scale_mode) {
    case native::MxScaleMode::floor:
      s.scale_mode = oq::ScaleMode::floor;
      break;
    case native::MxScaleMode::ceil:
      s.scale_mode = oq::ScaleMode::ceil;
      break;
    case native::MxScaleMode::even:
      s.scale_mode = oq::ScaleMode::even;
      break;
    case native::MxScaleMode::rceil:
      s.scale_mode = oq::ScaleMode::rceil;
      break;
  }
  s.two_level = o.two_level;
  s.tensor_amax = given(o.tensor_amax);
  s.tensor_scale = given(o.tensor_scale);
  s.norm = o.norm == native::NormOrder::recip_mul ? oq::Norm::recip_mul : oq::Norm::div;
  s.tie = o.tie == TieRule::even_index    ? oq::Tie::even
          : o.tie == TieRule::lower_index ? oq::Tie::lower
                                          : oq::Tie::bnb_cpu;
  s.transpose = o.transpose;
  return r;
}

}  // namespace exmy::verify
