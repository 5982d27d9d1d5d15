// exmy quantize / exmy dequantize: tensor quantization schemes on .npy arrays
// (docs/SEMANTICS.md 7 and 11). Parse -> quant::Options -> run on a backend (cpu: sim/quant;
// cuda: gpu/quant through gpu/host_arrays); both produce a quant::Quantized, written here.
// Both subcommands share one option table (quantize_options); `exmy quantize --help` prints it.
//
// --device cuda runs the GPU kernels (gpu/quant/quantize.hpp) on the same arrays: the same bits as
// the CPU reference; the element-wise exception flags are not collected there.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "cli/cli_device.hpp"
#include "cli/cli_util.hpp"
#include "cli/command.hpp"
#include "cli/options.hpp"
#include "gpu/host_arrays.hpp"
#include "gpu/quant/bnb4bit.hpp"
#include "sim/common/checked_size.hpp"
#include "sim/common/error.hpp"
#include "sim/common/number.hpp"
#include "sim/format/compat.hpp"
#include "sim/io/files.hpp"
#include "sim/io/npy.hpp"
#include "sim/layer/nvfp4_train.hpp"
#include "sim/native/convert.hpp"
#include "sim/native/pack4.hpp"
#include "sim/quant/bnb4bit.hpp"
#include "sim/quant/dequant_checks.hpp"
#include "sim/quant/quantize.hpp"
#include "sim/quant/scheme_registry.hpp"

namespace exmy::cli {
namespace {

// Which of the two subcommands a table or a check is for: they share their switches, and differ
// in the target's and the state's option names (quantize writes the state, dequantize reads it).
enum class Direction { quantize, dequantize };

struct CliOptions {
  quant::Options q;
  std::string in, in_format, out, state, tensor_state;
  bool pack = false;         // codes of <= 4-bit formats two per byte (always for nvfp4)
  std::string compat;        // --compat NAME
  bool norm_or_nan = false;  // --norm or --nan given
  bool order = false;        // --order given
  Device device = Device::cpu;
  bool json = false;  // the summary line as JSON
  // bitsandbytes' 4-bit path (--to/--from nf4|fp4, docs/SEMANTICS.md 7.14): not a target of
  // quant::Options but quant::bnb4_quantize's own.
  bool bnb4 = false;
  native::Bnb4Type bnb4_type = native::Bnb4Type::nf4;
  bool double_quant = false;
  std::string state2, offset;  // --state2-out/--state2, --offset-out/--offset
  std::string shape;           // dequantize: the tensor's shape (default (2 * bytes,))
  native::Bnb4Dtype out_dtype = native::Bnb4Dtype::fp32;  // dequantize --out-format
  // TransformerEngine's NVFP4 training options (docs/SEMANTICS.md 7.18-7.20).
  layer::Nvfp4TrainOptions train;
  std::string rht_out;                  // --rht-out: RHT(X^T) as bf16 codes
  std::vector<std::uint16_t> rht_bits;  // what it holds
};

// A float option through the CLI's one number parser (sim/common/number.hpp): finite, one
// rounding to fp32, and > 0 (or >= 0 when zero_ok). NaN is the options' "not given", so a NaN,
// an inf or an overflowing 1e999 is refused here rather than silently ignored.
float float_option(const std::string& text, const std::string& what, bool zero_ok = false) {
  const float v = number::parse_f32(text, what);
  number::require_range(v, text, what, 0.0, !zero_ok, HUGE_VAL, true);
  return v;
}

// A float default as --help prints it ("1", "0").
std::string float_text(float v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(v));
  return buf;
}

// A choice among a few names: the table --help lists, parsing, and the default's name.
template <typename T>
struct Choice {
  const char* name;
  T value;
};
template <typename T, std::size_t N>
T choose(const Choice<T> (&choices)[N], const std::string& v, const char* what) {
  std::string expected;
  for (std::size_t k = 0; k < N; ++k) {
    if (v == choices[k].name) return choices[k].value;
    expected += (k == 0 ? "" : k + 1 == N ? " or " : ", ") + std::string(choices[k].name);
  }
  throw InputError(std::string(what) + " '" + v + "': expected " + expected);
}
template <typename T, std::size_t N>
std::string choice_names(const Choice<T> (&choices)[N]) {
  std::string out;
  for (std::size_t k = 0; k < N; ++k) out += (k ? "|" : "") + std::string(choices[k].name);
  return out;
}
template <typename T, std::size_t N>
std::string choice_name(const Choice<T> (&choices)[N], T value) {
  for (const Choice<T>& c : choices) {
    if (c.value == value) return c.name;
  }
  return "?";
}

constexpr Choice<native::ScaleOrder> kOrders[] = {{"div-mul", native::ScaleOrder::div_mul},
                                                  {"recip-mul", native::ScaleOrder::recip_mul},
                                                  {"mul-recip", native::ScaleOrder::mul_recip}};
constexpr Choice<native::NanPolicy> kNans[] = {{"propagate", native::NanPolicy::propagate},
                                               {"ignore", native::NanPolicy::ignore}};
constexpr Choice<native::NormOrder> kNorms[] = {{"recip-mul", native::NormOrder::recip_mul},
                                                {"div", native::NormOrder::div}};

// "a|b|c" of a name list, and the name among them that `parse` maps to `value`.
template <std::size_t N>
std::string joined(const char* const (&names)[N]) {
  std::string out;
  for (std::size_t k = 0; k < N; ++k) out += (k ? "|" : "") + std::string(names[k]);
  return out;
}
template <std::size_t N, typename Parse, typename T>
std::string name_of(const char* const (&names)[N], Parse parse, T value) {
  for (const char* n : names) {
    if (parse(n) == value) return n;
  }
  return "?";
}

// The option table of `dir`, filling `o`. Dequantize takes quantize's switches too, so that the
// switches of a quantization name the same plan when its codes are read back.
Options quantize_options(CliOptions& o, Direction dir) {
  const bool q = dir == Direction::quantize;
  const quant::Options d;  // the defaults
  Options opts(
      q ? "exmy quantize --scheme S --to TARGET --in X.npy --out Q.npy --state-out "
          "S.npy [OPTIONS]"
        : "exmy dequantize --scheme S --from TARGET --in Q.npy --state-in S.npy --out X.npy "
          "[OPTIONS]",
      q ? "Quantizes X with one scale (state) per group of the scheme (docs/SEMANTICS.md "
          "7, 11); writes the codes, the state and, with --two-level, the tensor scale "
          "together."
        : "Dequantizes codes and state back to fp32. The switches of the quantization "
          "(variant, order, scale mode, ...) are accepted and name the same plan.",
      q ? "exmy quantize --scheme block:32 --to e4m3fn --in x.npy --out q.npy "
          "--state-out s.npy"
        : "exmy dequantize --scheme block:32 --from e4m3fn --in q.npy --state-in s.npy "
          "--out x.npy");
  opts.value({"--scheme"}, quant::scheme_list("|"),
             "the groups that share a scale (block:B: B in 32..4096; block:RxC: R x C tiles of a "
             "2-d input)",
             Options::kRequired, [&](const std::string& v) { o.q.scheme = quant::parse_scheme(v); })
      .value({q ? "--to" : "--from"}, "TARGET",
             "element format: int8, a float format of <= 8 bits (e4m3fn, e5m2, e2m1fn, ...), "
             "dynamic, dynamic-unsigned, linear, linear-unsigned or table:PATH",
             Options::kRequired,
             [&](const std::string& v) {
               if (v == "nf4" || v == "fp4") {  // bitsandbytes' 4-bit types (--compat bnb-cuda)
                 o.bnb4 = true;
                 o.bnb4_type = quant::parse_bnb4_type(v);
               } else {
                 o.q.target = quant::parse_target(v);
               }
             })
      .value({"--in"}, q ? "X.npy" : "Q.npy",
             q ? "the input: <f4, <f2, or <u2 bf16 bit patterns with --in-format bf16"
               : "the codes (|u1, |i1 for int8; packed two per byte with --pack)",
             Options::kRequired, [&](const std::string& v) { o.in = v; })
      .value({"--out"}, q ? "Q.npy" : "X.npy",
             q ? "the codes written (|u1, |i1 for int8)" : "the fp32 values written (<f4)",
             Options::kRequired, [&](const std::string& v) { o.out = v; });
  // The state file: --state-out written, --state-in read (as --tensor-scale-out / -in); --state
  // is dequantize's older spelling.
  const auto set_state = [&](const std::string& v) { o.state = v; };
  if (q) {
    opts.value({"--state-out"}, "S.npy",
               "the state written: one scale per group (<f4; |u1 E8M0/E4M3 codes for mx, nvfp4)",
               Options::kRequired, set_state);
  } else {
    opts.value({"--state-in", "--state"}, "S.npy", "the state of the quantization",
               Options::kRequired, set_state);
  }
  opts.value({q ? "--tensor-scale-out" : "--tensor-scale-in"}, "T.npy",
             q ? "the per-tensor scale written (with --two-level)"
               : "the per-tensor scale (with --two-level)",
             "none; required with --two-level", [&](const std::string& v) { o.tensor_state = v; })
      .value({"--in-format"}, "bf16", "the input holds bf16 bit patterns (<u2)",
             "the input's dtype (<f4 or <f2)",
             [&](const std::string& v) {
               if (v != "bf16") {
                 throw InputError("--in-format '" + v + "': expected bf16 (uint16 bit patterns)");
               }
               o.in_format = v;
             })
      .flag({"--transpose"}, "fused quantize + transpose (2-d only): the codes are Q(x)^T",
            [&] { o.q.transpose = true; })
      .value({"--variant"}, quant::variant_list("|"),
             "the library's scale rule (switchback is accepted as absmax)",
             "absmax (mx: ocp, nvfp4: torchao; absmax means the same there)",
             [&](const std::string& v) {
               o.q.variant =
                   v == "switchback" ? native::CastVariant::absmax : quant::parse_variant(v);
             })
      .value({"--scale-format"}, joined(quant::kScaleFormatNames),
             "block:RxC: the tile scale's form (deepgemm: fp32|ue8m0; te: fp32|pow2)", "fp32",
             [&](const std::string& v) { o.q.scale_format = quant::parse_scale_format(v); })
      .value({"--scale-mode"}, joined(quant::kScaleModeNames), "mx: the E8M0 scale's rounding",
             name_of(quant::kScaleModeNames, quant::parse_scale_mode, d.scale_mode),
             [&](const std::string& v) { o.q.scale_mode = quant::parse_scale_mode(v); })
      .flag({"--two-level"}, "nvfp4: a per-tensor fp32 scale above the block scales",
            [&] { o.q.two_level = true; })
      .value({"--tensor-amax"}, "F", "nvfp4 two-level: the tensor amax to use (calibration)",
             "the input's amax",
             [&](const std::string& v) { o.q.tensor_amax = float_option(v, "--tensor-amax"); })
      .value({"--tensor-scale"}, "F", "nvfp4 two-level, torchao: the per-tensor scale itself",
             "computed from the tensor amax",
             [&](const std::string& v) { o.q.tensor_scale = float_option(v, "--tensor-scale"); })
      .flag({"--pack"}, "codes of <= 4-bit formats two per byte (always for nvfp4)",
            [&] { o.pack = true; })
      .value({"--order"}, choice_names(kOrders), "absmax variant: the fp32 order of the scaling",
             choice_name(kOrders, d.order),
             [&](const std::string& v) {
               o.order = true;
               o.q.order = choose(kOrders, v, "--order");
             })
      .value({"--nan"}, choice_names(kNans), "a NaN element's effect on its group's absmax",
             choice_name(kNans, d.nan),
             [&](const std::string& v) {
               o.norm_or_nan = true;
               o.q.nan = choose(kNans, v, "--nan");
             })
      .value({"--round"}, round_mode_list("|"), "rounding of the scaled elements",
             round_mode_name(d.mode),
             [&](const std::string& v) {
               const Rounding r = parse_rounding(v);
               o.q.mode = r.mode;
               o.q.sr_bits = r.sr_bits;
             })
      .value({"--seed"}, "N", "seed of stochastic rounding", std::to_string(d.seed),
             [&](const std::string& v) { o.q.seed = parse_uint(v, "--seed", UINT64_MAX); })
      .value({"--margin"}, "M", "te: scale = fmax / amax / 2^M (-126..126)",
             std::to_string(d.te_margin),
             [&](const std::string& v) {
               o.q.te_margin = static_cast<int>(number::parse_i64(v, "--margin", -126, 126));
             })
      .value({"--prev-scale"}, "F", "te: the scale kept when the amax is 0 or not finite",
             float_text(d.te_prev_scale),
             [&](const std::string& v) { o.q.te_prev_scale = float_option(v, "--prev-scale"); })
      .value({"--scale"}, "F", "te, torchao: this scale for every group (delayed scaling)",
             "the scale computed from the amax",
             [&](const std::string& v) { o.q.given_scale = float_option(v, "--scale"); })
      .value({"--amax-epsilon"}, "F", "te-current: the amax's lower bound (>= 0)",
             float_text(d.te_amax_epsilon),
             [&](const std::string& v) {
               o.q.te_amax_epsilon = float_option(v, "--amax-epsilon", true);
             })
      .flag({"--pow2-scale"}, "scales rounded to powers of two (torchao, te-current)",
            [&] { o.q.pow2_scale = true; })
      .flag({"--fp16-clamp"}, "torchao <= 0.5 with fp16 sources: scale <= 65504",
            [&] { o.q.torchao_fp16_source = true; })
      .value({"--norm"}, choice_names(kNorms), "codebook targets: the normalization by the absmax",
             choice_name(kNorms, d.norm),
             [&](const std::string& v) {
               o.norm_or_nan = true;
               o.q.norm = choose(kNorms, v, "--norm");
             })
      .value({"--tie"}, tie_list("|"), "codebook targets: nearest-code ties", tie_name(d.tie),
             [&](const std::string& v) { o.q.tie = parse_tie(v); })
      .value({"--compat"}, compat_profile_names(CompatOp::quantize, "|"),
             "a library profile: its kernel rules fix --order, --norm and --nan",
             "none (the options above)", [&](const std::string& v) { o.compat = v; })
      .flag({"--double-quant"},
            "nf4/fp4: bitsandbytes' compress_statistics (absmax quantized to 8 bits, block 256)",
            [&] { o.double_quant = true; })
      .value({q ? "--state2-out" : "--state2"}, "S2.npy",
             "nf4/fp4 --double-quant: the fp32 absmax of the absmax codes",
             "none; required with --double-quant", [&](const std::string& v) { o.state2 = v; })
      .value({q ? "--offset-out" : "--offset"}, "O.npy",
             "nf4/fp4 --double-quant: the fp32 offset (torch's mean of the absmax), shape (1,)",
             "none; required with --double-quant", [&](const std::string& v) { o.offset = v; });
  if (!q) {
    opts.value({"--shape"}, "D0,D1,...", "nf4/fp4: the dequantized tensor's shape",
               "(2 * bytes of Q,)", [&](const std::string& v) { o.shape = v; })
        .value({"--out-format"}, "fp32|fp16|bf16",
               "nf4/fp4: the dtype written (bitsandbytes returns the input's; bf16 as <u2 bits)",
               "fp32", [&](const std::string& v) {
                 if (v == "fp32") {
                   o.out_dtype = native::Bnb4Dtype::fp32;
                 } else if (v == "fp16") {
                   o.out_dtype = native::Bnb4Dtype::fp16;
                 } else if (v == "bf16") {
                   o.out_dtype = native::Bnb4Dtype::bf16;
                 } else {
                   throw InputError("--out-format '" + v + "': expected fp32, fp16 or bf16");
                 }
               });
  }
  opts.value({"--device"}, "cpu|cuda", "the CPU reference or the GPU kernels (the same bits)",
             "cpu", [&](const std::string& v) { o.device = parse_device(v); })
      .flag({"--json"}, "print the summary as JSON", [&] { o.json = true; });
  if (q) {
    // TransformerEngine's NVFP4BlockScaling pieces (scheme nvfp4 --variant te --two-level).
    layer::Nvfp4TrainOptions& t = o.train;
    opts.flag({"--columnwise"}, "nvfp4 te: quantize X^T, TE's columnwise (wgrad) copy",
              [&] { t.columnwise = true; })
        .flag({"--rht"}, "nvfp4 te --columnwise: TE's 16x16 random Hadamard transform first",
              [&] { t.rht = true; })
        .value({"--rht-accum"}, "MODEL", "the RHT's GEMM accumulation (an exmy gemm --accum)",
               t.rht_accum, [&](const std::string& v) { t.rht_accum = v; })
        .value({"--rht-out"}, "Y.npy", "--rht: write RHT(X^T) (<u2 bf16 codes, cols x rows)",
               "none", [&](const std::string& v) { o.rht_out = v; })
        .flag({"--rht-no-signs"}, "the RHT without TE's sign vector (with_random_sign_mask off)",
              [&] { t.rht_signs = false; })
        .flag({"--sr"}, "nvfp4 te: TE's stochastic rounding (cvt.rs, its tuned 1-D kernel's words)",
              [&] { t.sr = true; })
        .value({"--philox-offset"}, "N", "--sr: TE's rng_state[1] (--seed is rng_state[0])", "0",
               [&](const std::string& v) {
                 t.philox_offset = parse_uint(v, "--philox-offset", UINT64_MAX);
               })
        .flag({"--sr-both"}, "--sr: the launch wrote the rowwise and the columnwise copy",
              [&] { t.sr_transposed_too = true; })
        .value({"--sr-arch"}, "sm100a|sm103a", "--sr: cvt.rs's byte order (SEMANTICS 12.2)",
               "sm100a",
               [&](const std::string& v) {
                 if (v != "sm100a" && v != "sm103a") {
                   throw InputError("--sr-arch '" + v + "': expected sm100a or sm103a");
                 }
                 t.arch = v == "sm103a" ? native::CvtRsArch::sm103a : native::CvtRsArch::sm100a;
               })
        .flag({"--four-over-six"}, "nvfp4 te: 4over6 adaptive block scaling (map to 4 or 6)",
              [&] { t.four_over_six = true; })
        .value({"--four-over-six-err"}, "mae|mse|mae-fast|mse-fast",
               "--four-over-six: the error compared (-fast: TE's fast-math error path)", "mae",
               [&](const std::string& v) {
                 if (v != "mae" && v != "mse" && v != "mae-fast" && v != "mse-fast") {
                   throw InputError("--four-over-six-err '" + v +
                                    "': expected mae, mse, mae-fast or mse-fast");
                 }
                 t.mse = v.rfind("mse", 0) == 0;
                 t.err_fast = v.size() > 3;
               })
        .value({"--e4m3-max"}, "256|448", "--four-over-six: the global scale's E4M3 bound", "256",
               [&](const std::string& v) {
                 t.e4m3_max = v == "448" ? 448 : v == "256" ? 256 : -1;
                 if (t.e4m3_max < 0)
                   throw InputError("--e4m3-max '" + v + "': expected 256 or 448");
               });
  }
  return opts;
}

// The checks of the nf4/fp4 path: bitsandbytes' 4-bit kernels are the bnb-cuda profile's (the
// registry entry says so), on blocks of the flattened tensor; the other switches are not theirs.
bool parse_bnb4(CliOptions& o, bool quantize) {
  const char* type = quant::bnb4_type_name(o.bnb4_type);
  if (compat_is_default(o.compat)) {
    throw InputError(std::string(type) +
                     ": bitsandbytes' 4-bit type needs --compat bnb-cuda (its kernels' rules)");
  }
  if (compat_quantize_entry(compat_profile(o.compat), type).quant != CompatQuant::bnb_4bit) {
    throw InputError("--compat " + o.compat + ": does not cover " + type);
  }
  if (o.q.scheme.kind != quant::Granularity::block) {
    throw InputError(std::string(type) + ": expected --scheme block:B (B = 32 .. 4096)");
  }
  quant::check_bnb4_block(o.q.scheme.block);
  if (o.pack || o.q.transpose || o.q.two_level || o.order || o.norm_or_nan ||
      o.q.mode != RoundMode::rne) {
    throw InputError(std::string(type) +
                     ": --pack, --transpose, --two-level, --order, --norm, --nan and --round do "
                     "not apply (codes are always two per byte, bitsandbytes' rules fixed)");
  }
  if (o.double_quant != (!o.state2.empty() && !o.offset.empty())) {
    throw InputError(quantize ? "--double-quant needs --state2-out S2.npy and --offset-out O.npy"
                              : "--double-quant needs --state2 S2.npy and --offset O.npy");
  }
  if (!o.double_quant && (!o.state2.empty() || !o.offset.empty())) {
    throw InputError("--state2 / --offset: expected --double-quant");
  }
  if (quantize) {
    io::OutputSet names;  // distinct outputs, never committed
    for (const std::string& p : {o.out, o.state, o.state2, o.offset}) {
      if (!p.empty()) names.stage(p);
    }
  }
  return true;
}

// Parses and checks the command line of `dir`; false after --help.
bool parse(const Args& args, Direction dir, CliOptions& o) {
  const bool quantize = dir == Direction::quantize;
  if (!quantize_options(o, dir).parse(args)) return false;
  const std::string state_flag = quantize ? "--state-out" : "--state-in";
  if (o.in.empty() || o.out.empty() || o.state.empty()) {
    throw InputError("--in, --out and " + state_flag + " must name files");
  }
  if (o.bnb4) return parse_bnb4(o, quantize);
  if (!o.rht_out.empty() && !o.train.rht) throw InputError("--rht-out: expected --rht");
  // The profile's kernel rules (sim/quant/quant_compat.cpp), as the Python module applies them.
  quant::apply_compat(o.q, o.compat,
                      {.order = o.order, .norm_or_nan = o.norm_or_nan, .dequantize = !quantize});
  quant::validate_options(o.q);
  const std::string tflag = quantize ? "--tensor-scale-out" : "--tensor-scale-in";
  if (o.q.two_level && o.tensor_state.empty()) {
    throw InputError("--two-level: " + tflag + " T.npy is required (the per-tensor scale)");
  }
  if (!o.q.two_level && !o.tensor_state.empty()) {
    throw InputError(tflag + ": expected --two-level");
  }
  if (quant::scheme_entry(o.q.scheme).packed_codes) o.pack = true;  // nvfp4
  if (o.pack) {
    const bool narrow = o.q.target.kind == FormatKind::floating && o.q.target.fp.total_bits() <= 4;
    if (!narrow) {
      throw InputError("--pack: expected a format of at most 4 bits, got '" + o.q.target.name +
                       "'");
    }
  }
  // Outputs must be distinct files (one would silently replace the other), however spelt
  // (q.npy and ./q.npy are one file): checked before any work by staging them in a set that is
  // never committed.
  if (quantize) {
    io::OutputSet names;
    for (const std::string& p : {o.out, o.state, o.tensor_state, o.rht_out}) {
      if (!p.empty()) names.stage(p);
    }
  }
  return true;
}

// An empty array is accepted only when its 2-d view (quant::matrix_view) is at most 1 x 1 (shape
// (0,), (1, 0), ...): the quantizer loops over rows and keeps a state per row or column, so a
// (2^40, 0) array would run 2^40 iterations and a (0, 2^40) one ask for 2^40 column scales, for
// no data. Work and memory stay bounded by the file (docs/SEMANTICS.md 11.0).
void check_empty_bounded(const std::vector<std::size_t>& shape, const std::string& what) {
  std::size_t count = 1;
  for (const std::size_t d : shape) count *= d;
  if (count != 0) return;
  std::size_t rows, cols;
  quant::matrix_view(shape, rows, cols);
  if (rows > 1 || cols > 1) {
    throw InputError(what + ": an empty array viewed as " + std::to_string(rows) + " x " +
                     std::to_string(cols) +
                     " (expected a non-empty array, or an empty one of "
                     "shape (0,))");
  }
}

// The input's values, without a copy of a large file: fp32 is a read-only mapping of the file
// (io::NpyMappedFile); fp16 and bf16 (bit patterns, --in-format bf16) are the mapped codes, each
// widened exactly where the quantizer reads it (quant::Values): no fp32 copy (docs/SEMANTICS.md
// 11.0's memory bound; it was the one case above it).
struct InputValues {
  std::unique_ptr<io::NpyMappedFile> file;
  std::vector<float> widened;  // an fp32 file whose data is not 4-byte aligned: copied
  quant::Values x;
  std::vector<std::size_t> shape;
  gpu::CastInput type = gpu::CastInput::fp32;
};

InputValues read_values(const CliOptions& o) {
  InputValues v;
  v.file = std::make_unique<io::NpyMappedFile>(o.in);
  const io::NpyHeader& h = v.file->header();
  io::require_c_order(h, o.in);
  v.shape = h.shape;
  check_empty_bounded(v.shape, o.in);
  io::NpyArray a;  // input_type reads the dtype only
  a.descr = h.descr;
  v.type = input_type(a, o.in, o.in_format == "bf16");
  const std::size_t n = h.count();
  const std::uint8_t* data = v.file->data();
  switch (v.type) {
    case gpu::CastInput::fp32:
      if (n == 0) {
        v.x = {};
      } else if (reinterpret_cast<std::uintptr_t>(data) % alignof(float) == 0) {
        v.x = std::span<const float>(reinterpret_cast<const float*>(data), n);
      } else {
        // A header length that leaves the data unaligned (numpy pads to 64 bytes; other
        // writers may not): copy rather than read misaligned floats.
        v.widened.resize(n);
        std::memcpy(v.widened.data(), data, n * sizeof(float));
        v.x = v.widened;
      }
      break;
    case gpu::CastInput::bf16:
      v.x = quant::Values(data, n, formats::bf16);
      break;
    case gpu::CastInput::fp16:
      v.x = quant::Values(data, n, formats::fp16);
      break;
  }
  return v;
}

// The codes of a shape packed two per byte along the last dimension (sim/native/pack4.hpp).
std::vector<std::size_t> packed_shape(std::vector<std::size_t> shape, const std::string& what) {
  if (shape.empty()) shape = {1};
  if (shape.back() % 2 != 0) {
    throw InputError(what + ": --pack needs an even last dimension, got " +
                     std::to_string(shape.back()));
  }
  shape.back() /= 2;
  return shape;
}

// One array written from memory into a staged file (no NpyArray copy of a large output).
void write_array(io::OutputSet& outs, const std::string& path, const std::string& descr,
                 const std::vector<std::size_t>& shape, const void* bytes, std::size_t n) {
  io::NpyFileWriter w(outs.stage(path), descr, shape);
  w.write(bytes, n);
  w.commit();
}

// Every array of a quantization, complete before any file is written; the files appear together
// (io::OutputSet). Codes go from q.codes to the file directly (int8 codes are their two's
// complement bytes already; --pack packs q.codes in place), so the only output-sized buffer is
// q.codes.
void write_quantized(const CliOptions& o, quant::Quantized& q) {
  io::OutputSet outs;
  if (o.pack) {
    // The CPU quantizer packs as it goes (quant::quantize's pack_codes); the GPU's codes are
    // packed here in place (pack4 reads codes 2j, 2j+1 before it writes byte j): no second
    // buffer either way.
    const std::vector<std::size_t> shape = packed_shape(q.shape, o.in);
    if (!q.packed) {
      native::pack4(q.codes.data(), q.codes.size(), q.codes.data());
      q.codes.resize(native::packed4_bytes(q.codes.size()));
      q.packed = true;
    }
    write_array(outs, o.out, io::kDescrU8, shape, q.codes.data(), q.codes.size());
  } else {
    write_array(outs, o.out, o.q.target.kind == FormatKind::integer ? io::kDescrI8 : io::kDescrU8,
                q.shape, q.codes.data(), q.codes.size());
  }
  // Together or not at all: a failure on the state file leaves no new Q.npy behind.
  if (quant::make_plan(o.q).byte_scales()) {
    write_array(outs, o.state, io::kDescrU8, q.state_shape, q.scale_codes.data(),
                q.scale_codes.size());
  } else {
    write_array(outs, o.state, io::kDescrF32, q.state_shape, q.state.data(),
                q.state.size() * sizeof(float));
  }
  if (o.q.two_level) {
    write_array(outs, o.tensor_state, io::kDescrF32, {1}, &q.tensor_scale, sizeof(float));
  }
  if (!o.rht_out.empty()) {
    write_array(outs, o.rht_out, io::kDescrU16, q.shape, o.rht_bits.data(),
                o.rht_bits.size() * sizeof(std::uint16_t));
  }
  outs.commit();
}

quant::Quantized quantize_cuda([[maybe_unused]] const CliOptions& o) {
#if EXMY_HAVE_CUDA
  // The mapped file goes to the device as it is (fp32, fp16 or bf16 bits): no host copy.
  const io::NpyMappedFile file(o.in);
  const io::NpyHeader& h = file.header();
  io::require_c_order(h, o.in);
  io::NpyArray a;  // input_type reads the dtype only
  a.descr = h.descr;
  const gpu::CastInput type = input_type(a, o.in, o.in_format == "bf16");
  check_empty_bounded(h.shape, o.in);
  quant::check_shape(o.q, h.shape);
  std::size_t rows, cols;
  quant::matrix_view(h.shape, rows, cols);
  quant::Quantized q = gpu::quantize_host(file.data(), type, rows, cols, o.q);
  q.shape = quant::codes_shape(h.shape, o.q);
  q.state_shape = quant::state_shape(o.q.scheme, h.shape);
  return q;
#else
  throw InputError("--device cuda: this exmy was built without CUDA");
#endif
}

// ---- bitsandbytes' 4-bit path (docs/SEMANTICS.md 7.14) --------------------------------------

quant::Bnb4Options bnb4_options(const CliOptions& o) {
  quant::Bnb4Options b;
  b.type = o.bnb4_type;
  b.block = o.q.scheme.block;
  b.double_quant = o.double_quant;
  return b;
}

// quantize_4bit's arrays: Q (ceil(n/2),) uint8; S (blocks,) fp32 absmax or, with
// --double-quant, uint8 absmax codes; S2 (ceil(blocks/256),) fp32; O (1,) fp32. Together or not
// at all.
void write_bnb4(const CliOptions& o, const quant::Bnb4Quantized& q) {
  io::OutputSet outs;
  write_array(outs, o.out, io::kDescrU8, {q.packed.size()}, q.packed.data(), q.packed.size());
  if (o.double_quant) {
    write_array(outs, o.state, io::kDescrU8, {q.absmax_codes.size()}, q.absmax_codes.data(),
                q.absmax_codes.size());
    write_array(outs, o.state2, io::kDescrF32, {q.absmax2.size()}, q.absmax2.data(),
                q.absmax2.size() * sizeof(float));
    write_array(outs, o.offset, io::kDescrF32, {1}, &q.offset, sizeof(float));
  } else {
    write_array(outs, o.state, io::kDescrF32, {q.absmax.size()}, q.absmax.data(),
                q.absmax.size() * sizeof(float));
  }
  outs.commit();
}

int run_bnb4_quantize(const CliOptions& o) {
  const quant::Bnb4Options b = bnb4_options(o);
  quant::Bnb4Quantized q;
  std::size_t n = 0;
  if (o.device == Device::cuda) {
#if EXMY_HAVE_CUDA
    const io::NpyMappedFile file(o.in);
    const io::NpyHeader& h = file.header();
    io::require_c_order(h, o.in);
    io::NpyArray a;  // input_type reads the dtype only
    a.descr = h.descr;
    n = h.count();
    if (n == 0) throw InputError(o.in + ": bitsandbytes' quantize_4bit needs at least one element");
    q = gpu::bnb4_quantize_host(file.data(), input_type(a, o.in, o.in_format == "bf16"), n, b);
#else
    throw InputError("--device cuda: this exmy was built without CUDA");
#endif
  } else {
    const InputValues in = read_values(o);
    n = in.x.size();
    q = quant::bnb4_quantize(in.x, b);
  }
  write_bnb4(o, q);
  const std::size_t blocks = (n + b.block - 1) / b.block;
  if (o.json) {
    std::printf(
        "{\"values\":%zu,\"bytes\":%zu,\"blocks\":%zu,\"type\":\"%s\",\"double_quant\":%s}\n", n,
        q.packed.size(), blocks, quant::bnb4_type_name(b.type), b.double_quant ? "true" : "false");
  } else {
    std::printf("%zu values, %zu bytes, %zu blocks of %zu, %s%s, device %s\n", n, q.packed.size(),
                blocks, b.block, quant::bnb4_type_name(b.type),
                b.double_quant ? " (double quantization)" : "",
                o.device == Device::cuda ? "cuda" : "cpu");
  }
  return 0;
}

// "D0,D1,..." (each >= 1).
std::vector<std::size_t> parse_shape_list(const std::string& text) {
  std::vector<std::size_t> shape;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    const std::size_t comma = std::min(text.find(',', pos), text.size());
    const std::string item = text.substr(pos, comma - pos);
    shape.push_back(static_cast<std::size_t>(number::parse_i64(item, "--shape", 1, INT64_MAX)));
    pos = comma + 1;
  }
  return shape;
}

// Values a dequantization writes per piece (4 MiB of fp32): the output is written as it is
// computed, from codes read in place (issue 36's memory bound, docs/SEMANTICS.md 11.0).
constexpr std::size_t kDequantChunk = std::size_t{1} << 20;

// The dtype check of codes read in place: the reader's own error for another dtype.
void require_codes_descr(const io::NpyHeader& h, const std::string& want, const std::string& what) {
  if (h.descr == want) return;
  const io::NpyArray a{h.descr, {}, false, {}};  // the dtype only
  if (want == io::kDescrI8) {
    (void)io::as_i8(a, what);
  } else {
    (void)io::as_u8(a, what);
  }
}

int run_bnb4_dequantize(const CliOptions& o) {
  const quant::Bnb4Options b = bnb4_options(o);
  quant::Bnb4Quantized q;
  // The packed codes stay in the mapped file (read in place; copied for --device cuda only).
  const io::NpyMappedFile codes(o.in);
  const io::NpyHeader& ch = codes.header();
  io::require_c_order(ch, o.in);
  require_codes_descr(ch, io::kDescrU8, o.in);
  const std::size_t bytes = ch.count();
  std::vector<std::size_t> shape =
      o.shape.empty() ? std::vector<std::size_t>{bytes * 2} : parse_shape_list(o.shape);
  const std::size_t n = checked_count(shape, "--shape");  // a product that wraps is refused
  if ((n + 1) / 2 != bytes) {
    throw InputError(o.in + ": " + std::to_string(bytes) + " bytes hold " +
                     std::to_string(2 * bytes - 1) + " or " + std::to_string(2 * bytes) +
                     " values, but --shape has " + std::to_string(n));
  }
  const io::NpyArray state = io::read_npy(o.state);
  if (o.double_quant) {
    q.absmax_codes = io::as_u8(state, o.state);
    q.absmax2 = io::as_f32(io::read_npy(o.state2), o.state2);
    const std::vector<float> off = io::as_f32(io::read_npy(o.offset), o.offset);
    if (off.size() != 1) {
      throw InputError(o.offset + ": expected one fp32 offset, got " + std::to_string(off.size()) +
                       " values");
    }
    q.offset = off[0];
  } else {
    q.absmax = io::as_f32(state, o.state);
  }
  const bool f32 = o.out_dtype == native::Bnb4Dtype::fp32;
  const std::string descr = f32                                      ? io::kDescrF32
                            : o.out_dtype == native::Bnb4Dtype::fp16 ? io::kDescrF16
                                                                     : io::kDescrU16;
  // The bits of values [i0, i1) in the output's width.
  const auto write_bits = [&](io::NpyFileWriter& w, const std::uint32_t* y, std::size_t count,
                              std::vector<std::uint16_t>& h) {
    if (f32) {
      w.write(y, count * sizeof(std::uint32_t));
    } else {
      h.assign(y, y + count);
      w.write(h.data(), count * sizeof(std::uint16_t));
    }
  };
  std::vector<std::uint16_t> h;
  if (o.device == Device::cuda) {
#if EXMY_HAVE_CUDA
    if (bytes > 0) q.packed.assign(codes.data(), codes.data() + bytes);
    const std::vector<std::uint32_t> y = gpu::bnb4_dequantize_host(q, n, o.out_dtype, b);
    io::NpyFileWriter w(o.out, descr, shape);
    write_bits(w, y.data(), y.size(), h);
    w.commit();
#else
    throw InputError("--device cuda: this exmy was built without CUDA");
#endif
  } else {
    const std::vector<float> absmax = quant::bnb4_dequantize_absmax(q, bytes, n, b);
    io::NpyFileWriter w(o.out, descr, shape);
    std::vector<std::uint32_t> y(std::min(n, kDequantChunk));
    for (std::size_t i0 = 0; i0 < n; i0 += kDequantChunk) {
      const std::size_t i1 = std::min(n, i0 + kDequantChunk);
      quant::bnb4_dequantize_values(codes.data(), absmax, i0, i1, o.out_dtype, b, y.data());
      write_bits(w, y.data(), i1 - i0, h);
    }
    w.commit();
  }
  if (o.json) {
    std::printf("{\"values\":%zu,\"type\":\"%s\"}\n", n, quant::bnb4_type_name(b.type));
  } else {
    std::printf("%zu values, %s, blocks of %zu\n", n, quant::bnb4_type_name(b.type), b.block);
  }
  return 0;
}

int run_quantize(const Args& args) {
  CliOptions o;
  if (!parse(args, Direction::quantize, o)) return 0;
  if (o.bnb4) return run_bnb4_quantize(o);
  quant::Quantized q;
  if (o.device == Device::cuda && o.train.given()) {
    throw InputError(
        "--device cuda: --columnwise, --rht, --sr and --four-over-six run on the CPU only (no CUDA "
        "kernel)");
  }
  if (o.device == Device::cuda) {
    q = quantize_cuda(o);
  } else {
    const InputValues in = read_values(o);
    quant::Options opt = o.q;
    opt.source = in.type == gpu::CastInput::bf16   ? native::Storage::bf16
                 : in.type == gpu::CastInput::fp16 ? native::Storage::f16
                                                   : native::Storage::f32;
    if (o.train.given()) {
      // TE's training pieces (sim/layer/nvfp4_train.hpp): the codes' shape is the quantized
      // tensor's (X^T with --columnwise).
      o.train.seed = o.q.seed;
      // The bf16 codes in place (the mapped file; copied only if its data is not 2-byte aligned).
      std::vector<std::uint16_t> copy;
      std::span<const std::uint16_t> bits;
      if (in.type == gpu::CastInput::bf16 && !in.x.empty()) {
        const void* d = in.file->data();
        if (reinterpret_cast<std::uintptr_t>(d) % alignof(std::uint16_t) == 0) {
          bits = {static_cast<const std::uint16_t*>(d), in.x.size()};
        } else {
          copy.resize(in.x.size());
          std::memcpy(copy.data(), d, 2 * copy.size());
          bits = copy;
        }
      }
      // RHT(X^T) is kept only for --rht-out (it is as large as the input).
      q = layer::nvfp4_train_quantize(in.x, bits, in.shape, opt, o.train,
                                      o.rht_out.empty() ? nullptr : &o.rht_bits, o.pack);
    } else {
      q = quant::quantize(in.x, in.shape, opt, o.pack);
    }
  }
  // Codes as elements (before packing: the summary counts elements, not bytes).
  const std::size_t ncodes = q.packed ? checked_count(q.shape, "codes") : q.codes.size();
  write_quantized(o, q);
  const std::size_t states = q.state.empty() ? q.scale_codes.size() : q.state.size();
  const bool cuda = o.device == Device::cuda;
  if (o.json) {
    // The element flags are not collected on the device: null there, not an empty list.
    std::printf("{\"codes\":%zu,\"states\":%zu,\"scheme\":%s,\"device\":\"%s\",\"flags\":%s}\n",
                ncodes, states, json_string(quant::scheme_name(o.q.scheme)).c_str(),
                cuda ? "cuda" : "cpu", cuda ? "null" : flags_json(q.flags).c_str());
  } else {
    std::printf("%zu codes, %zu states, scheme %s, device %s, flags %s\n", ncodes, states,
                quant::scheme_name(o.q.scheme).c_str(), cuda ? "cuda" : "cpu",
                cuda ? "(not collected)" : flags_text(q.flags).c_str());
  }
  return 0;
}

std::vector<float> dequantize_cuda([[maybe_unused]] const quant::Quantized& q,
                                   [[maybe_unused]] const std::vector<std::size_t>& in_shape,
                                   [[maybe_unused]] const CliOptions& o) {
#if EXMY_HAVE_CUDA
  std::size_t rows, cols;
  quant::matrix_view(in_shape, rows, cols);
  return gpu::dequantize_host(q, rows, cols, o.q);
#else
  throw InputError("--device cuda: this exmy was built without CUDA");
#endif
}

int run_dequantize(const Args& args) {
  CliOptions o;
  if (!parse(args, Direction::dequantize, o)) return 0;
  if (o.bnb4) return run_bnb4_dequantize(o);
  // The codes stay in the mapped file, read in place (packed or not) and the values written a
  // piece at a time: no copy of the codes, no unpacked copy, no whole fp32 result (issue 36).
  // --device cuda copies them into q.codes, as before.
  const io::NpyMappedFile file(o.in);
  const io::NpyHeader& ch = file.header();
  io::require_c_order(ch, o.in);
  const io::NpyArray state = io::read_npy(o.state);
  io::require_c_order(state, o.state);
  quant::Quantized q;
  q.shape = ch.shape;
  quant::Codes codes;
  if (o.pack) {
    if (q.shape.empty()) q.shape = {1};
    q.shape.back() *= 2;
    require_codes_descr(ch, io::kDescrU8, o.in);
    codes = {file.data(), ch.count() * 2, true};
  } else {
    // The codes' bytes as they are (int8 codes are two's complement bytes), of the expected
    // dtype.
    require_codes_descr(ch, o.q.target.kind == FormatKind::integer ? io::kDescrI8 : io::kDescrU8,
                        o.in);
    codes = {file.data(), ch.count(), false};
  }
  std::vector<std::size_t> in_shape = q.shape;
  if (o.q.transpose) {
    if (q.shape.size() != 2) throw InputError(o.in + ": --transpose expects 2-d codes");
    in_shape = {q.shape[1], q.shape[0]};
  }
  check_empty_bounded(in_shape, o.in);
  quant::check_shape(o.q, in_shape);
  const std::vector<std::size_t> want = quant::state_shape(o.q.scheme, in_shape);
  if (state.shape != want) {
    std::string w = "(";
    for (std::size_t k = 0; k < want.size(); ++k) w += (k ? ", " : "") + std::to_string(want[k]);
    throw InputError(o.state + ": expected a state of shape " + w +
                     (want.size() == 1 ? ",)" : ")") + " for scheme " +
                     quant::scheme_name(o.q.scheme));
  }
  if (quant::make_plan(o.q).byte_scales()) {
    q.scale_codes = io::as_u8(state, o.state);
  } else {
    q.state = io::as_f32(state, o.state);
  }
  if (o.q.two_level) {
    const io::NpyArray t = io::read_npy(o.tensor_state);
    const std::vector<float> tv = io::as_f32(t, o.tensor_state);
    if (tv.size() != 1) {
      throw InputError(o.tensor_state + ": expected one fp32 tensor scale, got " +
                       std::to_string(tv.size()) + " values");
    }
    q.tensor_scale = tv[0];
  }
  quant::check_dequantize_inputs(q, codes, o.q);  // codes and states exmy could have written
  std::size_t values = 0;
  if (o.device == Device::cuda) {
    q.codes.resize(codes.size);
    for (std::size_t i = 0; i < codes.size; ++i) q.codes[i] = codes[i];
    const std::vector<float> x = dequantize_cuda(q, in_shape, o);
    std::vector<std::uint8_t>().swap(q.codes);  // no longer needed: released before writing
    io::NpyFileWriter w(o.out, io::kDescrF32, in_shape);
    w.write(x.data(), x.size() * sizeof(float));
    w.commit();
    values = x.size();
  } else {
    const quant::Dequantizer d(q, codes, o.q);
    io::NpyFileWriter w(o.out, io::kDescrF32, in_shape);
    std::vector<float> x(std::min(d.size(), kDequantChunk));
    for (std::size_t i0 = 0; i0 < d.size(); i0 += kDequantChunk) {
      const std::size_t i1 = std::min(d.size(), i0 + kDequantChunk);
      d.values(i0, i1, x.data());
      w.write(x.data(), (i1 - i0) * sizeof(float));
    }
    w.commit();
    values = d.size();
  }
  if (o.json) {
    std::printf("{\"values\":%zu,\"scheme\":%s}\n", values,
                json_string(quant::scheme_name(o.q.scheme)).c_str());
  } else {
    std::printf("%zu values, scheme %s\n", values, quant::scheme_name(o.q.scheme).c_str());
  }
  return 0;
}

}  // namespace

EXMY_COMMAND(
    "quantize", run_quantize,
    "tensor quantization (int8 / FP8 / codebook / MX / NVFP4) of an .npy array, with its state");
EXMY_COMMAND("dequantize", run_dequantize, "dequantize codes + state back to fp32 .npy");

}  // namespace exmy::cli
