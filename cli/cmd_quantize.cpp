// exmy quantize / exmy dequantize: tensor quantization schemes on .npy arrays
// (docs/SEMANTICS.md 7 and 11).
//
// exmy quantize --scheme tensor|rowwise|colwise|block:B|mx --to int8|FORMAT|dynamic|...
//               --in X.npy [--in-format bf16] --out Q.npy --state-out S.npy [--transpose]
//               [--variant absmax|te|te-current|torchao] [--order div-mul|recip-mul|mul-recip]
//               [--nan propagate|ignore] [--round MODE] [--seed N] [--margin M]
//               [--prev-scale F] [--scale F] [--pow2-scale] [--fp16-clamp]
//               [--norm recip-mul|div] [--tie even|lower|bnb-cpu] [--device cpu|cuda]
// exmy dequantize --scheme S --from T --in Q.npy --state S.npy --out X.npy [same switches]
//
// --device cuda runs the GPU kernels (gpu/quantize.hpp) on the same arrays: the same bits as the
// CPU reference; the element-wise exception flags are not collected there.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cli/cli_device.hpp"
#include "cli/cli_util.hpp"
#include "cli/command.hpp"
#include "gpu/host_arrays.hpp"
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
    "[--norm recip-mul|div] [--tie even|lower|bnb-cpu] [--device cpu|cuda]";
constexpr const char* kDequantizeUsage =
    "usage: exmy dequantize --scheme S --from TARGET --in Q.npy --state S.npy --out X.npy "
    "[--transpose] [--device cpu|cuda] [the quantize switches that name the variant]";

struct CliOptions {
  quant::Options q;
  bool have_scheme = false, have_target = false;
  std::string in, in_format, out, state;
  Device device = Device::cpu;
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
    } else if (a == "--device") {
      o.device = parse_device(option_value(args, i));
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

// The input as fp32 values: fp32 as is, fp16 and bf16 (bit patterns, --in-format bf16) widened
// exactly.
std::vector<float> read_values(CliOptions& o, io::NpyArray& a) {
  a = io::read_npy(o.in);
  io::require_c_order(a, o.in);
  const std::size_t n = a.count();
  std::vector<float> x(n);
  const auto widen = [&](const FloatFormat& f) {
    for (std::size_t i = 0; i < n; ++i) {
      std::uint16_t u;
      std::memcpy(&u, a.data.data() + i * 2, 2);
      x[i] = native::to_float(f, u);
    }
  };
  switch (input_type(a, o.in, o.in_format == "bf16")) {
    case gpu::CastInput::fp32:
      x = io::as_f32(a, o.in);
      break;
    case gpu::CastInput::bf16:
      widen(formats::bf16);
      break;
    case gpu::CastInput::fp16:
      widen(formats::fp16);
      break;
  }
  return x;
}

// The codes and state arrays of a quantization, complete before either file is written (each
// write is atomic).
void write_quantized(const CliOptions& o, const std::vector<std::uint8_t>& codes,
                     const std::vector<std::size_t>& shape, const std::vector<float>& state,
                     const std::vector<std::uint8_t>& mx_scales,
                     const std::vector<std::size_t>& state_shape) {
  const io::NpyArray c =
      o.q.target.kind == quant::TargetKind::int8
          ? io::make_npy(std::vector<std::int8_t>(codes.begin(), codes.end()), shape)
          : io::make_npy(codes, shape);
  const io::NpyArray st = o.q.scheme.kind == quant::Granularity::mx
                              ? io::make_npy(mx_scales, state_shape)
                              : io::make_npy(state, state_shape);
  io::write_npy(o.out, c);
  io::write_npy(o.state, st);
}

int run_quantize_cuda([[maybe_unused]] const CliOptions& o) {
#if EXMY_HAVE_CUDA
  const io::NpyArray a = io::read_npy(o.in);
  io::require_c_order(a, o.in);
  const gpu::CastInput type = input_type(a, o.in, o.in_format == "bf16");
  const std::vector<std::size_t> shape = quant::codes_shape(a.shape, o.q);
  std::size_t rows, cols;
  quant::matrix_view(a.shape, rows, cols);
  const gpu::HostQuantized q = gpu::quantize_host(a.data.data(), type, rows, cols, o.q);
  const std::size_t groups = quant::group_count(o.q.scheme, rows, cols);
  write_quantized(o, q.codes, shape, q.state, q.mx_scales, {groups});
  std::printf("%zu codes, %zu states, scheme %s, device cuda\n", q.codes.size(), groups,
              quant::scheme_name(o.q.scheme).c_str());
  return 0;
#else
  throw InputError("--device cuda: this exmy was built without CUDA");
#endif
}

int run_quantize(const Args& args) {
  CliOptions o = parse(args, "--to", "--state-out", kQuantizeUsage);
  if (o.device == Device::cuda) return run_quantize_cuda(o);
  io::NpyArray in;
  const std::vector<float> x = read_values(o, in);
  const quant::Quantized q = quant::quantize(x, in.shape, o.q);
  write_quantized(o, q.codes, q.shape, q.state, q.mx_scales, q.state_shape);
  std::printf("%zu codes, %zu states, scheme %s, flags %s\n", q.codes.size(),
              q.state_shape.empty() ? 0 : q.state_shape[0], quant::scheme_name(o.q.scheme).c_str(),
              flags_text(q.flags).c_str());
  return 0;
}

std::vector<float> dequantize_cuda([[maybe_unused]] const quant::Quantized& q,
                                   [[maybe_unused]] const std::vector<std::size_t>& in_shape,
                                   [[maybe_unused]] const CliOptions& o) {
#if EXMY_HAVE_CUDA
  if (o.q.transpose && q.shape.size() != 2) throw InputError("--transpose: expected 2-d codes");
  std::size_t rows, cols;
  quant::matrix_view(in_shape, rows, cols);
  gpu::HostQuantized h{q.codes, q.state, q.mx_scales};
  return gpu::dequantize_host(h, rows, cols, o.q);
#else
  throw InputError("--device cuda: this exmy was built without CUDA");
#endif
}

int run_dequantize(const Args& args) {
  CliOptions o = parse(args, "--from", "--state", kDequantizeUsage);
  const io::NpyArray codes = io::read_npy(o.in);
  io::require_c_order(codes, o.in);
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
  const std::vector<float> x =
      o.device == Device::cuda ? dequantize_cuda(q, in_shape, o) : quant::dequantize(q, o.q);
  io::write_npy(o.out, io::make_npy(x, in_shape));
  std::printf("%zu values, scheme %s\n", x.size(), quant::scheme_name(o.q.scheme).c_str());
  return 0;
}

}  // namespace

EXMY_COMMAND("quantize", run_quantize,
             "tensor quantization (int8 / FP8 / codebook / MX) of an .npy array, with its state");
EXMY_COMMAND("dequantize", run_dequantize, "dequantize codes + state back to fp32 .npy");

}  // namespace exmy::cli
