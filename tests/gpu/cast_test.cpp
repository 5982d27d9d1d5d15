// Deterministic GPU cast checks: every 16-bit input (bf16, fp16) to every preset of at most 16
// bits in every rounding mode, both kernel paths, codes and fake quantization, against the CPU
// native engine; the fast path's host pieces exhaustively; fp32 special patterns at odd sizes
// and unaligned pointers; bad arguments.
#include <catch2/catch.hpp>

#if EXMY_HAVE_CUDA
#include <cstdint>
#include <cstdio>
#include <vector>

#include "gpu/cast/cast.hpp"
#include "gpu/cast/cast_reference.hpp"
#include "gpu/cast/fast_cast.hpp"
#include "gpu/cast/widen.hpp"
#include "sim/common/error.hpp"
#include "sim/format/float_names.hpp"
#include "sim/native/convert.hpp"
#include "tests/gpu/gpu_test_util.hpp"

using namespace exmy;
using namespace exmy::gpu;
using exmy::gpu::testing::DeviceBytes;

namespace {

std::vector<NamedFloatFormat> targets() {
  std::vector<NamedFloatFormat> out;
  for (const auto& p : float_presets()) {
    if (p.format.total_bits() <= 16) out.push_back(p);
  }
  return out;
}

std::vector<Rounding> all_roundings() {
  return {{RoundMode::rne},
          {RoundMode::rna},
          {RoundMode::rtz},
          {RoundMode::rup},
          {RoundMode::rdn},
          {RoundMode::rto},
          {RoundMode::sr, 1},
          {RoundMode::sr, 8},
          {RoundMode::sr, 32},
          {RoundMode::rne, 0, Overflow::satfinite},
          {RoundMode::rne, 0, Overflow::sat},  // e4m3fn / e5m2: the hw path's third policy
          {RoundMode::rtz, 0, Overflow::sat},
          {RoundMode::sr, 8, Overflow::satfinite},
          {RoundMode::sr, 8, Overflow::sat}};  // hw sr: no +1 flag, inf inputs on the rare path
}

std::uint32_t load_code(const std::vector<std::uint8_t>& raw, std::size_t bytes, std::size_t i) {
  return bytes == 1 ? raw[i] : static_cast<std::uint32_t>(raw[2 * i] | (raw[2 * i + 1] << 8));
}

// Runs cast_codes and cast_fake_quant on host inputs and compares with the CPU reference;
// returns the number of mismatching elements (and prints the first).
std::size_t compare_cast(CastInput t, const std::vector<std::uint32_t>& xs, const CastParams& p,
                         std::size_t pad_elems, const char* label) {
  const std::size_t n = xs.size();
  const std::size_t in_b = input_bytes(t), out_b = code_bytes(p.to);
  std::vector<std::uint8_t> raw(n * in_b);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t b = 0; b < in_b; ++b) raw[i * in_b + b] = (xs[i] >> (8 * b)) & 0xFF;
  }
  DeviceBytes din(n * in_b, pad_elems * in_b), dcodes(n * out_b, pad_elems * out_b),
      dfake(n * 4, pad_elems * 4);
  din.upload(raw);
  cast_codes(din.get(), t, n, dcodes.get(), p);
  cast_fake_quant(din.get(), t, n, static_cast<float*>(dfake.get()), p);
  const auto codes = dcodes.download<std::uint8_t>(n * out_b);
  const auto fake = dfake.download<std::uint32_t>(n);
  std::size_t bad = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t want = reference_code(t, p, xs[i], i);
    const std::uint32_t got = load_code(codes, out_b, i);
    const std::uint32_t want_f = native::bits_of(native::to_float(p.to, want));
    if (got != want || fake[i] != want_f) {
      if (bad == 0) {
        std::printf(
            "MISMATCH %s to %s %d/%d path %d: index %zu input %08x code gpu %x cpu %x, "
            "fake gpu %08x cpu %08x\n",
            label, float_format_name(p.to).c_str(), static_cast<int>(p.rounding.mode),
            p.rounding.sr_bits, static_cast<int>(p.path), i, xs[i], got, want, fake[i], want_f);
      }
      ++bad;
    }
  }
  return bad;
}

}  // namespace

TEST_CASE("fp16 and bf16 widening equals the native engine for all 2^16 codes", "[gpu][cast]") {
  // The engine canonicalises NaN payloads; widening keeps them (a NaN stays a NaN of the same
  // sign, which is all a later rounding looks at). Regression: the first device run expected the
  // canonical payload from widen_fp16 too.
  for (std::uint32_t h = 0; h < 65536; ++h) {
    const auto fp = native::convert(formats::fp16, formats::fp32, Rounding{}, h).code;
    if (formats::fp16.classify(h) == ValueClass::nan) {
      REQUIRE(formats::fp32.classify(widen_fp16(h)) == ValueClass::nan);
      REQUIRE((widen_fp16(h) >> 31) == (fp >> 31));
    } else {
      REQUIRE(widen_fp16(h) == fp);
    }
    const auto bf = native::convert(formats::bf16, formats::fp32, Rounding{}, h).code;
    // bf16 -> fp32 is exact, but the engine canonicalises NaN payloads; widening keeps them.
    if (formats::bf16.classify(h) != ValueClass::nan) REQUIRE(widen_bf16(h) == bf);
  }
}

TEST_CASE("fast decode equals native::to_float for every code of every fast preset",
          "[gpu][cast]") {
  for (const auto& p : targets()) {
    if (!fast_cast_supported(p.format)) continue;
    const FastCastPlan plan = make_fast_cast_plan(p.format, Rounding{});
    const std::uint32_t codes = 1u << p.format.total_bits();
    for (std::uint32_t c = 0; c < codes; ++c) {
      INFO(p.name << " code " << c);
      REQUIRE(native::bits_of(fast_decode_fp32(plan, c)) ==
              native::bits_of(native::to_float(p.format, c)));
    }
  }
}

TEST_CASE("fast path (host) equals native::convert on a stride of fp32 inputs", "[gpu][cast]") {
  // A stride coprime to 2^32 that walks every exponent and mantissa pattern class; the full
  // 2^32 sweep runs on the GPU in the exhaustive campaign (gpu/verify/verify.hpp).
  constexpr std::uint32_t kStride = 65521u * 97u;  // odd, so the walk visits distinct codes
  for (const auto& p : targets()) {
    if (!fast_cast_supported(p.format)) continue;
    for (const Rounding& r : all_roundings()) {
      const FastCastPlan plan = make_fast_cast_plan(p.format, r);
      for (std::uint32_t pick = 0; pick < 64; ++pick) {  // the specials, exactly and perturbed
        const std::uint32_t x = exmy::gpu::testing::special_fp32(pick, pick / 32);
        const auto want = native::convert(formats::fp32, p.format, r, x, 0x5A5A5A5Au >> 1).code;
        INFO(p.name << " mode " << static_cast<int>(r.mode) << " special " << x);
        REQUIRE(fast_cast_fp32(plan, r, x, 0x5A5A5A5Au >> 1) == want);
      }
      std::uint32_t x = 0;
      for (int k = 0; k < 20000; ++k, x += kStride) {
        const std::uint32_t rand =
            r.mode == RoundMode::sr ? (x * 2654435761u) >> (32 - r.sr_bits) : 0;
        const auto want = native::convert(formats::fp32, p.format, r, x, rand).code;
        INFO(p.name << " mode " << static_cast<int>(r.mode) << " input " << x);
        REQUIRE(fast_cast_fp32(plan, r, x, rand) == want);
      }
    }
  }
}

TEST_CASE("GPU cast of all 2^16 bf16 and fp16 inputs equals the CPU engine", "[gpu][cast]") {
  std::vector<std::uint32_t> xs(65536);
  for (std::uint32_t i = 0; i < 65536; ++i) xs[i] = i;
  std::size_t cases = 0;
  for (const auto& tgt : targets()) {
    for (const Rounding& r : all_roundings()) {
      for (CastInput t : {CastInput::bf16, CastInput::fp16}) {
        for (CastPath path : {CastPath::automatic, CastPath::generic}) {
          // Offset 3 (not a multiple of 4) sends the automatic path through the element-wise
          // kernels with per-element Philox words; offset 0 through the vector kernels (the
          // lean path widens fp16 by the hardware conversion there).
          for (std::uint64_t offset : {std::uint64_t{3}, std::uint64_t{0}}) {
            if (path == CastPath::generic && offset == 0) continue;
            CastParams p;
            p.to = tgt.format;
            p.rounding = r;
            p.seed = 0x1234567890ABCDEFull;
            p.index_offset = offset;
            p.path = path;
            INFO(tgt.name << " input " << static_cast<int>(t) << " offset " << offset);
            REQUIRE(compare_cast(t, xs, p, 0, t == CastInput::bf16 ? "bf16" : "fp16") == 0);
            ++cases;
          }
        }
      }
    }
  }
  CHECK(cases == targets().size() * all_roundings().size() * 6);
}

// The hw path's sr magic numbers for 16-bit inputs come from both halves of a word at once (packed
// exponent max, bf16 product, fp16 exponent moved into fp32's field: hw_sr_magic). Every bf16 and
// fp16 input, each drawing 64 different Philox words, through the vector kernel (offset 0), under
// sr:8, sr:3 and the saturating policies; codes and fake quantization.
TEST_CASE("GPU sr of every bf16 and fp16 input under 64 words each equals the CPU engine",
          "[gpu][cast]") {
  constexpr std::size_t kReps = 64;
  std::vector<std::uint32_t> xs(65536 * kReps);
  for (std::size_t i = 0; i < xs.size(); ++i) {
    xs[i] = static_cast<std::uint32_t>((i % 65536) * 40503u % 65536);  // every code, shuffled
  }
  std::size_t cases = 0;
  for (const char* name : {"e4m3fn", "e5m2"}) {
    const auto f = parse_float_format(name);
    REQUIRE(f.has_value());
    for (const Rounding& r : {Rounding{RoundMode::sr, 8}, Rounding{RoundMode::sr, 3},
                              Rounding{RoundMode::sr, 8, Overflow::satfinite},
                              Rounding{RoundMode::sr, 8, Overflow::sat}}) {
      for (CastInput t : {CastInput::bf16, CastInput::fp16}) {
        CastParams p;
        p.to = *f;
        p.rounding = r;
        p.seed = 0x0DDC0FFEE0DDF00Dull;
        p.index_offset = 0;
        INFO(name << " sr:" << r.sr_bits << " overflow " << static_cast<int>(r.overflow));
        REQUIRE(compare_cast(t, xs, p, 0, t == CastInput::bf16 ? "bf16" : "fp16") == 0);
        ++cases;
      }
    }
  }
  CHECK(cases == 2 * 4 * 2);
}

// Issue 15: rne / rtz / sr:R on formats outside the presets take the same lean kernels as the
// presets: ranges past fp32's on either side (engine inputs: fp32 subnormals, and zero into
// formats without zero, go through the flagged second pass), unsigned formats, M = 0, codes of
// 1 and 2 bytes; every bf16 and fp16 input through the vector and element-wise kernels, fp32
// specials at odd sizes and unaligned pointers, codes and fake quantization.
TEST_CASE("GPU lean path on formats outside the presets equals the CPU engine",
          "[gpu][cast][generic]") {
  std::vector<std::uint32_t> x16(65536);
  for (std::uint32_t i = 0; i < 65536; ++i) x16[i] = i;
  std::vector<std::uint32_t> x32(8192 + 7);
  for (std::size_t i = 0; i < x32.size(); ++i) {
    x32[i] = exmy::gpu::testing::special_fp32(static_cast<std::uint32_t>(i * 7 + 3),
                                              static_cast<std::uint32_t>(i * 2654435761u));
  }
  for (std::size_t i = 0; i < 64; ++i) x32[i * 97] = static_cast<std::uint32_t>(i * 131071u);
  std::size_t cases = 0;
  for (const char* name : {"e8m3", "e5m3", "e3m4b5", "e8m3fn", "e8m3fnuz", "e4m3fnu", "e11m4",
                           "e4m0fnu", "e8m7", "e6m9b40"}) {
    const auto f = parse_float_format(name);
    REQUIRE(f.has_value());
    const int d = 23 - f->man_bits;
    for (const Rounding& r :
         {Rounding{RoundMode::rne}, Rounding{RoundMode::rtz}, Rounding{RoundMode::sr, 8},
          Rounding{RoundMode::sr, d, Overflow::satfinite},
          Rounding{RoundMode::rne, 0, Overflow::satfinite}}) {
      CastParams p;
      p.to = *f;
      p.rounding = r;
      p.seed = 0xFEEDFACECAFEBEEFull;
      REQUIRE(cast_uses_fast_path(p));
      for (std::uint64_t offset : {std::uint64_t{0}, std::uint64_t{5}}) {
        p.index_offset = offset;
        INFO(name << " mode " << static_cast<int>(r.mode) << ":" << r.sr_bits << " offset "
                  << offset);
        REQUIRE(compare_cast(CastInput::bf16, x16, p, 0, "bf16") == 0);
        REQUIRE(compare_cast(CastInput::fp16, x16, p, 0, "fp16") == 0);
        for (std::size_t pad : {std::size_t{0}, std::size_t{1}}) {
          REQUIRE(compare_cast(CastInput::fp32, x32, p, pad, "fp32") == 0);
        }
        ++cases;
      }
    }
  }
  CHECK(cases == 10 * 5 * 2);
}

// Regression (found by the all-2^16 case above when e4m3fn / e5m2 first took the fp8
// instructions): fake quantization to e5m2 under rne + overflow `sat` decoded the inf code of an
// inf input as 65536 (0x47800000), because the hw path kept inf inputs in its vector arithmetic
// and the lean decode knows only the plan's overflow codes (+-max under `sat`). Whole warp spans
// of infinities, huge finite values and ordinary ones, every input type, both fp8 formats and
// the three overflow policies: codes and fake quantization equal the CPU engine.
TEST_CASE("GPU hw fp8 path: fake quantization of inf under overflow sat", "[gpu][cast]") {
  for (CastInput t : {CastInput::fp32, CastInput::bf16, CastInput::fp16}) {
    const std::uint32_t inf = t == CastInput::fp32   ? 0x7F800000u
                              : t == CastInput::bf16 ? 0x7F80u
                                                     : 0x7C00u;
    const std::uint32_t sign = t == CastInput::fp32 ? 0x80000000u : 0x8000u;
    const std::uint32_t big = t == CastInput::fp32 ? 0x7F000000u : inf - 0x100u;
    const std::uint32_t one = t == CastInput::fp32   ? 0x3F800000u
                              : t == CastInput::bf16 ? 0x3F80u
                                                     : 0x3C00u;
    std::vector<std::uint32_t> xs(2048 + 5);
    for (std::size_t i = 0; i < xs.size(); ++i) {
      const std::uint32_t pick[4] = {inf, big, one, inf | sign};
      xs[i] = pick[i % 4] | ((i / 4) % 2 ? sign : 0u);
    }
    for (const FloatFormat& f : {formats::e4m3fn, formats::e5m2}) {
      for (Overflow o : {Overflow::none, Overflow::sat, Overflow::satfinite}) {
        CastParams p;
        p.to = f;
        p.rounding = Rounding{RoundMode::rne, 0, o};
        INFO(float_format_name(f) << " overflow " << static_cast<int>(o) << " input "
                                  << static_cast<int>(t));
        REQUIRE(compare_cast(t, xs, p, 0, "hw") == 0);
        p.rounding = Rounding{RoundMode::sr, 8, o};
        REQUIRE(compare_cast(t, xs, p, 0, "hw sr") == 0);
      }
    }
  }
}

TEST_CASE("GPU cast of fp32 specials at odd sizes and unaligned pointers", "[gpu][cast]") {
  for (std::size_t n : {std::size_t{1}, std::size_t{15}, std::size_t{17}, std::size_t{4099}}) {
    std::vector<std::uint32_t> xs(n);
    for (std::size_t i = 0; i < n; ++i) {
      xs[i] = exmy::gpu::testing::special_fp32(static_cast<std::uint32_t>(i * 7 + n),
                                               static_cast<std::uint32_t>(i * 2654435761u));
    }
    for (const auto& tgt : targets()) {
      for (const Rounding& r : all_roundings()) {
        for (std::size_t pad : {std::size_t{0}, std::size_t{1}}) {
          CastParams p;
          p.to = tgt.format;
          p.rounding = r;
          p.seed = 42;
          INFO(tgt.name << " n " << n << " pad " << pad);
          REQUIRE(compare_cast(CastInput::fp32, xs, p, pad, "fp32") == 0);
        }
      }
    }
  }
}

TEST_CASE("GPU decode_codes equals native::to_float for every code", "[gpu][cast]") {
  for (const auto& tgt : targets()) {
    const std::size_t bytes = code_bytes(tgt.format);
    const std::size_t n = std::size_t{1} << tgt.format.total_bits();
    std::vector<std::uint8_t> raw(n * bytes);
    for (std::size_t c = 0; c < n; ++c) {
      for (std::size_t b = 0; b < bytes; ++b) raw[c * bytes + b] = (c >> (8 * b)) & 0xFF;
    }
    DeviceBytes dc(n * bytes), dout(n * 4);
    dc.upload(raw);
    decode_codes(dc.get(), tgt.format, n, static_cast<float*>(dout.get()));
    const auto got = dout.download<std::uint32_t>(n);
    for (std::size_t c = 0; c < n; ++c) {
      INFO(tgt.name << " code " << c);
      REQUIRE(got[c] == native::bits_of(native::to_float(tgt.format, c)));
    }
  }
}

TEST_CASE("GPU cast rejects bad arguments with InputError", "[gpu][cast]") {
  DeviceBytes d(64);
  CastParams p;
  p.rounding = {RoundMode::sr, 0};
  CHECK_THROWS_AS(cast_codes(d.get(), CastInput::fp32, 4, d.get(), p), InputError);
  p.rounding = {RoundMode::sr, 33};
  CHECK_THROWS_AS(cast_codes(d.get(), CastInput::fp32, 4, d.get(), p), InputError);
  p.rounding = {};
  p.to = formats::fp32;  // 32-bit codes are not produced
  CHECK_THROWS_AS(cast_codes(d.get(), CastInput::fp32, 4, d.get(), p), InputError);
  p.to = formats::e8m0fnu;  // its fast path covers rne, rtz and sr only
  p.rounding = {RoundMode::rna};
  p.path = CastPath::fast;
  CHECK_THROWS_AS(cast_codes(d.get(), CastInput::fp32, 4, d.get(), p), InputError);
  p.path = CastPath::automatic;
  CHECK_FALSE(cast_uses_fast_path(p));
  p.rounding = {RoundMode::rne};
  CHECK(cast_uses_fast_path(p));
  p.path = CastPath::generic;
  CHECK_FALSE(cast_uses_fast_path(p));
  p.path = CastPath::automatic;
  p.to = formats::e4m3fn;
  CHECK(cast_uses_fast_path(p));
}

#endif  // EXMY_HAVE_CUDA
