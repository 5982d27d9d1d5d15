// cuBLASLt's split-K launches of blockwise-scaled FP8 GEMMs (torch._scaled_mm with 1x128 /
// 128x128 fp32 tile scales on an H200; SEMANTICS 15.7): `--accum cublas-sm90` must find each
// captured GEMM's launch record, apply the split-K rule without an announcement, and reproduce
// torch's output codes bit for bit (golden/gemm/cublas-h200-blockfp8-splitk, written by
// bench/peers/blockfp8_splitk_fixtures.py).
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "sim/common/error.hpp"
#include "sim/format/registry.hpp"
#include "sim/gemm/accum_model.hpp"
#include "sim/gemm/gemm.hpp"
#include "sim/io/json.hpp"
#include "sim/io/npy.hpp"
#include "tests/support/source_tree.hpp"

using namespace exmy;

namespace {
const std::filesystem::path kDir =
    exmy::testing::source_root() / "golden" / "gemm" / "cublas-h200-blockfp8-splitk";

// The capture's inputs are not stored: they come from bench/peers/blockfp8_gemm_capture.py's
// counter hash, integer arithmetic that numpy, torch and this port compute alike (the
// checksums stored with each case check the port).
constexpr std::int64_t kM31 = (std::int64_t{1} << 31) - 1;
std::int64_t hash31(std::int64_t x) {
  const std::int64_t mul[3] = {1103515245, 69069, 1664525}, add[3] = {12345, 1, 1013904223};
  for (int i = 0; i < 3; ++i) {
    x = (x * mul[i] + add[i]) & kM31;
    x ^= x >> 13;
  }
  return x;
}

std::vector<std::int64_t> gen_codes(std::int64_t seed, std::int64_t which, std::size_t n,
                                    const std::string& mix) {
  std::vector<std::int64_t> c(n);
  const std::int64_t base = (seed * 7919 + which * 104729) & kM31;
  for (std::size_t i = 0; i < n; ++i) {
    const std::int64_t h = hash31((static_cast<std::int64_t>(i) + base) & kM31);
    if (mix == "full") {
      c[i] = h & 0xFF;
      if ((c[i] & 0x7F) == 0x7F) c[i] ^= 1;
    } else {
      const std::int64_t e = 8 + ((h >> 4) & 7);
      std::int64_t m = (h >> 7) & 7;
      if (e == 15 && m == 7) m -= 1;
      c[i] = ((h >> 10) & 15) == 0 ? 0 : (((h >> 3) & 1) << 7) | (e << 3) | m;
    }
  }
  return c;
}

std::vector<std::int64_t> gen_scales(std::int64_t seed, std::int64_t which, std::size_t n,
                                     const std::string& mix) {
  std::vector<std::int64_t> s(n);
  const std::int64_t base = (seed * 7919 + which * 104729 + 17) & kM31;
  for (std::size_t i = 0; i < n; ++i) {
    const std::int64_t i2 = 2 * static_cast<std::int64_t>(i);
    const std::int64_t h1 = hash31((i2 + base) & kM31), h2 = hash31((i2 + 1 + base) & kM31);
    const std::int64_t e = h1 % 24 - 20;
    const std::int64_t f = mix == "pow2" ? 0 : (((h1 >> 8) << 15) | (h2 & 0x7FFF)) & 0x7FFFFF;
    s[i] = ((e + 127) << 23) | f;
  }
  return s;
}

// [sum, sum of x * (index mod 65521)], as numpy's int64 sums of the capture.
std::vector<std::int64_t> checksums(const std::vector<std::int64_t>& x) {
  std::uint64_t a = 0, b = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    a += static_cast<std::uint64_t>(x[i]);
    b += static_cast<std::uint64_t>(x[i]) * static_cast<std::uint64_t>(i % 65521);
  }
  return {static_cast<std::int64_t>(a), static_cast<std::int64_t>(b)};
}

gemm::Operand operand(const std::vector<std::int64_t>& codes, std::size_t rows, std::size_t cols,
                      const std::vector<std::int64_t>& scale_bits, std::size_t tile_rows) {
  const std::vector<std::uint16_t> c(codes.begin(), codes.end());
  gemm::Operand op = gemm::operand_from_codes(c, rows, cols, parse_format("e4m3fn").fp);
  op.type = "e4m3fn";  // as read_operand names it: the launch records' input type
  op.tile_scales.resize(scale_bits.size());
  for (std::size_t i = 0; i < scale_bits.size(); ++i) {
    const auto u = static_cast<std::uint32_t>(scale_bits[i]);
    std::memcpy(&op.tile_scales[i], &u, 4);
  }
  op.tile_rows = tile_rows;
  op.tile_cols = 128;
  return op;
}
}  // namespace

TEST_CASE("blockwise FP8 split-K launches captured on an H200 are modelled bit for bit",
          "[gemm][tile-scales][blockfp8-splitk]") {
  std::ifstream in(kDir / "cases.json");
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  const io::Json doc = io::parse_json(ss.str(), "cases.json");
  const std::int64_t seed = static_cast<std::int64_t>(doc.at("seed", "cases.json").u64("seed"));
  const std::vector<std::string> pairs = {"1x128.128x128", "1x128.1x128", "128x128.1x128"};
  std::size_t outputs = 0, cases = 0;
  for (const io::Json& c : doc.at("cases", "cases.json").items) {
    const std::string name = c.at("name", "case").str("name");
    INFO(name);
    const std::size_t M = c.at("M", name).u64("M"), N = c.at("N", name).u64("N"),
                      K = c.at("K", name).u64("K");
    const std::string pair = c.at("pair", name).str("pair"), out = c.at("out", name).str("out");
    const std::string mix = c.at("mix", name).str("mix");
    const std::int64_t si = static_cast<std::int64_t>(c.at("si", name).u64("si"));
    const std::size_t ra = pair.rfind("128x128", 0) == 0 ? 128 : 1;
    const std::size_t rb =
        pair.size() >= 7 && pair.compare(pair.size() - 7, 7, "128x128") == 0 ? 128 : 1;
    const std::size_t L = (K + 127) / 128;
    const auto pi =
        static_cast<std::int64_t>(std::find(pairs.begin(), pairs.end(), pair) - pairs.begin());
    const auto A = gen_codes(seed + si, 0, M * K, mix), B = gen_codes(seed + si, 1, N * K, mix);
    const auto SA = gen_scales(seed + si, 10 + pi, ((M + ra - 1) / ra) * L, mix);
    const auto SB = gen_scales(seed + si, 20 + pi, ((N + rb - 1) / rb) * L, mix);
    const io::Json& sums = c.at("sums", name);
    const std::pair<const char*, const std::vector<std::int64_t>*> parts[] = {
        {"A", &A}, {"B", &B}, {"SA", &SA}, {"SB", &SB}};
    for (const auto& [key, v] : parts) {
      const io::Json& want = sums.at(key, name);
      const std::vector<std::int64_t> got = checksums(*v);
      for (std::size_t j = 0; j < 2; ++j) {
        // The fixtures' checksums are all positive (below 2^63 without wrapping).
        const auto wv = static_cast<std::int64_t>(want.items.at(j).u64("checksum"));
        REQUIRE(got[j] == wv);
      }
    }
    const gemm::Operand a = operand(A, M, K, SA, ra), b = operand(B, N, K, SB, rb);
    const gemm::AccumModel m = gemm::parse_accum_model("cublas-sm90", 8);
    const gemm::OutFormat of = gemm::parse_out_format(out);
    // The launch record's rule: verified (silent) and the model the fixtures name.
    const gemm::ShapeModel sm = gemm::operand_model(a, b, m, of);
    INFO(sm.from);
    REQUIRE(sm.measured);
    REQUIRE(sm.spec == c.at("model", name).str("model"));
    const auto got = gemm::gemm(a, b, m, of);
    const std::string cpath = (kDir / (name + "_c.npy")).string();
    const io::NpyArray want = io::read_npy(cpath);
    std::size_t equal = 0;
    if (out == "fp32") {
      const auto w = io::as_f32(want, cpath);
      REQUIRE(w.size() == got.size());
      for (std::size_t i = 0; i < w.size(); ++i) {
        std::uint32_t u;
        std::memcpy(&u, &w[i], 4);
        equal += u == got[i] ? 1 : 0;
      }
    } else {
      const auto w = io::as_u16(want, cpath);
      REQUIRE(w.size() == got.size());
      for (std::size_t i = 0; i < w.size(); ++i) equal += w[i] == got[i] ? 1 : 0;
    }
    REQUIRE(equal == got.size());
    outputs += got.size();
    ++cases;
  }
  CHECK(cases == 19);
  CHECK(outputs > 5000);
}

TEST_CASE("fill parts: ceil(tiles / S) whole tiles from k = 0, the last nonempty part short",
          "[gemm][tile-scales][blockfp8-splitk]") {
  const gemm::AccumModel m =
      gemm::parse_accum_model("hw:k=32,frac=13,inter=13,chunk=128,split=9,tile=512,fill", 8);
  const native::DotModel d = gemm::dot_model(m);
  // 16x16x25600 (200 k-blocks, S = 9, the 128x128-block kernel): 8 parts of 24 blocks, then 8.
  for (std::size_t p = 0; p <= 9; ++p) {
    CHECK(native::dot_part_start(p, 25600, d) == std::min<std::size_t>(p * 24 * 128, 25600));
  }
  REQUIRE_THROWS_AS(gemm::parse_accum_model("hw:k=32,frac=13,split=9,fill", 8), InputError);
  REQUIRE_THROWS_AS(gemm::parse_accum_model("hw:k=32,frac=13,split=9,tile=512,tail,fill", 8),
                    InputError);
}
