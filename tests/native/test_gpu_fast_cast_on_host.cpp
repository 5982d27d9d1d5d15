// The GPU fast cast (gpu/fast_cast.hpp) is __host__ __device__ code; running it on the host lets CI
// check it against the native engine without a GPU: every fp32 top-16-bit pattern with a sweep
// of low halves, every fast-path preset, every mode and policy, and sr:R words at the edges.
#include <catch2/catch.hpp>

#include "gpu/fast_cast.hpp"
#include "sim/format/float_names.hpp"
#include "sim/native/convert.hpp"

using namespace exmy;

TEST_CASE("GPU fast cast equals the native engine (run on the host)", "[native][gpu-fast]") {
  const Rounding roundings[] = {
      {RoundMode::rne, 0, Overflow::none},      {RoundMode::rna, 0, Overflow::sat},
      {RoundMode::rtz, 0, Overflow::none},      {RoundMode::rup, 0, Overflow::none},
      {RoundMode::rdn, 0, Overflow::satfinite}, {RoundMode::rto, 0, Overflow::none},
      {RoundMode::rne, 0, Overflow::satfinite}, {RoundMode::sr, 8, Overflow::none},
      {RoundMode::sr, 1, Overflow::satfinite},  {RoundMode::sr, 32, Overflow::none}};
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
            if (got != want && bad++ < 5) {
              UNSCOPED_INFO(p.name << " u=0x" << std::hex << u << " w=" << w << " got " << got
                                   << " want " << want);
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
