// The quantization ops of `exmy verify --campaign steps` (docs/SEMANTICS.md 13.1): every scheme of
// section 7 (int8 in each order, scaled casts in each variant, codebooks with each norm and tie
// rule, MX in each scale mode and variant, NVFP4 in both variants), its dequantization, and the
// matmul pieces of section 8, run by sim/quant (what the CLI and the CUDA kernels compute) and by
// the quantization oracle (sim/oracle/steps/quant.hpp), on random inputs and boundary classes.
// Every code, state and dequantized value is compared bit for bit (fp32 NaNs agree with NaNs).
#include <algorithm>
#include <cfloat>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>

#include "sim/common/error.hpp"
#include "sim/format/codebook.hpp"
#include "sim/format/registry.hpp"
#include "sim/format/rounding_names.hpp"
#include "sim/oracle/mpfr_engine.hpp"
#include "sim/oracle/steps/quant.hpp"
#include "sim/quant/matmul.hpp"
#include "sim/quant/quantize.hpp"
#include "sim/verify/campaign_steps_ops.hpp"
#include "sim/verify/quant_oracle_spec.hpp"

namespace exmy::verify::steps_detail {
namespace {

namespace os = oracle::steps;
namespace oq = oracle::steps::quant;
using os::Real;

std::uint32_t bits(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
}
float from_bits(std::uint32_t u) {
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}
bool is_nan32(std::uint32_t u) {
  return (u & 0x7FFFFFFFu) > 0x7F800000u;
}
ValueClass class32(std::uint32_t u) {
  const std::uint32_t e = (u >> 23) & 0xFF, m = u & 0x7FFFFF;
  if (e == 0) return m == 0 ? ValueClass::zero : ValueClass::subnormal;
  if (e == 0xFF) return m == 0 ? ValueClass::inf : ValueClass::nan;
  return ValueClass::normal;
}
std::string hex32(float x) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08" PRIx32, bits(x));
  return buf;
}
Real real(float x) {
  return Real::of_f32_bits(bits(x));
}

// ---- ops and configurations ------------------------------------------------------------------
enum class Fam { int8, cast, codebook, mx, nvfp4, tile, matmul_int8, matmul_fp32 };

struct QOp {
  std::string name;
  Fam fam;
  std::string target;  // format or codebook name
  native::CastVariant variant = native::CastVariant::absmax;
};

std::vector<QOp> all_qops() {
  using native::CastVariant;
  using quant::variant_name;  // the names of quant::kVariants
  std::vector<QOp> ops;
  ops.push_back({"quant-int8", Fam::int8, "int8"});
  for (const char* f : {"e4m3fn", "e5m2", "e4m3fnuz", "e3m2fn", "e2m1fn"}) {
    for (CastVariant v :
         {CastVariant::absmax, CastVariant::te, CastVariant::te_current, CastVariant::torchao}) {
      ops.push_back({std::string("quant-") + f + "-" + variant_name(v), Fam::cast, f, v});
    }
  }
  for (const char* cb : {"dynamic", "dynamic-unsigned", "linear", "linear-unsigned"}) {
    ops.push_back({std::string("quant-") + cb, Fam::codebook, cb});
  }
  for (const char* f : {"e4m3fn", "e5m2", "e3m2fn", "e2m3fn", "e2m1fn"}) {
    for (CastVariant v : {CastVariant::ocp, CastVariant::torchao}) {
      ops.push_back({std::string("quant-mx-") + f + "-" + variant_name(v), Fam::mx, f, v});
    }
  }
  // TransformerEngine's MXFP8 quantizer (7.6 `te`): FP8 elements only.
  for (const char* f : {"e4m3fn", "e5m2"}) {
    ops.push_back({std::string("quant-mx-") + f + "-te", Fam::mx, f, CastVariant::te});
  }
  ops.push_back({"quant-nvfp4-torchao", Fam::nvfp4, "e2m1fn", CastVariant::torchao});
  ops.push_back({"quant-nvfp4-te", Fam::nvfp4, "e2m1fn", CastVariant::te});
  // 2-D block scaling under the three library rules (7.15).
  ops.push_back({"quant-tile-deepgemm", Fam::tile, "e4m3fn", CastVariant::deepgemm});
  ops.push_back({"quant-tile-te", Fam::tile, "e4m3fn", CastVariant::te});
  ops.push_back({"quant-tile-te-e5m2", Fam::tile, "e5m2", CastVariant::te});
  ops.push_back({"quant-tile-torchao", Fam::tile, "e4m3fn", CastVariant::torchao});
  ops.push_back({"matmul-int8", Fam::matmul_int8, "int8"});
  ops.push_back({"matmul-fp32", Fam::matmul_fp32, "fp32"});
  return ops;
}

// One configuration: the CLI's options (quant::Options) and a label naming them.
struct QCfg {
  std::string label;
  quant::Options opt;
  native::DequantOrder epilogue = native::DequantOrder::switchback;  // matmul-int8
  bool tensor_state = false;                                         // matmul-int8: eq. 2
  native::AccumOrder accum = native::AccumOrder::sequential;         // matmul-fp32
};

// Every mode of the rounding registry, sr at 8 and 24 bits.
const std::vector<Rounding>& all_modes() {
  static const std::vector<Rounding> v = rounding_sweep({8, 24});
  return v;
}

const char* order_name(native::ScaleOrder o) {
  return o == native::ScaleOrder::div_mul     ? "div-mul"
         : o == native::ScaleOrder::recip_mul ? "recip-mul"
                                              : "mul-recip";
}
const char* nan_name(native::NanPolicy p) {
  return p == native::NanPolicy::propagate ? "propagate" : "ignore";
}
constexpr native::ScaleOrder kOrders[] = {
    native::ScaleOrder::div_mul, native::ScaleOrder::recip_mul, native::ScaleOrder::mul_recip};
constexpr native::NanPolicy kNans[] = {native::NanPolicy::propagate, native::NanPolicy::ignore};

std::vector<QCfg> qconfigs(const QOp& op) {
  std::vector<QCfg> out;
  auto base = [&](const std::string& scheme) {
    QCfg c;
    c.opt.scheme = quant::parse_scheme(scheme);
    c.opt.target = quant::parse_target(op.target);
    c.opt.variant = op.variant;
    c.opt.seed = 0x5EEDull;
    c.label = scheme;
    return c;
  };
  auto with_round = [](QCfg c, const Rounding& r) {
    c.opt.mode = r.mode;
    c.opt.sr_bits = r.sr_bits;
    c.label += " " + rounding_name(r);
    return c;
  };
  switch (op.fam) {
    case Fam::int8:
      for (const char* s : {"tensor", "rowwise", "colwise", "block:40"}) {
        for (auto o : kOrders) {
          for (auto n : kNans) {
            for (const auto& r : all_modes()) {
              QCfg c = base(s);
              c.opt.order = o;
              c.opt.nan = n;
              c.label += std::string(" ") + order_name(o) + " " + nan_name(n);
              out.push_back(with_round(c, r));
            }
          }
        }
      }
      for (const char* s : {"tensor", "colwise"}) {  // SwitchBack's fused transposes (7.7)
        QCfg c = base(s);
        c.opt.order = std::string(s) == "tensor" ? native::ScaleOrder::recip_mul
                                                 : native::ScaleOrder::div_mul;
        c.opt.transpose = true;
        c.label += std::string(" ") + order_name(c.opt.order) + " transpose";
        out.push_back(c);
      }
      break;
    case Fam::cast: {
      const auto& modes = all_modes();  // every mode of section 2
      for (const char* s : {"tensor", "rowwise", "block:40"}) {
        for (auto n : kNans) {
          if (op.variant == native::CastVariant::absmax) {
            for (auto o : kOrders) {
              for (const auto& r : modes) {
                QCfg c = base(s);
                c.opt.order = o;
                c.opt.nan = n;
                c.label += std::string(" ") + order_name(o) + " " + nan_name(n);
                out.push_back(with_round(c, r));
              }
            }
            continue;
          }
          for (const auto& r : modes) {
            QCfg c = base(s);
            c.opt.nan = n;
            c.label += std::string(" ") + nan_name(n);
            out.push_back(with_round(c, r));
          }
          // The variant's switches, under rne.
          QCfg c = base(s);
          c.opt.nan = n;
          c.label += std::string(" ") + nan_name(n);
          if (op.variant == native::CastVariant::te) {
            QCfg m = c;
            m.opt.te_margin = 3;
            m.opt.te_prev_scale = 0.375f;
            m.label += " margin3 prev0.375";
            out.push_back(m);
            QCfg g = c;
            g.opt.given_scale = 96.0f;
            g.label += " scale96";
            out.push_back(g);
          } else if (op.variant == native::CastVariant::te_current) {
            for (bool p2 : {false, true}) {
              QCfg m = c;
              m.opt.te_amax_epsilon = 0.5f;
              m.opt.pow2_scale = p2;
              m.label += p2 ? " eps0.5 pow2" : " eps0.5";
              out.push_back(m);
            }
            QCfg g = c;
            g.opt.given_scale = 3.0e38f;
            g.label += " scale3e38";
            out.push_back(g);
          } else if (op.variant == native::CastVariant::torchao) {
            for (int k = 1; k < 4; ++k) {
              QCfg m = c;
              m.opt.pow2_scale = (k & 1) != 0;
              m.opt.torchao_fp16_source = (k & 2) != 0;
              m.label += std::string(m.opt.pow2_scale ? " pow2" : "") +
                         (m.opt.torchao_fp16_source ? " fp16-clamp" : "");
              out.push_back(m);
            }
            QCfg g = c;
            g.opt.given_scale = 1.0f / 1024;
            g.label += " scale2^-10";
            out.push_back(g);
          }
        }
      }
      break;
    }
    case Fam::codebook:
      for (const char* s : {"block:64", "block:256", "tensor", "rowwise"}) {
        for (auto n : kNans) {
          for (auto norm : {native::NormOrder::recip_mul, native::NormOrder::div}) {
            const char* nn = norm == native::NormOrder::recip_mul ? "recip-mul" : "div";
            for (TieRule t : {TieRule::even_index, TieRule::lower_index, TieRule::bnb_cpu}) {
              QCfg c = base(s);
              c.opt.nan = n;
              c.opt.norm = norm;
              c.opt.tie = t;
              c.label += std::string(" ") + nan_name(n) + " " + nn + " tie:" + tie_name(t);
              out.push_back(c);
            }
            QCfg c = base(s);
            c.opt.nan = n;
            c.opt.norm = norm;
            c.label += std::string(" ") + nan_name(n) + " " + nn;
            out.push_back(with_round(c, Rounding{RoundMode::sr, 8}));
          }
        }
      }
      break;
    case Fam::mx:
      for (auto m : {native::MxScaleMode::floor, native::MxScaleMode::ceil,
                     native::MxScaleMode::even, native::MxScaleMode::rceil}) {
        // te: one scale rule (floor, the default, names it as rceil does), RNE only.
        const bool te = op.variant == native::CastVariant::te;
        if (te && (m == native::MxScaleMode::ceil || m == native::MxScaleMode::even)) continue;
        for (auto n : kNans) {
          QCfg c = base("mx");
          c.opt.scale_mode = m;
          c.opt.nan = n;
          c.label +=
              std::string(" ") + quant::kScaleModeNames[static_cast<int>(m)] + " " + nan_name(n);
          if (op.variant == native::CastVariant::torchao || te) {
            out.push_back(c);
            continue;
          }
          for (const auto& r : all_modes()) out.push_back(with_round(c, r));
        }
      }
      break;
    case Fam::nvfp4: {
      QCfg c = base("nvfp4");
      QCfg two = c;
      two.opt.two_level = true;
      two.label += " two-level";
      if (op.variant == native::CastVariant::torchao) out.push_back(c);
      out.push_back(two);
      QCfg amax = two;
      amax.opt.tensor_amax = 1000.0f;
      amax.label += " tensor-amax1000";
      out.push_back(amax);
      if (op.variant == native::CastVariant::torchao) {
        QCfg ts = two;
        ts.opt.tensor_scale = 0.0625f;
        ts.label += " tensor-scale0.0625";
        out.push_back(ts);
      }
      break;
    }
    case Fam::tile: {
      // Whole tiles (2x5 and 1x25 on rows x 50) and partial ones (3x7; torchao refuses them),
      // each scale format of the rule, fp32 / bf16 / fp16 sources (TE's finfo max, torchao's eps).
      const bool dg = op.variant == native::CastVariant::deepgemm;
      const bool te = op.variant == native::CastVariant::te;
      std::vector<native::BlockScaleFormat> fmts = {native::BlockScaleFormat::fp32};
      if (dg) fmts.push_back(native::BlockScaleFormat::ue8m0);
      if (te) fmts.push_back(native::BlockScaleFormat::pow2);
      for (const char* s : {"block:2x5", "block:1x25", "block:3x7"}) {
        if (op.variant == native::CastVariant::torchao && std::string(s) == "block:3x7") continue;
        for (const auto f : fmts) {
          for (const auto src :
               {native::Storage::f32, native::Storage::bf16, native::Storage::f16}) {
            QCfg c = base(s);
            c.opt.scale_format = f;
            c.opt.source = src;
            c.label += std::string(" ") + quant::kScaleFormatNames[static_cast<int>(f)] + " " +
                       (src == native::Storage::f32    ? "fp32"
                        : src == native::Storage::bf16 ? "bf16"
                                                       : "fp16") +
                       "-source";
            out.push_back(c);
          }
        }
      }
      break;
    }
    case Fam::matmul_int8:
      for (auto e : {native::DequantOrder::switchback, native::DequantOrder::factor_first}) {
        for (bool tw : {false, true}) {
          QCfg c;
          c.epilogue = e;
          c.tensor_state = tw;
          c.label =
              std::string(e == native::DequantOrder::switchback ? "switchback" : "factor-first") +
              (tw ? " eq2-tensor" : " eq4-rowwise");
          out.push_back(c);
        }
      }
      break;
    case Fam::matmul_fp32:
      for (auto a : {native::AccumOrder::sequential, native::AccumOrder::pairwise}) {
        QCfg c;
        c.accum = a;
        c.label = a == native::AccumOrder::sequential ? "sequential" : "pairwise";
        out.push_back(c);
      }
      break;
  }
  return out;
}

// ---- input classes ---------------------------------------------------------------------------
enum class QCls { random, zeros, subnormal, ties, pow2, nonfinite, overflow, allzero, wide };
constexpr QCls kQClasses[] = {QCls::random,   QCls::zeros,   QCls::subnormal,
                              QCls::ties,     QCls::pow2,    QCls::nonfinite,
                              QCls::overflow, QCls::allzero, QCls::wide};
const char* qcls_name(QCls c) {
  switch (c) {
    case QCls::random:
      return "random";
    case QCls::zeros:
      return "zeros";
    case QCls::subnormal:
      return "subnormal";
    case QCls::ties:
      return "ties";
    case QCls::pow2:
      return "pow2";
    case QCls::nonfinite:
      return "inf-nan";
    case QCls::overflow:
      return "overflow";
    case QCls::allzero:
      return "all-zero";
    case QCls::wide:
      return "wide";
  }
  return "?";
}

class QGen {
 public:
  explicit QGen(std::uint64_t seed) : rng_(seed) {}
  bool coin(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  int range(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  std::size_t pick(std::size_t n) {
    return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng_);
  }
  bool sign() { return (rng_() & 1) != 0; }
  // (1 + m/2^23)·2^e, e clamped to fp32's normal range.
  float normal(int e) {
    e = std::clamp(e, -126, 127);
    const std::uint32_t u =
        static_cast<std::uint32_t>(e + 127) << 23 | static_cast<std::uint32_t>(rng_() & 0x7FFFFF);
    return from_bits(u | (sign() ? 0x80000000u : 0u));
  }
  float subnormal() {
    std::uint32_t m = 0;
    while (m == 0) m = static_cast<std::uint32_t>(rng_() & 0x7FFFFF);
    return from_bits(m | (sign() ? 0x80000000u : 0u));
  }
  std::uint64_t raw() { return rng_(); }

 private:
  std::mt19937_64 rng_;
};

// The exact tie points t ≥ 0 of a target, in the scaled space (y for int8 and float formats, the
// normalized value for codebooks): midpoints between neighbours and the values themselves.
std::vector<double> tie_points(const QOp& op, const quant::Options& o) {
  std::vector<double> t;
  if (op.fam == Fam::int8) {
    for (int k = 0; k <= 127; ++k) {
      t.push_back(k);
      if (k < 127) t.push_back(k + 0.5);
    }
  } else if (op.fam == Fam::codebook) {
    const auto& v = (op.target == "dynamic" || op.target == "dynamic-unsigned")
                        ? dynamic_codebook(op.target == "dynamic").values
                        : linear_codebook(op.target == "linear").values;
    for (int k = 0; k < 256; ++k) {
      t.push_back(v[k]);
      if (k < 255) t.push_back(static_cast<double>((v[k] + v[k + 1]) * 0.5f));
    }
  } else if (o.target.kind == FormatKind::floating) {
    const FloatFormat& f = o.target.fp;
    std::vector<double> vals;
    for (std::uint64_t c = 0; c < (std::uint64_t{1} << (f.total_bits() - 1)); ++c) {
      const Real r = Real::of_code(f, c);
      if (!r.is_finite()) continue;
      vals.push_back(mpfr_get_d(r.get(), MPFR_RNDN));
    }
    std::sort(vals.begin(), vals.end());
    for (std::size_t k = 0; k < vals.size(); ++k) {
      t.push_back(vals[k]);
      if (k + 1 < vals.size()) t.push_back((vals[k] + vals[k + 1]) / 2);
    }
    // The overflow threshold (max + half an ulp: e4m3fn 464) and the top of max's binade.
    const double top = vals.back();
    t.push_back(top * (1 + std::ldexp(1.0, -f.man_bits - 1)));
    t.push_back(std::ldexp(1.0, std::ilogb(top) + 1) * (1 - std::ldexp(1.0, -24)));
  }
  return t;
}

// The anchor A of a ties group (its absmax, times 2^s): the scaled space then is exact.
double anchor(const QOp& op, const quant::Options& o) {
  if (op.fam == Fam::int8) return 127;
  if (op.fam == Fam::codebook) return 1;
  if (op.fam == Fam::nvfp4) return 6 * 448.0;
  return mpfr_get_d(Real::of_code(o.target.fp, oracle::max_finite_code(o.target.fp)).get(),
                    MPFR_RNDN);
}

std::vector<float> make_input(QCls cls, QGen& g, const QOp& op, const quant::Options& o,
                              const oq::Layout& l) {
  const std::size_t n = l.size();
  std::vector<float> x(n);
  const std::size_t groups = oq::group_count(l);
  std::vector<int> gexp(groups);
  for (auto& e : gexp) e = g.range(-20, 20);  // a magnitude per group
  std::vector<double> ties;
  if (cls == QCls::ties) ties = tie_points(op, o);
  const double A = anchor(op, o);
  std::vector<char> anchored(groups, 0);
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t gi = oq::group_of(l, i);
    const int e = gexp[gi];
    float v = 0;
    switch (cls) {
      case QCls::random:
        v = g.normal(e - g.range(0, 12));
        break;
      case QCls::zeros:
        v = g.coin(0.4) ? (g.sign() ? -0.0f : 0.0f) : g.normal(e - g.range(0, 12));
        break;
      case QCls::subnormal:  // fp32 subnormal groups (absmax subnormal) and tiny normals
        v = g.coin(0.7) ? g.subnormal() : g.normal(-126 + g.range(0, 3));
        break;
      case QCls::ties: {
        // The group's first element is the anchor A·2^s (its absmax); the others are tie points
        // t·2^s, so that the scaled value is exactly t where the arithmetic allows it.
        const int s = std::clamp(e, -30, 30);
        if (!anchored[gi]) {
          anchored[gi] = 1;
          v = static_cast<float>(std::ldexp(A, s));
        } else {
          const double t = ties[g.pick(ties.size())];
          // MX keeps its scale while the block stays below 2^(emax+1): tie points up to and past
          // the overflow threshold stay in place there; elsewhere the anchor stays the absmax.
          v = static_cast<float>(std::ldexp(op.fam == Fam::mx ? t : std::min(t, A), s));
        }
        if (g.sign()) v = -v;
        break;
      }
      case QCls::pow2:
        v = static_cast<float>(std::ldexp(1.0, e - g.range(0, 10)));
        if (g.sign()) v = -v;
        break;
      case QCls::nonfinite: {
        const int u = g.range(0, 99);
        v = u < 4    ? INFINITY
            : u < 8  ? -INFINITY
            : u < 11 ? from_bits(0x7FC00000u)
            : u < 13 ? from_bits(0xFFC00001u)
                     : g.normal(e - g.range(0, 12));
        break;
      }
      case QCls::overflow:  // magnitudes near FLT_MAX: scaled values and products overflow
        v = g.coin(0.1) ? (g.sign() ? -FLT_MAX : FLT_MAX) : g.normal(127 - g.range(0, 4));
        break;
      case QCls::allzero:  // every other group all ±0
        v = gi % 2 == 0 ? (g.sign() ? -0.0f : 0.0f) : g.normal(e - g.range(0, 12));
        break;
      case QCls::wide:
        v = g.coin(0.05) ? g.subnormal() : g.normal(g.range(-126, 127));
        break;
    }
    x[i] = v;
  }
  return x;
}

// ---- sizes
// ----------------------------------------------------------------------------------------
struct QSizes {
  std::size_t rows, cols, nv_cols;  // nvfp4 needs cols % 16 == 0
  std::size_t mm_m, mm_n, mm_k;
  int reps;
};
QSizes qsizes(Depth d) {
  // Partial last blocks: block:40 and mx (32) on rows·cols = 4·50 = 200, block:64/256 too.
  return d == Depth::ci ? QSizes{4, 50, 48, 3, 5, 37, 1} : QSizes{24, 50, 48, 16, 16, 131, 12};
}

// ---- the checks --------------------------------------------------------------------------------
struct Ctx {
  detail::Tally& t;
  std::size_t max;
  const std::string& op;
  const char* cls;
  const std::string& cfg;
  void fp32(const char* what, std::size_t i, float nat, const Real& orc,
            const std::function<std::string()>& operands) {
    const std::uint32_t o = orc.f32_bits(), n = bits(nat);
    const bool ok = n == o || (is_nan32(n) && is_nan32(o));
    record(t, max, op, cls, cfg, what, i, n, o, class32(o), ok, operands);
  }
  void code(const char* what, std::size_t i, std::uint64_t nat, std::uint64_t orc,
            const std::function<std::string()>& operands) {
    record(t, max, op, cls, cfg, what, i, nat, orc, ValueClass::normal, nat == orc, operands);
  }
};

void run_quant_case(const QOp& op, const QCfg& cfg, QCls cls, std::uint64_t seed, const QSizes& z,
                    Ctx& ck) {
  const std::size_t rows = z.rows, cols = op.fam == Fam::nvfp4 ? z.nv_cols : z.cols;
  const OracleQuant oqs = oracle_quant_spec(cfg.opt, rows, cols);
  const oq::Spec& spec = oqs.spec;
  QGen gen(seed);
  const std::vector<float> x = make_input(cls, gen, op, cfg.opt, spec.layout);
  quant::Quantized nq;
  try {
    nq = quant::quantize(x, {rows, cols}, cfg.opt);
  } catch (const InputError& e) {  // a configuration the CLI refuses: the campaign's own bug
    const std::string msg = e.what();
    ck.code("native-refused", 0, 1, 0, [msg] { return msg; });
    return;
  }
  os::Tensor X;
  X.reserve(x.size());
  for (float v : x) X.push_back(real(v));
  const oq::Quantized oqz = oq::quantize(X, spec);

  const std::size_t groups = oq::group_count(spec.layout);
  auto group_operands = [&](std::size_t gi) {
    return [&, gi] {
      std::string s = "group " + std::to_string(gi) + ":";
      int shown = 0;
      for (std::size_t i = 0; i < x.size() && shown < 6; ++i) {
        if (oq::group_of(spec.layout, i) == gi) {
          s += " " + hex32(x[i]);
          ++shown;
        }
      }
      return s;
    };
  };
  // States.
  if (!oqz.scale_codes.empty()) {
    for (std::size_t gi = 0; gi < groups; ++gi) {
      ck.code("scale", gi, gi < nq.scale_codes.size() ? nq.scale_codes[gi] : 0x100,
              oqz.scale_codes[gi], group_operands(gi));
    }
  } else {
    for (std::size_t gi = 0; gi < groups; ++gi) {
      ck.fp32("state", gi, gi < nq.state.size() ? nq.state[gi] : from_bits(0x7F800001u),
              oqz.state[gi], group_operands(gi));
    }
  }
  if (spec.layout.groups == oq::Groups::nvfp4 &&
      (cfg.opt.two_level || cfg.opt.variant == native::CastVariant::te)) {
    ck.fp32("tensor_scale", 0, nq.tensor_scale, oqz.tensor_scale, [] { return std::string(); });
  }
  // Codes (in the stored layout; the operand is the input element that produced it).
  for (std::size_t k = 0; k < x.size(); ++k) {
    std::size_t i = k;
    if (spec.transpose) i = (k % rows) * cols + k / rows;  // stored (c, r) ← input (r, c)
    const std::size_t gi = oq::group_of(spec.layout, i);
    ck.code("code", k, k < nq.codes.size() ? nq.codes[k] : 0x100, oqz.codes[k], [&, i, gi] {
      std::string st =
          oqz.scale_codes.empty() ? oqz.state[gi].hex() : std::to_string(oqz.scale_codes[gi]);
      return "x " + hex32(x[i]) + " (input index " + std::to_string(i) + ") group state " + st;
    });
  }
  // Dequantization of the native codes (equal to the oracle's wherever the codes were).
  const std::vector<float> nd = quant::dequantize(nq, cfg.opt);
  oq::Quantized from_native = oqz;
  from_native.codes.assign(nq.codes.begin(), nq.codes.end());
  const os::Tensor od = oq::dequantize(from_native, spec);
  for (std::size_t i = 0; i < od.size(); ++i) {
    const std::size_t k = spec.transpose ? (i % cols) * rows + i / cols : i;
    ck.fp32("dequant", i, i < nd.size() ? nd[i] : from_bits(0x7F800001u), od[i],
            [&, k] { return "code " + std::to_string(nq.codes[k]); });
  }
}

float matmul_state(QCls cls, QGen& g) {
  switch (cls) {
    case QCls::zeros:
      return g.coin(0.3) ? 0.0f : std::fabs(g.normal(g.range(-10, 10)));
    case QCls::subnormal:
      return std::fabs(g.coin(0.5) ? g.subnormal() : g.normal(-126 + g.range(0, 10)));
    case QCls::pow2:
      return static_cast<float>(std::ldexp(1.0, g.range(-20, 20)));
    case QCls::nonfinite: {
      const int u = g.range(0, 9);
      return u == 0 ? INFINITY : u == 1 ? from_bits(0x7FC00000u) : std::fabs(g.normal(0));
    }
    case QCls::overflow:
      return std::fabs(g.normal(127 - g.range(0, 8)));
    default:
      return std::fabs(g.normal(g.range(-30, 30)));
  }
}

void run_matmul_int8(const QCfg& cfg, QCls cls, std::uint64_t seed, const QSizes& z, Ctx& ck) {
  QGen g(seed);
  const std::size_t M = z.mm_m, N = z.mm_n, K = z.mm_k;
  std::vector<std::int8_t> a(M * K), b(N * K);
  const bool extreme = cls == QCls::overflow || cls == QCls::ties;
  for (auto& v : a)
    v = static_cast<std::int8_t>(extreme ? (g.sign() ? 127 : -127) : g.range(-127, 127));
  for (auto& v : b)
    v = static_cast<std::int8_t>(extreme ? (g.sign() ? 127 : -127) : g.range(-127, 127));
  if (cls == QCls::allzero) std::fill(a.begin(), a.begin() + K, 0);
  std::vector<float> sr(M), sc(cfg.tensor_state ? 1 : N);
  for (auto& s : sr) s = matmul_state(cls, g);
  for (auto& s : sc) s = matmul_state(cls, g);
  const std::vector<std::int32_t> nacc = quant::matmul_int8_nt(a, b, M, N, K);
  const std::vector<std::int32_t> oacc = oq::matmul_int8(a, b, M, N, K);
  for (std::size_t i = 0; i < nacc.size(); ++i) {
    ck.code("acc", i, static_cast<std::uint32_t>(nacc[i]), static_cast<std::uint32_t>(oacc[i]),
            [] { return std::string(); });
  }
  const std::vector<float> nout = quant::dequantize_product(nacc, M, N, sr, sc, cfg.epilogue);
  os::Tensor SR, SC;
  for (float v : sr) SR.push_back(real(v));
  for (float v : sc) SC.push_back(real(v));
  const os::Tensor oout = oq::dequantize_product(oacc, M, N, SR, SC,
                                                 cfg.epilogue == native::DequantOrder::switchback
                                                     ? oq::Epilogue::switchback
                                                     : oq::Epilogue::factor_first);
  for (std::size_t i = 0; i < nout.size(); ++i) {
    ck.fp32("out", i, nout[i], oout[i], [&, i] {
      return "acc " + std::to_string(oacc[i]) + " sr " + hex32(sr[i / N]) + " sc " +
             hex32(sc[sc.size() == 1 ? 0 : i % N]);
    });
  }
}

void run_matmul_fp32(const QCfg& cfg, QCls cls, std::uint64_t seed, const QSizes& z, Ctx& ck) {
  QGen g(seed);
  const std::size_t M = z.mm_m, N = z.mm_n, K = z.mm_k;
  std::vector<float> a(M * K), b(N * K);
  auto operand = [&]() -> float {
    switch (cls) {
      case QCls::ties: {  // decoded e4m3fn values: products exact, sums exercise the order
        const Real r = Real::of_code(formats::e4m3fn, g.raw() & 0x7E);
        const float v = static_cast<float>(mpfr_get_d(r.get(), MPFR_RNDN));
        return g.sign() ? -v : v;
      }
      case QCls::zeros:
        return g.coin(0.4) ? (g.sign() ? -0.0f : 0.0f) : g.normal(g.range(-10, 10));
      case QCls::subnormal:
        return g.coin(0.5) ? g.subnormal() : g.normal(-100 + g.range(0, 20));
      case QCls::pow2:
        return static_cast<float>(std::ldexp(g.sign() ? -1.0 : 1.0, g.range(-20, 20)));
      case QCls::nonfinite: {
        const int u = g.range(0, 99);
        return u < 2   ? INFINITY
               : u < 4 ? -INFINITY
               : u < 5 ? from_bits(0x7FC00000u)
                       : g.normal(g.range(-10, 10));
      }
      case QCls::overflow:
        return g.normal(63 - g.range(0, 4));
      case QCls::allzero:
        return 0.0f;
      case QCls::wide:
        return g.normal(g.range(-60, 60));
      default:
        return g.normal(g.range(-10, 10));
    }
  };
  for (auto& v : a) v = operand();
  for (auto& v : b) v = operand();
  const std::vector<float> nout = quant::matmul_fp32_nt(a, b, M, N, K, cfg.accum);
  os::Tensor A, B;
  for (float v : a) A.push_back(real(v));
  for (float v : b) B.push_back(real(v));
  const os::Tensor oout = oq::matmul_fp32(
      A, B, M, N, K,
      cfg.accum == native::AccumOrder::sequential ? oq::Accum::sequential : oq::Accum::pairwise);
  for (std::size_t i = 0; i < nout.size(); ++i) {
    ck.fp32("out", i, nout[i], oout[i], [] { return std::string(); });
  }
}

std::uint64_t qcase_seed(const std::string& op, QCls c, std::size_t cfg, int rep) {
  std::uint64_t h = 0x84222325cbf29ce4ull;  // FNV-1a of the op name, then the indices
  for (char ch : op) h = (h ^ static_cast<unsigned char>(ch)) * 0x100000001b3ull;
  return h ^ (static_cast<std::uint64_t>(c) << 40) ^ (cfg << 48) ^ static_cast<std::uint64_t>(rep);
}

}  // namespace

void record(detail::Tally& t, std::size_t max, const std::string& op, const std::string& cls,
            const std::string& cfg, const char* what, std::size_t index, std::uint64_t native,
            std::uint64_t oracle, ValueClass oracle_class, bool ok,
            const std::function<std::string()>& operands) {
  t.add_check(oracle_class, ok);
  t.label(cls, ok);
  if (ok || t.first.size() >= max) return;
  Mismatch m;
  m.check = what;
  m.from = op;
  m.to = cls;
  m.rounding = cfg;
  m.input = index;
  m.native.code = native;
  m.oracle.code = oracle;
  m.detail = "element " + std::to_string(index) + ": " + (operands ? operands() : std::string());
  t.keep(std::move(m), max);
}

std::vector<std::string> quant_op_names() {
  std::vector<std::string> n;
  for (const QOp& op : all_qops()) n.push_back(op.name);
  return n;
}

OpPlan quant_op_plan(const std::string& name, Depth depth) {
  const std::vector<QOp> ops = all_qops();
  const auto it =
      std::find_if(ops.begin(), ops.end(), [&](const QOp& o) { return o.name == name; });
  if (it == ops.end()) throw InputError("unknown quantization op '" + name + "'");
  auto op = std::make_shared<QOp>(*it);
  auto cfgs = std::make_shared<std::vector<QCfg>>(qconfigs(*op));
  const QSizes z = qsizes(depth);
  OpPlan plan;
  plan.name = name;
  plan.configurations = cfgs->size();
  const bool mm = op->fam == Fam::matmul_int8 || op->fam == Fam::matmul_fp32;
  const std::uint64_t units = mm ? z.mm_m * z.mm_n * z.mm_k / 8 : z.rows * z.cols;
  for (std::size_t c = 0; c < cfgs->size(); ++c) {
    for (QCls cls : kQClasses) {
      for (int rep = 0; rep < z.reps; ++rep) {
        const std::uint64_t seed = qcase_seed(name, cls, c, rep);
        plan.jobs.push_back({units, [op, cfgs, c, cls, seed, z](detail::Tally& t, std::size_t max) {
                               const QCfg& cfg = (*cfgs)[c];
                               Ctx ck{t, max, op->name, qcls_name(cls), cfg.label};
                               if (op->fam == Fam::matmul_int8) {
                                 run_matmul_int8(cfg, cls, seed, z, ck);
                               } else if (op->fam == Fam::matmul_fp32) {
                                 run_matmul_fp32(cfg, cls, seed, z, ck);
                               } else {
                                 run_quant_case(*op, cfg, cls, seed, z, ck);
                               }
                             }});
      }
    }
  }
  return plan;
}

}  // namespace exmy::verify::steps_detail
