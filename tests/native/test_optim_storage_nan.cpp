// The 16-bit storage conversions of the optimizer steps (sim/native/optim_storage.hpp) on every
// NaN: SEMANTICS 4.1 says a NaN becomes the format's quiet NaN with only the mantissa's top bit
// set and the sign kept, payloads not carried (fp16 0x7E00 / 0xFE00, fp32 0x7FC00000 /
// 0xFFC00000). The conversions write that pattern out instead of calling `convert` (on the
// device the call put a copy of the whole conversion in every fp16 kernel); both must agree with
// the document and with `convert`, for every NaN input.
#include <catch2/catch.hpp>
#include <cstdint>

#include "sim/native/optim_storage.hpp"

using namespace exmy;

TEST_CASE("f16_from_f32 of every fp32 NaN is the signed quiet fp16 NaN, as convert gives it",
          "[native][storage][nan]") {
  std::uint64_t n = 0, doc = 0, conv = 0;
  for (std::uint32_t s = 0; s < 2; ++s) {
    for (std::uint32_t m = 1; m < (1u << 23); ++m) {
      const std::uint32_t u = s << 31 | 0x7F800000u | m;
      const std::uint16_t got = native::f16_from_f32(native::f32_from_bits(u));
      doc += got != (s != 0 ? 0xFE00u : 0x7E00u);
      conv += got != native::convert(formats::fp32, formats::fp16, Rounding{}, u).code;
      ++n;
    }
  }
  CHECK(n == (1u << 24) - 2);
  CHECK(doc == 0);
  CHECK(conv == 0);
}

TEST_CASE("f32_from_f16 of every fp16 code equals convert; NaNs are the signed quiet fp32 NaN",
          "[native][storage][nan]") {
  std::uint32_t nans = 0;
  for (std::uint32_t h = 0; h < 65536; ++h) {
    INFO("fp16 code " << h);
    const std::uint32_t got = native::f32_bits(native::f32_from_f16(static_cast<std::uint16_t>(h)));
    CHECK(got == native::convert(formats::fp16, formats::fp32, Rounding{}, h).code);
    if ((h & 0x7C00u) == 0x7C00u && (h & 0x3FFu) != 0) {
      ++nans;
      CHECK(got == ((h & 0x8000u) != 0 ? 0xFFC00000u : 0x7FC00000u));
    }
  }
  CHECK(nans == 2046);
}
