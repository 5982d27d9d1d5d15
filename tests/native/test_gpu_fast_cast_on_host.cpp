// The GPU fast cast (gpu/cast/fast_cast.hpp) is __host__ __device__ code; running it on the host
// lets CI check it against the native engine without a GPU: every fp32 top-16-bit pattern with a
// sweep of low halves, every fast-path preset, every mode and policy, and sr:R words at the edges.
#include <catch2/catch.hpp>
#include <cstdint>
#include <vector>

#include "gpu/cast/fast_cast.hpp"
#include "sim/format/float_names.hpp"
#include "sim/native/convert.hpp"
#include "sim/native/widen.hpp"

using namespace exmy;

namespace {

// Every fp32 top half x the low halves `lows` where take(u) holds, and under sr:R each of the
// R-bit `words` (one word, ignored, for the other modes): got(u, w) against native::convert from
// fp32 to f under r. Counts the checks and the mismatches (the first 8 are reported).
template <class Take, class Got>
void sweep_against_engine(const char* name, const FloatFormat& f, const Rounding& r,
                          const std::vector<std::uint32_t>& lows,
                          const std::vector<std::uint32_t>& words, Take take, Got got,
                          std::size_t& checked, std::size_t& bad) {
  for (std::uint32_t top = 0; top < (1u << 16); ++top) {
    for (std::uint32_t low : lows) {
      const std::uint32_t u = (top << 16) | low;
      if (!take(u)) continue;
      for (std::uint32_t w : words) {
        const auto want =
            static_cast<std::uint32_t>(native::convert(formats::fp32, f, r, u, w).code);
        const std::uint32_t have = got(u, w);
        if (have != want && bad++ < 8) {
          UNSCOPED_INFO(name << " mode " << static_cast<int>(r.mode) << ":" << r.sr_bits << " u=0x"
                             << std::hex << u << " w=" << w << " got " << have << " want " << want);
        }
        ++checked;
        if (r.mode != RoundMode::sr) break;
      }
    }
  }
}

}  // namespace

TEST_CASE("GPU fast cast equals the native engine (run on the host)", "[native][gpu-fast]") {
  const Rounding roundings[] = {
      {RoundMode::rne, 0, Overflow::none},      {RoundMode::rna, 0, Overflow::sat},
      {RoundMode::rtz, 0, Overflow::none},      {RoundMode::rup, 0, Overflow::none},
      {RoundMode::rdn, 0, Overflow::satfinite}, {RoundMode::rto, 0, Overflow::none},
      {RoundMode::rne, 0, Overflow::satfinite}, {RoundMode::sr, 8, Overflow::none},
      {RoundMode::sr, 1, Overflow::satfinite},  {RoundMode::sr, 32, Overflow::none},
      {RoundMode::rtz, 0, Overflow::satfinite}, {RoundMode::sr, 9, Overflow::sat},
      {RoundMode::sr, 13, Overflow::none}};
  const std::uint32_t lows[] = {0u, 1u, 0x8000u, 0xFFFFu, 0x5A5Au};
  std::size_t checked = 0, bad = 0;
  for (const auto& p : float_presets()) {
    if (!gpu::fast_cast_supported(p.format)) continue;
    for (const Rounding& r : roundings) {
      const gpu::FastCastPlan plan = gpu::make_fast_cast_plan(p.format, r);
      const std::uint32_t words[] = {0u, static_cast<std::uint32_t>(low_mask(r.sr_bits)),
                                     r.sr_bits > 0 ? 1u << (r.sr_bits - 1) : 0u};
      for (std::uint32_t top = 0; top < (1u << 16); ++top) {
        for (std::uint32_t low : lows) {
          const std::uint32_t u = (top << 16) | low;
          for (std::uint32_t w : words) {
            const auto want = native::convert(formats::fp32, p.format, r, u, w).code;
            const auto got = gpu::fast_cast_fp32(plan, r, u, w);
            const auto got_fixed = native::fast_cast_fp32_dispatch(plan, r, u, w);
            if ((got != want || got_fixed != want) && bad++ < 5) {
              UNSCOPED_INFO(p.name << " " << static_cast<int>(r.mode) << ":" << r.sr_bits << " u=0x"
                                   << std::hex << u << " w=" << w << " got " << got << " fixed "
                                   << got_fixed << " want " << want);
            }
            ++checked;
            if (r.mode != RoundMode::sr) break;  // the word only matters for sr
          }
        }
      }
    }
  }
  CHECK(checked > 10'000'000);
  CHECK(bad == 0);
}

TEST_CASE("GPU fast decoders equal native::to_float for every code (run on the host)",
          "[native][gpu-fast]") {
  std::size_t checked = 0;
  for (const auto& p : float_presets()) {
    if (!gpu::fast_cast_supported(p.format)) continue;
    const gpu::FastCastPlan plan = gpu::make_fast_cast_plan(p.format, Rounding{});
    const std::uint32_t codes = 1u << p.format.total_bits();
    for (std::uint32_t c = 0; c < codes; ++c) {
      const std::uint32_t want = native::bits_of(native::to_float(p.format, c));
      INFO(p.name << " code 0x" << std::hex << c);
      REQUIRE(native::bits_of(gpu::fast_decode_fp32(plan, c)) == want);
      REQUIRE(native::bits_of(gpu::fast_decode_fp32_finite(plan, c)) == want);
      ++checked;
    }
  }
  CHECK(checked > 100'000);
}

// Guards the branch-free fp16 widening (fp32 subtraction for subnormals): every fp16 code must
// widen exactly, NaN payloads and signs kept, the same on the host as on the device.
TEST_CASE("GPU widening of every bf16 and fp16 code is exact (run on the host)",
          "[native][gpu-fast]") {
  for (std::uint32_t h = 0; h < (1u << 16); ++h) {
    INFO("code 0x" << std::hex << h);
    const std::uint32_t e = (h >> 10) & 0x1Fu, m = h & 0x3FFu;
    if (e == 0x1F && m != 0) {  // NaN: quiet/signalling payload and sign moved up unchanged
      REQUIRE(native::widen_fp16(h) == (((h & 0x8000u) << 16) | 0x7F800000u | (m << 13)));
    } else {
      REQUIRE(native::widen_fp16(h) ==
              native::convert(formats::fp16, formats::fp32, Rounding{}, h).code);
    }
    REQUIRE(native::widen_bf16(h) == h << 16);
    if (formats::bf16.classify(h) != ValueClass::nan) {
      REQUIRE(native::widen_bf16(h) ==
              native::convert(formats::bf16, formats::fp32, Rounding{}, h).code);
    }
  }
}

// The e8m0fnu fast path (gpu::fast_cast_fp32_e8m0) against the native engine: every fp32
// exponent and sign with mantissas at and around the rounding points, and sr words at the edges.
TEST_CASE("GPU e8m0fnu fast cast equals the native engine (run on the host)",
          "[native][gpu-fast]") {
  const FloatFormat f = formats::e8m0fnu;
  REQUIRE(gpu::fast_e8m0_supported(f));
  const Rounding roundings[] = {
      {RoundMode::rne, 0, Overflow::none}, {RoundMode::rne, 0, Overflow::satfinite},
      {RoundMode::rtz, 0, Overflow::none}, {RoundMode::sr, 8, Overflow::none},
      {RoundMode::sr, 23, Overflow::sat},  {RoundMode::sr, 1, Overflow::none}};
  const std::uint32_t mants[] = {0u,        1u,        0x3FFFFFu, 0x400000u, 0x400001u,
                                 0x5A5A5Au, 0x7FFFFEu, 0x7FFFFFu, 0x200000u, 0x600000u};
  std::size_t bad = 0, checked = 0;
  for (const Rounding& r : roundings) {
    const gpu::FastCastPlan plan = gpu::make_fast_cast_plan(f, r);
    const gpu::FastMode mode = gpu::fast_e8m0_mode_for(r);
    REQUIRE(mode != gpu::FastMode::any);
    const std::uint32_t words[] = {0u, static_cast<std::uint32_t>(low_mask(r.sr_bits)),
                                   r.sr_bits > 0 ? 1u << (r.sr_bits - 1) : 0u, 0x12345u};
    for (std::uint32_t se = 0; se < 512; ++se) {
      for (std::uint32_t m : mants) {
        const std::uint32_t u = (se << 23) | m;
        for (std::uint32_t w0 : words) {
          const std::uint32_t w = w0 & static_cast<std::uint32_t>(low_mask(r.sr_bits));
          const auto want = native::convert(formats::fp32, f, r, u, w).code;
          const std::uint32_t got =
              mode == gpu::FastMode::rne
                  ? gpu::fast_cast_fp32_e8m0<gpu::FastMode::rne>(plan, r, u, w)
              : mode == gpu::FastMode::rtz
                  ? gpu::fast_cast_fp32_e8m0<gpu::FastMode::rtz>(plan, r, u, w)
                  : gpu::fast_cast_fp32_e8m0<gpu::FastMode::sr>(plan, r, u, w);
          if (got != want && bad++ < 5) {
            UNSCOPED_INFO("mode " << static_cast<int>(r.mode) << ":" << r.sr_bits << " u=0x"
                                  << std::hex << u << " w=" << w << " got " << got << " want "
                                  << want);
          }
          ++checked;
        }
      }
    }
  }
  CHECK(checked > 100'000);
  CHECK(bad == 0);
}

// The mode-fixed path on formats outside the presets' shape (issue 15's "any eXmY as fast as the
// presets"): wider or narrower ranges than fp32's (e8m3fn, e8m3fnuz, e9m6, e11m4), unsigned
// formats with and without subnormals (e4m3fnu, e4m0fnu, e8m0fnu), M = 0, biases of either sign,
// every fp32 top-16-bit pattern with the low halves that decide a rounding, rne / rtz / sr at
// R = 8 and R = 23 - M with the words at the edges, against native::convert (written from
// docs/SEMANTICS.md 2-4, not from the fast path).
TEST_CASE("mode-fixed fast cast equals the native engine on generic formats (host)",
          "[native][gpu-fast][generic]") {
  const char* names[] = {"e8m3",    "e5m3",  "e3m4b5",  "e8m3fn",  "e8m3fnuz", "e8m7",
                         "e9m6",    "e11m4", "e4m3fnu", "e4m0fnu", "e8m0fnu",  "e5m10b3",
                         "e6m9b40", "e2m5",  "e3m0fnu", "e7m8",    "e5m2b30",  "e4m11"};
  const std::vector<std::uint32_t> lows = {0u, 1u, 0x8000u, 0xFFFFu, 0x5A5Au, 0x7FFFu};
  std::size_t checked = 0, bad = 0;
  for (const char* name : names) {
    const auto f = parse_float_format(name);
    REQUIRE(f.has_value());
    REQUIRE(native::fast_fixed_supported(*f));
    const int d = 23 - f->man_bits;
    const Rounding roundings[] = {
        {RoundMode::rne, 0, Overflow::none},      {RoundMode::rtz, 0, Overflow::none},
        {RoundMode::sr, 8, Overflow::none},       {RoundMode::sr, d, Overflow::satfinite},
        {RoundMode::rne, 0, Overflow::satfinite}, {RoundMode::rtz, 0, Overflow::sat}};
    for (const Rounding& r : roundings) {
      const native::FastCastPlan plan = native::make_fast_cast_plan(*f, r);
      REQUIRE(native::fast_mode_for(plan, r) != native::FastMode::any);
      const auto mask = static_cast<std::uint32_t>(low_mask(r.sr_bits));
      const std::vector<std::uint32_t> words = {
          0u, mask, r.sr_bits > 0 ? 1u << (r.sr_bits - 1) : 0u, 0x2Bu & mask};
      sweep_against_engine(
          name, *f, r, lows, words, [](std::uint32_t) { return true; },
          [&](std::uint32_t u, std::uint32_t w) {
            return static_cast<std::uint32_t>(native::fast_cast_fp32_dispatch(plan, r, u, w));
          },
          checked, bad);
    }
  }
  CHECK(checked > 50'000'000);
  CHECK(bad == 0);
}

namespace {

// fast_cast_fp32_lean with its sign shape chosen at run time, as the kernels choose it at compile
// time (gpu/cast/cast.cu launch_lean_mode).
template <native::FastMode Mode>
std::uint32_t lean_code(const native::FastCastPlan& p, std::uint32_t u, std::uint32_t w, int R) {
  if (!p.f.is_signed) return native::fast_cast_fp32_lean<Mode, false, false>(p, u, w, R);
  if (p.f.has_neg_zero()) return native::fast_cast_fp32_lean<Mode, true, true>(p, u, w, R);
  return native::fast_cast_fp32_lean<Mode, true, false>(p, u, w, R);
}

}  // namespace

// The GPU lean kernels' arithmetic (fast_cast_fp32_lean) on the host, where it claims exactness:
// fast_lean_domain inputs, every fp32 top half x 3 low halves, words at the carry thresholds for
// sr:R (R = 1, 8 and 23 - M), every sign shape (unsigned, fnuz, signed with -0), ranges past
// fp32's and inside it, subnormals or none. The GPU campaign sweeps all 2^32 inputs for some of
// these formats; this sweep is the one CI runs.
TEST_CASE("lean fast cast equals the native engine in its domain (host)",
          "[native][gpu-fast][generic]") {
  const char* names[] = {"e4m3fn",  "e5m2",    "e4m3fnuz", "e5m2fnuz", "e2m1fn",  "e3m2fn",
                         "e2m3fn",  "e8m0fnu", "bf16",     "fp16",     "e8m3",    "e5m3",
                         "e3m4b5",  "e8m3fn",  "e8m3fnuz", "e11m4",    "e4m3fnu", "e4m0fnu",
                         "e6m9b40", "e2m5",    "e3m0fnu"};
  const std::vector<std::uint32_t> lows = {0u, 0x8000u, 0x5A5Bu};
  std::size_t checked = 0, bad = 0;
  for (const char* name : names) {
    const auto f = parse_float_format(name);
    REQUIRE(f.has_value());
    REQUIRE(native::fast_fixed_supported(*f));
    const int d = 23 - f->man_bits;
    const Rounding roundings[] = {
        {RoundMode::rne, 0, Overflow::none},     {RoundMode::rtz, 0, Overflow::none},
        {RoundMode::sr, 1, Overflow::none},      {RoundMode::sr, 8, Overflow::none},
        {RoundMode::sr, d, Overflow::satfinite}, {RoundMode::rne, 0, Overflow::sat}};
    for (const Rounding& r : roundings) {
      const native::FastCastPlan plan = native::make_fast_cast_plan(*f, r);
      const native::FastMode mode = native::fast_mode_for(plan, r);
      REQUIRE(mode != native::FastMode::any);
      const int R = r.mode == RoundMode::sr ? r.sr_bits : 0;
      const std::vector<std::uint32_t> words = {0u, static_cast<std::uint32_t>(low_mask(R)),
                                                R > 0 ? 1u << (R - 1) : 0u};
      sweep_against_engine(
          name, *f, r, lows, words,
          [&](std::uint32_t u) { return native::fast_lean_domain(plan, u); },
          [&](std::uint32_t u, std::uint32_t w) {
            return mode == native::FastMode::rne   ? lean_code<native::FastMode::rne>(plan, u, w, R)
                   : mode == native::FastMode::rtz ? lean_code<native::FastMode::rtz>(plan, u, w, R)
                                                   : lean_code<native::FastMode::sr>(plan, u, w, R);
          },
          checked, bad);
    }
  }
  CHECK(checked > 20'000'000);
  CHECK(bad == 0);
}
