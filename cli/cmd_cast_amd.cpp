// exmy cast FORMAT --compat amd-gfx950 [--scale-exp X] [--from fp32|fp16|bf16]
//                  [--sr-seed W | --stochastic [--seed N]] [--] VALUE...
// exmy cast FORMAT --compat amd-gfx950 --decode-to fp32|fp16|bf16 [--scale-exp X] [--] CODE...
// exmy cast FORMAT --compat amd-gfx950 --in X.npy --out Y.npy [...]
// AMD gfx950's OCP conversions with an E8M0 block scale as AMD's host model defines them
// (sim/native/compat_amd_ocp.hpp, docs/SEMANTICS.md 12.1), for FORMAT e4m3fn, e5m2, e2m3fn,
// e3m2fn, e2m1fn. cmd_cast.cpp hands the command line here when --compat names amd-gfx950.
#include "cli/cmd_cast_amd.hpp"

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cli/cli_util.hpp"
#include "cli/options.hpp"
#include "sim/common/error.hpp"
#include "sim/format/registry.hpp"
#include "sim/io/npy.hpp"
#include "sim/native/compat_amd_ocp.hpp"
#include "sim/native/convert.hpp"
#include "sim/native/philox.hpp"
#include "sim/oracle/exact_text.hpp"
#include "sim/oracle/mpfr_engine.hpp"
#include "sim/oracle/mpfr_value.hpp"

namespace exmy::cli {
namespace {

constexpr const char* kProfile = "amd-gfx950";

struct AmdArgs {
  std::string format, compat, from = "fp32", decode_to, in, out, in_format;
  int scale = 0;
  bool fixed_seed = false, stochastic = false;
  std::uint32_t sr_seed = 0;
  std::uint64_t seed = 0;
  std::vector<std::string> values;
};

native::AmdOcp parse_target(const std::string& name) {
  const Format f = parse_format(name);
  const native::AmdOcp all[] = {native::AmdOcp::e4m3, native::AmdOcp::e5m2, native::AmdOcp::e2m3,
                                native::AmdOcp::e3m2, native::AmdOcp::e2m1};
  for (native::AmdOcp t : all) {
    if (f.kind == FormatKind::floating && f.fp == native::amd_ocp_format(t)) return t;
  }
  throw InputError("--compat amd-gfx950 does not cover cast to " + f.name +
                   " (it covers: e4m3fn, e5m2, e2m3fn, e3m2fn, e2m1fn)");
}

native::AmdWide parse_wide(const std::string& v, const char* what) {
  if (v == "fp32") return native::AmdWide::fp32;
  if (v == "fp16") return native::AmdWide::fp16;
  if (v == "bf16") return native::AmdWide::bf16;
  throw InputError(std::string(what) + " '" + v + "': expected fp32, fp16 or bf16");
}

// -127 .. 127 (the E8M0 code minus 127), or nan / -128 for the NaN scale (code 0xFF).
int parse_scale(const std::string& v) {
  if (v == "nan") return native::kAmdScaleNan;
  const bool neg = !v.empty() && v[0] == '-';
  const std::uint64_t m = parse_uint(neg ? v.substr(1) : v, "--scale-exp", neg ? 128 : 127);
  return neg ? -static_cast<int>(m) : static_cast<int>(m);
}

bool sr(const AmdArgs& o) {
  return o.fixed_seed || o.stochastic;
}

// The seed of element i: --sr-seed W for every element, or the Philox word of its group (one
// seed per packed group: amd_sr_group elements; docs/SEMANTICS.md 12.1).
std::uint32_t seed_of(const AmdArgs& o, native::AmdOcp t, std::uint64_t i) {
  if (o.fixed_seed) return o.sr_seed;
  if (!o.stochastic) return 0;
  return native::philox_word(o.seed, 0, i / static_cast<std::uint64_t>(native::amd_sr_group(t)));
}

std::string value_text_of(const FloatFormat& f, std::uint64_t code) {
  oracle::MpfrValue v(64);
  oracle::decode(f, code, v);
  return oracle::hexfloat_text(v);
}

int run_scalars(const AmdArgs& o, native::AmdOcp t) {
  if (o.values.empty()) throw InputError("no VALUE given (exmy cast --help)");
  const FloatFormat f = native::amd_ocp_format(t);
  std::string out;
  if (!o.decode_to.empty()) {
    const native::AmdWide d = parse_wide(o.decode_to, "--decode-to");
    const FloatFormat df = native::amd_wide_format(d);
    const std::uint64_t codes = std::uint64_t{1} << f.total_bits();
    for (const std::string& v : o.values) {
      const std::uint64_t c = parse_uint(v, "CODE", codes - 1);
      const std::uint32_t r = native::amd_ocp_decode(t, d, static_cast<std::uint32_t>(c),
                                                     static_cast<std::int8_t>(o.scale));
      out += format_text("%-12s  0x%0*x  %s\n", v.c_str(), df.total_bits() / 4, r,
                         value_text_of(df, r).c_str());
    }
  } else {
    const native::AmdWide src = parse_wide(o.from, "--from");
    oracle::MpfrValue x(oracle::kTextPrecision);
    for (std::size_t i = 0; i < o.values.size(); ++i) {
      oracle::parse_exact(o.values[i], x);
      // The source value: the exact input rounded (nearest-even) to --from, widened to fp32.
      const Encoded s = oracle::encode(native::amd_wide_format(src), Rounding{}, x);
      const auto u = static_cast<std::uint32_t>(
          native::convert(native::amd_wide_format(src), formats::fp32, Rounding{}, s.code).code);
      const std::uint32_t c = native::amd_ocp_encode(t, src, u, static_cast<std::int8_t>(o.scale),
                                                     sr(o), seed_of(o, t, i));
      out += format_text("%-24s  0x%02x  %-9s  %s\n", o.values[i].c_str(), c,
                         class_name(f.classify(c)), value_text_of(f, c).c_str());
    }
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

int run_arrays(const AmdArgs& o, native::AmdOcp t) {
  if (o.in.empty() || o.out.empty()) throw InputError("--in and --out go together");
  if (!o.values.empty()) throw InputError("VALUE arguments cannot be combined with --in");
  const io::NpyMappedFile file(o.in);
  const io::NpyHeader& h = file.header();
  const std::size_t n = h.count();
  const auto scale = static_cast<std::int8_t>(o.scale);
  if (!o.decode_to.empty()) {
    if (h.descr != "|u1")
      throw InputError(o.in + ": --decode-to reads '|u1' codes, not '" + h.descr + "'");
    const native::AmdWide d = parse_wide(o.decode_to, "--decode-to");
    const std::uint32_t codes = 1u << native::amd_ocp_format(t).total_bits();
    const std::size_t w = d == native::AmdWide::fp32 ? 4 : 2;
    std::vector<std::uint8_t> bytes(n * w);
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint32_t c = file.data()[i];
      if (c >= codes) {
        throw InputError(o.in + ": element " + std::to_string(i) + " is " + std::to_string(c) +
                         ", not a code of " + o.format);
      }
      const std::uint32_t r = native::amd_ocp_decode(t, d, c, scale);
      std::memcpy(bytes.data() + i * w, &r, w);  // little-endian host (npy.hpp)
    }
    io::NpyFileWriter out(o.out,
                          d == native::AmdWide::fp32   ? "<f4"
                          : d == native::AmdWide::fp16 ? "<f2"
                                                       : "<u2",
                          h.shape);
    out.write(bytes.data(), bytes.size());
    out.commit();
    return 0;
  }
  native::AmdWide src;
  std::size_t w = 2;
  if (h.descr == "<f4") {
    src = native::AmdWide::fp32;
    w = 4;
  } else if (h.descr == "<f2") {
    src = native::AmdWide::fp16;
  } else if (h.descr == "<u2" && o.in_format == "bf16") {
    src = native::AmdWide::bf16;
  } else {
    throw InputError(o.in + ": expected '<f4', '<f2' or '<u2' with --in-format bf16, not '" +
                     h.descr + "'");
  }
  const FloatFormat sf = native::amd_wide_format(src);
  std::vector<std::uint8_t> codes(n);
  for (std::size_t i = 0; i < n; ++i) {
    std::uint32_t bits = 0;
    std::memcpy(&bits, file.data() + i * w, w);
    const auto u = static_cast<std::uint32_t>(
        native::convert(sf, formats::fp32, Rounding{}, bits).code);  // exact
    codes[i] = static_cast<std::uint8_t>(
        native::amd_ocp_encode(t, src, u, scale, sr(o), seed_of(o, t, i)));
  }
  io::NpyFileWriter out(o.out, "|u1", h.shape);
  out.write(codes.data(), codes.size());
  out.commit();
  return 0;
}

}  // namespace

bool is_amd_cast(const Args& args) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--") break;
    if (args[i] == std::string("--compat=") + kProfile) return true;
    if (args[i] == "--compat" && i + 1 < args.size() && args[i + 1] == kProfile) return true;
  }
  return false;
}

int run_cast_amd(const Args& args) {
  AmdArgs o;
  Options opts(
      "exmy cast FORMAT --compat amd-gfx950 [OPTIONS] [--] VALUE...  |  ... --decode-to D CODE...",
      "AMD gfx950's OCP FP8/FP6/FP4 conversions with an E8M0 block scale as AMD's host model "
      "(amd_hip_ocp_host.hpp) defines them, for e4m3fn, e5m2, e2m3fn, e3m2fn, e2m1fn "
      "(docs/SEMANTICS.md 12.1). VALUEs are rounded to --from first.",
      "exmy cast e2m1fn --compat amd-gfx950 --scale-exp 2 --sr-seed 0x80000000 -- 13 -1.5");
  opts.positional("FORMAT", "e4m3fn|e5m2|e2m3fn|e3m2fn|e2m1fn", Options::kRequired,
                  [&](const std::string& v) { o.format = v; })
      .positional(
          "VALUE", "exact values to convert (codes with --decode-to; not with --in)", "none",
          [&](const std::string& v) { o.values.push_back(v); }, 0)
      .value({"--compat"}, "NAME", "amd-gfx950", "amd-gfx950",
             [&](const std::string& v) { o.compat = v; })
      .value({"--scale-exp"}, "X",
             "the scale exponent (E8M0 code - 127): encode divides by 2^X, decode multiplies; "
             "nan (or -128) is the NaN scale",
             "0", [&](const std::string& v) { o.scale = parse_scale(v); })
      .value({"--from"}, "TYPE", "scalars: the source type VALUEs are rounded to (fp32|fp16|bf16)",
             "fp32", [&](const std::string& v) { o.from = v; })
      .value({"--sr-seed"}, "W", "stochastic rounding with this 32-bit seed for every element",
             "none (nearest-even)",
             [&](const std::string& v) {
               o.sr_seed = static_cast<std::uint32_t>(parse_uint(v, "--sr-seed", 0xFFFFFFFFu));
               o.fixed_seed = true;
             })
      .flag({"--stochastic"},
            "stochastic rounding, one Philox word of --seed per packed group (fp8 1, fp4 2, fp6 32 "
            "elements)",
            [&] { o.stochastic = true; })
      .value({"--seed"}, "N", "Philox key of --stochastic (stream 0, index = group)", "0",
             [&](const std::string& v) { o.seed = parse_uint(v, "--seed", ~std::uint64_t{0}); })
      .value({"--decode-to"}, "TYPE", "convert codes to fp32|fp16|bf16 (times 2^X) instead",
             "none (encode)", [&](const std::string& v) { o.decode_to = v; })
      .value({"--in"}, "X.npy", "input array: <f4, <f2, bf16 <u2 (|u1 codes with --decode-to)",
             "none", [&](const std::string& v) { o.in = v; })
      .value({"--out"}, "Y.npy", "output: |u1 codes (<f4, <f2, <u2 with --decode-to)", "none",
             [&](const std::string& v) { o.out = v; })
      .value({"--in-format"}, "bf16", "read a '<u2' --in array as bf16 bit patterns", "none",
             [&](const std::string& v) {
               if (v != "bf16") throw InputError("--in-format '" + v + "': expected bf16");
               o.in_format = v;
             });
  if (!opts.parse(args)) return 0;
  const native::AmdOcp t = parse_target(o.format);
  if (o.fixed_seed && o.stochastic)
    throw InputError("--sr-seed and --stochastic exclude each other");
  if (!o.decode_to.empty()) {
    parse_wide(o.decode_to, "--decode-to");
    if (sr(o)) throw InputError("--decode-to takes no --sr-seed or --stochastic");
  }
  parse_wide(o.from, "--from");
  if (!o.in.empty() || !o.out.empty()) return run_arrays(o, t);
  return run_scalars(o, t);
}

}  // namespace exmy::cli
