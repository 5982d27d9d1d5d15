// exmy cast FORMAT [--round MODE] [--overflow POLICY] [--seed N] [--rand WORD] [--tie RULE]
//                  [--compat NAME] [--json] [--] VALUE...
// exmy cast FORMAT --in X.npy --out Y.npy [--in-format bf16] [--decoded | --pack]
//                  [--device cpu|cuda] [--threads N] [options as above]   (exmy cast --help)
// --threads N: CPU worker threads for arrays (default OMP_NUM_THREADS, else every core); the
// output bytes are the same for every count.
// --compat NAME (torch, ml_dtypes) replaces the rounding by another library's rule where the
// profile covers the format (sim/format/compat.hpp).
//
// Scalars are exact (decimal, hex-float, inf, nan) and go through the MPFR oracle; arrays go
// through the native engine. docs/SEMANTICS.md section 11 is the contract.
#include <atomic>
#include <cctype>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <vector>
#if defined(_OPENMP)
#include <omp.h>
#endif

#include "cli/cli_device.hpp"
#include "cli/cli_util.hpp"
#include "cli/cmd_cast_amd.hpp"
#include "cli/cmd_cast_p3109.hpp"
#include "cli/command.hpp"
#include "cli/options.hpp"
#include "gpu/host_arrays.hpp"
#include "sim/common/error.hpp"
#include "sim/fast/array_cast.hpp"
#include "sim/format/compat.hpp"
#include "sim/format/registry.hpp"
#include "sim/io/npy.hpp"
#include "sim/native/compat_e8m0.hpp"
#include "sim/native/convert.hpp"
#include "sim/native/int_format.hpp"
#include "sim/native/mask.hpp"
#include "sim/native/pack4.hpp"
#include "sim/native/philox.hpp"
#include "sim/oracle/exact_text.hpp"
#include "sim/oracle/mpfr_engine.hpp"
#include "sim/oracle/mpfr_value.hpp"

namespace exmy::cli {
namespace {

constexpr std::uint32_t kCastStream = 0;  // SEMANTICS 3.2: stream 0 = element-wise casts

// What `exmy cast` was asked for. The initial values are the defaults --help prints.
struct CastArgs {
  std::string format;
  RoundSpec round;
  bool json = false;
  std::uint64_t seed = 0;
  bool have_rand = false;
  std::uint32_t rand = 0;
  TieRule tie = TieRule::even_index;
  std::string in, out, in_format;
  bool decoded = false;
  bool pack = false;
  std::string compat;                // --compat NAME (sim/format/compat.hpp)
  native::CompatCast compat_cast{};  // its rule for FORMAT, when compat is set
  Device device = Device::cpu;
  int threads = 0;  // --threads N for arrays on the CPU; 0: OMP_NUM_THREADS, else every core
  std::vector<std::string> values;
};

Options cast_options(CastArgs& o) {
  const CastArgs d;
  Options opts(
      "exmy cast FORMAT [OPTIONS] [--] VALUE...  |  exmy cast FORMAT --in X.npy --out Y.npy "
      "[OPTIONS]",
      "Rounds exact values (decimal, hex-float, inf, nan; through the MPFR oracle) or a .npy "
      "array (through the native engine) into FORMAT (docs/SEMANTICS.md 11). Negative values "
      "are operands (-1.5, -inf); -- ends the options.",
      "exmy cast e4m3fn --round sr:8 --seed 7 -- 0.3 -1e-3 inf");
  opts.positional("FORMAT", "the target format (e4m3fn, bf16, int8, nf4, ...)", Options::kRequired,
                  [&](const std::string& v) { o.format = v; })
      .positional(
          "VALUE", "exact values to round (not with --in)", "none",
          [&](const std::string& v) { o.values.push_back(v); }, 0)
      .value({"--round"}, "MODE",
             round_mode_list("|") + "|mask[:outer=clamp|keep,inner=min|zero|keep]",
             round_mode_name(d.round.rounding.mode),
             [&](const std::string& v) { o.round = parse_round_spec(v); })
      .value({"--overflow"}, "POLICY", overflow_list("|"), overflow_name(d.round.rounding.overflow),
             [&](const std::string& v) { o.round.rounding.overflow = parse_overflow(v); })
      .value({"--seed"}, "N", "Philox key of the sr:R words (stream 0, index = element)",
             std::to_string(d.seed),
             [&](const std::string& v) { o.seed = parse_uint(v, "--seed", ~std::uint64_t{0}); })
      .value({"--rand"}, "WORD", "sr:R: this R-bit word for every element instead of Philox's",
             "the Philox word of --seed per element",
             [&](const std::string& v) {
               o.rand = static_cast<std::uint32_t>(parse_uint(v, "--rand", 0xFFFFFFFFu));
               o.have_rand = true;
             })
      .value({"--tie"}, "RULE",
             "codebook formats: which of two equally near codes, " + tie_list("|"), tie_name(d.tie),
             [&](const std::string& v) { o.tie = parse_tie(v); })
      .value({"--compat"}, "NAME",
             "another library's rule instead of the rounding (torch, ml_dtypes, ...; "
             "sim/format/compat.hpp); amd-gfx950: AMD's scaled conversions (their options: "
             "exmy cast --compat amd-gfx950 --help)",
             "none (exmy's rounding)", [&](const std::string& v) { o.compat = v; })
      .flag({"--json"}, "scalars: print a JSON array of {input, code, class, value, flags}",
            [&] { o.json = true; })
      .value({"--in"}, "X.npy", "the input array (<f4, <f8, <f2, or <u2 with --in-format bf16)",
             "none (VALUE operands)", [&](const std::string& v) { o.in = v; })
      .value({"--out"}, "Y.npy", "the output array (with --in)", "none",
             [&](const std::string& v) { o.out = v; })
      .value({"--in-format"}, "bf16", "read a '<u2' --in array as bf16 bit patterns",
             "the dtype of --in",
             [&](const std::string& v) {
               if (v != "bf16") {
                 throw InputError("--in-format '" + v + "': expected bf16 (uint16 bit patterns)");
               }
               o.in_format = v;
             })
      .flag({"--decoded"}, "write the rounded values as <f4 instead of codes",
            [&] { o.decoded = true; })
      .flag({"--pack"}, "write codes of at most 4 bits two per byte (even last dimension)",
            [&] { o.pack = true; })
      .value({"--device"}, "cpu|cuda", "where an array is cast (the same bits)", "cpu",
             [&](const std::string& v) { o.device = parse_device(v); })
      .value({"--threads"}, "N", "CPU threads for arrays (1 to 4096; the same bytes for every N)",
             "OMP_NUM_THREADS if set, else every core", [&](const std::string& v) {
               o.threads = static_cast<int>(parse_uint(v, "--threads", 4096));
               if (o.threads == 0) throw InputError("--threads 0: expected 1 to 4096");
             });
  return opts;
}

// "usage: exmy cast ...; try --help", for errors found after parsing.
std::string cast_usage_hint() {
  CastArgs unused;
  return cast_options(unused).usage_hint();
}

// Checks what no single option can: FORMAT given, --rand with sr:R, --compat alone.
void check_args(const CastArgs& o) {
  if (o.format.empty()) throw InputError("missing FORMAT (" + cast_usage_hint() + ")");
  const Rounding& r = o.round.rounding;
  if (o.have_rand) {
    if (r.mode != RoundMode::sr || o.round.mask) {
      throw InputError("--rand needs --round sr:R");
    }
    if (r.sr_bits < 32 && o.rand >= (std::uint32_t{1} << r.sr_bits)) {
      throw InputError("--rand " + std::to_string(o.rand) + ": expected an " +
                       std::to_string(r.sr_bits) + "-bit word (< 2^" + std::to_string(r.sr_bits) +
                       ")");
    }
  }
  if (!o.compat.empty()) {
    compat_profile(o.compat);  // an unknown name fails first, listing the known ones
    if (!(r == Rounding{}) || o.round.mask || o.have_rand) {
      throw InputError("--compat " + o.compat +
                       " fixes the rounding: it cannot be combined with --round, --overflow or "
                       "--rand");
    }
  }
  if (o.pack && o.decoded) throw InputError("--pack and --decoded cannot be combined");
}

// The R-bit word of sr:R for element i (SEMANTICS 3.2), or the fixed --rand word.
std::uint32_t random_word(const CastArgs& o, std::uint64_t i) {
  const Rounding& r = o.round.rounding;
  if (r.mode != RoundMode::sr) return 0;
  if (o.have_rand) return o.rand;
  return native::sr_word(native::philox_word(o.seed, kCastStream, i), r.sr_bits);
}

// Seed 003 masking needs the ExMy shape of a float format with IEEE-style limits.
void check_mask_format(const Format& f) {
  if (f.kind != FormatKind::floating || f.fp.exp_bits < 2 || f.fp.exp_bits > 8 ||
      f.fp.man_bits > 23) {
    throw InputError("--round mask needs a float format eXmY with 2 <= X <= 8 and Y <= 23, not '" +
                     f.name + "'");
  }
}

// ---- scalars ---------------------------------------------------------------------------------

struct ScalarResult {
  std::uint64_t code = 0;
  std::uint32_t flags = 0;
};

ScalarResult cast_scalar(const CastArgs& o, const Format& f, const std::string& text,
                         std::uint64_t index, mpfr_ptr x) {
  oracle::parse_exact(text, x);
  if (mpfr_nan_p(x) && !f.has_nan()) {
    throw InputError("input '" + text + "': format " + f.name + " has no NaN");
  }
  if (!o.compat.empty()) {
    // Compat rules are defined on fp32 inputs: the exact input is rounded to fp32 (rne) first.
    const Encoded c32 = oracle::encode(formats::fp32, Rounding{}, x);
    const std::uint32_t u = static_cast<std::uint32_t>(c32.code);
    const std::uint32_t code = native::compat_cast_fp32(o.compat_cast, u);
    const float got = native::to_float(f.fp, code), want = native::float_of(u);
    std::uint32_t flags = c32.flags;
    if (std::isnan(got) && !std::isnan(want)) {
      flags |= flag::invalid;
    } else if (!std::isnan(got) && got != want) {
      flags |= flag::inexact;
    }
    return {code, flags};
  }
  if (!f.is_signed() && mpfr_signbit(x) && !mpfr_zero_p(x) && !mpfr_nan_p(x) &&
      f.kind != FormatKind::codebook) {
    throw InputError("input '" + text +
                     "' is negative and not representable in the unsigned "
                     "format " +
                     f.name);
  }
  if (o.round.mask) {
    // Masking acts on an fp32 container: the exact input is rounded to fp32 (rne) first.
    const Encoded c32 = oracle::encode(formats::fp32, Rounding{}, x);
    const std::uint32_t m = mask_fp32(static_cast<std::uint32_t>(c32.code), f.fp.exp_bits,
                                      f.fp.man_bits, o.round.outer, o.round.inner);
    oracle::MpfrValue y(64);
    oracle::decode(formats::fp32, m, y);
    const Encoded e = oracle::encode(f.fp, Rounding{}, y);
    if ((e.flags & (flag::inexact | flag::invalid | flag::overflow)) != 0) {
      throw InputError("input '" + text + "': the masked value " + oracle::hexfloat_text(y) +
                       " is not representable in " + f.name +
                       " (its limits differ from the IEEE-style ExMy grid masking assumes)");
    }
    return {e.code, c32.flags | (m != c32.code ? flag::inexact : 0u)};
  }
  const Encoded e = f.encode(x, o.round.rounding, random_word(o, index), o.tie);
  return {e.code, e.flags};
}

int run_scalars(const CastArgs& o, const Format& f) {
  if (o.values.empty()) throw InputError("no VALUE given (" + cast_usage_hint() + ")");
  oracle::MpfrValue x(oracle::kTextPrecision);
  oracle::MpfrValue v(64);
  std::string out;
  if (o.json) out += "[\n";
  const int hex_digits = (f.code_bits() + 3) / 4;
  for (std::size_t i = 0; i < o.values.size(); ++i) {
    const ScalarResult r = cast_scalar(o, f, o.values[i], i, x);
    f.exact_value(r.code, v);
    const std::string value = oracle::hexfloat_text(v);
    const char* cls = class_name(f.classify(r.code));
    if (o.json) {
      out += "{\"input\": " + json_string(o.values[i]) + ", \"code\": " + std::to_string(r.code) +
             ", \"class\": \"" + cls + "\", \"value\": " + json_string(value) +
             ", \"flags\": " + flags_json(r.flags) + "}";
      out += i + 1 < o.values.size() ? ",\n" : "\n";
    } else {
      out += format_text("%-24s  0x%0*llx  %-9s  %-24s  %s\n", o.values[i].c_str(), hex_digits,
                         static_cast<unsigned long long>(r.code), cls, value.c_str(),
                         flags_text(r.flags).c_str());
    }
  }
  if (o.json) out += "]\n";
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

// ---- arrays ----------------------------------------------------------------------------------

// The input array's element type: a float format, its width, and the fast engine's input type
// where it has one (fp32, fp16, bf16; fp64 takes the native engine).
struct ArrayInput {
  FloatFormat format;
  std::size_t bytes = 4;
  bool fast = true;
  fast::ArrayInput type = fast::ArrayInput::fp32;
};

ArrayInput input_of(const CastArgs& o, const io::NpyHeader& h) {
  io::require_c_order(h, o.in);
  if (o.in_format == "bf16") {
    if (h.descr != io::kDescrU16) {
      throw InputError(o.in + ": dtype '" + h.descr + "', expected '<u2' (bf16 bit patterns)");
    }
    return {formats::bf16, 2, true, fast::ArrayInput::bf16};
  }
  if (h.descr == io::kDescrF32) return {formats::fp32, 4, true, fast::ArrayInput::fp32};
  if (h.descr == io::kDescrF64) return {formats::fp64, 8, false, fast::ArrayInput::fp32};
  if (h.descr == io::kDescrF16) return {formats::fp16, 2, true, fast::ArrayInput::fp16};
  throw InputError(o.in + ": dtype '" + h.descr +
                   "', expected '<f4', '<f8' or '<f2' (or '<u2' with --in-format bf16)");
}

// Element i of the input as a code of its format.
std::uint64_t input_code(const std::uint8_t* data, const ArrayInput& in, std::size_t i) {
  std::uint64_t c = 0;
  std::memcpy(&c, data + i * in.bytes, in.bytes);  // little-endian host
  return c;
}

// One element through the native engine: its code and, for --decoded, its fp32 value.
struct NativeResult {
  std::uint64_t code;
  float value;
  std::uint32_t flags;  // the final conversion's flags (mask: non-zero = not representable)
};

NativeResult cast_native(const CastArgs& o, const Format& f, const FloatFormat& from,
                         std::uint64_t x, std::uint32_t rand) {
  const Rounding& r = o.round.rounding;
  if (o.round.mask) {
    const std::uint32_t x32 =
        static_cast<std::uint32_t>(native::convert(from, formats::fp32, Rounding{}, x).code);
    const std::uint32_t m =
        mask_fp32(x32, f.fp.exp_bits, f.fp.man_bits, o.round.outer, o.round.inner);
    const Encoded e = native::convert(formats::fp32, f.fp, Rounding{}, m);
    return {e.code, native::float_of(m), e.flags};
  }
  switch (f.kind) {
    case FormatKind::floating: {
      const Encoded e = native::convert(from, f.fp, r, x, rand);
      return {e.code, native::to_float(f.fp, e.code), 0};
    }
    case FormatKind::integer: {
      const Encoded e = native::int_convert(from, f.in, r, x, rand);
      return {e.code, static_cast<float>(f.in.value_of(e.code)), 0};
    }
    case FormatKind::codebook: {
      // Codebook lookups work on fp32 (bitsandbytes' kernels do): other inputs are rounded to
      // fp32 (rne) first.
      const float x32 = native::to_float(from, x);
      const float* v = f.cb->values.data();
      std::uint8_t c;
      if (r.mode == RoundMode::sr) {
        const int R = r.sr_bits;
        const float u = R <= 24 ? std::ldexp(static_cast<float>(rand), -R)
                                : std::ldexp(static_cast<float>(rand >> (R - 24)), -24);
        c = codebook_stochastic(v, x32, u);
      } else {
        c = codebook_nearest(v, x32, o.tie);  // rne (run_arrays refuses other modes)
      }
      return {c, v[c], 0};
    }
  }
  return {0, 0.0f, 0};
}

// How the elements of an array are computed: the compat rule, the fast engine
// (sim/fast/array_cast.hpp), or the native engine element by element. All three give, element
// by element, what cast_scalar's definition gives (the fast engine is native::convert).
enum class Engine { compat, fast, native };

// The output file: dtype and shape (SEMANTICS 11.4).
struct OutputLayout {
  std::string descr;
  std::vector<std::size_t> shape;
  std::size_t code_bytes = 1;  // bytes per code in memory before packing
};

OutputLayout output_layout(const CastArgs& o, const Format& f,
                           const std::vector<std::size_t>& shape) {
  OutputLayout l;
  l.shape = shape;
  const int bits = f.code_bits();
  l.code_bytes = bits <= 8 ? 1 : bits <= 16 ? 2 : bits <= 32 ? 4 : 8;
  if (o.decoded) {
    l.descr = io::kDescrF32;
  } else if (o.pack) {
    if (bits > 4) {
      throw InputError("--pack: format " + f.name + " has " + std::to_string(bits) +
                       "-bit codes, expected at most 4");
    }
    if (shape.empty())
      throw InputError("--pack: " + o.in + " is 0-d, expected at least 1 dimension");
    if (shape.back() % 2 != 0) {
      throw InputError("--pack: " + o.in + " has an odd last dimension " +
                       std::to_string(shape.back()) + ", expected an even one");
    }
    l.descr = io::kDescrU8;
    l.shape.back() /= 2;
  } else {
    l.descr = l.code_bytes == 1   ? io::kDescrU8
              : l.code_bytes == 2 ? io::kDescrU16
              : l.code_bytes == 4 ? io::kDescrU32
                                  : io::kDescrU64;
  }
  return l;
}

// Writes one piece of codes (n of them, l.code_bytes each) or decoded values: packed two per
// byte with --pack (n even), as they are otherwise.
void write_codes(io::NpyFileWriter& w, const CastArgs& o, const OutputLayout& l,
                 const std::uint8_t* codes, std::size_t n, std::vector<std::uint8_t>& scratch) {
  if (o.pack) {
    scratch.resize(native::packed4_bytes(n));
    native::pack4(codes, n, scratch.data());
    w.write(scratch.data(), scratch.size());
  } else {
    w.write(codes, n * l.code_bytes);
  }
}

// Elements [first, first + n) of the array: codes into `codes` (code_bytes each) or, for
// --decoded, values into `values`. Returns the index of the first element whose masked value the
// format cannot hold (mask without --decoded), or SIZE_MAX.
std::size_t cast_block(const CastArgs& o, const Format& f, const ArrayInput& in, Engine engine,
                       const std::uint8_t* data, std::size_t first, std::size_t n,
                       std::size_t code_bytes, std::uint8_t* codes, float* values) {
  std::size_t bad = SIZE_MAX;
  if (engine == Engine::compat) {
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint32_t u = fast::widen_to_fp32(data, in.type, first + i);
      const auto c = static_cast<std::uint8_t>(native::compat_cast_fp32(o.compat_cast, u));
      if (values) {
        values[i] = native::to_float(f.fp, c);
      } else {
        codes[i] = c;
      }
    }
    return bad;
  }
  if (engine == Engine::fast) {
    const void* src = data + first * in.bytes;
    if (!values) {
      fast::cast_to_codes(src, in.type, n, codes, f.fp, o.round.rounding, o.seed, kCastStream,
                          first);
      return bad;
    }
    // Decoded: codes a piece at a time, then the format's decode table.
    const std::vector<float>& table = fast::decode_table(f.fp);
    constexpr std::size_t kPiece = 1024;
    std::uint16_t piece[kPiece];
    const std::size_t cb = f.fp.total_bits() <= 8 ? 1 : 2;
    for (std::size_t at = 0; at < n; at += kPiece) {
      const std::size_t m = n - at < kPiece ? n - at : kPiece;
      fast::cast_to_codes(data + (first + at) * in.bytes, in.type, m, piece, f.fp, o.round.rounding,
                          o.seed, kCastStream, first + at);
      const auto* p8 = reinterpret_cast<const std::uint8_t*>(piece);
      for (std::size_t i = 0; i < m; ++i) values[at + i] = table[cb == 1 ? p8[i] : piece[i]];
    }
    return bad;
  }
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t g = first + i;
    const NativeResult r = cast_native(o, f, in.format, input_code(data, in, g), random_word(o, g));
    if (values) {
      values[i] = r.value;
    } else {
      std::memcpy(codes + i * code_bytes, &r.code, code_bytes);  // little-endian host
      if (o.round.mask && r.flags != 0 && bad == SIZE_MAX) bad = g;
    }
  }
  return bad;
}

#if EXMY_HAVE_CUDA
gpu::CastInput gpu_input(const CastArgs& o, const io::NpyHeader& h) {
  io::NpyArray a;  // input_type reads the dtype only
  a.descr = h.descr;
  return input_type(a, o.in, o.in_format == "bf16");
}
#endif

// The array on the GPU (gpu/cast/cast.hpp, cast_compat.hpp): float formats of at most 16 bits,
// the Philox words of --seed, the compat rules; --pack packs the GPU's codes on the host. The
// same codes and decoded values as the CPU path, written by the same writer.
int run_arrays_cuda([[maybe_unused]] const CastArgs& o, [[maybe_unused]] const Format& f) {
#if EXMY_HAVE_CUDA
  if (f.kind != FormatKind::floating || f.fp.total_bits() > 16) {
    throw InputError("--device cuda: expected a float format of at most 16 bits, not '" + f.name +
                     "'");
  }
  if (o.round.mask || o.have_rand) {
    throw InputError("--device cuda: --round mask and --rand run on the CPU only");
  }
  const io::NpyMappedFile file(o.in);
  const io::NpyHeader& h = file.header();
  io::require_c_order(h, o.in);
  const gpu::CastInput type = gpu_input(o, h);
  const OutputLayout l = output_layout(o, f, h.shape);
  const std::size_t n = h.count();
  io::NpyFileWriter w(o.out, l.descr, l.shape);
  if (!o.compat.empty()) {
    const std::vector<std::uint8_t> codes =
        gpu::cast_compat_codes_host(file.data(), type, n, o.compat_cast);
    if (o.decoded) {
      const std::vector<float>& table = fast::decode_table(f.fp);
      std::vector<float> values(n);
      for (std::size_t i = 0; i < n; ++i) values[i] = table[codes[i]];
      w.write(values.data(), n * sizeof(float));
    } else {
      std::vector<std::uint8_t> scratch;
      write_codes(w, o, l, codes.data(), n, scratch);
    }
    w.commit();
    return 0;
  }
  gpu::CastParams p;
  p.to = f.fp;
  p.rounding = o.round.rounding;
  p.seed = o.seed;
  p.stream = kCastStream;
  if (o.decoded) {
    const std::vector<float> values = gpu::cast_fake_quant_host(file.data(), type, n, p);
    w.write(values.data(), n * sizeof(float));
  } else {
    const std::vector<std::uint8_t> codes = gpu::cast_codes_host(file.data(), type, n, p);
    std::vector<std::uint8_t> scratch;
    write_codes(w, o, l, codes.data(), n, scratch);
  }
  w.commit();
  return 0;
#else
  throw InputError("--device cuda: this exmy was built without CUDA");
#endif
}

int run_arrays(const CastArgs& o, const Format& f) {
  if (o.in.empty() || o.out.empty()) {
    throw InputError("--in and --out go together (" + cast_usage_hint() + ")");
  }
  if (!o.values.empty()) throw InputError("VALUE arguments cannot be combined with --in");
  if (o.device == Device::cuda) return run_arrays_cuda(o, f);
  const RoundMode mode = o.round.rounding.mode;
  if (f.kind == FormatKind::codebook && mode != RoundMode::rne && mode != RoundMode::sr) {
    throw InputError(std::string("codebook arrays support --round ") +
                     round_mode_name(RoundMode::rne) + " or " + round_mode_name(RoundMode::sr) +
                     ":R only");
  }
  const io::NpyMappedFile file(o.in);
  const io::NpyHeader& h = file.header();
  const ArrayInput in = input_of(o, h);
  if (!o.compat.empty() && !in.fast) {
    throw InputError(o.in + ": --compat " + o.compat +
                     " casts '<f4', '<f2' or bf16 '<u2' arrays, not '" + h.descr + "'");
  }
  const OutputLayout l = output_layout(o, f, h.shape);
  const Engine engine = !o.compat.empty() ? Engine::compat
                        : in.fast && f.kind == FormatKind::floating && !o.round.mask &&
                                !o.have_rand && fast::array_cast_supported(f.fp)
                            ? Engine::fast
                            : Engine::native;
  const std::size_t n = h.count();
  io::NpyFileWriter w(o.out, l.descr, l.shape);
  // Blocks of kBlock elements are computed by whichever thread takes the next one, into a ring of
  // kRing piece buffers of kChunk elements (even, for --pack), and the pieces are written in
  // order, each by the thread that completes the piece or one that finds it complete: the write
  // overlaps the cast and no thread waits at a barrier (on a loaded machine, a thread spinning at
  // a barrier while the one with the work is descheduled costs more than the work). Every
  // element's result depends only on its index (the Philox word of sr:R included), so the file
  // does not depend on the number of threads. A block of piece p waits, rarely, for piece
  // p - kRing to be written, whose buffer it reuses.
  constexpr std::size_t kChunk = std::size_t{1} << 22;
  constexpr std::size_t kBlock = std::size_t{1} << 14;
  constexpr std::size_t kRing = 3;
  constexpr std::size_t kBlocksPerChunk = kChunk / kBlock;
  const std::size_t cap = n < kChunk ? n : kChunk;
  const std::size_t chunks = (n + kChunk - 1) / kChunk;
  const std::size_t slots = chunks < kRing ? chunks : kRing;
  const std::size_t blocks = (n + kBlock - 1) / kBlock;
#if defined(_OPENMP)
  const int team = o.threads > 0 ? o.threads : omp_get_max_threads();
#endif
  std::vector<std::vector<std::uint8_t>> codes(slots);
  std::vector<std::vector<float>> values(slots);
  for (std::size_t k = 0; k < slots; ++k) {
    codes[k].resize(o.decoded ? 0 : cap * l.code_bytes);
    values[k].resize(o.decoded ? cap : 0);
  }
  std::vector<std::uint8_t> scratch;
  std::atomic<std::size_t> next_block{0};
  std::unique_ptr<std::atomic<std::size_t>[]> done(new std::atomic<std::size_t>[chunks]);
  for (std::size_t c = 0; c < chunks; ++c) done[c].store(0);
  std::vector<std::size_t> bad(chunks, SIZE_MAX);  // per piece: the first element that masks out
  std::mutex mu;                  // guards written, bad, write_error, the writer and scratch
  std::condition_variable freed;  // a piece was written (its buffer is free) or stop was set
  std::size_t written = 0;        // pieces written so far
  std::atomic<bool> stop{false};  // a piece masked out or a write failed
  std::exception_ptr write_error;
  const auto piece_size = [&](std::size_t c) {
    return n - c * kChunk < kChunk ? n - c * kChunk : kChunk;
  };
  const auto piece_blocks = [&](std::size_t c) { return (piece_size(c) + kBlock - 1) / kBlock; };
  // Writes every complete piece from `written` on (mu held).
  const auto write_ready = [&]() {
    while (!stop && written < chunks &&
           done[written].load(std::memory_order_acquire) == piece_blocks(written)) {
      const std::size_t c = written, cn = piece_size(c), slot = c % slots;
      if (bad[c] != SIZE_MAX) {
        stop = true;
        break;
      }
      try {
        if (o.decoded) {
          w.write(values[slot].data(), cn * sizeof(float));
        } else {
          write_codes(w, o, l, codes[slot].data(), cn, scratch);
        }
      } catch (...) {
        write_error = std::current_exception();
        stop = true;
        break;
      }
      ++written;
    }
    freed.notify_all();
  };
#pragma omp parallel num_threads(team)
  for (;;) {
    const std::size_t b = next_block.fetch_add(1, std::memory_order_relaxed);
    if (b >= blocks || stop.load(std::memory_order_relaxed)) break;
    const std::size_t c = b / kBlocksPerChunk, slot = c % slots;
    if (c >= slots) {  // wait until piece c - slots, whose buffer this is, has been written
      std::unique_lock<std::mutex> lock(mu);
      freed.wait(lock, [&] { return stop.load() || written + slots > c; });
      if (stop) break;
    }
    const std::size_t s = (b - c * kBlocksPerChunk) * kBlock;
    const std::size_t m = piece_size(c) - s < kBlock ? piece_size(c) - s : kBlock;
    const std::size_t r = cast_block(o, f, in, engine, file.data(), c * kChunk + s, m, l.code_bytes,
                                     o.decoded ? nullptr : codes[slot].data() + s * l.code_bytes,
                                     o.decoded ? values[slot].data() + s : nullptr);
    if (r != SIZE_MAX) {
      std::lock_guard<std::mutex> lock(mu);
      bad[c] = r < bad[c] ? r : bad[c];
    }
    if (done[c].fetch_add(1, std::memory_order_acq_rel) + 1 == piece_blocks(c)) {
      std::lock_guard<std::mutex> lock(mu);
      write_ready();
    }
  }
  {
    std::lock_guard<std::mutex> lock(mu);
    write_ready();
  }
  for (std::size_t c = 0; c < chunks; ++c) {
    if (bad[c] != SIZE_MAX) {
      throw InputError(o.in + ": element " + std::to_string(bad[c]) +
                       " masks to a value not representable in " + f.name +
                       " (use --decoded for the masked fp32 values)");
    }
  }
  if (write_error) std::rethrow_exception(write_error);
  w.commit();
  return 0;
}

int run_cast(const Args& args) {
  if (is_p3109_cast(args)) return run_cast_p3109(args);  // binary<K>p<P><s|u><e|f>
  if (is_amd_cast(args)) return run_cast_amd(args);      // --compat amd-gfx950 (its options)
  CastArgs o;
  if (!cast_options(o).parse(args)) return 0;
  check_args(o);
  const Format f = parse_format(o.format);
  if (o.round.mask) check_mask_format(f);
  if (!o.compat.empty()) o.compat_cast = compat_rule(compat_profile(o.compat), CompatOp::cast, f);
  if (!o.in.empty() || !o.out.empty()) return run_arrays(o, f);
  if (o.device == Device::cuda) throw InputError("--device cuda: needs --in and --out arrays");
  if (o.pack) throw InputError("--pack needs --in and --out arrays");
  return run_scalars(o, f);
}

}  // namespace

EXMY_COMMAND("cast", run_cast, "round exact values (or a .npy array) into a format");

}  // namespace exmy::cli
