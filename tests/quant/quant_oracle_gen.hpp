// Generators and the check shared by the quantization properties against the oracle: the CPU
// reference (properties/quant_oracle_props.cpp) and the GPU kernels
// (properties/gpu/quant_oracle_props.cpp). A configuration is drawn from one kernel family,
// elements from weighted boundary classes; the engine under test quantizes and dequantizes, and
// the quantization oracle (sim/oracle/steps/quant.hpp) must give the same bits.
#pragma once

#include <rapidcheck.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "sim/common/error.hpp"
#include "sim/oracle/steps/quant.hpp"
#include "sim/quant/quantize.hpp"
#include "sim/verify/quant_oracle_spec.hpp"

namespace exmy::props {

namespace os = exmy::oracle::steps;
namespace oq = exmy::oracle::steps::quant;
using os::Real;

// An engine: quantize rows × cols fp32 values under opt, and dequantize the result.
struct QuantEngine {
  std::function<quant::Quantized(const std::vector<float>&, std::size_t, std::size_t,
                                 const quant::Options&)>
      quantize;
  std::function<std::vector<float>(const quant::Quantized&, std::size_t, std::size_t,
                                   const quant::Options&)>
      dequantize;
};

inline std::uint32_t bits_of(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
}
inline float of_bits(std::uint32_t u) {
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}

// Elements: mostly values k·2^e with few significant bits (so exact scalings by powers of two
// land on ties of 8-bit targets), full-precision values, and the boundary classes.
// `base`: the tensor's magnitude (an exponent offset): near 1 mostly, sometimes near fp32's
// largest or smallest normals, where reciprocals go subnormal and quotients overflow.
inline rc::Gen<float> gen_element(int base) {
  const auto coarse =
      rc::gen::map(rc::gen::tuple(rc::gen::inRange(0, 64), rc::gen::inRange(-12, 12),
                                  rc::gen::arbitrary<bool>()),
                   [base](std::tuple<int, int, bool> t) {
                     const float v = std::ldexp(static_cast<float>(std::get<0>(t)) + 0.5f,
                                                std::clamp(std::get<1>(t) + base, -149, 127));
                     return std::get<2>(t) ? -v : v;
                   });
  const auto full = rc::gen::map(rc::gen::arbitrary<std::uint32_t>(), [base](std::uint32_t u) {
    // Exponents within 2^±20 of 2^base, any mantissa and sign.
    const int e = std::clamp(base + static_cast<int>((u >> 23) % 41) - 20, -126, 127);
    return of_bits((u & 0x807FFFFFu) | static_cast<std::uint32_t>(e + 127) << 23);
  });
  return rc::gen::weightedOneOf<float>({
      {10, coarse},
      {6, full},
      {2, rc::gen::element(0.0f, -0.0f)},
      {1, rc::gen::map(rc::gen::inRange<std::uint32_t>(1, 1u << 23),
                       [](std::uint32_t m) { return of_bits(m); })},  // fp32 subnormals
      {1, rc::gen::element(3.0e38f, -3.4e38f, 1.0f, 448.0f, 464.0f, 57344.0f, 6.0f)},
      {1, rc::gen::element(INFINITY, -INFINITY, NAN)},
  });
}
inline rc::Gen<int> gen_base() {
  return rc::gen::weightedOneOf<int>(
      {{6, rc::gen::just(0)}, {1, rc::gen::inRange(100, 128)}, {1, rc::gen::inRange(-140, -100)}});
}

// A valid configuration of one kernel family (the CLI's options).
enum class Family { int8_and_casts, codebook, mx_nvfp4 };

inline quant::Options gen_options(Family fam, std::size_t& cols) {
  quant::Options o;
  o.seed = *rc::gen::inRange<std::uint64_t>(0, 1000);
  o.nan = *rc::gen::element(native::NanPolicy::propagate, native::NanPolicy::ignore);
  const std::string scheme = *rc::gen::element<std::string>("tensor", "rowwise", "colwise",
                                                            "block:32", "block:64", "block:48");
  switch (fam) {
    case Family::int8_and_casts: {
      o.scheme = quant::parse_scheme(scheme);
      o.target = quant::parse_target(
          *rc::gen::element<std::string>("int8", "e4m3fn", "e5m2", "e4m3fnuz", "e2m1fn"));
      const bool is_int = o.target.kind == FormatKind::integer;
      o.variant =
          is_int ? native::CastVariant::absmax
                 : *rc::gen::element(native::CastVariant::absmax, native::CastVariant::te,
                                     native::CastVariant::te_current, native::CastVariant::torchao);
      o.order = *rc::gen::element(native::ScaleOrder::div_mul, native::ScaleOrder::recip_mul,
                                  native::ScaleOrder::mul_recip);
      o.mode = *rc::gen::element(RoundMode::rne, RoundMode::rna, RoundMode::rtz, RoundMode::rup,
                                 RoundMode::rdn, RoundMode::rto, RoundMode::sr);
      if (o.mode == RoundMode::sr) o.sr_bits = *rc::gen::element(1, 8, 24);
      if (o.variant == native::CastVariant::te_current) o.pow2_scale = *rc::gen::arbitrary<bool>();
      if (o.variant == native::CastVariant::torchao) {
        o.pow2_scale = *rc::gen::arbitrary<bool>();
        o.torchao_fp16_source = *rc::gen::arbitrary<bool>();
      }
      if (o.variant == native::CastVariant::te) o.te_margin = *rc::gen::inRange(-2, 3);
      o.transpose = (o.scheme.kind == quant::Granularity::tensor ||
                     o.scheme.kind == quant::Granularity::col) &&
                    *rc::gen::arbitrary<bool>();
      break;
    }
    case Family::codebook:
      o.scheme = quant::parse_scheme(scheme);
      o.target = quant::parse_target(*rc::gen::element<std::string>("dynamic", "dynamic-unsigned",
                                                                    "linear", "linear-unsigned"));
      o.norm = *rc::gen::element(native::NormOrder::recip_mul, native::NormOrder::div);
      o.tie = *rc::gen::element(TieRule::even_index, TieRule::lower_index, TieRule::bnb_cpu);
      if (*rc::gen::arbitrary<bool>()) {
        o.mode = RoundMode::sr;
        o.sr_bits = 8;
      }
      break;
    case Family::mx_nvfp4:
      if (*rc::gen::arbitrary<bool>()) {
        o.scheme = quant::parse_scheme("mx");
        o.target = quant::parse_target(
            *rc::gen::element<std::string>("e4m3fn", "e5m2", "e3m2fn", "e2m3fn", "e2m1fn"));
        o.variant = *rc::gen::element(native::CastVariant::ocp, native::CastVariant::torchao);
        o.scale_mode = *rc::gen::element(native::MxScaleMode::floor, native::MxScaleMode::ceil,
                                         native::MxScaleMode::even, native::MxScaleMode::rceil);
        if (o.variant == native::CastVariant::ocp) {
          o.mode = *rc::gen::element(RoundMode::rne, RoundMode::rtz, RoundMode::rup, RoundMode::sr);
          if (o.mode == RoundMode::sr) o.sr_bits = 8;
        }
      } else {
        o.scheme = quant::parse_scheme("nvfp4");
        o.target = quant::parse_target("e2m1fn");
        o.nan = native::NanPolicy::propagate;
        o.variant = *rc::gen::element(native::CastVariant::torchao, native::CastVariant::te);
        o.two_level = o.variant == native::CastVariant::te || *rc::gen::arbitrary<bool>();
        cols = 16 * *rc::gen::inRange<std::size_t>(1, 5);
      }
      break;
  }
  return o;
}

inline bool same_f32(const std::vector<float>& gpu, const os::Tensor& ref) {
  if (gpu.size() != ref.size()) return false;
  for (std::size_t i = 0; i < gpu.size(); ++i) {
    if (std::isnan(gpu[i]) && ref[i].is_nan()) continue;
    if (ref[i].is_nan() || bits_of(gpu[i]) != ref[i].f32_bits()) return false;
  }
  return true;
}

inline void check_family(Family fam, const QuantEngine& engine) {
  std::size_t cols = *rc::gen::inRange<std::size_t>(1, 80);
  const std::size_t rows = *rc::gen::inRange<std::size_t>(1, 4);
  const quant::Options opt = gen_options(fam, cols);
  const std::vector<float> x =
      *rc::gen::container<std::vector<float>>(rows * cols, gen_element(*gen_base()));
  RC_TAG(opt.target.name, quant::scheme_name(opt.scheme));
  try {
    quant::validate_options(opt);
  } catch (const InputError& e) {
    RC_FAIL(std::string("the generator built options the CLI refuses: ") + e.what());
  }
  const quant::Quantized g = engine.quantize(x, rows, cols, opt);
  const verify::OracleQuant oqs = verify::oracle_quant_spec(opt, rows, cols);
  os::Tensor X;
  for (float v : x) X.push_back(Real::of_f32_bits(bits_of(v)));
  const oq::Quantized o = oq::quantize(X, oqs.spec);
  RC_ASSERT(std::vector<std::uint64_t>(g.codes.begin(), g.codes.end()) == o.codes);
  if (o.scale_codes.empty()) {
    RC_ASSERT(same_f32(g.state, o.state));
  } else {
    RC_ASSERT(g.scale_codes == o.scale_codes);
  }
  if (opt.two_level) RC_ASSERT(same_f32({g.tensor_scale}, {o.tensor_scale}));
  const std::vector<float> d = engine.dequantize(g, rows, cols, opt);
  RC_ASSERT(same_f32(d, oq::dequantize(o, oqs.spec)));
}

}  // namespace exmy::props
