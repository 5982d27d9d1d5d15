// exmy quantize / exmy dequantize: tensor quantization schemes on .npy arrays
// (docs/SEMANTICS.md 7 and 11). Parse -> quant::Options -> run on a backend (cpu: sim/quant;
// cuda: gpu/quantize through gpu/host_arrays); both produce a quant::Quantized, written here.
//
// --device cuda runs the GPU kernels (gpu/quantize.hpp) on the same arrays: the same bits as the
// CPU reference; the element-wise exception flags are not collected there.
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
#include "gpu/host_arrays.hpp"
#include "sim/common/error.hpp"
#include "sim/common/number.hpp"
#include "sim/format/compat.hpp"
#include "sim/io/files.hpp"
#include "sim/io/npy.hpp"
#include "sim/native/convert.hpp"
#include "sim/native/pack4.hpp"
#include "sim/quant/quantize.hpp"

namespace exmy::cli {
namespace {

// The --compat names come from the profiles that cover quantize (sim/format/compat.hpp).
const std::string kQuantizeUsageText =
    "usage: exmy quantize --scheme tensor|rowwise|colwise|block:B|mx|nvfp4 --to TARGET --in X.npy "
    "[--in-format bf16] --out Q.npy --state-out S.npy [--transpose] [--variant "
    "absmax|te|te-current|torchao|ocp] [--scale-mode floor|ceil|even|rceil] [--two-level] "
    "[--tensor-amax F] [--tensor-scale F] [--tensor-scale-out T.npy] [--pack] "
    "[--order div-mul|recip-mul|mul-recip] [--nan propagate|ignore] [--round MODE] [--seed N] "
    "[--margin M] [--prev-scale F] [--scale F] [--amax-epsilon F] [--pow2-scale] [--fp16-clamp] "
    "[--norm recip-mul|div] [--tie " +
    tie_list("|") + "] [--compat " + compat_profile_names(CompatOp::quantize, "|") +
    "] [--device cpu|cuda]";
const char* const kQuantizeUsage = kQuantizeUsageText.c_str();
constexpr const char* kDequantizeUsage =
    "usage: exmy dequantize --scheme S --from TARGET --in Q.npy --state S.npy --out X.npy "
    "[--tensor-scale-in T.npy] [--transpose] [--pack] [--device cpu|cuda] [the quantize "
    "switches that name the variant]";

struct CliOptions {
  quant::Options q;
  bool have_scheme = false, have_target = false;
  std::string in, in_format, out, state, tensor_state;
  bool pack = false;         // codes of <= 4-bit formats two per byte (always for nvfp4)
  std::string compat;        // --compat NAME
  bool norm_or_nan = false;  // --norm or --nan given
  bool order = false;        // --order given
  Device device = Device::cpu;
};

// A float option through the CLI's one number parser (sim/common/number.hpp): finite, one
// rounding to fp32, and > 0 (or >= 0 when zero_ok). NaN is the options' "not given", so a NaN,
// an inf or an overflowing 1e999 is refused here rather than silently ignored.
float float_option(const std::string& text, const std::string& what, bool zero_ok = false) {
  const float v = number::parse_f32(text, what);
  number::require_range(v, text, what, 0.0, !zero_ok, HUGE_VAL, true);
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
      o.q.variant = v == "switchback" ? native::CastVariant::absmax : quant::parse_variant(v);
    } else if (a == "--scale-mode") {
      o.q.scale_mode = quant::parse_scale_mode(option_value(args, i));
    } else if (a == "--two-level") {
      o.q.two_level = true;
    } else if (a == "--tensor-amax" || a == "--tensor-scale") {
      (a == "--tensor-amax" ? o.q.tensor_amax : o.q.tensor_scale) =
          float_option(option_value(args, i), a);
    } else if (a == "--tensor-scale-out" || a == "--tensor-scale-in") {
      if (a != (state_flag == "--state-out" ? "--tensor-scale-out" : "--tensor-scale-in")) {
        throw InputError("unknown argument '" + a + "' (" + usage + ")");
      }
      o.tensor_state = option_value(args, i);
    } else if (a == "--pack") {
      o.pack = true;
    } else if (a == "--order") {
      o.order = true;
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
      o.norm_or_nan = true;
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
      o.q.te_margin =
          static_cast<int>(number::parse_i64(option_value(args, i), "--margin", -126, 126));
    } else if (a == "--prev-scale") {
      o.q.te_prev_scale = float_option(option_value(args, i), "--prev-scale");
    } else if (a == "--scale") {
      o.q.given_scale = float_option(option_value(args, i), "--scale");
    } else if (a == "--amax-epsilon") {
      o.q.te_amax_epsilon = float_option(option_value(args, i), "--amax-epsilon", true);
    } else if (a == "--pow2-scale") {
      o.q.pow2_scale = true;
    } else if (a == "--fp16-clamp") {
      o.q.torchao_fp16_source = true;
    } else if (a == "--compat") {
      o.compat = option_value(args, i);
    } else if (a == "--norm") {
      o.norm_or_nan = true;
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
  // The profile's kernel rules (sim/quant/quant_compat.cpp), as the Python module applies them.
  quant::apply_compat(
      o.q, o.compat,
      {.order = o.order, .norm_or_nan = o.norm_or_nan, .dequantize = state_flag != "--state-out"});
  quant::validate_options(o.q);
  const std::string tflag =
      state_flag == "--state-out" ? "--tensor-scale-out" : "--tensor-scale-in";
  if (o.q.two_level && o.tensor_state.empty()) {
    throw InputError("--two-level: " + tflag + " T.npy is required (the per-tensor scale)");
  }
  if (!o.q.two_level && !o.tensor_state.empty()) {
    throw InputError(tflag + ": expected --two-level");
  }
  if (o.q.scheme.kind == quant::Granularity::nvfp4) o.pack = true;
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
  if (state_flag == "--state-out") {
    io::OutputSet names;
    for (const std::string& p : {o.out, o.state, o.tensor_state}) {
      if (!p.empty()) names.stage(p);
    }
  }
  return o;
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

// The input as fp32 values, without a copy of a large file: fp32 is a read-only mapping of the
// file (io::NpyMappedFile); fp16 and bf16 (bit patterns, --in-format bf16) are widened exactly
// into memory (4 bytes per element: the one case above the README's memory bound).
struct InputValues {
  std::unique_ptr<io::NpyMappedFile> file;
  std::vector<float> widened;
  std::span<const float> x;
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
  const auto widen = [&](const FloatFormat& f) {
    v.widened.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
      std::uint16_t u;
      std::memcpy(&u, data + i * 2, 2);
      v.widened[i] = native::to_float(f, u);
    }
  };
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
      }
      break;
    case gpu::CastInput::bf16:
      widen(formats::bf16);
      break;
    case gpu::CastInput::fp16:
      widen(formats::fp16);
      break;
  }
  if (!v.widened.empty()) v.x = v.widened;
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
    // Packed in place (pack4 reads codes 2j, 2j+1 before it writes byte j): no second buffer.
    const std::size_t bytes = native::packed4_bytes(q.codes.size());
    native::pack4(q.codes.data(), q.codes.size(), q.codes.data());
    write_array(outs, o.out, io::kDescrU8, packed_shape(q.shape, o.in), q.codes.data(), bytes);
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

int run_quantize(const Args& args) {
  CliOptions o = parse(args, "--to", "--state-out", kQuantizeUsage);
  quant::Quantized q;
  if (o.device == Device::cuda) {
    q = quantize_cuda(o);
  } else {
    const InputValues in = read_values(o);
    q = quant::quantize(in.x, in.shape, o.q);
  }
  write_quantized(o, q);
  std::printf("%zu codes, %zu states, scheme %s, device %s, flags %s\n", q.codes.size(),
              q.state.empty() ? q.scale_codes.size() : q.state.size(),
              quant::scheme_name(o.q.scheme).c_str(), o.device == Device::cuda ? "cuda" : "cpu",
              o.device == Device::cuda ? "(not collected)" : flags_text(q.flags).c_str());
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
  CliOptions o = parse(args, "--from", "--state", kDequantizeUsage);
  io::NpyArray codes = io::read_npy(o.in);
  io::require_c_order(codes, o.in);
  const io::NpyArray state = io::read_npy(o.state);
  io::require_c_order(state, o.state);
  quant::Quantized q;
  q.shape = codes.shape;
  if (o.pack) {
    if (q.shape.empty()) q.shape = {1};
    q.shape.back() *= 2;
    const std::vector<std::uint8_t> packed = io::as_u8(codes, o.in);
    q.codes.resize(packed.size() * 2);
    native::unpack4(packed.data(), q.codes.size(), q.codes.data());
  } else {
    // The codes' bytes as they are (int8 codes are two's complement bytes): checked for the
    // expected dtype, then moved, not copied.
    const std::string want_descr =
        o.q.target.kind == FormatKind::integer ? io::kDescrI8 : io::kDescrU8;
    if (codes.descr != want_descr) {
      // Another spelling of the dtype passes; a wrong dtype gets the reader's own error.
      if (o.q.target.kind == FormatKind::integer) {
        (void)io::as_i8(codes, o.in);
      } else {
        (void)io::as_u8(codes, o.in);
      }
    }
    q.codes = std::move(codes.data);
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
  const std::vector<float> x =
      o.device == Device::cuda ? dequantize_cuda(q, in_shape, o) : quant::dequantize(q, o.q);
  std::vector<std::uint8_t>().swap(q.codes);  // no longer needed: released before writing
  io::NpyFileWriter w(o.out, io::kDescrF32, in_shape);
  w.write(x.data(), x.size() * sizeof(float));
  w.commit();
  std::printf("%zu values, scheme %s\n", x.size(), quant::scheme_name(o.q.scheme).c_str());
  return 0;
}

}  // namespace

EXMY_COMMAND(
    "quantize", run_quantize,
    "tensor quantization (int8 / FP8 / codebook / MX / NVFP4) of an .npy array, with its state");
EXMY_COMMAND("dequantize", run_dequantize, "dequantize codes + state back to fp32 .npy");

}  // namespace exmy::cli
