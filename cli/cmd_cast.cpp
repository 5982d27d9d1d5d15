// exmy cast FORMAT [--round MODE] [--overflow none|satfinite|sat] [--seed N] [--rand WORD]
//                  [--tie even|lower|bnb-cpu] [--json] [--] VALUE...
// exmy cast FORMAT --in X.npy --out Y.npy [--in-format bf16] [--decoded] [--device cpu|cuda]
//                  [options as above]
//
// Scalars are exact (decimal, hex-float, inf, nan) and go through the MPFR oracle; arrays go
// through the native engine. docs/SEMANTICS.md section 11 is the contract.
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cli/cli_device.hpp"
#include "cli/cli_util.hpp"
#include "cli/command.hpp"
#include "gpu/host_arrays.hpp"
#include "sim/common/error.hpp"
#include "sim/format/registry.hpp"
#include "sim/io/npy.hpp"
#include "sim/native/convert.hpp"
#include "sim/native/int_format.hpp"
#include "sim/native/mask.hpp"
#include "sim/native/philox.hpp"
#include "sim/oracle/exact_text.hpp"
#include "sim/oracle/mpfr_engine.hpp"
#include "sim/oracle/mpfr_value.hpp"

namespace exmy::cli {
namespace {

constexpr const char* kUsage =
    "usage: exmy cast FORMAT [--round rne|rna|rtz|rup|rdn|rto|sr:R|mask[:outer=clamp|keep,"
    "inner=min|zero|keep]] [--overflow none|satfinite|sat] [--seed N] [--rand WORD] "
    "[--tie even|lower|bnb-cpu] [--json] [--] VALUE...  |  exmy cast FORMAT --in X.npy --out "
    "Y.npy [--in-format bf16] [--decoded] [--device cpu|cuda] [options]";
constexpr std::uint32_t kCastStream = 0;  // SEMANTICS 3.2: stream 0 = element-wise casts

struct Options {
  std::string format;
  RoundSpec round;
  bool json = false;
  std::uint64_t seed = 0;
  bool have_rand = false;
  std::uint32_t rand = 0;
  TieRule tie = TieRule::even_index;
  std::string in, out, in_format;
  bool decoded = false;
  Device device = Device::cpu;
  std::vector<std::string> values;
};

// Case-insensitive prefix test ("-Inf", "-NaN", "-infinity" are values, not options).
bool starts_with_word(const std::string& s, const char* word) {
  for (std::size_t i = 0; word[i] != '\0'; ++i) {
    if (i >= s.size() || std::tolower(static_cast<unsigned char>(s[i])) != word[i]) return false;
  }
  return true;
}

Options parse_args(const Args& args) {
  Options o;
  bool values_only = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    // Negative numbers ("-1.5", "-inf", "-0x1p-3") are values, not options.
    const bool looks_numeric =
        a.size() > 1 && a[0] == '-' &&
        (std::isdigit(static_cast<unsigned char>(a[1])) || a[1] == '.' ||
         starts_with_word(a.substr(1), "inf") || starts_with_word(a.substr(1), "nan"));
    if (values_only || a.empty() || a[0] != '-' || a == "-" || looks_numeric) {
      if (o.format.empty()) {
        o.format = a;
      } else {
        o.values.push_back(a);
      }
    } else if (a == "--") {
      values_only = true;
    } else if (a == "--json") {
      o.json = true;
    } else if (a == "--decoded") {
      o.decoded = true;
    } else if (a == "--round") {
      o.round = parse_round_spec(option_value(args, i));
    } else if (a == "--overflow") {
      o.round.rounding.overflow = parse_overflow(option_value(args, i));
    } else if (a == "--seed") {
      o.seed = parse_uint(option_value(args, i), "--seed", ~std::uint64_t{0});
    } else if (a == "--rand") {
      o.rand = static_cast<std::uint32_t>(parse_uint(option_value(args, i), "--rand", 0xFFFFFFFFu));
      o.have_rand = true;
    } else if (a == "--tie") {
      o.tie = parse_tie(option_value(args, i));
    } else if (a == "--device") {
      o.device = parse_device(option_value(args, i));
    } else if (a == "--in") {
      o.in = option_value(args, i);
    } else if (a == "--out") {
      o.out = option_value(args, i);
    } else if (a == "--in-format") {
      o.in_format = option_value(args, i);
      if (o.in_format != "bf16") {
        throw InputError("--in-format '" + o.in_format + "': expected bf16 (uint16 bit patterns)");
      }
    } else {
      throw InputError("unknown option '" + a + "' (" + kUsage + ")");
    }
  }
  if (o.format.empty()) throw InputError(std::string("missing FORMAT (") + kUsage + ")");
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
  return o;
}

// The R-bit word of sr:R for element i (SEMANTICS 3.2), or the fixed --rand word.
std::uint32_t random_word(const Options& o, std::uint64_t i) {
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

ScalarResult cast_scalar(const Options& o, const Format& f, const std::string& text,
                         std::uint64_t index, mpfr_ptr x) {
  oracle::parse_exact(text, x);
  if (mpfr_nan_p(x) && !f.has_nan()) {
    throw InputError("input '" + text + "': format " + f.name + " has no NaN");
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

int run_scalars(const Options& o, const Format& f) {
  if (o.values.empty()) throw InputError(std::string("no VALUE given (") + kUsage + ")");
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
      char line[512];
      std::snprintf(line, sizeof line, "%-24s  0x%0*llx  %-9s  %-24s  %s\n", o.values[i].c_str(),
                    hex_digits, static_cast<unsigned long long>(r.code), cls, value.c_str(),
                    flags_text(r.flags).c_str());
      out += line;
    }
  }
  if (o.json) out += "]\n";
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

// ---- arrays ----------------------------------------------------------------------------------

// The input array as codes of a float format (fp32, fp64, fp16, or bf16 bit patterns).
struct InputCodes {
  FloatFormat format;
  std::vector<std::uint64_t> codes;
};

InputCodes read_input(const Options& o, const io::NpyArray& a) {
  io::require_c_order(a, o.in);
  InputCodes in;
  const std::size_t n = a.count();
  in.codes.resize(n);
  const auto load = [&](auto tag, const FloatFormat& f) {
    using T = decltype(tag);
    in.format = f;
    for (std::size_t i = 0; i < n; ++i) {
      T u;
      std::memcpy(&u, a.data.data() + i * sizeof(T), sizeof(T));
      in.codes[i] = u;
    }
  };
  if (o.in_format == "bf16") {
    if (a.descr != io::kDescrU16) {
      throw InputError(o.in + ": dtype '" + a.descr + "', expected '<u2' (bf16 bit patterns)");
    }
    load(std::uint16_t{}, formats::bf16);
  } else if (a.descr == io::kDescrF32) {
    load(std::uint32_t{}, formats::fp32);
  } else if (a.descr == io::kDescrF64) {
    load(std::uint64_t{}, formats::fp64);
  } else if (a.descr == io::kDescrF16) {
    load(std::uint16_t{}, formats::fp16);
  } else {
    throw InputError(o.in + ": dtype '" + a.descr +
                     "', expected '<f4', '<f8' or '<f2' (or '<u2' with --in-format bf16)");
  }
  return in;
}

// One element through the native engine: its code and, for --decoded, its fp32 value.
struct NativeResult {
  std::uint64_t code;
  float value;
};

NativeResult cast_native(const Options& o, const Format& f, const FloatFormat& from,
                         std::uint64_t x, std::uint32_t rand) {
  const Rounding& r = o.round.rounding;
  if (o.round.mask) {
    const std::uint32_t x32 =
        static_cast<std::uint32_t>(native::convert(from, formats::fp32, Rounding{}, x).code);
    const std::uint32_t m =
        mask_fp32(x32, f.fp.exp_bits, f.fp.man_bits, o.round.outer, o.round.inner);
    const Encoded e = native::convert(formats::fp32, f.fp, Rounding{}, m);
    return {e.code, native::float_of(m)};
  }
  switch (f.kind) {
    case FormatKind::floating: {
      const Encoded e = native::convert(from, f.fp, r, x, rand);
      return {e.code, native::to_float(f.fp, e.code)};
    }
    case FormatKind::integer: {
      const Encoded e = native::int_convert(from, f.in, r, x, rand);
      return {e.code, static_cast<float>(f.in.value_of(e.code))};
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
      return {c, v[c]};
    }
  }
  return {0, 0.0f};
}

template <typename T>
io::NpyArray codes_array(const std::vector<std::uint64_t>& codes,
                         const std::vector<std::size_t>& shape) {
  std::vector<T> v(codes.size());
  for (std::size_t i = 0; i < codes.size(); ++i) v[i] = static_cast<T>(codes[i]);
  return io::make_npy(v, shape);
}

// The array on the GPU (gpu/cast/cast.hpp): float formats of at most 16 bits, the Philox words of
// --seed; the same codes and decoded values as the CPU path.
int run_arrays_cuda([[maybe_unused]] const Options& o, [[maybe_unused]] const Format& f) {
#if EXMY_HAVE_CUDA
  if (f.kind != FormatKind::floating || f.fp.total_bits() > 16) {
    throw InputError("--device cuda: expected a float format of at most 16 bits, not '" + f.name +
                     "'");
  }
  if (o.round.mask || o.have_rand) {
    throw InputError("--device cuda: --round mask and --rand run on the CPU only");
  }
  const io::NpyArray a = io::read_npy(o.in);
  io::require_c_order(a, o.in);
  const gpu::CastInput type = input_type(a, o.in, o.in_format == "bf16");
  gpu::CastParams p;
  p.to = f.fp;
  p.rounding = o.round.rounding;
  p.seed = o.seed;
  p.stream = kCastStream;
  const std::size_t n = a.count();
  io::NpyArray out;
  if (o.decoded) {
    out = io::make_npy(gpu::cast_fake_quant_host(a.data.data(), type, n, p), a.shape);
  } else {
    const std::vector<std::uint8_t> bytes = gpu::cast_codes_host(a.data.data(), type, n, p);
    if (gpu::code_bytes(f.fp) == 1) {
      out = io::make_npy(bytes, a.shape);
    } else {
      std::vector<std::uint16_t> codes(n);
      std::memcpy(codes.data(), bytes.data(), n * 2);
      out = io::make_npy(codes, a.shape);
    }
  }
  io::write_npy(o.out, out);
  return 0;
#else
  throw InputError("--device cuda: this exmy was built without CUDA");
#endif
}

int run_arrays(const Options& o, const Format& f) {
  if (o.in.empty() || o.out.empty()) {
    throw InputError("--in and --out go together (" + std::string(kUsage) + ")");
  }
  if (!o.values.empty()) throw InputError("VALUE arguments cannot be combined with --in");
  if (o.device == Device::cuda) return run_arrays_cuda(o, f);
  const RoundMode mode = o.round.rounding.mode;
  if (f.kind == FormatKind::codebook && mode != RoundMode::rne && mode != RoundMode::sr) {
    throw InputError("codebook arrays support --round rne or sr:R only");
  }
  const io::NpyArray header = io::read_npy(o.in);
  const InputCodes in = read_input(o, header);
  const std::size_t n = in.codes.size();
  std::vector<std::uint64_t> codes(n);
  std::vector<float> values(o.decoded ? n : 0);
  bool mask_inexact = false;
  std::size_t first_bad = 0;
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t s = 0; s < static_cast<std::ptrdiff_t>(n); ++s) {
    const std::size_t i = static_cast<std::size_t>(s);
    const NativeResult r = cast_native(o, f, in.format, in.codes[i], random_word(o, i));
    codes[i] = r.code;
    if (o.decoded) values[i] = r.value;
  }
  if (o.round.mask && !o.decoded) {
    // Codes only where the masked value is representable in the format.
    for (std::size_t i = 0; i < n && !mask_inexact; ++i) {
      const std::uint32_t x32 = static_cast<std::uint32_t>(
          native::convert(in.format, formats::fp32, Rounding{}, in.codes[i]).code);
      const std::uint32_t m =
          mask_fp32(x32, f.fp.exp_bits, f.fp.man_bits, o.round.outer, o.round.inner);
      if (native::convert(formats::fp32, f.fp, Rounding{}, m).flags != 0) {
        mask_inexact = true;
        first_bad = i;
      }
    }
    if (mask_inexact) {
      throw InputError(o.in + ": element " + std::to_string(first_bad) +
                       " masks to a value not representable in " + f.name +
                       " (use --decoded for the masked fp32 values)");
    }
  }
  io::NpyArray out;
  if (o.decoded) {
    out = io::make_npy(values, header.shape);
  } else {
    const int bits = f.code_bits();
    if (bits <= 8) {
      out = codes_array<std::uint8_t>(codes, header.shape);
    } else if (bits <= 16) {
      out = codes_array<std::uint16_t>(codes, header.shape);
    } else if (bits <= 32) {
      out = codes_array<std::uint32_t>(codes, header.shape);
    } else {
      out = codes_array<std::uint64_t>(codes, header.shape);
    }
  }
  io::write_npy(o.out, out);
  return 0;
}

int run_cast(const Args& args) {
  for (const auto& a : args) {
    if (a == "--help" || a == "-h") {
      std::printf("%s\n", kUsage);
      return 0;
    }
  }
  const Options o = parse_args(args);
  const Format f = parse_format(o.format);
  if (o.round.mask) check_mask_format(f);
  if (!o.in.empty() || !o.out.empty()) return run_arrays(o, f);
  if (o.device == Device::cuda) throw InputError("--device cuda: needs --in and --out arrays");
  return run_scalars(o, f);
}

}  // namespace

EXMY_COMMAND("cast", run_cast, "round exact values (or a .npy array) into a format");

}  // namespace exmy::cli
