// Golden corpora (corpus.hpp, docs/SEMANTICS.md 13.7): the suites, the writer with its manifest,
// the checker and the shard merge.
#include "sim/golden/corpus.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <tuple>
#include <variant>

#include "sim/common/error.hpp"
#include "sim/common/number.hpp"
#include "sim/fast/array_cast.hpp"
#include "sim/format/registry.hpp"
#include "sim/format/rounding_names.hpp"
#include "sim/io/files.hpp"
#include "sim/io/flat_json.hpp"
#include "sim/io/json_write.hpp"
#include "sim/io/npy.hpp"
#include "sim/io/sha256.hpp"
#include "sim/optim/registry.hpp"
#include "sim/quant/bnb4bit.hpp"
#include "sim/quant/quantize.hpp"
#include "sim/verify/campaign.hpp"
#include "sim/verify/sample_inputs.hpp"

namespace exmy::golden {
namespace fs = std::filesystem;
using native::Storage;
namespace {

// ---- the suites -----------------------------------------------------------------------------
// One case: where it lives, what case.json says, its inputs and expected outputs.
struct Case {
  std::string id;                                              // "<suite>/<...>"
  std::vector<std::pair<std::string, std::string>> fields;     // case.json, in order
  std::vector<std::pair<std::string, io::NpyArray>> inputs;    // written beside case.json
  std::vector<std::pair<std::string, io::NpyArray>> expected;  // expected/<name>
};
// A case is built lazily (a shard builds only its own).
struct CaseMaker {
  std::string id;
  std::function<Case()> make;
};

// Casts: the OCP / ml_dtypes formats and the IEEE P3109 8-bit signed formats the format core can
// describe (binary8pK, K = 1..7, finite: NaN at 0x80, no infinities, bias 2^(7−K), i.e. eXmY
// fnuz with that bias; P3109's "extended" variants, with ±inf at 0x7F/0xFF beside the NaN at
// 0x80, and its unsigned variants are not describable: section 1's NaN conventions put inf only
// in ieee-style formats).
struct CastFormat {
  const char* label;
  const char* name;
};
constexpr CastFormat kCastFormats[] = {
    {"e4m3fn", "e4m3fn"},
    {"e5m2", "e5m2"},
    {"e4m3fnuz", "e4m3fnuz"},
    {"e5m2fnuz", "e5m2fnuz"},
    {"e4m3", "e4m3"},
    {"e3m4", "e3m4"},
    {"e3m2fn", "e3m2fn"},
    {"e2m3fn", "e2m3fn"},
    {"e2m1fn", "e2m1fn"},
    {"e8m0fnu", "e8m0fnu"},
    {"bf16", "bf16"},
    {"fp16", "fp16"},
    {"p3109-binary8p1", "e7m0b64fnuz"},
    {"p3109-binary8p2", "e6m1b32fnuz"},
    {"p3109-binary8p3", "e5m2b16fnuz"},
    {"p3109-binary8p4", "e4m3b8fnuz"},
    {"p3109-binary8p5", "e3m4b4fnuz"},
    {"p3109-binary8p6", "e2m5b2fnuz"},
    {"p3109-binary8p7", "e1m6b1fnuz"},
};
// The cast cases' roundings: every deterministic mode and sr:8 (the rounding registry's order),
// under each overflow policy in this order.
const std::vector<Rounding>& cast_roundings() {
  static const std::vector<Rounding> v = rounding_sweep({8});
  return v;
}
constexpr Overflow kPolicies[] = {Overflow::none, Overflow::sat, Overflow::satfinite};

// TestFloat-style fp32 inputs for target f: the boundary × pattern table of sim/verify (every
// value of f, its fp32 neighbours, exact midpoints ± 1, 2 ulps, quarter points, the overflow
// threshold, specials, Philox-chosen random patterns) plus 512 uniform random fp32 patterns from
// the generator's seed (printed in the manifest).
std::vector<float> cast_inputs(const FloatFormat& f, std::uint64_t seed) {
  std::vector<float> x;
  for (std::uint64_t code : verify::boundary_inputs(formats::fp32, f, verify::Depth::ci)) {
    const auto u = static_cast<std::uint32_t>(code);
    float v;
    std::memcpy(&v, &u, 4);
    x.push_back(v);
  }
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 512; ++i) {
    const auto u = static_cast<std::uint32_t>(rng());
    float v;
    std::memcpy(&v, &u, 4);
    x.push_back(v);
  }
  return x;
}

void cast_cases(std::uint64_t seed, std::vector<CaseMaker>& out) {
  for (const CastFormat& cf : kCastFormats) {
    const std::string fmt_dir = std::string("cast/") + cf.label;
    for (const Rounding& mode : cast_roundings()) {
      for (const Overflow ov : kPolicies) {
        const std::string round = rounding_name(mode), policy = overflow_name(ov);
        std::string dir = round;  // case paths hold no ':'
        std::erase(dir, ':');
        const std::string id = fmt_dir + "/" + dir + "-" + policy;
        out.push_back({id, [=] {
                         const Format f = parse_format(cf.name);
                         const std::vector<float> x = cast_inputs(f.fp, seed);
                         const Rounding r{mode.mode, mode.sr_bits, ov};
                         const int bytes = f.fp.total_bits() <= 8 ? 1 : 2;
                         std::vector<std::uint8_t> codes(x.size() * bytes);
                         fast::cast_to_codes(x.data(), fast::ArrayInput::fp32, x.size(),
                                             codes.data(), f.fp, r, seed, 0, 0);
                         Case c;
                         c.id = id;
                         c.fields = {{"op", "cast"},
                                     {"format", cf.name},
                                     {"round", round},
                                     {"overflow", policy},
                                     {"seed", std::to_string(seed)},
                                     {"inputs", "x"},
                                     {"outputs", "codes"},
                                     {"cli", std::string("exmy cast ") + cf.name +
                                                 " --in x.npy --out codes.npy --round " + round +
                                                 " --overflow " + policy + " --seed " +
                                                 std::to_string(seed)}};
                         c.inputs.push_back({"x", io::make_npy(x)});
                         if (bytes == 1) {
                           c.expected.push_back({"codes", io::make_npy(codes)});
                         } else {
                           std::vector<std::uint16_t> c16(x.size());
                           std::memcpy(c16.data(), codes.data(), codes.size());
                           c.expected.push_back({"codes", io::make_npy(c16)});
                         }
                         return c;
                       }});
      }
    }
  }
}

// Random values the same on every platform: std::mt19937_64 is specified bit for bit, the
// standard distributions are not (nor is libm), so values are built from the raw words with
// exactly rounded fp32 operations only. bell(): a sum of four uniforms in [−1, 1), bell-shaped.
float uniform_pm1(std::mt19937_64& rng) {
  return static_cast<float>(static_cast<std::int32_t>(rng() >> 32)) * 0x1p-31f;
}
float bell(std::mt19937_64& rng) {
  const float a = uniform_pm1(rng), b = uniform_pm1(rng), c = uniform_pm1(rng),
              d = uniform_pm1(rng);
  return ((a + b) + (c + d)) * 0.5f;
}
std::uint64_t fnv1a(const std::string& s) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (char ch : s) h = (h ^ static_cast<unsigned char>(ch)) * 0x100000001b3ull;
  return h;
}

// Quantization inputs: a rows × cols matrix with a magnitude per row (2^−20 … 2^20), 2% zeros of
// both signs, fp32 subnormals, a row of powers of two and, in the last row, ±inf and NaN.
std::vector<float> quant_inputs(std::size_t rows, std::size_t cols, std::uint64_t seed,
                                bool specials) {
  std::mt19937_64 rng(seed);
  std::vector<float> x(rows * cols);
  for (std::size_t r = 0; r < rows; ++r) {
    const int e = static_cast<int>(rng() % 41) - 20;
    for (std::size_t c = 0; c < cols; ++c) {
      float v = std::ldexp(bell(rng), e);
      const auto u = rng() % 100;
      if (u < 2) v = (u == 0) ? 0.0f : -0.0f;
      if (u == 2) v = std::ldexp(static_cast<float>(rng() % 1000 + 1), -149);
      if (r == 1) v = std::ldexp(1.0f, static_cast<int>(rng() % 30) - 15);
      x[r * cols + c] = v;
    }
  }
  if (specials) {
    x[(rows - 1) * cols + 3] = INFINITY;
    x[(rows - 1) * cols + 5] = -INFINITY;
    x[(rows - 1) * cols + 7] = NAN;
  }
  return x;
}

// x rounded (RNE) into a 16-bit source dtype, x replaced by the widened values, and the file the
// CLI reads: bf16 bits as <u2 (--in-format bf16) or <f2.
io::NpyArray narrow_input(std::vector<float>& x, Storage st, std::vector<std::size_t> shape) {
  const FloatFormat& T = st == Storage::bf16 ? formats::bf16 : formats::fp16;
  std::vector<std::uint16_t> codes(x.size());
  fast::cast_to_codes(x.data(), fast::ArrayInput::fp32, x.size(), codes.data(), T, Rounding{}, 0, 0,
                      0);
  const auto& table = fast::decode_table(T);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = table[codes[i]];
  io::NpyArray a = io::make_npy(codes, std::move(shape));
  if (st == Storage::f16) a.descr = "<f2";
  return a;
}

struct QuantCase {
  std::string id;
  std::string args;  // the exmy quantize switches it stands for
  std::function<quant::Options()> options;
  bool specials;
  // The input's dtype (x.npy: <f4, bf16 bits as <u2 with --in-format bf16, or <f2): 7.15's TE and
  // torchao rules read it.
  Storage source = Storage::f32;
};

// The quantization cases: every scheme × target × variant of section 7 that the CLI accepts, at
// the defaults of the other switches, plus named variants of the switches (orders, NaN policy,
// stochastic rounding, bitsandbytes' CPU rules, power-of-two scales, fused transpose).
std::vector<QuantCase> quant_case_list() {
  using native::CastVariant;
  auto base = [](const std::string& scheme, const std::string& to) {
    quant::Options o;
    o.scheme = quant::parse_scheme(scheme);
    o.target = quant::parse_target(to);
    return o;
  };
  std::vector<QuantCase> v;
  auto add = [&](std::string id, std::string args, std::function<quant::Options()> f,
                 bool specials) {
    v.push_back({std::move(id), std::move(args), std::move(f), specials});
  };
  const char* schemes[] = {"tensor", "rowwise", "colwise", "block:256"};
  // int8 in each order.
  for (const char* sc : schemes) {
    for (const char* ord : {"div-mul", "recip-mul", "mul-recip"}) {
      add(
          std::string("int8-") + sc + "-" + ord,
          std::string("--scheme ") + sc + " --to int8 --order " + ord,
          [=] {
            auto o = base(sc, "int8");
            o.order = std::string(ord) == "div-mul"     ? native::ScaleOrder::div_mul
                      : std::string(ord) == "recip-mul" ? native::ScaleOrder::recip_mul
                                                        : native::ScaleOrder::mul_recip;
            return o;
          },
          true);
    }
  }
  // Scaled casts: every float target of at most 8 bits the corpus covers × variant.
  for (const char* sc : schemes) {
    for (const char* to :
         {"e4m3fn", "e5m2", "e4m3fnuz", "e5m2fnuz", "e3m2fn", "e2m3fn", "e2m1fn"}) {
      for (const char* var : {"absmax", "te", "te-current", "torchao"}) {
        add(
            std::string(to) + "-" + sc + "-" + var,
            std::string("--scheme ") + sc + " --to " + to + " --variant " + var,
            [=] {
              auto o = base(sc, to);
              o.variant = quant::parse_variant(var);
              return o;
            },
            true);
      }
    }
  }
  // Codebooks × block sizes (bitsandbytes: 4096 for quantize_blockwise, 256/2048 for states).
  for (const char* to : {"dynamic", "dynamic-unsigned", "linear", "linear-unsigned"}) {
    for (const char* sc : {"block:256", "block:2048", "block:4096"}) {
      add(
          std::string(to) + "-" + sc,
          std::string("--scheme ") + sc + " --to " + to + " --nan ignore",
          [=] {
            auto o = base(sc, to);
            o.nan = native::NanPolicy::ignore;
            return o;
          },
          true);
    }
  }
  // MX: every element format × variant × scale mode.
  for (const char* to : {"e4m3fn", "e5m2", "e3m2fn", "e2m3fn", "e2m1fn"}) {
    for (const char* var : {"ocp", "torchao"}) {
      for (const char* mode : {"floor", "ceil", "even", "rceil"}) {
        add(
            std::string("mx-") + to + "-" + var + "-" + mode,
            std::string("--scheme mx --to ") + to + " --variant " + var + " --scale-mode " + mode,
            [=] {
              auto o = base("mx", to);
              o.variant = quant::parse_variant(var);
              o.scale_mode = quant::parse_scale_mode(mode);
              return o;
            },
            true);
      }
    }
  }
  // NVFP4.
  add(
      "nvfp4-torchao", "--scheme nvfp4 --to e2m1fn", [=] { return base("nvfp4", "e2m1fn"); },
      false);
  add(
      "nvfp4-torchao-two-level", "--scheme nvfp4 --to e2m1fn --two-level",
      [=] {
        auto o = base("nvfp4", "e2m1fn");
        o.two_level = true;
        return o;
      },
      false);
  add(
      "nvfp4-te", "--scheme nvfp4 --to e2m1fn --variant te --two-level",
      [=] {
        auto o = base("nvfp4", "e2m1fn");
        o.variant = CastVariant::te;
        o.two_level = true;
        return o;
      },
      false);
  // The switches, one at a time.
  add(
      "int8-tensor-recip-mul-transpose", "--scheme tensor --to int8 --order recip-mul --transpose",
      [=] {
        auto o = base("tensor", "int8");
        o.order = native::ScaleOrder::recip_mul;
        o.transpose = true;
        return o;
      },
      false);
  add(
      "int8-colwise-transpose", "--scheme colwise --to int8 --transpose",
      [=] {
        auto o = base("colwise", "int8");
        o.transpose = true;
        return o;
      },
      false);
  add(
      "int8-rowwise-sr8", "--scheme rowwise --to int8 --round sr:8 --seed 7",
      [=] {
        auto o = base("rowwise", "int8");
        o.mode = RoundMode::sr;
        o.sr_bits = 8;
        o.seed = 7;
        return o;
      },
      false);
  add(
      "int8-rowwise-nan-ignore", "--scheme rowwise --to int8 --nan ignore",
      [=] {
        auto o = base("rowwise", "int8");
        o.nan = native::NanPolicy::ignore;
        return o;
      },
      true);
  add(
      "e4m3fn-rowwise-absmax-sr8", "--scheme rowwise --to e4m3fn --round sr:8 --seed 7",
      [=] {
        auto o = base("rowwise", "e4m3fn");
        o.mode = RoundMode::sr;
        o.sr_bits = 8;
        o.seed = 7;
        return o;
      },
      false);
  add(
      "e4m3fn-tensor-te-current-pow2",
      "--scheme tensor --to e4m3fn --variant te-current --pow2-scale",
      [=] {
        auto o = base("tensor", "e4m3fn");
        o.variant = CastVariant::te_current;
        o.pow2_scale = true;
        return o;
      },
      false);
  add(
      "e4m3fn-rowwise-torchao-pow2", "--scheme rowwise --to e4m3fn --variant torchao --pow2-scale",
      [=] {
        auto o = base("rowwise", "e4m3fn");
        o.variant = CastVariant::torchao;
        o.pow2_scale = true;
        return o;
      },
      false);
  add(
      "dynamic-block4096-bnb-cpu", "--scheme block:4096 --to dynamic --norm div --tie bnb-cpu",
      [=] {
        auto o = base("block:4096", "dynamic");
        o.norm = native::NormOrder::div;
        o.tie = TieRule::bnb_cpu;
        return o;
      },
      false);
  // 2-D block scaling (7.15): each library rule x scale format on whole tiles (1x128 on the
  // 32 x 256 input) and partial ones (128x128: 32 of 128 rows; 16x48: 256 = 5·48 + 16 columns);
  // torchao on whole tiles only (it refuses partial ones); TE and torchao with 16-bit sources.
  for (const char* var : {"deepgemm", "te", "torchao"}) {
    const std::string vn = var;
    const std::vector<const char*> fmts = vn == "deepgemm"
                                              ? std::vector<const char*>{"fp32", "ue8m0"}
                                          : vn == "te" ? std::vector<const char*>{"fp32", "pow2"}
                                                       : std::vector<const char*>{"fp32"};
    const std::vector<const char*> tiles =
        vn == "torchao" ? std::vector<const char*>{"1x128", "32x128"}
                        : std::vector<const char*>{"1x128", "128x128", "16x48"};
    for (const char* fmt : fmts) {
      for (const char* tile : tiles) {
        const std::string sc = std::string("block:") + tile;
        add(
            std::string("e4m3fn-tile") + tile + "-" + var + "-" + fmt,
            "--scheme " + sc + " --to e4m3fn --variant " + var + " --scale-format " + fmt,
            [=] {
              auto o = base(sc, "e4m3fn");
              o.variant = quant::parse_variant(var);
              o.scale_format = quant::parse_scale_format(fmt);
              return o;
            },
            true);
      }
    }
  }
  for (const auto& [var, src, name] :
       {std::tuple{"te", Storage::bf16, "bf16"}, std::tuple{"te", Storage::f16, "fp16"},
        std::tuple{"torchao", Storage::f16, "fp16"},
        std::tuple{"deepgemm", Storage::bf16, "bf16"}}) {
    add(
        std::string("e4m3fn-tile1x128-") + var + "-fp32-" + name + "-source",
        std::string("--scheme block:1x128 --to e4m3fn --variant ") + var +
            (src == Storage::bf16 ? " --in-format bf16" : ""),
        [=] {
          auto o = base("block:1x128", "e4m3fn");
          o.variant = quant::parse_variant(var);
          o.source = src;
          return o;
        },
        true);
    v.back().source = src;
  }
  add(
      "dynamic-block256-sr", "--scheme block:256 --to dynamic --round sr:8 --seed 7",
      [=] {
        auto o = base("block:256", "dynamic");
        o.mode = RoundMode::sr;
        o.sr_bits = 8;
        o.seed = 7;
        return o;
      },
      false);
  return v;
}

void quant_cases(std::uint64_t seed, std::vector<CaseMaker>& out) {
  constexpr std::size_t kRows = 32, kCols = 256;
  for (const QuantCase& qc : quant_case_list()) {
    const std::string id = "quantize/" + qc.id;
    out.push_back({id, [=] {
                     const quant::Options o = qc.options();
                     std::vector<float> x = quant_inputs(kRows, kCols, seed, qc.specials);
                     io::NpyArray x_file = io::make_npy(x, {kRows, kCols});
                     if (qc.source != Storage::f32)
                       x_file = narrow_input(x, qc.source, {kRows, kCols});
                     const quant::Quantized q = quant::quantize(x, {kRows, kCols}, o);
                     const std::vector<float> d = quant::dequantize(q, o);
                     Case c;
                     c.id = id;
                     const bool byte_scale = !q.scale_codes.empty();
                     std::string outputs =
                         byte_scale ? "codes,scales,dequant" : "codes,state,dequant";
                     if (o.two_level) outputs += ",tensor_scale";
                     c.fields = {{"op", "quantize"},
                                 {"args", qc.args},
                                 {"seed", std::to_string(seed)},
                                 {"inputs", "x"},
                                 {"outputs", outputs},
                                 {"cli", "exmy quantize " + qc.args +
                                             " --in x.npy --out codes.npy --state-out state.npy; "
                                             "exmy dequantize (same switches)"}};
                     c.inputs.push_back({"x", std::move(x_file)});
                     c.expected.push_back({"codes", io::make_npy(q.codes, q.shape)});
                     if (byte_scale) {
                       c.expected.push_back({"scales", io::make_npy(q.scale_codes)});
                     } else {
                       c.expected.push_back({"state", io::make_npy(q.state)});
                     }
                     c.expected.push_back({"dequant", io::make_npy(d, {kRows, kCols})});
                     if (o.two_level) {
                       c.expected.push_back(
                           {"tensor_scale", io::make_npy(std::vector<float>{q.tensor_scale})});
                     }
                     return c;
                   }});
  }
}

// bitsandbytes' 4-bit quantization (7.14): nf4 / fp4 x block sizes (the warp kernel's 32 and 64,
// 256, the largest 4096) x plain / double quantization x fp32, bf16 and fp16 inputs, on n = 8229
// values (odd: the last byte's low nibble codes the padding; a partial last block; 258 absmax
// values at block 32, two second-level blocks). Plain cases carry ±inf and NaN; double
// quantization's offset is the mean of every absmax, so its cases stay finite.
void bnb4_cases(std::uint64_t seed, std::vector<CaseMaker>& out) {
  constexpr std::size_t kN = 8229;
  const std::pair<Storage, const char*> dtypes[] = {
      {Storage::f32, "fp32"}, {Storage::bf16, "bf16"}, {Storage::f16, "fp16"}};
  for (const char* type : {"nf4", "fp4"}) {
    for (const std::size_t block : {32, 64, 256, 4096}) {
      for (const bool dq : {false, true}) {
        for (const auto& [st, dn] : dtypes) {
          const std::string id = std::string("quantize/") + type + "-block" +
                                 std::to_string(block) + (dq ? "-dq-" : "-") + dn;
          out.push_back(
              {id, [=] {
                 std::vector<float> x = quant_inputs(33, 256, seed, !dq);
                 x.resize(kN);
                 if (!dq) {  // the specials sit in the last row: bring some in
                   x[kN - 3] = INFINITY;
                   x[kN - 2] = NAN;
                   x[100] = -INFINITY;
                 }
                 io::NpyArray x_file = io::make_npy(x);
                 if (st != Storage::f32) x_file = narrow_input(x, st, {kN});
                 quant::Bnb4Options o;
                 o.type = quant::parse_bnb4_type(type);
                 o.block = block;
                 o.double_quant = dq;
                 const quant::Bnb4Quantized q = quant::bnb4_quantize(x, o);
                 const native::Bnb4Dtype d = st == Storage::f32    ? native::Bnb4Dtype::fp32
                                             : st == Storage::bf16 ? native::Bnb4Dtype::bf16
                                                                   : native::Bnb4Dtype::fp16;
                 const std::vector<std::uint32_t> y = quant::bnb4_dequantize(q, kN, d, o);
                 const std::string sch = "--scheme block:" + std::to_string(block);
                 const std::string dqq =
                     dq ? " --double-quant --state2-out state2.npy --offset-out offset.npy" : "";
                 const std::string dqd =
                     dq ? " --double-quant --state2 state2.npy --offset offset.npy" : "";
                 Case c;
                 c.id = id;
                 c.fields = {
                     {"op", "quantize-bnb4"},
                     {"args", sch + " --to " + type + " --compat bnb-cuda" +
                                  (dq ? " --double-quant" : "") +
                                  (st == Storage::bf16 ? " --in-format bf16" : "")},
                     {"seed", std::to_string(seed)},
                     {"inputs", "x"},
                     {"outputs", dq ? "codes,state,state2,offset,dequant" : "codes,state,dequant"},
                     {"cli", "exmy quantize " + sch + " --to " + type + " --compat bnb-cuda" + dqq +
                                 " --in x.npy" + (st == Storage::bf16 ? " --in-format bf16" : "") +
                                 " --out codes.npy --state-out state.npy; exmy "
                                 "dequantize " +
                                 sch + " --from " + type + " --compat bnb-cuda" + dqd +
                                 " --in codes.npy --state state.npy --shape " + std::to_string(kN) +
                                 " --out-format " + dn + " --out dequant.npy"}};
                 c.inputs.push_back({"x", std::move(x_file)});
                 c.expected.push_back({"codes", io::make_npy(q.packed)});
                 if (dq) {
                   c.expected.push_back({"state", io::make_npy(q.absmax_codes)});
                   c.expected.push_back({"state2", io::make_npy(q.absmax2)});
                   c.expected.push_back({"offset", io::make_npy(std::vector<float>{q.offset})});
                 } else {
                   c.expected.push_back({"state", io::make_npy(q.absmax)});
                 }
                 if (st == Storage::f32) {
                   std::vector<float> yf(kN);
                   std::memcpy(yf.data(), y.data(), kN * 4);
                   c.expected.push_back({"dequant", io::make_npy(yf)});
                 } else {
                   std::vector<std::uint16_t> y16(kN);
                   for (std::size_t i = 0; i < kN; ++i) y16[i] = static_cast<std::uint16_t>(y[i]);
                   io::NpyArray a = io::make_npy(y16);
                   if (st == Storage::f16) a.descr = "<f2";
                   c.expected.push_back({"dequant", std::move(a)});
                 }
                 return c;
               }});
        }
      }
    }
  }
}

struct StepCase {
  std::string id;
  std::string optimizer;
  Storage st;
  std::string compat;  // "" = the default
};
// Every optimizer × parameter dtype × --compat profile exmy models (section 9): torch Adam, AdamW
// and SGD under torch-cpu, torch-cuda, torch-cuda-foreach and torch-cuda-fused, on fp32, bf16
// and fp16; the 8-bit optimizers on fp32, bf16 and fp16, by
// default and under bnb-cuda; StableAdamW; the split formats of seed 004.
std::vector<StepCase> step_case_list() {
  std::vector<StepCase> v;
  const std::pair<Storage, const char*> dtypes[] = {
      {Storage::f32, "fp32"}, {Storage::bf16, "bf16"}, {Storage::f16, "fp16"}};
  for (const char* opt : {"adamw", "adam", "sgd"}) {
    for (const auto& [st, dn] : dtypes) {
      for (const char* prof :
           {"torch-cpu", "torch-cuda", "torch-cuda-foreach", "torch-cuda-fused"}) {
        v.push_back({std::string(opt) + "-" + dn + "-" + prof, opt, st,
                     std::string(prof) == "torch-cpu" ? "" : prof});
      }
    }
  }
  for (const char* opt : {"adamw8bit", "adam8bit", "momentum8bit"}) {
    for (const auto& [st, dn] : dtypes) {
      v.push_back({std::string(opt) + "-" + dn, opt, st, ""});
      v.push_back({std::string(opt) + "-" + dn + "-bnb-cuda", opt, st, "bnb-cuda"});
    }
  }
  v.push_back({"stableadamw-fp32", "stableadamw", Storage::f32, ""});
  for (const char* split :
       {"adamw-bf16+8", "adamw-bf16+8:sr", "adamw-fp16+8:sr", "sgd-bf16+8:sr"}) {
    std::string id = split;
    for (char& c : id) {
      if (c == ':' || c == '+') c = '-';
    }
    v.push_back({id, split, Storage::f32, ""});
  }
  return v;
}

void step_cases(std::uint64_t seed, std::vector<CaseMaker>& out) {
  constexpr std::size_t kN = 4096 + 300;  // 8-bit states: two full blocks of 2048 and a partial
  constexpr long kSteps = 5;
  for (const StepCase& sc : step_case_list()) {
    const std::string id = "step/" + sc.id;
    out.push_back(
        {id, [=] {
           optim::Config c;
           c.opt = optim::find_optimizer(sc.optimizer);
           c.hyper = optim::resolve_hyper(*c.opt.entry, {});
           c.st = sc.st;
           c.seed = seed;
           optim::apply_compat(c, sc.compat);  // as `exmy step --compat` and exmy.step
           std::mt19937_64 rng(seed ^ fnv1a(sc.id));
           std::vector<float> p0(kN), g(kN * kSteps);
           for (float& v : p0) v = bell(rng) * 0.1f;
           for (float& v : g) v = bell(rng) * 0.01f;
           // The storage type's values (16-bit parameters and gradients hold exactly).
           if (sc.st != Storage::f32) {
             const FloatFormat& T = sc.st == Storage::bf16 ? formats::bf16 : formats::fp16;
             for (auto* v : {&p0, &g}) {
               std::vector<std::uint16_t> codes(v->size());
               fast::cast_to_codes(v->data(), fast::ArrayInput::fp32, v->size(), codes.data(), T,
                                   Rounding{}, 0, 0, 0);
               const auto& table = fast::decode_table(T);
               for (std::size_t i = 0; i < v->size(); ++i) (*v)[i] = table[codes[i]];
             }
           }
           std::vector<float> p = p0;
           optim::State s = optim::init_state(c, p);
           {
             auto stepper = optim::cpu_stepper(c, p, s);
             for (long t = 1; t <= kSteps; ++t) {
               stepper->step(t, std::span<const float>(g).subspan((t - 1) * kN, kN));
             }
             stepper->finish();
           }
           optim::final_params(c, s, p);
           optim::canonical_nans(c, s, p);
           Case cs;
           cs.id = id;
           std::string outputs = "params";
           std::vector<std::pair<std::string, io::NpyArray>> states;
           for (const optim::StateArray& a : c.opt.entry->arrays(c, s)) {
             io::NpyArray arr = std::visit([](auto* vec) { return io::make_npy(*vec); }, a.data);
             states.push_back({a.file, std::move(arr)});
             outputs += std::string(",") + a.file;
           }
           cs.fields = {
               {"op", "step"},
               {"optimizer", sc.optimizer},
               {"param_dtype", std::string(optim::dtype_name(sc.st))},
               {"compat", sc.compat.empty() ? std::string("default") : sc.compat},
               {"steps", std::to_string(kSteps)},
               {"seed", std::to_string(seed)},
               {"inputs", "params,grads"},
               {"outputs", outputs},
               {"cli", std::string("exmy step ") + sc.optimizer +
                           " --params params.npy --grads grads.npy --steps " +
                           std::to_string(kSteps) + " --param-dtype " +
                           std::string(optim::dtype_name(sc.st)) +
                           (sc.compat.empty() ? std::string() : " --compat " + sc.compat) +
                           " --seed " + std::to_string(seed) + " --out OUT --state STATE"}};
           cs.inputs.push_back({"params", io::make_npy(p0)});
           cs.inputs.push_back({"grads", io::make_npy(g, {kSteps, kN})});
           cs.expected.push_back({"params", io::make_npy(p)});
           for (auto& st : states) cs.expected.push_back(std::move(st));
           return cs;
         }});
  }
}

std::vector<CaseMaker> all_cases(const std::string& suite, std::uint64_t seed) {
  std::vector<CaseMaker> v;
  const bool all = suite == "all" || suite == "default";
  if (all || suite == "cast") cast_cases(seed, v);
  if (all || suite == "quantize") {
    quant_cases(seed, v);
    bnb4_cases(seed, v);
  }
  if (all || suite == "step") step_cases(seed, v);
  if (v.empty()) {
    throw InputError("--suite '" + suite + "': expected cast, quantize, step or all");
  }
  return v;
}

// ---- files ----------------------------------------------------------------------------------
std::string flat_json(const std::vector<std::pair<std::string, std::string>>& fields) {
  std::string s = "{\n";
  for (std::size_t i = 0; i < fields.size(); ++i) {
    s += "  " + io::json_string(fields[i].first) + ": " + io::json_string(fields[i].second);
    s += i + 1 < fields.size() ? ",\n" : "\n";
  }
  return s + "}\n";
}

// sha256 over the sorted "hash  path" lines: identifies the corpus contents, whatever built it.
std::string content_hash(const std::map<std::string, std::string>& files) {
  std::string lines;
  for (const auto& [path, hash] : files) lines += hash + "  " + path + "\n";
  return io::sha256_hex(lines);
}

std::string manifest_text(const GenerateOptions& opt,
                          const std::map<std::string, std::string>& files, std::size_t cases,
                          const std::string& shard_text, const std::string& suite) {
  std::vector<std::pair<std::string, std::string>> f = {
      {"corpus", "exmy-golden"},          {"corpus_version", std::to_string(kCorpusVersion)},
      {"exmy_version", EXMY_VERSION},     {"semantics_revision", kSemanticsRevision},
      {"git_sha", EXMY_GIT_SHA},          {"suite", suite},
      {"seed", std::to_string(opt.seed)}, {"shard", shard_text},
      {"cases", std::to_string(cases)},   {"corpus_sha256", content_hash(files)}};
  for (const auto& [path, hash] : files) f.push_back({"file:" + path, hash});
  return flat_json(f);
}

void mkdirs(const fs::path& p) {
  std::error_code ec;
  fs::create_directories(p, ec);
  if (ec)
    throw InputError("'" + p.string() + "': cannot create the directory (" + ec.message() + ")");
}

// The "file:<path>" fields of a manifest; a path leaving the corpus is refused.
std::map<std::string, std::string> manifest_files(const io::FlatJson& m) {
  std::map<std::string, std::string> files;
  for (const auto& [key, v] : m.fields()) {
    if (key.rfind("file:", 0) != 0) continue;
    const std::string rel = key.substr(5);
    if (rel.empty() || rel[0] == '/' || rel.find("..") != std::string::npos) {
      throw InputError(m.source() + ": file entry '" + rel + "' leaves the corpus directory");
    }
    if (v.kind != io::JsonValue::Kind::string || v.text.size() != 64) {
      throw InputError(m.source() + ": file entry '" + rel + "': expected a sha256 hex digest");
    }
    files[rel] = v.text;
  }
  return files;
}

io::FlatJson read_json(const std::string& path, const std::string& what) {
  return io::FlatJson(io::read_small_file(path, std::size_t{64} << 20, what), path);
}

io::FlatJson read_manifest(const std::string& corpus) {
  const std::string path = (fs::path(corpus) / "manifest.json").string();
  io::FlatJson m = read_json(path, "a golden corpus manifest (exmy golden generate)");
  if (!m.has("corpus") || m.str("corpus") != "exmy-golden") {
    throw InputError(path +
                     ": not an exmy golden corpus manifest (expected \"corpus\": \"exmy-golden\")");
  }
  const auto v = number::parse_u64(m.str("corpus_version"), path + ": corpus_version", 1000000);
  if (v != static_cast<std::uint64_t>(kCorpusVersion)) {
    throw InputError(path + ": corpus version " + std::to_string(v) + ", this exmy reads version " +
                     std::to_string(kCorpusVersion));
  }
  return m;
}

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> v;
  std::size_t pos = 0;
  while (pos <= s.size()) {
    const std::size_t c = std::min(s.find(',', pos), s.size());
    if (c > pos) v.push_back(s.substr(pos, c - pos));
    pos = c + 1;
  }
  return v;
}

std::string hex_of(const io::NpyArray& a, std::size_t i) {
  const std::size_t w = a.item_size();
  std::uint64_t u = 0;
  std::memcpy(&u, a.data.data() + i * w, std::min<std::size_t>(w, 8));
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%0*" PRIx64, static_cast<int>(2 * w), u);
  return buf;
}
bool same_element(const io::NpyArray& e, const io::NpyArray& g, std::size_t i, bool strict_nan) {
  const std::size_t w = e.item_size();
  if (std::memcmp(e.data.data() + i * w, g.data.data() + i * w, w) == 0) return true;
  if (strict_nan) return false;
  auto nan = [&](const io::NpyArray& a) {
    if (a.descr == "<f4") {
      std::uint32_t u;
      std::memcpy(&u, a.data.data() + i * 4, 4);
      return (u & 0x7FFFFFFFu) > 0x7F800000u;
    }
    if (a.descr == "<f8") {
      std::uint64_t u;
      std::memcpy(&u, a.data.data() + i * 8, 8);
      return (u & 0x7FFFFFFFFFFFFFFFull) > 0x7FF0000000000000ull;
    }
    return false;
  };
  return nan(e) && nan(g);
}

}  // namespace

std::vector<std::string> suite_names() {
  return {"cast", "quantize", "step"};
}

GenerateResult generate(const GenerateOptions& opt) {
  if (opt.out.empty()) throw InputError("--out: expected the corpus directory");
  const std::vector<CaseMaker> makers = all_cases(opt.suite, opt.seed);
  mkdirs(opt.out);
  // Stage into a directory beside the corpus, then move the finished tree in.
  io::StagingDir stage(opt.out);
  const fs::path root = stage.path();
  std::map<std::string, std::string> files;
  std::size_t cases = 0;
  const auto t0 = std::chrono::steady_clock::now();
  double next_print = 1.0;
  for (std::size_t k = 0; k < makers.size(); ++k) {
    if (k < opt.shard.begin(makers.size()) || k >= opt.shard.end(makers.size())) continue;
    const Case c = makers[k].make();
    const fs::path dir = root / c.id;
    mkdirs(dir / "expected");
    auto put_text = [&](const std::string& rel, const std::string& text) {
      io::write_text_atomic((root / rel).string(), text);
      files[rel] = io::sha256_hex(text);
    };
    auto put_npy = [&](const std::string& rel, const io::NpyArray& a) {
      io::write_npy((root / rel).string(), a);
      files[rel] = io::sha256_file((root / rel).string());
    };
    put_text(c.id + "/case.json", flat_json(c.fields));
    for (const auto& [name, a] : c.inputs) put_npy(c.id + "/" + name + ".npy", a);
    for (const auto& [name, a] : c.expected) put_npy(c.id + "/expected/" + name + ".npy", a);
    ++cases;
    if (opt.progress) {  // at most once a second, with an ETA
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (s >= next_print) {
        next_print = s + 1.0;
        const double eta =
            s / static_cast<double>(k + 1) * static_cast<double>(makers.size() - k - 1);
        std::fprintf(stderr, "\r[golden] %zu/%zu cases  %.0fs  ETA %.0fs ", k + 1, makers.size(), s,
                     eta);
      }
    }
  }
  if (opt.progress) std::fprintf(stderr, "\r[golden] %zu cases written\n", cases);
  const std::string shard_text = opt.shard.text();
  const std::string manifest_name = opt.shard.whole()
                                        ? "manifest.json"
                                        : "manifest-shard-" + std::to_string(opt.shard.index) +
                                              "-of-" + std::to_string(opt.shard.count) + ".json";
  // One suite written over a whole corpus keeps the corpus's other suites: their files stay on
  // disk and their manifest entries are carried over (a corpus of another seed is refused, as
  // its cases would no longer follow from the recorded seed).
  std::map<std::string, std::string> listed = files;
  std::string suite_text = opt.suite;
  std::size_t listed_cases = cases;
  const bool one_suite = opt.suite != "all" && opt.suite != "default";
  if (one_suite && opt.shard.whole() && fs::exists(fs::path(opt.out) / "manifest.json")) {
    const io::FlatJson old = read_manifest(opt.out);
    if (old.str("seed") != std::to_string(opt.seed)) {
      throw InputError("--out '" + opt.out + "': holds a corpus of seed " + old.str("seed") +
                       ", not " + std::to_string(opt.seed) +
                       " (expected the same --seed to regenerate one suite of it, or a fresh "
                       "directory)");
    }
    std::set<std::string> suites = {opt.suite};
    for (const auto& [rel, hash] : manifest_files(old)) {
      const std::string suite = rel.substr(0, rel.find('/'));
      if (suite == opt.suite) continue;
      listed.emplace(rel, hash);
      suites.insert(suite);
      const std::string tail = "/case.json";
      if (rel.size() > tail.size() && rel.compare(rel.size() - tail.size(), tail.size(), tail) == 0)
        ++listed_cases;
    }
    suite_text.clear();
    for (const std::string& name : suite_names()) {
      if (suites.count(name)) suite_text += (suite_text.empty() ? "" : ",") + name;
    }
    if (suites.size() == suite_names().size()) suite_text = "all";
  }
  io::write_text_atomic((root / manifest_name).string(),
                        manifest_text(opt, listed, listed_cases, shard_text, suite_text));
  // Move the staged tree into place: every file, the manifest last.
  io::OutputSet outs;
  std::vector<std::string> rels;
  for (const auto& [rel, hash] : files) rels.push_back(rel);
  rels.push_back(manifest_name);
  for (const std::string& rel : rels) {
    mkdirs((fs::path(opt.out) / rel).parent_path());
    outs.adopt((root / rel).string(), (fs::path(opt.out) / rel).string());
  }
  outs.commit();
  GenerateResult r;
  r.cases = listed_cases;
  r.files = listed.size();
  r.corpus_sha256 = content_hash(listed);
  r.manifest_path = (fs::path(opt.out) / manifest_name).string();
  return r;
}

CheckReport check(const CheckOptions& opt) {
  const io::FlatJson m = read_manifest(opt.corpus);
  const std::map<std::string, std::string> files = manifest_files(m);
  // Every corpus file against its hash, and the corpus hash against the files.
  for (const auto& [rel, hash] : files) {
    const std::string path = (fs::path(opt.corpus) / rel).string();
    const std::string got = io::sha256_file(path);
    if (got != hash) {
      throw InputError("corrupted corpus file '" + path + "': sha256 " + got + ", manifest says " +
                       hash);
    }
  }
  if (m.str("corpus_sha256") != content_hash(files)) {
    throw InputError((fs::path(opt.corpus) / "manifest.json").string() +
                     ": corpus_sha256 does not match its file list (edited manifest)");
  }
  const bool all = opt.suite == "all" || opt.suite == "default";
  CheckReport report;
  for (const auto& [rel, hash] : files) {
    const std::string tail = "/case.json";
    if (rel.size() <= tail.size() ||
        rel.compare(rel.size() - tail.size(), tail.size(), tail) != 0) {
      continue;
    }
    const std::string id = rel.substr(0, rel.size() - tail.size());
    if (!all && id.rfind(opt.suite + "/", 0) != 0) continue;
    const io::FlatJson c = read_json((fs::path(opt.corpus) / rel).string(), "a case.json");
    CaseReport cr;
    cr.id = id;
    // Operands for the report: the case's input "x" when it has one per output element.
    std::unique_ptr<io::NpyArray> x;
    if (c.str("inputs") == "x") {
      x = std::make_unique<io::NpyArray>(
          io::read_npy((fs::path(opt.corpus) / id / "x.npy").string()));
    }
    for (const std::string& name : split_list(c.str("outputs"))) {
      const std::string epath = (fs::path(opt.corpus) / id / "expected" / (name + ".npy")).string();
      const std::string rpath = (fs::path(opt.results) / id / (name + ".npy")).string();
      if (!fs::exists(rpath)) {
        cr.missing = true;
        continue;
      }
      const io::NpyArray e = io::read_npy(epath);
      const io::NpyArray g = io::read_npy(rpath);
      if (g.descr != e.descr || g.count() != e.count()) {
        throw InputError("'" + rpath + "': expected dtype " + e.descr + " with " +
                         std::to_string(e.count()) + " elements (as " + epath + "), got " +
                         g.descr + " with " + std::to_string(g.count()));
      }
      for (std::size_t i = 0; i < e.count(); ++i) {
        ++cr.checks;
        if (same_element(e, g, i, opt.strict_nan)) continue;
        ++cr.mismatches;
        if (cr.first.size() < opt.max_reported) {
          std::string line = name + "[" + std::to_string(i) + "]: expected " + hex_of(e, i) +
                             ", got " + hex_of(g, i);
          if (x && x->count() == e.count() && !c.has("args")) {
            line += " (x = " + hex_of(*x, i) + ")";
          }
          cr.first.push_back(line);
        }
      }
    }
    report.checks += cr.checks;
    report.mismatches += cr.mismatches;
    report.missing += cr.missing ? 1 : 0;
    report.cases.push_back(std::move(cr));
  }
  if (report.cases.empty()) {
    throw InputError("--suite '" + opt.suite + "': the corpus has no case of it");
  }
  return report;
}

std::vector<CaseInfo> list_cases(const std::string& corpus, const std::string& suite) {
  const io::FlatJson m = read_manifest(corpus);
  const bool all = suite == "all" || suite == "default";
  std::vector<CaseInfo> out;
  for (const auto& [rel, hash] : manifest_files(m)) {
    const std::string tail = "/case.json";
    if (rel.size() <= tail.size() ||
        rel.compare(rel.size() - tail.size(), tail.size(), tail) != 0) {
      continue;
    }
    CaseInfo ci;
    ci.id = rel.substr(0, rel.size() - tail.size());
    if (!all && ci.id.rfind(suite + "/", 0) != 0) continue;
    ci.dir = (fs::path(corpus) / ci.id).string();
    const io::FlatJson c = read_json((fs::path(corpus) / rel).string(), "a case.json");
    ci.op = c.str("op");
    if (c.has("format")) ci.format = c.str("format");
    if (c.has("round")) ci.round = c.str("round");
    if (c.has("overflow")) ci.overflow = c.str("overflow");
    ci.seed = number::parse_u64(c.str("seed"), rel + ": seed", ~std::uint64_t{0});
    out.push_back(std::move(ci));
  }
  return out;
}

GenerateResult merge(const std::string& dir) {
  std::map<std::string, std::string> files;
  std::size_t cases = 0;
  std::uint64_t count = 0;
  std::vector<std::pair<std::string, std::string>> generator;  // fields every shard must share
  std::vector<bool> seen;
  std::error_code dir_ec;
  fs::directory_iterator entries(dir, dir_ec);
  if (dir_ec) {
    throw InputError("'" + dir + "': cannot list the directory (" + dir_ec.message() +
                     "; expected the corpus directory holding the shard manifests)");
  }
  for (const auto& entry : entries) {
    const std::string name = entry.path().filename().string();
    unsigned long long i = 0, n = 0;
    char tail[8] = {};
    if (std::sscanf(name.c_str(), "manifest-shard-%llu-of-%llu.jso%1s", &i, &n, tail) != 3 ||
        name != "manifest-shard-" + std::to_string(i) + "-of-" + std::to_string(n) + ".json") {
      continue;
    }
    if (n == 0 || i >= n || n > (std::uint64_t{1} << 20)) {
      throw InputError("'" + entry.path().string() + "': shard " + std::to_string(i) + " of " +
                       std::to_string(n) +
                       " (expected shard i of N with i < N and 1 <= N <= 1048576, as --shard)");
    }
    if (count != 0 && n != count) {
      throw InputError("'" + entry.path().string() + "': shard " + std::to_string(i) + " of " +
                       std::to_string(n) + " does not fit the other shards (of " +
                       std::to_string(count) + ")");
    }
    count = n;
    seen.resize(n);
    seen[i] = true;
    const io::FlatJson m = io::FlatJson(
        io::read_small_file(entry.path().string(), std::size_t{64} << 20, "a shard manifest"),
        entry.path().string());
    std::vector<std::pair<std::string, std::string>> g;
    for (const char* k : {"corpus", "corpus_version", "exmy_version", "semantics_revision",
                          "git_sha", "suite", "seed"}) {
      g.push_back({k, m.str(k)});
    }
    if (!generator.empty() && g != generator) {
      throw InputError("'" + entry.path().string() +
                       "': written by another generator than the "
                       "other shards (version, SHA, suite or seed differ)");
    }
    generator = g;
    for (const auto& [rel, hash] : manifest_files(m)) files[rel] = hash;
    cases +=
        number::parse_u64(m.str("cases"), entry.path().string() + ": cases", ~std::uint64_t{0});
  }
  if (count == 0) throw InputError("'" + dir + "': no manifest-shard-I-of-N.json to merge");
  for (std::uint64_t i = 0; i < count; ++i) {
    if (!seen[i]) {
      throw InputError("'" + dir + "': shard " + std::to_string(i) + " of " +
                       std::to_string(count) + " is missing (manifest-shard-" + std::to_string(i) +
                       "-of-" + std::to_string(count) + ".json)");
    }
  }
  std::vector<std::pair<std::string, std::string>> f = generator;
  f.push_back({"shard", "merged from " + std::to_string(count)});
  f.push_back({"cases", std::to_string(cases)});
  f.push_back({"corpus_sha256", content_hash(files)});
  for (const auto& [rel, hash] : files) f.push_back({"file:" + rel, hash});
  io::write_text_atomic((fs::path(dir) / "manifest.json").string(), flat_json(f));
  GenerateResult r;
  r.cases = cases;
  r.files = files.size();
  r.corpus_sha256 = content_hash(files);
  r.manifest_path = (fs::path(dir) / "manifest.json").string();
  return r;
}

}  // namespace exmy::golden
