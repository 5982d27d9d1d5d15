// The SFU models (sim/native/sfu_sm90.hpp) and their tables (sim/sfu/sfu_tables.hpp): hardware
// results measured on an H200 as regression points, the FTZ arithmetic's rounding boundary, the
// table file's error handling, and (hidden case [.exhaustive], run by ctest as
// sfu_models_exhaustive) the CPU models on all 2^32 inputs of every instruction against the
// digest of the hardware's results that the probe recorded in the manifest.
#include <catch2/catch.hpp>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "sim/common/error.hpp"
#include "sim/native/sfu_digest.hpp"
#include "sim/native/sfu_sm90.hpp"
#include "sim/sfu/sfu_tables.hpp"
#include "tests/support/source_tree.hpp"

using namespace exmy;
namespace fs = std::filesystem;

namespace {

using native::f32_bits;
using native::f32_from_bits;

// The digest the manifest records for `instruction` (hex after "digest":").
std::uint64_t manifest_digest(const std::string& manifest, const std::string& instruction) {
  const std::size_t at = manifest.find("\"" + instruction + "\"");
  REQUIRE(at != std::string::npos);
  const std::size_t d = manifest.find("\"digest\":\"", at);
  REQUIRE(d != std::string::npos);
  return std::stoull(manifest.substr(d + 10, 16), nullptr, 16);
}

}  // namespace

TEST_CASE("sfu tables: the compiled-in bundle decodes and names its provenance", "[sfu]") {
  const sfu::Bundle& b = sfu::sm90();
  CHECK(b.manifest.find("\"device\":\"NVIDIA H") != std::string::npos);
  CHECK(b.manifest.find("\"mismatches\":0") != std::string::npos);
  CHECK(b.manifest.find("\"mismatches\":1") == std::string::npos);
  for (int k = 0; k < sfu::kTables; ++k) {
    CHECK(b.tables[k].size() == sfu::table_info(static_cast<sfu::Table>(k)).entries);
  }
  CHECK(b.lg2s_bits.size() == (std::size_t{1} << 18));
}

TEST_CASE("sfu models: results measured on the H200 (regression points)", "[sfu]") {
  const native::SfuTables t = sfu::sm90().view();
  // ex2 truncates |x| to 23 fraction bits and is not 2^x rounded: −1.2271903e-07 gives
  // 1 − 2^-23 (correctly rounded: 1 − 2^-24); tiny negative normals give exactly 1.
  CHECK(native::sfu_ex2(t, 0xb403c4c0u) == 0x3f7ffffeu);
  CHECK(native::sfu_ex2(t, 0xb3881ae0u) == 0x3f800000u);
  CHECK(native::sfu_ex2(t, 0x80842f80u) == 0x3f800000u);
  CHECK(native::sfu_ex2(t, 0x340409e0u) == 0x3f800001u);
  // lg2: e + L rounded toward zero in magnitude, with the hardware's extra bits of L.
  CHECK(native::sfu_lg2(t, 0x3f0079c9u) == 0xbf7ea140u);
  CHECK(native::sfu_lg2(t, 0x008422e5u) == 0xc2fbe881u);
  // Specials: NaN is 0x7FFFFFFF, subnormal inputs are zeros.
  CHECK(native::sfu_rcp(t, 0x00000001u) == 0x7f800000u);
  CHECK(native::sfu_rcp(t, 0x80000000u) == 0xff800000u);
  CHECK(native::sfu_rcp(t, 0x7f800000u) == 0x00000000u);
  CHECK(native::sfu_sqrt(t, 0xbf800000u) == native::kSfuNaN);
  CHECK(native::sfu_sqrt(t, 0x80000001u) == 0x80000000u);
  CHECK(native::sfu_rsqrt(t, 0x00000000u) == 0x7f800000u);
  CHECK(native::sfu_lg2(t, 0x00000005u) == 0xff800000u);
  CHECK(native::sfu_lg2(t, 0xbf800000u) == native::kSfuNaN);
  CHECK(native::sfu_ex2(t, 0x7fc00000u) == native::kSfuNaN);
  CHECK(native::sfu_ex2(t, 0x43000000u) == 0x7f800000u);  // 2^128
  CHECK(native::sfu_ex2(t, 0xc3000000u) == 0x00000000u);  // 2^-128 flushed
  // Exact points.
  CHECK(native::sfu_rcp(t, f32_bits(4.0f)) == f32_bits(0.25f));
  CHECK(native::sfu_sqrt(t, f32_bits(16.0f)) == f32_bits(4.0f));
  CHECK(native::sfu_lg2(t, f32_bits(1.0f)) == 0u);
  // ... but not lg2(0.5): the hardware gives −(1 − 2^-23), one of the e = −1 table's rows.
  CHECK(native::sfu_lg2(t, f32_bits(0.5f)) == 0xbf7ffffeu);
  CHECK(native::sfu_lg2(t, f32_bits(2.0f)) == f32_bits(1.0f));
  // rcp of large inputs: a subnormal result is flushed to a zero of the input's sign.
  CHECK(native::sfu_rcp(t, f32_bits(-0x1.8p126f)) == 0x80000000u);
  CHECK(native::sfu_rcp(t, f32_bits(0x1p126f)) == f32_bits(0x1p-126f));
}

TEST_CASE("ftz arithmetic: flushed by the exponent-unbounded rounding (measured on the H200)",
          "[sfu]") {
  // (1 − 2^-24)·2^-126 is below 2^-126 after rounding: 0. (1 − 2^-23)(1 + 2^-23)·2^-126 =
  // (1 − 2^-46)·2^-126 rounds to 2^-126: kept (tininess after rounding).
  CHECK(f32_bits(native::ftz_mul(f32_from_bits(0x3f7fffffu), f32_from_bits(0x00800000u))) == 0u);
  CHECK(f32_bits(native::ftz_fma(f32_from_bits(0x3f7fffffu), f32_from_bits(0x00800000u), 0.0f)) ==
        0u);
  CHECK(f32_bits(native::ftz_mul(f32_from_bits(0x3f7ffffeu), f32_from_bits(0x00800001u))) ==
        0x00800000u);
  CHECK(f32_bits(native::ftz_mul(f32_from_bits(0x3f7fffffu), f32_from_bits(0x00800001u))) ==
        0x00800000u);
  CHECK(f32_bits(native::ftz_mul(f32_from_bits(0xbf7fffffu), f32_from_bits(0x00800000u))) ==
        0x80000000u);
  // Subnormal operands are zeros.
  CHECK(f32_bits(native::ftz_add(f32_from_bits(0x00800001u), f32_from_bits(0x80000002u))) ==
        0x00800001u);
  CHECK(f32_bits(native::ftz_fma(1.0f, f32_from_bits(0x00800000u), f32_from_bits(0x80000001u))) ==
        0x00800000u);
  CHECK(f32_bits(native::ftz_mul(f32_from_bits(0x00000001u), 1e30f)) == 0u);
  // A difference below 2^-126 is exact and then flushed.
  CHECK(f32_bits(native::ftz_add(f32_from_bits(0x00800001u), f32_from_bits(0x80800000u))) == 0u);
  // Ordinary values are the correctly rounded results.
  CHECK(native::ftz_fma(3.0f, 1.0f / 3.0f, -1.0f) == std::fma(3.0f, 1.0f / 3.0f, -1.0f));
}

TEST_CASE("sfu tables: a damaged file is an error naming it, never a fallback", "[sfu]") {
  // The shipped bundle with one byte of a table's compressed residuals changed: the CRC-32 of the
  // decoded table (or zlib's own check) refuses it.
  const fs::path bin =
      exmy::testing::source_root() / "golden" / "profiles" / "sm90" / "sfu-tables.bin";
  std::ifstream in(bin, std::ios::binary);
  REQUIRE(in);
  std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)), {});
  REQUIRE(bytes.size() > 4096);
  CHECK_NOTHROW(sfu::decode(bytes, "G.bin"));
  bytes[bytes.size() - 1000] ^= 0x40u;  // inside the last table's payload
  CHECK_THROWS_WITH(
      sfu::decode(bytes, "G.bin"),
      Catch::Contains("G.bin") &&
          (Catch::Contains("CRC") || Catch::Contains("corrupt") || Catch::Contains("short")));
  // A wrong magic, a truncated header.
  std::vector<std::uint8_t> bad = {'E', 'X', 'M', 'Y', 'S', 'F', 'U', '2'};
  CHECK_THROWS_WITH(sfu::decode(bad, "F.bin"),
                    Catch::Contains("F.bin") && Catch::Contains("magic"));
  std::vector<std::uint8_t> trunc = {'E', 'X', 'M', 'Y', 'S', 'F', 'U', '1', 8, 0};
  CHECK_THROWS_WITH(sfu::decode(trunc, "T.bin"),
                    Catch::Contains("T.bin") && Catch::Contains("truncated"));
}

TEST_CASE("sfu models: the CPU models equal the hardware on all 2^32 inputs (digests)",
          "[sfu][.exhaustive]") {
  const sfu::Bundle& b = sfu::sm90();
  const native::SfuTables t = b.view();
  const char* names[5] = {"rcp.approx.ftz.f32", "sqrt.approx.ftz.f32", "rsqrt.approx.ftz.f32",
                          "ex2.approx.ftz.f32", "lg2.approx.ftz.f32"};
  for (int op = 0; op < 5; ++op) {
    std::uint64_t sum = 0;
#pragma omp parallel for reduction(+ : sum) schedule(static)
    for (long long hi = 0; hi < 65536; ++hi) {
      for (std::uint32_t lo = 0; lo < 65536; ++lo) {
        const std::uint32_t x = (static_cast<std::uint32_t>(hi) << 16) | lo;
        std::uint32_t r = 0;
        switch (op) {
          case 0:
            r = native::sfu_rcp(t, x);
            break;
          case 1:
            r = native::sfu_sqrt(t, x);
            break;
          case 2:
            r = native::sfu_rsqrt(t, x);
            break;
          case 3:
            r = native::sfu_ex2(t, x);
            break;
          default:
            r = native::sfu_lg2(t, x);
            break;
        }
        sum += native::sfu_digest_term(x, r);
      }
    }
    INFO(names[op]);
    std::printf("%-22s CPU model digest %016" PRIx64 "\n", names[op], sum);
    CHECK(sum == manifest_digest(b.manifest, names[op]));
  }
}
