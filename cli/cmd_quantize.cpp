// exmy quantize / exmy dequantize: tensor quantization schemes on .npy arrays
// (docs/SEMANTICS.md 7 and 11).
//
// exmy quantize --scheme tensor|rowwise|colwise|block:B|mx --to int8|FORMAT|dynamic|...
//               --in X.npy [--in-format bf16] --out Q.npy --state-out S.npy [--transpose]
//               [--variant absmax|te|te-current|torchao] [--order div-mul|recip-mul|mul-recip]
//               [--nan propagate|ignore] [--round MODE] [--seed N] [--margin M]
//               [--prev-scale F] [--scale F] [--pow2-scale] [--fp16-clamp]
//               [--norm recip-mul|div] [--tie even|lower|bnb-cpu]
// exmy dequantize --scheme S --from T --in Q.npy --state S.npy --out X.npy [same switches]
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cli/cli_util.hpp"
#include "cli/command.hpp"
#include "sim/common/error.hpp"
#include "sim/io/npy.hpp"
#include "sim/native/convert.hpp"
#include "sim/quant/quantize.hpp"

namespace exmy::cli {
namespace {

constexpr const char* kQuantizeUsage =
    "usage: exmy quantize --scheme tensor|rowwise|colwise|block:B|mx --to TARGET --in X.npy "
    "[--in-format bf16] --out Q.npy --state-out S.npy [--transpose] [--variant "
    "absmax|te|te-current|torchao] "
    "[--order div-mul|recip-mul|mul-recip] [--nan propagate|ignore] [--round MODE] [--seed N] "
    "[--margin M] [--prev-scale F] [--scale F] [--amax-epsilon F] [--pow2-scale] [--fp16-clamp] "
    "[--norm recip-mul|div] [--tie even|lower|bnb-cpu]";
constexpr const char* kDequantizeUsage =
    "usage: exmy dequantize --scheme S --from TARGET --in Q.npy --state S.npy --out X.npy "
    "[--transpose] [the quantize switches that name the variant]";

struct CliOptions {
  quant::Options q;
  bool have_scheme = false, have_target = false;
  std::string in, in_format, out, state;
};

float parse_float_arg(const std::string& text, const std::string& what) {
  char* end = nullptr;
  const float v = std::strtof(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size()) {
    throw InputError(what + " '" + text + "': expected a number");
  }
  return v;
}

// Parses the switches shared by both subcommands; `target_flag` is --to or --from and
// `state_flag` --state-out or --state.
CliOptions parse(const Args& args, const std::string& target_flag, const std::string& state_flag,
                 const char* usage) {
  CliOptions o;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") {
      std::printf("%s\n", usage);
      std::exit(0);
    } else if (a == "--scheme") {
      o.q.scheme = quant::parse_scheme(option_value(args, i));
      o.have_scheme = true;
    } else if (a == target_flag) {
      o.q.target = quant::parse_target(option_value(args, i));
      o.have_target = true;
    } else if (a == "--in") {
      o.in = option_value(args, i);
    } else if (a == "--in-format") {
      o.in_format = option_value(args, i);
      if (o.in_format != "bf16") {
        throw InputError("--in-format '" + o.in_format + "': expected bf16 (uint16 bit patterns)");
      }
    } else if (a == "--out") {
      o.out = option_value(args, i);
    } else if (a == state_flag) {
      o.state = option_value(args, i);
    } else if (a == "--transpose") {
      o.q.transpose = true;
    } else if (a == "--variant") {
      const std::string& v = option_value(args, i);
      if (v == "absmax" || v == "switchback")
        o.q.variant = native::CastVariant::absmax;
      else if (v == "te")
        o.q.variant = native::CastVariant::te;
      else if (v == "torchao")
        o.q.variant = native::CastVariant::torchao;
      else
        throw InputError("--variant '" + v + "': expected absmax, te or torchao");
    } else if (a == "--order") {
      const std::string& v = option_value(args, i);
      if (v == "div-mul")
        o.q.order = native::ScaleOrder::div_mul;
      else if (v == "recip-mul")
        o.q.order = native::ScaleOrder::recip_mul;
      else if (v == "mul-recip")
        o.q.order = native::ScaleOrder::mul_recip;
      else
        throw InputError("--order '" + v + "': expected div-mul, recip-mul or mul-recip");
    } else if (a == "--nan") {
      const std::string& v = option_value(args, i);
      if (v == "propagate")
        o.q.nan = native::NanPolicy::propagate;
      else if (v == "ignore")
        o.q.nan = native::NanPolicy::ignore;
      else
        throw InputError("--nan '" + v + "': expected propagate or ignore");
    } else if (a == "--round") {
      const Rounding r = parse_rounding(option_value(args, i));
      o.q.mode = r.mode;
      o.q.sr_bits = r.sr_bits;
    } else if (a == "--seed") {
      o.q.seed = parse_uint(option_value(args, i), "--seed", UINT64_MAX);
    } else if (a == "--margin") {
      const std::string& v = option_value(args, i);
      const bool neg = !v.empty() && v[0] == '-';
      const auto m = static_cast<int>(parse_uint(neg ? v.substr(1) : v, "--margin", 126));
      o.q.te_margin = neg ? -m : m;
    } else if (a == "--prev-scale") {
      o.q.te_prev_scale = parse_float_arg(option_value(args, i), "--prev-scale");
    } else if (a == "--scale") {
      o.q.given_scale = parse_float_arg(option_value(args, i), "--scale");
    } else if (a == "--amax-epsilon") {
      o.q.te_amax_epsilon = parse_float_arg(option_value(args, i), "--amax-epsilon");
    } else if (a == "--pow2-scale") {
      o.q.pow2_scale = true;
    } else if (a == "--fp16-clamp") {
      o.q.torchao_fp16_source = true;
    } else if (a == "--norm") {
      const std::string& v = option_value(args, i);
      if (v == "recip-mul")
        o.q.norm = native::NormOrder::recip_mul;
      else if (v == "div")
        o.q.norm = native::NormOrder::div;
      else
        throw InputError("--norm '" + v + "': expected recip-mul or div");
    } else if (a == "--tie") {
      o.q.tie = parse_tie(option_value(args, i));
    } else {
      throw InputError("unknown argument '" + a + "' (" + usage + ")");
    }
  }
  if (!o.have_scheme) throw InputError("--scheme is required");
  if (!o.have_target) throw InputError(target_flag + " is required");
  if (o.in.empty() || o.out.empty() || o.state.empty()) {
    throw InputError("--in, --out and " + state_flag + " are required");
  }
  return o;
}

void require_c_order(const io::NpyArray& a, const std::string& path) {
  if (a.fortran_order && a.shape.size() > 1) {
    throw InputError(path + ": Fortran-order arrays are not supported (expected C order)");
  }
}

// The input as fp32 values: fp32 as is, fp16 and bf16 (bit patterns, --in-format bf16) widened
// exactly.
std::vector<float> read_values(CliOptions& o, io::NpyArray& a) {
  a = io::read_npy(o.in);
  require_c_order(a, o.in);
  const std::size_t n = a.count();
  std::vector<float> x(n);
  const auto widen = [&](const FloatFormat& f) {
    for (std::size_t i = 0; i < n; ++i) {
      std::uint16_t u;
      std::memcpy(&u, a.data.data() + i * 2, 2);
      x[i] = native::to_float(f, u);
    }
  };
  if (o.in_format == "bf16") {
    if (a.descr != io::kDescrU16) {
      throw InputError(o.in + ": dtype '" + a.descr + "', expected '<u2' (bf16 bit patterns)");
    }
    widen(formats::bf16);
  } else if (a.descr == io::kDescrF32) {
    x = io::as_f32(a, o.in);
  } else if (a.descr == io::kDescrF16) {
    widen(formats::fp16);
  } else {
    throw InputError(o.in + ": dtype '" + a.descr +
                     "', expected '<f4' or '<f2' (or '<u2' with --in-format bf16)");
  }
  return x;
}

int run_quantize(const Args& args) {
  CliOptions o = parse(args, "--to", "--state-out", kQuantizeUsage);
  io::NpyArray in;
  const std::vector<float> x = read_values(o, in);
  const quant::Quantized q = quant::quantize(x, in.shape, o.q);
  io::NpyArray codes;
  if (o.q.target.kind == quant::TargetKind::int8) {
    codes = io::make_npy(std::vector<std::int8_t>(q.codes.begin(), q.codes.end()), q.shape);
  } else {
    codes = io::make_npy(q.codes, q.shape);
  }
  const io::NpyArray state = o.q.scheme.kind == quant::Granularity::mx
                                 ? io::make_npy(q.mx_scales, q.state_shape)
                                 : io::make_npy(q.state, q.state_shape);
  // Both arrays are complete before either file is written; each write is atomic.
  io::write_npy(o.out, codes);
  io::write_npy(o.state, state);
  std::printf("%zu codes, %zu states, scheme %s, flags %s\n", q.codes.size(),
              q.state_shape.empty() ? 0 : q.state_shape[0], quant::scheme_name(o.q.scheme).c_str(),
              flags_text(q.flags).c_str());
  return 0;
}

int run_dequantize(const Args& args) {
  CliOptions o = parse(args, "--from", "--state", kDequantizeUsage);
  const io::NpyArray codes = io::read_npy(o.in);
  require_c_order(codes, o.in);
  const io::NpyArray state = io::read_npy(o.state);
  quant::Quantized q;
  q.shape = codes.shape;
  if (o.q.target.kind == quant::TargetKind::int8) {
    const auto v = io::as_i8(codes, o.in);
    q.codes.assign(v.begin(), v.end());
  } else {
    q.codes = io::as_u8(codes, o.in);
  }
  if (o.q.scheme.kind == quant::Granularity::mx) {
    q.mx_scales = io::as_u8(state, o.state);
  } else {
    q.state = io::as_f32(state, o.state);
  }
  std::vector<std::size_t> in_shape = q.shape;
  if (o.q.transpose && q.shape.size() == 2) in_shape = {q.shape[1], q.shape[0]};
  const std::vector<float> x = quant::dequantize(q, o.q);
  io::write_npy(o.out, io::make_npy(x, in_shape));
  std::printf("%zu values, scheme %s\n", x.size(), quant::scheme_name(o.q.scheme).c_str());
  return 0;
}

}  // namespace

EXMY_COMMAND("quantize", run_quantize,
             "tensor quantization (int8 / FP8 / codebook / MX) of an .npy array, with its state");
EXMY_COMMAND("dequantize", run_dequantize, "dequantize codes + state back to fp32 .npy");

}  // namespace exmy::cli
