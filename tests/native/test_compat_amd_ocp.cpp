// AMD gfx950 OCP conversions as AMD's host model defines them (sim/native/compat_amd_ocp.hpp).
// Known answers worked by hand from the text of amd_hip_ocp_host.hpp (fcbx::from_float,
// from_float_sr, to_float; ROCm/rocm-systems 20d6c1cc), including the places where that model
// departs from OCP. The exhaustive comparison with the compiled header is
// tests/peers/amd_ocp/amd_ocp_compare.cpp (bench/results/2026-12-01-cpu-amd-gfx950-cvt.md).
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>

#include "sim/native/compat_amd_ocp.hpp"

using namespace exmy;
using native::AmdOcp;
using native::AmdWide;

namespace {
std::uint32_t bits(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
}
std::uint32_t enc(AmdOcp t, float x, int scale = 0) {
  return native::amd_ocp_encode(t, AmdWide::fp32, bits(x), static_cast<std::int8_t>(scale));
}
std::uint32_t enc_sr(AmdOcp t, AmdWide w, float x, std::uint32_t seed, int scale = 0) {
  return native::amd_ocp_encode(t, w, bits(x), static_cast<std::int8_t>(scale), true, seed);
}
std::uint32_t dec(AmdOcp t, AmdWide w, std::uint32_t c, int scale = 0) {
  return native::amd_ocp_decode(t, w, c, static_cast<std::int8_t>(scale));
}
constexpr float kNaN = __builtin_nanf("");
constexpr float kInf = __builtin_inff();
}  // namespace

TEST_CASE("amd-gfx950 encode: scale, nearest-even, overflow", "[native][amd-ocp]") {
  CHECK(enc(AmdOcp::e4m3, 1.0f) == 0x38);
  CHECK(enc(AmdOcp::e4m3, 1.0f, 1) == 0x30);   // 1 / 2^1 = 0.5
  CHECK(enc(AmdOcp::e4m3, 1.0f, -8) == 0x78);  // 2^8 = 256
  CHECK(enc(AmdOcp::e4m3, 464.0f) == 0x7E);    // tie of 448 and 480: even mantissa
  CHECK(enc(AmdOcp::e4m3, 465.0f) == 0x7F);    // rounds to 480, the NaN pattern
  CHECK(enc(AmdOcp::e4m3, -1e6f) == 0xFF);     // overflow: NaN with the sign
  CHECK(enc(AmdOcp::e5m2, 1e9f) == 0x7B);      // saturates
  CHECK(enc(AmdOcp::e5m2, -kInf) == 0xFB);
  CHECK(enc(AmdOcp::e4m3, kInf) == 0x7F);
  CHECK(enc(AmdOcp::e2m1, 5.0f) == 0x6);   // tie of 4 (0x6) and 6 (0x7)
  CHECK(enc(AmdOcp::e2m1, 0.25f) == 0x0);  // tie of 0 and 0.5
  CHECK(enc(AmdOcp::e2m1, -0.0f) == 0x8);
  CHECK(enc(AmdOcp::e3m2, 1e30f) == 0x1F);
}

TEST_CASE("amd-gfx950 encode: NaN inputs and the NaN scale", "[native][amd-ocp]") {
  CHECK(enc(AmdOcp::e4m3, kNaN) == 0x7F);
  CHECK(enc(AmdOcp::e4m3, -kNaN) == 0xFF);
  CHECK(enc(AmdOcp::e5m2, -kNaN) == 0xFE);
  // Formats without NaN write their all-ones magnitude: +-max (e2m1 6, e2m3 7.5, e3m2 28).
  CHECK(enc(AmdOcp::e2m1, kNaN) == 0x7);
  CHECK(enc(AmdOcp::e2m1, -kNaN) == 0xF);
  CHECK(enc(AmdOcp::e2m3, kNaN) == 0x1F);
  // The NaN scale (-128, E8M0 0xFF) gives the NaN pattern of the input's sign, zeros included.
  CHECK(enc(AmdOcp::e2m1, 0.0f, -128) == 0x7);
  CHECK(enc(AmdOcp::e2m1, -1.0f, -128) == 0xF);
  CHECK(enc(AmdOcp::e4m3, 2.0f, -128) == 0x7F);
}

TEST_CASE("amd-gfx950 stochastic rounding: R = source mantissa - M top seed bits",
          "[native][amd-ocp]") {
  // 1.25 lies half-way between e2m1's 1.0 (0x2) and 1.5 (0x3).
  CHECK(enc_sr(AmdOcp::e2m1, AmdWide::fp32, 1.25f, 0x80000000u) == 0x3);  // w = 2^21 of 2^22
  CHECK(enc_sr(AmdOcp::e2m1, AmdWide::fp32, 1.25f, 0x7FFFFFFFu) == 0x2);
  CHECK(enc_sr(AmdOcp::e2m1, AmdWide::fp16, 1.25f, 0x80000000u) == 0x3);  // R = 9: w = 256
  CHECK(enc_sr(AmdOcp::e2m1, AmdWide::fp16, 1.25f, 0x7FFFFFFFu) == 0x2);
  CHECK(enc_sr(AmdOcp::e2m1, AmdWide::bf16, 1.25f, 0x80000000u) == 0x3);  // R = 6: w = 32
  CHECK(enc_sr(AmdOcp::e2m1, AmdWide::bf16, 1.25f, 0x7E000000u) == 0x2);  // w = 31
  // Overflow under SR: e4m3 to its NaN pattern, the others to +-max.
  CHECK(enc_sr(AmdOcp::e4m3, AmdWide::fp32, 470.0f, 0xFFFFFFFFu) == 0x7F);
  CHECK(enc_sr(AmdOcp::e5m2, AmdWide::fp32, 60000.0f, 0xFFFFFFFFu) == 0x7B);
  CHECK(native::amd_sr_group(AmdOcp::e2m1) == 2);
  CHECK(native::amd_sr_group(AmdOcp::e2m3) == 32);
}

TEST_CASE("amd-gfx950 decode: scale, specials, the host model's quirks", "[native][amd-ocp]") {
  CHECK(dec(AmdOcp::e4m3, AmdWide::fp32, 0x38) == bits(1.0f));
  CHECK(dec(AmdOcp::e4m3, AmdWide::fp32, 0x38, 3) == bits(8.0f));
  CHECK(dec(AmdOcp::e4m3, AmdWide::fp32, 0x7F) == 0x7FC00000u);
  CHECK(dec(AmdOcp::e4m3, AmdWide::fp32, 0xFF) == 0xFFC00000u);
  CHECK(dec(AmdOcp::e2m1, AmdWide::fp32, 0x7, 127) == 0x7F800000u);  // 6 * 2^127 overflows
  CHECK(dec(AmdOcp::e2m1, AmdWide::fp32, 0x1, -127) == bits(0x1p-128f));
  CHECK(dec(AmdOcp::e2m1, AmdWide::fp32, 0x2, -128) == 0x7FC00000u);  // NaN scale
  // e5m2: the largest finite 0x7B decodes as inf, the OCP infinity 0x7C as 2^16.
  CHECK(dec(AmdOcp::e5m2, AmdWide::fp32, 0x7B) == 0x7F800000u);
  CHECK(dec(AmdOcp::e5m2, AmdWide::fp32, 0xFC) == bits(-65536.0f));
  CHECK(dec(AmdOcp::e5m2, AmdWide::fp32, 0x7C, -1) == bits(32768.0f));
  // fp16 / bf16 results built from bit patterns by a value conversion: (_Float16)0x7FFF =
  // 32768 (0x7800), (_Float16)0x8000 = 32768, (__bf16)0x7FFF = 32768 (0x4700), (_Float16)0x7C00
  // = 31744 (0x77C0), (_Float16)0xFFFF rounds past 65504 to inf (0x7C00).
  CHECK(dec(AmdOcp::e4m3, AmdWide::fp16, 0x7F) == 0x7800u);
  CHECK(dec(AmdOcp::e4m3, AmdWide::fp16, 0xFF) == 0x7C00u);
  CHECK(dec(AmdOcp::e4m3, AmdWide::fp16, 0x80) == 0x7800u);  // -0 -> +32768
  CHECK(dec(AmdOcp::e4m3, AmdWide::fp16, 0x00) == 0x0000u);
  CHECK(dec(AmdOcp::e4m3, AmdWide::bf16, 0x7F) == 0x4700u);
  CHECK(dec(AmdOcp::e5m2, AmdWide::fp16, 0x7B) == 0x77C0u);
  CHECK(dec(AmdOcp::e4m3, AmdWide::fp16, 0x38, 16) == 0x77C0u);  // 2^16 overflows: "inf"
  CHECK(dec(AmdOcp::e4m3, AmdWide::fp16, 0x38) == 0x3C00u);
  CHECK(native::amd_pack_fp8x2(0x38, 0xB8) == 0xB838u);
  CHECK(native::amd_pack_fp4x2(0x2, 0xA) == 0xA2u);
}
