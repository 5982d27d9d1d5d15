// Blockwise fp32 tile scales (docs/SEMANTICS.md 15.7): the promotion equations on hand-worked
// values, the cuBLAS preset against a reference built the way TransformerEngine's
// CuBLASRefBlockwiseGemm builds it (per 128-k block an unscaled FP8 GEMM with fp32 output, then
// the pair's fused multiply-add in fp32), `exact` against an exact fp64 sum, and bad inputs.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "sim/common/error.hpp"
#include "sim/format/registry.hpp"
#include "sim/gemm/gemm.hpp"
#include "sim/io/npy.hpp"
#include "sim/native/convert.hpp"

using namespace exmy;
using namespace exmy::gemm;

namespace {

float f32(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// e4m3fn code -> value, from the format's definition (bias 7, no infinities, 0x7F/0xFF NaN).
double e4m3(unsigned c) {
  const int e = (c >> 3) & 15, m = c & 7;
  const double v = e == 0 ? std::ldexp(m, -9) : std::ldexp(8 + m, e - 10);
  return (c & 0x80) ? -v : v;
}

// An operand of e4m3fn values (rows x cols codes) with tile scales of R x C tiles.
Operand fp8_operand(const std::vector<unsigned>& codes, std::size_t rows, std::size_t cols,
                    const std::vector<float>& scales, std::size_t R, std::size_t C) {
  Operand o;
  o.rows = rows;
  o.cols = cols;
  o.v.resize(codes.size());
  for (std::size_t i = 0; i < codes.size(); ++i) o.v[i] = e4m3(codes[i]);
  o.code_bits = o.value_bits = 8;
  o.emin = -6;
  o.type = "e4m3fn";
  o.tile_scales = scales;
  o.tile_rows = R;
  o.tile_cols = C;
  return o;
}

}  // namespace

TEST_CASE("tile scales: the promotion equations on hand-worked values", "[gemm][tile-scales]") {
  // One output, K = 256 (two k-blocks of 128), one nonzero product per block, so each block's
  // tensor-core sum is exactly that product: p0 = 1.5 * 1.25 = 1.875, p1 = 3 * 0.5 = 1.5.
  std::vector<unsigned> a(256, 0), b(256, 0);
  a[5] = 0x3C;    // 1.5
  b[5] = 0x3A;    // 1.25
  a[200] = 0x44;  // 3
  b[200] = 0x30;  // 0.5
  // Scales with full significands, so that the orders round differently.
  const float sa0 = 7.713767051696777f, sb0 = 5.748391628265381f, sa1 = 3.894238233566284f,
              sb1 = 2.912069797515869f;
  const Operand A = fp8_operand(a, 1, 256, {sa0, sa1}, 1, 128);
  const Operand B = fp8_operand(b, 1, 256, {sb0, sb1}, 1, 128);
  const float p0 = 1.875f, p1 = 1.5f;
  // The document's equations with the C library's correctly rounded fmaf, from y = +0.
  const float afirst = std::fmaf(p1 * sa1, sb1, std::fmaf(p0 * sa0, sb0, 0.0f));
  const float bfirst = std::fmaf(p1 * sb1, sa1, std::fmaf(p0 * sb0, sa0, 0.0f));
  const float product = std::fmaf(p1, sa1 * sb1, std::fmaf(p0, sa0 * sb0, 0.0f));
  REQUIRE(afirst != bfirst);  // the data separates the orders
  REQUIRE(afirst != product);
  REQUIRE(bfirst != product);
  const auto run = [&](const std::string& m) {
    return f32(exmy::gemm::gemm(A, B, parse_accum_model(m, 8), OutFormat::fp32)[0]);
  };
  CHECK(run("hw:k=32,frac=13,inter=13,chunk=128,promote=a-first") == afirst);
  CHECK(run("hw:k=32,frac=13,inter=13,chunk=128,promote=b-first") == bfirst);
  CHECK(run("hw:k=32,frac=13,inter=13,chunk=128,promote=product") == product);
  CHECK(run("deepgemm") == product);
  // 1x128 . 1x128 over two k-blocks: cuBLAS (measured; TE's reference too) and CUTLASS (both
  // operands 1-D) are a-first.
  CHECK(run("cublas-sm90") == afirst);
  CHECK(run("hw:k=32,frac=13,inter=13,chunk=128,promote=te") == afirst);
  CHECK(run("cutlass-sm90") == afirst);
  // Without a chunk the model promotes once per k-block; an explicit chunk of 64 promotes
  // twice per block (the second chunk of each block is zero here: the same value).
  CHECK(run("hw:k=32,frac=13,inter=13,promote=a-first") == afirst);
  CHECK(run("hw:k=32,frac=13,inter=13,chunk=64,promote=a-first") == afirst);
  // split-K of whole 128-k tiles: each part promotes from +0, the parts are added in fp32.
  const float split = std::fmaf(p0 * sa0, sb0, 0.0f) + std::fmaf(p1 * sa1, sb1, 0.0f);
  CHECK(run("hw:k=32,frac=13,inter=13,chunk=128,split=2,tile=128,promote=a-first") == split);
  // exact: one rounding of the exact sum of a b sa sb.
  const double ex = 1.875 * double{sa0} * double{sb0} + 1.5 * double{sa1} * double{sb1};
  CHECK(run("exact") == static_cast<float>(ex));
}

TEST_CASE("tile scales: the pair decides cuBLAS's and CUTLASS's equation", "[gemm][tile-scales]") {
  // M = N = 1 (a 128x128 tile covers the single row), the same data as above. Measured cuBLAS:
  // a 2-D operand gives product; TE's reference documents 128x128 . 1x128 b-first and 1x128 .
  // 128x128 a-first; CUTLASS product.
  std::vector<unsigned> a(256, 0), b(256, 0);
  a[5] = 0x3C, b[5] = 0x3A, a[200] = 0x44, b[200] = 0x30;
  const float sa0 = 7.713767051696777f, sb0 = 5.748391628265381f, sa1 = 3.894238233566284f,
              sb1 = 2.912069797515869f;
  const float p0 = 1.875f, p1 = 1.5f;
  const float afirst = std::fmaf(p1 * sa1, sb1, std::fmaf(p0 * sa0, sb0, 0.0f));
  const float bfirst = std::fmaf(p1 * sb1, sa1, std::fmaf(p0 * sb0, sa0, 0.0f));
  const float product = std::fmaf(p1, sa1 * sb1, std::fmaf(p0, sa0 * sb0, 0.0f));
  const auto run = [&](std::size_t ra, std::size_t rb, const std::string& m) {
    const Operand A = fp8_operand(a, 1, 256, {sa0, sa1}, ra, 128);
    const Operand B = fp8_operand(b, 1, 256, {sb0, sb1}, rb, 128);
    return f32(exmy::gemm::gemm(A, B, parse_accum_model(m, 8), OutFormat::fp32)[0]);
  };
  CHECK(run(128, 1, "cublas-sm90") == product);
  CHECK(run(1, 128, "cublas-sm90") == product);
  CHECK(run(128, 128, "cublas-sm90") == product);
  const std::string te = "hw:k=32,frac=13,inter=13,chunk=128,promote=te";
  CHECK(run(128, 1, te) == bfirst);
  CHECK(run(1, 128, te) == afirst);
  CHECK(run(128, 128, te) == product);
  CHECK(run(128, 1, "cutlass-sm90") == product);
  CHECK(run(1, 128, "cutlass-sm90") == product);
  CHECK(run(1, 1, "cutlass-sm90") == afirst);
  CHECK(run(128, 1, "deepgemm") == product);
  // One k-block (K = 128): cuBLASLt runs its outer-vector kernel, measured b-first.
  std::vector<unsigned> a1(a.begin(), a.begin() + 128), b1(b.begin(), b.begin() + 128);
  const Operand A1 = fp8_operand(a1, 1, 128, {sa0}, 1, 128);
  const Operand B1 = fp8_operand(b1, 1, 128, {sb0}, 1, 128);
  CHECK(f32(exmy::gemm::gemm(A1, B1, parse_accum_model("cublas-sm90", 8), OutFormat::fp32)[0]) ==
        std::fmaf(p0 * sb0, sa0, 0.0f));
}

TEST_CASE("tile scales: promote=te equals TransformerEngine's reference construction",
          "[gemm][tile-scales]") {
  // TE's CuBLASRefBlockwiseGemm.qgemm_blockwise_2d: for every k-block, y_partial = an FP8 GEMM of
  // the block with unit scales and fp32 output (here exmy's plain cublas-sm90 FP8 model, verified
  // against cuBLASLt: SEMANTICS 15.4), then y = fma(y_partial * s1, s2, y) in fp32 with the
  // pair's order; finally y converted to the output type. Random e4m3fn codes over the whole
  // range and random fp32 scales; M, N not multiples of 128, K not a multiple of 128.
  const unsigned seed = 20261201;
  INFO("seed " << seed);
  std::mt19937 rng(seed);
  const std::size_t M = 131, N = 133, K = 128 * 3 + 48, L = 4;
  std::vector<unsigned> ac(M * K), bc(N * K);
  for (auto& c : ac) c = (c = rng() & 0xFF, (c & 0x7F) == 0x7F ? c ^ 1 : c);
  for (auto& c : bc) c = (c = rng() & 0xFF, (c & 0x7F) == 0x7F ? c ^ 1 : c);
  std::uniform_real_distribution<float> u(-20.0f, 3.0f);
  const auto scale = [&] { return std::exp2(u(rng)); };
  for (const auto& [ra, rb] : {std::pair<std::size_t, std::size_t>{1, 128}, {1, 1}, {128, 1}}) {
    std::vector<float> sa(((M + ra - 1) / ra) * L), sb(((N + rb - 1) / rb) * L);
    for (auto& s : sa) s = scale();
    for (auto& s : sb) s = scale();
    const Operand A = fp8_operand(ac, M, K, sa, ra, 128);
    const Operand B = fp8_operand(bc, N, K, sb, rb, 128);
    // The reference: per-block unscaled GEMMs (fp32 out), then the fused multiply-adds.
    std::vector<float> y(M * N, 0.0f);
    for (std::size_t kb = 0; kb < L; ++kb) {
      const std::size_t k0 = kb * 128, k1 = std::min(K, k0 + 128);
      auto slice = [&](const std::vector<unsigned>& codes, std::size_t rows) {
        std::vector<unsigned> s(rows * (k1 - k0));
        for (std::size_t r = 0; r < rows; ++r)
          for (std::size_t k = k0; k < k1; ++k) s[r * (k1 - k0) + k - k0] = codes[r * K + k];
        return fp8_operand(s, rows, k1 - k0, {}, 0, 0);
      };
      const std::vector<std::uint32_t> part = exmy::gemm::gemm(
          slice(ac, M), slice(bc, N), parse_accum_model("cublas-sm90", 8), OutFormat::fp32);
      for (std::size_t i = 0; i < M; ++i) {
        for (std::size_t j = 0; j < N; ++j) {
          const float p = f32(part[i * N + j]);
          const float s_a = sa[(i / ra) * L + kb], s_b = sb[(j / rb) * L + kb];
          float& acc = y[i * N + j];
          acc = ra == 1 ? std::fmaf(p * s_a, s_b, acc) : std::fmaf(p * s_b, s_a, acc);
        }
      }
    }
    const AccumModel te = parse_accum_model("hw:k=32,frac=13,inter=13,chunk=128,promote=te", 8);
    const std::vector<std::uint32_t> c32 = exmy::gemm::gemm(A, B, te, OutFormat::fp32);
    const std::vector<std::uint32_t> c16 = exmy::gemm::gemm(A, B, te, OutFormat::bf16);
    std::size_t bad32 = 0, bad16 = 0;
    const Format bf16 = parse_format("bf16");
    for (std::size_t i = 0; i < M * N; ++i) {
      std::uint32_t yb;
      std::memcpy(&yb, &y[i], 4);
      bad32 += c32[i] != yb;
      // bf16 by round to nearest even of the fp32 value (SEMANTICS 2).
      const std::uint64_t want = native::convert(formats::fp32, bf16.fp, Rounding{}, yb, 0).code;
      bad16 += c16[i] != want;
    }
    INFO("pair " << ra << "x128 . " << rb << "x128");
    CHECK(bad32 == 0);
    CHECK(bad16 == 0);
  }
}

TEST_CASE("tile scales: exact is one rounding of the exact sum", "[gemm][tile-scales]") {
  // Power-of-two scales and e4m3fn values of exponents 2^-3 .. 2^3: every product and the sum of
  // 512 of them are exact in fp64, so RN32 of the fp64 sum is the exact rounding.
  const unsigned seed = 7;
  INFO("seed " << seed);
  std::mt19937 rng(seed);
  const std::size_t M = 5, N = 7, K = 512, L = 4;
  std::vector<unsigned> ac(M * K), bc(N * K);
  for (auto& c : ac) c = ((rng() & 1) << 7) | ((4 + rng() % 7) << 3) | (rng() & 7);
  for (auto& c : bc) c = ((rng() & 1) << 7) | ((4 + rng() % 7) << 3) | (rng() & 7);
  std::vector<float> sa(M * L), sb(N * L);
  for (auto& s : sa) s = std::ldexp(1.0f, static_cast<int>(rng() % 9) - 4);
  for (auto& s : sb) s = std::ldexp(1.0f, static_cast<int>(rng() % 9) - 4);
  const Operand A = fp8_operand(ac, M, K, sa, 1, 128);
  const Operand B = fp8_operand(bc, N, K, sb, 1, 128);
  const std::vector<std::uint32_t> c =
      exmy::gemm::gemm(A, B, parse_accum_model("exact", 8), OutFormat::fp32);
  for (std::size_t i = 0; i < M; ++i) {
    for (std::size_t j = 0; j < N; ++j) {
      double s = 0;
      for (std::size_t k = 0; k < K; ++k) {
        s += e4m3(ac[i * K + k]) * e4m3(bc[j * K + k]) * sa[i * L + k / 128] * sb[j * L + k / 128];
      }
      CHECK(f32(c[i * N + j]) == static_cast<float>(s));
    }
  }
}

TEST_CASE("tile scales: bad combinations are errors", "[gemm][tile-scales]") {
  std::vector<unsigned> codes(256, 0x38);
  const Operand A = fp8_operand(codes, 1, 256, {1.0f, 1.0f}, 1, 128);
  Operand B = fp8_operand(codes, 1, 256, {1.0f, 1.0f}, 1, 128);
  const auto m = [](const std::string& s) { return parse_accum_model(s, 8); };
  CHECK_NOTHROW(exmy::gemm::gemm(A, B, m("cublas-sm90"), OutFormat::bf16));
  // a chunk that does not divide C, split-K, rp
  CHECK_THROWS_AS(exmy::gemm::gemm(A, B, m("hw:k=32,frac=13,inter=13,chunk=96"), OutFormat::fp32),
                  exmy::InputError);
  CHECK_THROWS_AS(
      exmy::gemm::gemm(A, B, m("hw:k=32,frac=13,inter=13,chunk=128,split=2"), OutFormat::fp32),
      exmy::InputError);
  // promote= without tile scales
  Operand P = fp8_operand(codes, 1, 256, {}, 0, 0);
  CHECK_THROWS_AS(
      exmy::gemm::gemm(P, P, m("hw:k=32,frac=13,chunk=128,promote=product"), OutFormat::fp32),
      exmy::InputError);
  CHECK_THROWS_AS(parse_accum_model("hw:k=32,frac=13,promote=sideways", 8), exmy::InputError);
  CHECK_THROWS_AS(parse_accum_model("deepgemm", 16), exmy::InputError);
  // scales on one side only; different k extents
  CHECK_THROWS_AS(exmy::gemm::gemm(A, P, m("cublas-sm90"), OutFormat::fp32), exmy::InputError);
  B = fp8_operand(codes, 1, 256, {1.0f, 1.0f, 1.0f, 1.0f}, 1, 64);
  CHECK_THROWS_AS(exmy::gemm::gemm(A, B, m("cublas-sm90"), OutFormat::fp32), exmy::InputError);
  // cuBLASLt's blockwise scaling is FP8 only
  Operand H = A, G = A;
  H.code_bits = G.code_bits = 16;
  H.type = G.type = "bf16";
  CHECK_THROWS_AS(exmy::gemm::gemm(H, G, parse_accum_model("cublas-sm90", 16), OutFormat::fp32),
                  exmy::InputError);
  std::size_t R = 0, C = 0;
  parse_tile("128x128", "--block-b", R, C);
  CHECK((R == 128 && C == 128));
  CHECK_THROWS_AS(parse_tile("128", "--block-b", R, C), exmy::InputError);
  CHECK_THROWS_AS(parse_tile("0x128", "--block-b", R, C), exmy::InputError);
}

TEST_CASE("exmy gemm: fp32 tile scales end to end, bad inputs exit 2", "[cli][tile-scales]") {
  const char* cli = std::getenv("EXMY_CLI");
  if (cli == nullptr) {
    WARN("EXMY_CLI not set (run through ctest): skipped");
    return;
  }
  namespace fs = std::filesystem;
  const fs::path d = fs::temp_directory_path() / ("exmy_test_tiles_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  const std::string s = d.string();
  const auto run = [&](const std::string& args) {
    const int rc = std::system((std::string(cli) + " " + args + " >/dev/null 2>&1").c_str());
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  };
  // A 3 x 256 of 1.0, B 2 x 256 of 2.0; SA (3 x 2) = 0.5, SB 128x128 tiles (1 x 2) = 0.25:
  // every output is 256 * 2 * 0.5 * 0.25 = 64.
  io::write_npy(s + "/a.npy", io::make_npy(std::vector<std::uint8_t>(3 * 256, 0x38), {3, 256}));
  io::write_npy(s + "/b.npy", io::make_npy(std::vector<std::uint8_t>(2 * 256, 0x40), {2, 256}));
  io::write_npy(s + "/sa.npy", io::make_npy(std::vector<float>(6, 0.5f), {3, 2}));
  io::write_npy(s + "/sb.npy", io::make_npy(std::vector<float>(2, 0.25f), {1, 2}));
  io::write_npy(s + "/sb_bad.npy", io::make_npy(std::vector<float>(4, 0.25f), {2, 2}));
  const std::string base = "gemm --a " + s + "/a.npy --b " + s +
                           "/b.npy --a-format e4m3fn --b-format e4m3fn --block-scale-a " + s +
                           "/sa.npy --block-scale-format fp32 --block-a 1x128 ";
  REQUIRE(run(base + "--block-scale-b " + s + "/sb.npy --block-b 128x128 --out-format fp32 " +
              "--accum cublas-sm90 --out " + s + "/c.npy") == 0);
  for (float v : io::as_f32(io::read_npy(s + "/c.npy"), "c")) CHECK(v == 64.0f);
  const std::string out = " --out-format bf16 --accum cublas-sm90 --out " + s + "/bad.npy";
  CHECK(run(base + "--block-scale-b " + s + "/sb_bad.npy --block-b 128x128" + out) == 2);
  CHECK(run(base + "--block-scale-b " + s + "/sb.npy --block-b 128x64" + out) == 2);
  CHECK(run(base + "--block-scale-b " + s + "/sb.npy --block-b 128x128 --block 32" + out) == 2);
  CHECK(run(base + "--block-scale-b " + s + "/a.npy --block-b 128x128" + out) == 2);
  CHECK(run("gemm --a " + s + "/a.npy --b " + s + "/b.npy --a-format e4m3fn --b-format e4m3fn " +
            "--block-a 1x128" + out) == 2);
  CHECK(!fs::exists(s + "/bad.npy"));
  fs::remove_all(d);
}
