// The Python extension `exmy._exmy` (nanobind): numpy in, numpy out, on the same library
// functions the CLI runs — the array cast of `exmy cast --in` (sim/fast), the decode table, the
// quantizers of `exmy quantize` (sim/quant), the optimizer registry of `exmy step` (sim/optim),
// golden corpus checks (sim/golden). Option strings are parsed by the domain's parsers, the ones
// the CLI calls (the rounding registry sim/format/rounding_names.hpp, sim/quant, sim/optim), so a
// bad option raises ValueError with the CLI's message.
// python/exmy/__init__.py is the documented surface.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "sim/common/error.hpp"
#include "sim/fast/array_cast.hpp"
#include "sim/format/compat.hpp"
#include "sim/format/float_names.hpp"
#include "sim/format/registry.hpp"
#include "sim/format/rounding_names.hpp"
#include "sim/gemm/gemm.hpp"
#include "sim/golden/corpus.hpp"
#include "sim/io/build_info.hpp"
#include "sim/native/compat_e8m0.hpp"
#include "sim/optim/hyper_applies.hpp"
#include "sim/optim/registry.hpp"
#include "sim/quant/quantize.hpp"
#include "sim/verify/backend_inputs.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace exmy::python {
namespace {

constexpr std::uint32_t kCastStream = 0;  // SEMANTICS 3.2: element-wise casts

template <class T>
using Arr = nb::ndarray<T, nb::c_contig, nb::device::cpu>;

// A vector the library already filled, handed to numpy without a copy (its pages were touched
// when the library wrote it, so numpy's allocator would only add a copy here).
template <class T>
nb::ndarray<nb::numpy, T> to_numpy(std::vector<T>&& v, const std::vector<std::size_t>& shape) {
  auto* heap = new std::vector<T>(std::move(v));
  nb::capsule owner(heap, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  return nb::ndarray<nb::numpy, T>(heap->data(), shape.size(), shape.data(), owner);
}

// An uninitialised output array from numpy.empty(shape, dtype): C-contiguous, writable, owning
// its data, and allocated by numpy's allocator, which madvises arrays of 4 MiB and more into
// transparent huge pages (numpy's default on Linux). `new T[n]` gets 4-KiB pages where THP is
// `madvise`-only, and the first touch of a 64 MiB output then costs 16,384 page faults, about as
// long as the cast itself. No zero fill: the casts are memory-bound and write every element.
// `data` receives the array's buffer (through the buffer protocol, with the GIL held).
template <class T>
nb::object empty_numpy(const std::vector<std::size_t>& shape, const char* dtype, T*& data) {
  nb::module_ np = nb::module_::import_("numpy");
  nb::list dims;
  for (std::size_t d : shape) dims.append(d);
  nb::object arr = np.attr("empty")(nb::tuple(dims), np.attr(dtype));
  Py_buffer view;
  if (PyObject_GetBuffer(arr.ptr(), &view, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) != 0) {
    throw nb::python_error();
  }
  data = static_cast<T*>(view.buf);
  const bool ok = view.itemsize == static_cast<Py_ssize_t>(sizeof(T));
  PyBuffer_Release(&view);  // numpy's buffer stays valid while `arr` lives
  if (!ok) throw std::runtime_error("numpy.empty: unexpected item size");
  return arr;
}

// A thread count of cast: 1 (one thread), 0 (OpenMP's team: OMP_NUM_THREADS, else every core)
// or N > 1 threads; python/exmy/__init__.py checks the type first.
int thread_count(long threads) {
  if (threads < 0 || threads > 1 << 16) {
    throw InputError(
        "threads: expected 0 (every core), 1 (one thread) or a positive thread "
        "count, got " +
        std::to_string(threads));
  }
  return static_cast<int>(threads);
}

template <class... Ts>
std::vector<std::size_t> shape_of(const nb::ndarray<Ts...>& a) {
  std::vector<std::size_t> s;
  for (std::size_t i = 0; i < a.ndim(); ++i) s.push_back(a.shape(i));
  return s;
}

const Format& float_format(const std::string& name, Format& holder) {
  holder = parse_format(name);
  if (holder.kind != FormatKind::floating || !fast::array_cast_supported(holder.fp)) {
    throw InputError("format '" + name + "': array casts take float formats of at most 16 bits");
  }
  return holder;
}

// cast(x, fmt, round, overflow, seed, input, threads): x is float32, float16, or uint16 bf16
// patterns; the cast runs without the GIL, on `threads` threads (the codes do not depend on it).
// compat: a cast profile (sim/format/compat.hpp, as `exmy cast --compat`) replaces exmy's
// rounding by that library's rule, on the input widened to fp32; it fixes the rounding, so round
// and overflow must stay at their defaults (the CLI refuses --round/--overflow with --compat).
nb::object cast(nb::ndarray<nb::c_contig, nb::device::cpu> x, const std::string& fmt,
                const std::string& round, const std::string& overflow, std::uint64_t seed,
                const std::string& input, long threads, const std::string& compat) {
  Format holder;
  const Format& f = compat.empty() ? float_format(fmt, holder) : (holder = parse_format(fmt));
  Rounding r = parse_rounding(round);
  r.overflow = parse_overflow(overflow);
  native::CompatCast rule{};
  if (!compat.empty()) {
    const CompatProfile& profile = compat_profile(compat);  // unknown: lists the known names
    if (!(r == Rounding{})) {
      throw InputError("compat='" + compat +
                       "' fixes the rounding: it cannot be combined with round or overflow");
    }
    rule = compat_rule(profile, CompatOp::cast, f);  // a format it does not cover: refused
  }
  fast::ArrayInput in;
  if (x.dtype() == nb::dtype<float>()) {
    in = fast::ArrayInput::fp32;
  } else if (input == "bf16" && x.dtype() == nb::dtype<std::uint16_t>()) {
    in = fast::ArrayInput::bf16;
  } else if (x.dtype().code == static_cast<std::uint8_t>(nb::dlpack::dtype_code::Float) &&
             x.dtype().bits == 16) {
    in = fast::ArrayInput::fp16;
  } else {
    throw InputError(
        "x: expected float32, float16, or uint16 bf16 bit patterns with "
        "input='bf16'");
  }
  const int team = thread_count(threads);
  const std::size_t n = x.size();
  const std::vector<std::size_t> shape = shape_of(x);
  auto run = [&](auto* codes) {
    nb::gil_scoped_release release;
    if (!compat.empty()) {
      for (std::size_t i = 0; i < n; ++i) {
        codes[i] = static_cast<std::remove_reference_t<decltype(*codes)>>(
            native::compat_cast_fp32(rule, fast::widen_to_fp32(x.data(), in, i)));
      }
      return;
    }
    fast::cast_to_codes(x.data(), in, n, codes, f.fp, r, seed, kCastStream, 0, team);
  };
  if (f.fp.total_bits() <= 8) {
    std::uint8_t* codes = nullptr;
    nb::object out = empty_numpy(shape, "uint8", codes);
    run(codes);
    return out;
  }
  std::uint16_t* codes = nullptr;
  nb::object out = empty_numpy(shape, "uint16", codes);
  run(codes);
  return out;
}

nb::object decode(nb::ndarray<nb::c_contig, nb::device::cpu> codes, const std::string& fmt) {
  Format holder;
  const Format& f = float_format(fmt, holder);
  const std::vector<float>& table = fast::decode_table(f.fp);
  const bool u8 = codes.dtype() == nb::dtype<std::uint8_t>();
  if (!u8 && codes.dtype() != nb::dtype<std::uint16_t>()) {
    throw InputError("codes: expected uint8 or uint16");
  }
  float* out = nullptr;
  nb::object arr = empty_numpy(shape_of(codes), "float32", out);
  const std::size_t n = codes.size();
  const std::uint64_t limit = table.size();
  auto fill = [&](auto* c) {
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint64_t v = c[i];
      if (v >= limit) {
        throw InputError("codes[" + std::to_string(i) + "] = " + std::to_string(v) +
                         ": not a code of " + fmt + " (expected < " + std::to_string(limit) + ")");
      }
      out[i] = table[v];
    }
  };
  if (u8) {
    fill(static_cast<const std::uint8_t*>(codes.data()));
  } else {
    fill(static_cast<const std::uint16_t*>(codes.data()));
  }
  return arr;
}

// The value of every code of a format of at most 16 bits (the fp32 decode table).
nb::object table(const std::string& fmt) {
  Format holder;
  const Format& f = float_format(fmt, holder);
  std::vector<float> t = fast::decode_table(f.fp);
  return nb::cast(to_numpy(std::move(t), {t.size()}));
}

// ---- quantize / dequantize: the options of `exmy quantize` as keyword strings ----------------
quant::Options quant_options(const std::string& scheme, const std::string& to, const nb::dict& kw,
                             bool dequantize) {
  quant::Options o;
  std::string compat;
  quant::CompatGiven given;
  given.dequantize = dequantize;
  o.scheme = quant::parse_scheme(scheme);
  o.target = quant::parse_target(to);
  for (auto [k, v] : kw) {
    const std::string key = nb::cast<std::string>(k);
    auto str = [&] { return nb::cast<std::string>(nb::str(v)); };
    if (key == "compat") {
      compat = str();
    } else if (key == "variant") {
      o.variant = str() == "switchback" ? native::CastVariant::absmax : quant::parse_variant(str());
    } else if (key == "order") {
      given.order = true;
      const std::string s = str();
      if (s == "div-mul")
        o.order = native::ScaleOrder::div_mul;
      else if (s == "recip-mul")
        o.order = native::ScaleOrder::recip_mul;
      else if (s == "mul-recip")
        o.order = native::ScaleOrder::mul_recip;
      else
        throw InputError("order '" + s + "': expected div-mul, recip-mul or mul-recip");
    } else if (key == "nan") {
      given.norm_or_nan = true;
      const std::string s = str();
      if (s == "propagate")
        o.nan = native::NanPolicy::propagate;
      else if (s == "ignore")
        o.nan = native::NanPolicy::ignore;
      else
        throw InputError("nan '" + s + "': expected propagate or ignore");
    } else if (key == "round") {
      const Rounding r = parse_rounding(str());
      o.mode = r.mode;
      o.sr_bits = r.sr_bits;
    } else if (key == "seed") {
      o.seed = nb::cast<std::uint64_t>(v);
    } else if (key == "scale_mode") {
      o.scale_mode = quant::parse_scale_mode(str());
    } else if (key == "norm") {
      given.norm_or_nan = true;
      const std::string s = str();
      if (s == "recip-mul")
        o.norm = native::NormOrder::recip_mul;
      else if (s == "div")
        o.norm = native::NormOrder::div;
      else
        throw InputError("norm '" + s + "': expected recip-mul or div");
    } else if (key == "tie") {
      o.tie = parse_tie(str());
    } else if (key == "transpose") {
      o.transpose = nb::cast<bool>(v);
    } else if (key == "two_level") {
      o.two_level = nb::cast<bool>(v);
    } else if (key == "pow2_scale") {
      o.pow2_scale = nb::cast<bool>(v);
    } else if (key == "fp16_clamp") {
      o.torchao_fp16_source = nb::cast<bool>(v);
    } else if (key == "margin") {
      o.te_margin = nb::cast<int>(v);
    } else if (key == "prev_scale") {
      o.te_prev_scale = nb::cast<float>(v);
    } else if (key == "scale") {
      o.given_scale = nb::cast<float>(v);
    } else if (key == "amax_epsilon") {
      o.te_amax_epsilon = nb::cast<float>(v);
    } else if (key == "tensor_amax") {
      o.tensor_amax = nb::cast<float>(v);
    } else if (key == "tensor_scale") {
      o.tensor_scale = nb::cast<float>(v);
    } else {
      throw InputError("unknown option '" + key +
                       "' (the switches of exmy quantize, with _ for -)");
    }
  }
  quant::apply_compat(o, compat, given);  // as `exmy quantize --compat` applies it
  quant::validate_options(o);
  return o;
}

nb::dict quantize(Arr<const float> x, const std::string& scheme, const std::string& to,
                  const nb::kwargs& kw) {
  const quant::Options o = quant_options(scheme, to, kw, false);
  std::vector<std::size_t> shape = shape_of(x);
  quant::check_shape(o, shape);
  quant::Quantized q;
  {
    nb::gil_scoped_release release;
    q = quant::quantize(std::span<const float>(x.data(), x.size()), shape, o);
  }
  nb::dict d;
  d["codes"] = to_numpy(std::move(q.codes), q.shape);
  if (!q.scale_codes.empty()) {
    d["scales"] = to_numpy(std::move(q.scale_codes), q.state_shape);
  } else {
    d["state"] = to_numpy(std::move(q.state), q.state_shape);
  }
  if (o.two_level) d["tensor_scale"] = q.tensor_scale;
  d["shape"] = nb::cast(shape);
  return d;
}

nb::object dequantize(nb::dict q, const std::string& scheme, const std::string& to,
                      const nb::kwargs& kw) {
  const quant::Options o = quant_options(scheme, to, kw, true);
  quant::Quantized in;
  auto codes = nb::cast<Arr<const std::uint8_t>>(q["codes"]);
  in.codes.assign(codes.data(), codes.data() + codes.size());
  in.shape = shape_of(codes);
  if (q.contains("scales")) {
    auto s = nb::cast<Arr<const std::uint8_t>>(q["scales"]);
    in.scale_codes.assign(s.data(), s.data() + s.size());
    in.state_shape = shape_of(s);
  } else {
    auto s = nb::cast<Arr<const float>>(q["state"]);
    in.state.assign(s.data(), s.data() + s.size());
    in.state_shape = shape_of(s);
  }
  if (q.contains("tensor_scale")) in.tensor_scale = nb::cast<float>(q["tensor_scale"]);
  quant::check_codes(in.codes, o);
  std::vector<std::size_t> shape = in.shape;
  if (o.transpose && shape.size() == 2) std::swap(shape[0], shape[1]);
  std::vector<float> out = quant::dequantize(in, o);
  return nb::cast(to_numpy(std::move(out), shape));
}

// ---- step: `exmy step` on arrays -------------------------------------------------------------
nb::dict step(const std::string& optimizer, Arr<const float> params, Arr<const float> grads,
              long steps, const std::string& param_dtype, const std::string& compat,
              std::uint64_t seed, int block, const std::string& variant, const nb::kwargs& kw) {
  optim::Config c;
  c.opt = optim::find_optimizer(optimizer);
  optim::HyperOptions h;
  for (auto [k, v] : kw) {
    const std::string key = nb::cast<std::string>(k);
    // A family's extra hyperparameter (RMSprop's centered, ...): its option without the dashes.
    std::string option = "--" + key;
    for (char& ch : option) ch = ch == '_' ? '-' : ch;
    const optim::ExtraHyper* extra = nullptr;
    for (const optim::ExtraHyper& x : c.opt.entry->def->extras) {
      if (x.option == option) extra = &x;
    }
    if (extra != nullptr) {
      if (extra->flag) {
        if (nb::cast<bool>(v)) h.extra.emplace_back(option, 1.0);
      } else {
        h.extra.emplace_back(option, nb::cast<double>(v));
      }
      continue;
    }
    const double d = key == "nesterov" ? 0.0 : nb::cast<double>(v);
    if (key == "lr")
      h.lr = d;
    else if (key == "beta1")
      h.beta1 = d;
    else if (key == "beta2")
      h.beta2 = d;
    else if (key == "eps")
      h.eps = d;
    else if (key == "wd")
      h.wd = d;
    else if (key == "momentum")
      h.momentum = d;
    else if (key == "dampening")
      h.dampening = d;
    else if (key == "nesterov")
      h.nesterov = nb::cast<bool>(v);
    else if (key == "alpha")  // AdEMAMix's alpha; RMSprop's smoothing constant
      h.alpha = d;
    else if (key == "beta3")  // AdEMAMix's beta3
      h.beta3 = d;
    else
      throw InputError("unknown hyperparameter '" + key + "'");
  }
  optim::check_hyper_applies(*c.opt.entry, h);  // one the optimizer does not read: refused
  c.hyper = optim::resolve_hyper(*c.opt.entry, h);
  if (param_dtype == "fp32")
    c.st = native::Storage::f32;
  else if (param_dtype == "bf16")
    c.st = native::Storage::bf16;
  else if (param_dtype == "fp16")
    c.st = native::Storage::f16;
  else
    throw InputError("param_dtype '" + param_dtype + "': expected fp32, bf16 or fp16");
  c.block = block;
  c.seed = seed;
  c.variant = variant;
  // The domain's rules, as `exmy step` applies them: hyperparameter domains, then the profile
  // (its PyTorch or bitsandbytes kernels).
  optim::check_hyper_domains(*c.opt.entry, c.hyper);
  optim::apply_compat(c, compat);
  optim::check_variant(c);
  const std::size_t n = params.size();
  if (steps < 1) throw InputError("steps: expected at least 1");
  const bool per_step = grads.size() == n * static_cast<std::size_t>(steps);
  if (!per_step && grads.size() != n) {
    throw InputError("grads: expected " + std::to_string(n) +
                     " elements (one gradient for every "
                     "step) or steps x " +
                     std::to_string(n));
  }
  std::vector<float> p(params.data(), params.data() + n);
  c.shape = shape_of(params);  // Adafactor factors >= 2-d parameters by their shape
  optim::State s = optim::init_state(c, p);
  {
    nb::gil_scoped_release release;
    auto stepper = optim::cpu_stepper(c, p, s);
    for (long t = 1; t <= steps; ++t) {
      stepper->step(t, std::span<const float>(grads.data() + (per_step ? (t - 1) * n : 0), n));
    }
    stepper->finish();
  }
  optim::final_params(c, s, p);
  optim::canonical_nans(c, s, p);
  nb::dict d;
  for (const optim::StateArray& a : c.opt.entry->arrays(c, s)) {
    // The array's saved shape where it has one (Adafactor's row_var and col_var), else 1-d.
    const std::vector<std::size_t> sh = a.shape;
    std::visit(
        [&](auto* vec) {
          d[a.file] = to_numpy(std::move(*vec), sh.empty() ? std::vector{vec->size()} : sh);
        },
        a.data);
  }
  d["params"] = to_numpy(std::move(p), shape_of(params));
  return d;
}

// ---- gemm: `exmy gemm` on arrays (cli/cmd_gemm.cpp reads the same operands from files) -------
// An operand from a 2-d C-contiguous array: float32 values for fp32/tf32, else codes of a float
// format of at most 16 bits (uint8 up to 8 bits, uint16 above), decoded through the table
// read_operand builds (sim/gemm/gemm.cpp), with the same type (bf16, fp16 or the format's name:
// FP8 names select cublas-sm90's verified FP8 shapes). The array outlives the GEMM (the caller
// holds it), so the store points into it.
gemm::Operand operand_from_array(const nb::ndarray<nb::c_contig, nb::device::cpu>& a,
                                 const std::string& fmt_name, const std::string& which) {
  if (a.ndim() != 2) {
    throw InputError(which + ": a " + std::to_string(a.ndim()) +
                     "-d array (expected 2-d, rows x K)");
  }
  const bool values = fmt_name == "fp32" || fmt_name == "tf32";
  if (values && a.dtype() != nb::dtype<float>()) {
    throw InputError(which + ": expected float32 values for " + which + "_format='" + fmt_name +
                     "'");
  }
  // The elements' NumPy type string, for the checks read_operand runs on a file's header.
  const std::string descr = a.dtype() == nb::dtype<float>()           ? "<f4"
                            : a.dtype() == nb::dtype<std::uint8_t>()  ? "|u1"
                            : a.dtype() == nb::dtype<std::uint16_t>() ? "<u2"
                                                                      : "another dtype";
  return gemm::operand_from_elements(a.data(), a.shape(0), a.shape(1), descr, fmt_name, which,
                                     which + "_format", nullptr);
}

// Block scales of one operand (MX: E8M0 per 32 k; NVFP4: UE4M3 per 16 k) from a uint8 array of
// rows x K / block codes: the checks and table of gemm::read_block_scales, on an array.
void block_scales_from_array(const nb::ndarray<nb::c_contig, nb::device::cpu>& s,
                             const std::string& fmt, std::size_t block, gemm::Operand& op,
                             const std::string& which) {
  const std::string arg = "block_scale_" + which;
  if (fmt != "e8m0fnu" && fmt != "e4m3fn") {
    throw InputError("block_scale_format '" + fmt +
                     "': expected e8m0fnu (MX) or e4m3fn (NVFP4's unsigned UE4M3)");
  }
  if (block == 0 || block > 4096) throw InputError("block: expected 1..4096 elements of k");
  if (op.cols % block != 0) {
    throw InputError(arg + ": K = " + std::to_string(op.cols) +
                     " is not a multiple of the block (" + std::to_string(block) + ")");
  }
  const std::size_t nb_ = op.cols / block;
  if (s.ndim() != 2 || s.shape(0) != op.rows || s.shape(1) != nb_) {
    throw InputError(arg + ": expected shape (" + std::to_string(op.rows) + ", " +
                     std::to_string(nb_) + "): the rows of " + which + " x K / " +
                     std::to_string(block));
  }
  if (s.dtype() != nb::dtype<std::uint8_t>()) throw InputError(arg + ": expected uint8 codes");
  const auto* c = static_cast<const std::uint8_t*>(s.data());
  std::vector<std::uint8_t> codes(c, c + s.size());
  for (std::size_t i = 0; i < codes.size(); ++i) {
    if (fmt == "e4m3fn" && (codes[i] & 0x80u) != 0) {
      throw InputError(arg + ": element " + std::to_string(i) + " = " + std::to_string(codes[i]) +
                       " has the sign bit set (expected unsigned UE4M3 codes)");
    }
  }
  const FloatFormat f = parse_format(fmt).fp;
  op.scales.clear();
  op.scale_table.resize(256);
  for (unsigned k = 0; k < 256; ++k) op.scale_table[k] = native::to_double(f, k);
  op.scale_codes = std::move(codes);
  op.scale_block = block;
  op.scale_emin = fmt == "e8m0fnu" ? -127 : 1 - f.bias;
}

// One finite float32 scale per row (1-d or n x 1), as exmy gemm --scale-a-rows reads them.
std::vector<float> row_scales(const nb::ndarray<nb::c_contig, nb::device::cpu>& s, std::size_t want,
                              const char* arg) {
  if (s.dtype() != nb::dtype<float>()) throw InputError(std::string(arg) + ": expected float32");
  if (s.size() != want || s.ndim() > 2 || (s.ndim() == 2 && s.shape(1) != 1)) {
    throw InputError(std::string(arg) + ": " + std::to_string(s.size()) + " values (expected " +
                     std::to_string(want) + ", 1-d or n x 1)");
  }
  const auto* p = static_cast<const float*>(s.data());
  std::vector<float> v(p, p + s.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (!(v[i] - v[i] == 0)) {
      throw InputError(std::string(arg) + ": value at index " + std::to_string(i) +
                       " is not finite");
    }
  }
  return v;
}

using OptArray = std::optional<nb::ndarray<nb::c_contig, nb::device::cpu>>;

// gemm(a, b, a_format, b_format, out_format, accum, compat, ...) -> (C, note): C = A B^T as
// run_gemm computes it on the CPU (cli/cmd_gemm.cpp); `note` is the line exmy gemm prints on
// stderr for a shape outside a library model's verified set ("" otherwise); strict refuses it.
nb::tuple gemm_py(nb::ndarray<nb::c_contig, nb::device::cpu> a,
                  nb::ndarray<nb::c_contig, nb::device::cpu> b, const std::string& a_fmt,
                  const std::string& b_fmt, const std::string& out_fmt, std::string accum,
                  const std::string& compat, double scale_a, double scale_b, OptArray a_rows,
                  OptArray b_rows, const std::string& scale_order, OptArray block_a,
                  OptArray block_b, const std::string& block_format, std::size_t block,
                  bool strict) {
  if (!compat.empty()) {
    if (!accum.empty()) {
      throw InputError("compat='" + compat + "' with accum='" + accum +
                       "': choose one (the profile names an accumulation model)");
    }
    accum = compat_gemm_accum(compat_profile(compat));
  }
  if (accum.empty())
    throw InputError("accum: required (an accumulation model) unless compat names one");
  gemm::OutFormat of;
  if (out_fmt == "fp32") {
    of = gemm::OutFormat::fp32;
  } else if (out_fmt == "bf16") {
    of = gemm::OutFormat::bf16;
  } else if (out_fmt == "fp16") {
    of = gemm::OutFormat::fp16;
  } else {
    throw InputError("out_format '" + out_fmt + "': expected fp32, bf16 or fp16");
  }
  for (const auto& [v, name] :
       {std::pair<double, const char*>{scale_a, "scale_a"}, {scale_b, "scale_b"}}) {
    if (!(v > 0) || !(v - v == 0)) {
      throw InputError(std::string(name) + ": expected a positive finite scale, got " +
                       std::to_string(v));
    }
  }
  gemm::Operand A = operand_from_array(a, a_fmt, "a");
  gemm::Operand B = operand_from_array(b, b_fmt, "b");
  if (block_a.has_value() != block_b.has_value()) {
    throw InputError(std::string(block_a ? "block_scale_b" : "block_scale_a") +
                     ": required with the other operand's block scales");
  }
  if (block_a) {
    if (block == 0) block = block_format == "e4m3fn" ? 16 : 32;
    block_scales_from_array(*block_a, block_format, block, A, "a");
    block_scales_from_array(*block_b, block_format, block, B, "b");
  } else if (block != 0 || block_format != "e8m0fnu") {
    throw InputError("block / block_scale_format: only with block_scale_a and block_scale_b");
  }
  const int bits = A.code_bits > B.code_bits ? A.code_bits : B.code_bits;
  gemm::AccumModel m = gemm::parse_accum_model(accum, bits);
  if (a_fmt == "tf32" || b_fmt == "tf32") m.truncate_tf32 = true;
  std::string note;
  const gemm::ShapeModel sm = gemm::operand_model(A, B, m, of);
  if (!sm.measured) {
    const bool tf32 = A.type == "tf32" || B.type == "tf32";
    const std::string type = A.code_bits == 32 ? (tf32 ? "tf32" : "fp32") : A.type;
    note = "exmy.gemm: accum='" + accum + "' " + type + " " + std::to_string(A.rows) + "x" +
           std::to_string(B.rows) + "x" + std::to_string(A.cols) +
           " lies outside the verified set (shapes checked bit for bit against the library); "
           "applied rule: " +
           sm.from;
    if (strict) throw InputError("strict: " + note);
  }
  gemm::RowColScales rc;
  if (scale_order == "a-first" || scale_order == "a_first") {
    rc.order = gemm::RowColScales::Order::a_first;
  } else if (scale_order == "b-first" || scale_order == "b_first") {
    rc.order = gemm::RowColScales::Order::b_first;
  } else if (scale_order == "product") {
    rc.order = gemm::RowColScales::Order::product;
  } else {
    throw InputError("scale_order '" + scale_order + "': expected a-first, b-first or product");
  }
  if (a_rows) rc.a_rows = row_scales(*a_rows, A.rows, "scale_a_rows");
  if (b_rows) rc.b_cols = row_scales(*b_rows, B.rows, "scale_b_rows");
  gemm::check_gemm_problem(A, B, m, scale_a * scale_b, of);
  const std::vector<std::size_t> shape{A.rows, B.rows};
  const bool f32 = of == gemm::OutFormat::fp32;
  auto run = [&](auto* out) {
    nb::gil_scoped_release release;
    gemm::gemm_rows(A, B, m, of, scale_a * scale_b, &rc,
                    [&](std::size_t i0, std::size_t i1, const std::uint32_t* c) {
                      const std::size_t n = (i1 - i0) * B.rows;
                      auto* dst = out + i0 * B.rows;
                      if constexpr (sizeof(*out) == 4) {
                        std::memcpy(dst, c, n * 4);
                      } else {
                        for (std::size_t i = 0; i < n; ++i) {
                          dst[i] = static_cast<std::uint16_t>(c[i]);
                        }
                      }
                    });
  };
  nb::object out;
  if (f32) {
    float* data = nullptr;
    out = empty_numpy(shape, "float32", data);
    run(data);
  } else {
    std::uint16_t* data = nullptr;
    out = empty_numpy(shape, "uint16", data);
    run(data);
  }
  return nb::make_tuple(out, note);
}

// ---- the designed inputs of `exmy verify --depth ci` (SEMANTICS 13.5.1), for exmy.fuzz --------
// (x: uint32 fp32 patterns of every call concatenated, input class per element, word class per
// element, class names, word class names, the calls' seeds and lengths, designed count).
nb::dict designed_inputs(const std::string& fmt, const std::string& round, std::uint64_t seed,
                         std::size_t random_elements, std::size_t call_elements) {
  Format holder;
  const Format& f = float_format(fmt, holder);
  const Rounding r = parse_rounding(round);
  verify::SweepSize size;
  size.random_elements = random_elements;
  if (call_elements != 0) size.call_elements = call_elements;
  verify::DesignedSweep sw;
  {
    nb::gil_scoped_release release;
    sw = verify::designed_cast_sweep(f.fp, r, seed, size);
  }
  std::vector<std::uint32_t> x;
  std::vector<std::uint8_t> input, word;
  std::vector<std::uint64_t> seeds, lengths;
  for (const verify::DesignedCall& c : sw.calls) {
    x.insert(x.end(), c.x.begin(), c.x.end());
    input.insert(input.end(), c.input.begin(), c.input.end());
    word.insert(word.end(), c.word.begin(), c.word.end());
    seeds.push_back(c.seed);
    lengths.push_back(c.x.size());
  }
  nb::dict d;
  const std::size_t n = x.size();
  const std::size_t calls = seeds.size();
  d["x"] = to_numpy(std::move(x), {n});
  d["input_class"] = to_numpy(std::move(input), {n});
  d["word_class"] = to_numpy(std::move(word), {word.size()});
  d["input_classes"] = nb::cast(sw.input_classes);
  d["word_classes"] = nb::cast(sw.word_classes);
  d["call_seeds"] = to_numpy(std::move(seeds), {calls});
  d["call_lengths"] = to_numpy(std::move(lengths), {calls});
  d["random_seed"] = sw.random_seed;
  d["designed"] = sw.designed;
  return d;
}

nb::dict golden_check(const std::string& corpus, const std::string& results,
                      const std::string& suite, bool strict_nan, bool allow_missing) {
  golden::CheckOptions o;
  o.corpus = corpus;
  o.results = results;
  o.suite = suite;
  o.strict_nan = strict_nan;
  o.allow_missing = allow_missing;
  const golden::CheckReport r = golden::check(o);
  nb::dict d;
  d["ok"] = r.mismatches == 0 && (r.missing == 0 || allow_missing);
  d["checks"] = r.checks;
  d["mismatches"] = r.mismatches;
  d["missing"] = r.missing;
  nb::list cases;
  for (const auto& c : r.cases) {
    nb::dict e;
    e["id"] = c.id;
    e["checks"] = c.checks;
    e["mismatches"] = c.mismatches;
    e["missing"] = c.missing;
    e["first"] = c.first;
    cases.append(e);
  }
  d["cases"] = cases;
  return d;
}

}  // namespace
}  // namespace exmy::python

NB_MODULE(_exmy, m) {
  using namespace exmy::python;
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const exmy::InputError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    }
  });
  m.attr("__version__") = EXMY_VERSION;
  m.attr("git_sha") = exmy::build_git_sha();
  m.def("cast", &cast, "x"_a, "fmt"_a, "round"_a = exmy::rounding_name(exmy::Rounding{}),
        "overflow"_a = exmy::overflow_name(exmy::Overflow::none), "seed"_a = 0, "input"_a = "",
        "threads"_a = 1, "compat"_a = "");
  m.def("decode", &decode, "codes"_a, "fmt"_a);
  m.def("table", &table, "fmt"_a);
  m.def("quantize", &quantize, "x"_a, "scheme"_a, "to"_a, "kwargs"_a);
  m.def("dequantize", &dequantize, "q"_a, "scheme"_a, "to"_a, "kwargs"_a);
  m.def("step", &step, "optimizer"_a, "params"_a, "grads"_a, "steps"_a = 1,
        "param_dtype"_a = "fp32", "compat"_a = "", "seed"_a = 0, "block"_a = 256,
        "variant"_a = "default", "kwargs"_a);
  m.def("gemm", &gemm_py, "a"_a, "b"_a, "a_format"_a, "b_format"_a, "out_format"_a, "accum"_a,
        "compat"_a, "scale_a"_a, "scale_b"_a, "scale_a_rows"_a.none(), "scale_b_rows"_a.none(),
        "scale_order"_a, "block_scale_a"_a.none(), "block_scale_b"_a.none(), "block_scale_format"_a,
        "block"_a, "strict"_a);
  m.def("designed_inputs", &designed_inputs, "fmt"_a, "round"_a, "seed"_a, "random_elements"_a,
        "call_elements"_a);
  m.def("golden_check", &golden_check, "corpus"_a, "results"_a, "suite"_a = "all",
        "strict_nan"_a = false, "allow_missing"_a = false);
}
