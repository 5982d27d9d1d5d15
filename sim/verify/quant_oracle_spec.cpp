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
                     {quant::Granularity::nvfp4, oq::Groups::nvfp4}};
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
  // 2-D block scaling (SEMANTICS 7.15) has no oracle step yet: its independent check is the
  // library-source reference of tests/quant/test_block2d.cpp and the device comparison with the
  // libraries (bench/peers/blockwise_cast_vs_torch.py).
  throw InputError(std::string("the quantization oracle does not cover ") +
                   quant::scheme_entry(s).grammar + " schemes");
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
  s.variant = variant_of(o.variant);
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
