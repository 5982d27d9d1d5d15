// exmy cast binary<K>p<P><s|u><e|f> [--round MODE] [--overflow SAT] [--seed N] [--rand WORD]
//                  [--] VALUE...
// exmy cast binary<K>p<P><s|u><e|f> --in X.npy --out Y.npy [--in-format bf16] [options]
// exmy cast binary<K>p<P><s|u><e|f> --decode --in CODES.npy --out VALUES.npy
// The IEEE P3109 interim report v4.0's ωProject (rounding to precision, then saturation, then
// encoding) and ωDecode; sim/native/p3109.hpp. Scalars are exact (parsed by the MPFR text
// parser); arrays are <f4, <f8, <f2 or bf16 <u2 in, |u1 (K <= 8) or <u2 codes out.
#include "cli/cmd_cast_p3109.hpp"

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cli/cli_util.hpp"
#include "cli/options.hpp"
#include "sim/common/error.hpp"
#include "sim/format/p3109_names.hpp"
#include "sim/format/registry.hpp"
#include "sim/io/npy.hpp"
#include "sim/native/convert.hpp"
#include "sim/native/p3109.hpp"
#include "sim/native/philox.hpp"
#include "sim/oracle/exact_text.hpp"
#include "sim/oracle/mpfr_value.hpp"

namespace exmy::cli {
namespace {

struct P3109Args {
  std::string format;
  native::P3109Projection proj{};
  std::uint64_t seed = 0;
  bool have_rand = false;
  std::uint32_t rand = 0;
  std::string in, out, in_format;
  bool decode = false;
  std::vector<std::string> values;
};

std::uint32_t word(const P3109Args& o, std::uint64_t i) {
  if (!native::p3109_stochastic(o.proj.mode)) return 0;
  if (o.have_rand) return o.rand;
  return native::sr_word(native::philox_word(o.seed, 0, i), o.proj.n);  // SEMANTICS 3.2
}

// The exact value of an unpacked datum as MPFR (64 bits hold every P3109 significand).
std::string value_text(const native::Unpacked& u) {
  if (u.cls == ValueClass::nan) return "nan";
  if (u.cls == ValueClass::inf) return u.negative ? "-inf" : "inf";
  if (u.cls == ValueClass::zero) return "0x0p+0";
  oracle::MpfrValue v(64);
  mpfr_set_uj(v, u.sig, MPFR_RNDN);
  mpfr_mul_2si(v, v, u.exp - 63, MPFR_RNDN);
  if (u.negative) mpfr_neg(v, v, MPFR_RNDN);
  return oracle::hexfloat_text(v);
}

int run_scalars(const P3109Args& o, const native::P3109Format& f) {
  if (o.values.empty()) throw InputError("no VALUE given (exmy cast --help)");
  oracle::MpfrValue x(oracle::kTextPrecision);
  std::string out;
  const int hex_digits = (f.k + 3) / 4;
  for (std::size_t i = 0; i < o.values.size(); ++i) {
    // Exact, or its round-to-odd image at 256 bits, which rounds like the value for every mode
    // here (P + N + 2 <= 50 bits decide it).
    oracle::parse_exact(o.values[i], x);
    const Encoded e = native::p3109_project(f, o.proj, unpack_mpfr(x), word(o, i));
    const native::Unpacked d = native::p3109_unpack(f, e.code);
    out += format_text("%-24s  0x%0*llx  %-9s  %-24s  %s\n", o.values[i].c_str(), hex_digits,
                       static_cast<unsigned long long>(e.code), class_name(f.classify(e.code)),
                       value_text(d).c_str(), flags_text(e.flags).c_str());
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

// --decode: codes (|u1 or <u2) to their values as <f8 (exact for K <= 11: every exponent of
// those formats is within binary64's range).
int run_decode(const P3109Args& o, const native::P3109Format& f) {
  if (f.k > 11) {
    throw InputError("--decode: " + p3109_format_name(f) +
                     " has values outside binary64's range (K <= 11 decodes exactly)");
  }
  const io::NpyMappedFile file(o.in);
  const io::NpyHeader& h = file.header();
  if (h.descr != "|u1" && h.descr != "<u2") {
    throw InputError(o.in + ": --decode reads '|u1' or '<u2' codes, not '" + h.descr + "'");
  }
  const std::size_t n = h.count(), w = h.descr == "|u1" ? 1 : 2;
  std::vector<double> v(n);
  constexpr FloatFormat kFp64 = formats::fp64;
  for (std::size_t i = 0; i < n; ++i) {
    std::uint64_t c = file.data()[i * w];
    if (w == 2) c |= std::uint64_t{file.data()[i * w + 1]} << 8;
    if (c >= f.code_count()) {
      throw InputError(o.in + ": element " + std::to_string(i) + " is code " + std::to_string(c) +
                       ", not one of " + p3109_format_name(f) + "'s " +
                       std::to_string(f.code_count()));
    }
    const Encoded e = native::encode(kFp64, Rounding{}, native::p3109_unpack(f, c));
    std::memcpy(&v[i], &e.code, 8);
  }
  io::NpyFileWriter out(o.out, "<f8", h.shape);
  out.write(v.data(), n * 8);
  out.commit();
  return 0;
}

int run_arrays(const P3109Args& o, const native::P3109Format& f) {
  if (o.in.empty() || o.out.empty()) throw InputError("--in and --out go together");
  if (!o.values.empty()) throw InputError("VALUE arguments cannot be combined with --in");
  if (o.decode) return run_decode(o, f);
  const io::NpyMappedFile file(o.in);
  const io::NpyHeader& h = file.header();
  FloatFormat src;
  std::size_t w = 4;
  if (h.descr == "<f4") {
    src = formats::fp32;
  } else if (h.descr == "<f8") {
    src = formats::fp64;
    w = 8;
  } else if (h.descr == "<f2") {
    src = formats::fp16;
    w = 2;
  } else if (h.descr == "<u2" && o.in_format == "bf16") {
    src = formats::bf16;
    w = 2;
  } else {
    throw InputError(o.in + ": expected '<f4', '<f8', '<f2' or '<u2' with --in-format bf16, not '" +
                     h.descr + "'");
  }
  const std::size_t n = h.count(), cw = f.k <= 8 ? 1 : 2;
  std::vector<std::uint8_t> codes(n * cw);
  for (std::size_t i = 0; i < n; ++i) {
    std::uint64_t bits = 0;
    std::memcpy(&bits, file.data() + i * w, w);  // little-endian host (npy.hpp)
    const Encoded e = native::p3109_project(f, o.proj, native::unpack(src, bits), word(o, i));
    codes[i * cw] = static_cast<std::uint8_t>(e.code);
    if (cw == 2) codes[i * cw + 1] = static_cast<std::uint8_t>(e.code >> 8);
  }
  io::NpyFileWriter out(o.out, cw == 1 ? "|u1" : "<u2", h.shape);
  out.write(codes.data(), codes.size());
  out.commit();
  return 0;
}

}  // namespace

bool is_p3109_cast(const Args& args) {
  return !args.empty() && parse_p3109_format(args[0]).has_value();
}

int run_cast_p3109(const Args& args) {
  P3109Args o;
  Options opts(
      "exmy cast binary<K>p<P><s|u><e|f> [OPTIONS] [--] VALUE...  |  ... --in X.npy --out Y.npy",
      "Projects exact values or a .npy array onto an IEEE P3109 format (interim report v4.0: "
      "round to precision, saturate, encode; docs/SEMANTICS.md 1.2). --decode turns codes into "
      "<f8 values.",
      "exmy cast binary8p3se --round sr-c:8 --overflow satpropagate -- 0.3 -1e-3 inf");
  opts.positional("FORMAT", "binary<K>p<P><s|u><e|f>, 3 <= K <= 16", Options::kRequired,
                  [&](const std::string& v) { o.format = v; })
      .positional(
          "VALUE", "exact values to project (not with --in)", "none",
          [&](const std::string& v) { o.values.push_back(v); }, 0)
      .value({"--round"}, "MODE", "rne|rna|rup|rdn|rtz|rto|sr:N|sr-a:N|sr-b:N|sr-c:N", "rne",
             [&](const std::string& v) { parse_p3109_rounding(v, o.proj); })
      .value({"--overflow", "--sat"}, "SAT", "satnone|satfinite|satpropagate|ovfinf", "satnone",
             [&](const std::string& v) { o.proj.sat = parse_p3109_sat(v); })
      .value({"--seed"}, "N", "Philox key of the stochastic words (stream 0, index = element)", "0",
             [&](const std::string& v) { o.seed = parse_uint(v, "--seed", ~std::uint64_t{0}); })
      .value({"--rand"}, "WORD", "the N-bit word R for every element instead of Philox's",
             "the Philox word of --seed per element",
             [&](const std::string& v) {
               o.have_rand = true;
               o.rand = static_cast<std::uint32_t>(parse_uint(v, "--rand", 0xFFFFFFFFu));
             })
      .value({"--in"}, "X.npy", "the input array (or codes, with --decode)", "none",
             [&](const std::string& v) { o.in = v; })
      .value({"--out"}, "Y.npy", "the output array", "none",
             [&](const std::string& v) { o.out = v; })
      .value({"--in-format"}, "bf16", "read a '<u2' --in array as bf16 bit patterns", "none",
             [&](const std::string& v) {
               if (v != "bf16") throw InputError("--in-format '" + v + "': expected bf16");
               o.in_format = v;
             })
      .flag({"--decode"}, "--in holds codes ('|u1' or '<u2'); write their values as '<f8'",
            [&] { o.decode = true; });
  if (!opts.parse(args)) return 0;
  const native::P3109Format f = *parse_p3109_format(o.format);
  if (o.have_rand && !native::p3109_stochastic(o.proj.mode)) {
    throw InputError("--rand needs a stochastic --round (sr:N, sr-a:N, sr-b:N, sr-c:N)");
  }
  if (o.have_rand && o.proj.n < 32 && (o.rand >> o.proj.n) != 0) {
    throw InputError("--rand " + std::to_string(o.rand) + ": expected an " +
                     std::to_string(o.proj.n) + "-bit word");
  }
  if (!o.in.empty() || !o.out.empty()) return run_arrays(o, f);
  if (o.decode) throw InputError("--decode needs --in and --out");
  return run_scalars(o, f);
}

}  // namespace exmy::cli
