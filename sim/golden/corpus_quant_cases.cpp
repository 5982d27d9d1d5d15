// The quantize suite of the golden corpus (docs/SEMANTICS.md 13): the case makers of exmy
// quantize and of bitsandbytes 4-bit.
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
#include "sim/golden/corpus_cases.hpp"
#include "sim/io/files.hpp"
#include "sim/io/flat_json.hpp"
#include "sim/io/json_write.hpp"
#include "sim/io/npy.hpp"
#include "sim/io/sha256.hpp"
#include "sim/native/pack4.hpp"
#include "sim/optim/registry.hpp"
#include "sim/quant/bnb4bit.hpp"
#include "sim/quant/quantize.hpp"
#include "sim/quant/scheme_registry.hpp"
#include "sim/verify/campaign.hpp"
#include "sim/verify/sample_inputs.hpp"

namespace exmy::golden::detail {
using native::Storage;
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

// The commands that compute a quantization case (docs/SEMANTICS.md 13.7: run in a directory
// holding x.npy, they write every output as <name>.npy there): exmy quantize with the case's
// switches, then exmy dequantize of its codes with the same switches (--to read as --from).
std::string replay_command(const QuantCase& qc, bool byte_scale, bool two_level) {
  const std::string state = byte_scale ? "scales.npy" : "state.npy";
  std::string from = qc.args;
  const auto to = from.find("--to ");
  if (to != std::string::npos) from.replace(to, 5, "--from ");
  const std::string in_format = qc.source == Storage::bf16 ? " --in-format bf16" : "";
  return "exmy quantize " + qc.args + " --in x.npy" + in_format + " --out codes.npy --state-out " +
         state + (two_level ? " --tensor-scale-out tensor_scale.npy" : "") +
         " && exmy dequantize " + from + " --in codes.npy --state-in " + state +
         (two_level ? " --tensor-scale-in tensor_scale.npy" : "") + " --out dequant.npy";
}

void quant_cases(std::uint64_t seed, std::vector<CaseMaker>& out) {
  constexpr std::size_t kRows = 32, kCols = 256;
  for (const QuantCase& qc : quant_case_list()) {
    // Case names are portable (issue 34: GitHub's artifact upload and Windows refuse ':'):
    // "block:256" is spelled "block256" as the nf4/fp4 cases spell it.
    std::string name = qc.id;
    for (std::size_t k; (k = name.find("block:")) != std::string::npos;) name.erase(k + 5, 1);
    const std::string id = "quantize/" + name;
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
                                 {"cli", replay_command(qc, byte_scale, o.two_level)}};
                     c.inputs.push_back({"x", std::move(x_file)});
                     // The arrays as `exmy quantize` writes them (cli/cmd_quantize.cpp
                     // write_quantized; scripts/golden-replay.py holds the two equal): int8 codes
                     // as |i1, always-packed schemes (nvfp4) two codes per byte, the state in its
                     // scheme's shape (block:RxC: rows/R x cols/C).
                     io::NpyArray codes = io::make_npy(q.codes, q.shape);
                     if (quant::scheme_entry(o.scheme).packed_codes) {
                       std::vector<std::uint8_t> packed(native::packed4_bytes(q.codes.size()));
                       native::pack4(q.codes.data(), q.codes.size(), packed.data());
                       std::vector<std::size_t> shape = q.shape;
                       shape.back() /= 2;
                       codes = io::make_npy(packed, shape);
                     } else if (o.target.kind == FormatKind::integer) {
                       codes.descr = io::kDescrI8;
                     }
                     c.expected.push_back({"codes", std::move(codes)});
                     if (byte_scale) {
                       c.expected.push_back({"scales", io::make_npy(q.scale_codes, q.state_shape)});
                     } else {
                       c.expected.push_back({"state", io::make_npy(q.state, q.state_shape)});
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

}  // namespace exmy::golden::detail
