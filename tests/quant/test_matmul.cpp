// Quantized matmuls (SEMANTICS 8) against naive loops in independent arithmetic.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <functional>

#include "sim/common/error.hpp"
#include "sim/quant/matmul.hpp"
#include "sim/quant/quantize.hpp"
#include "tests/quant/quant_test_util.hpp"

using namespace exmy;
using namespace exmy::quant;
using quant_test::rn32;

TEST_CASE("int8 matmul is exact and the epilogue follows SwitchBack's order", "[quant][matmul]") {
  const std::uint64_t seed = 99;
  std::printf("matmul random seed %llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  const std::size_t M = 9, N = 7, K = 1000;
  const auto xa = quant_test::random_floats(rng, M * K);
  const auto xb = quant_test::random_floats(rng, N * K);
  Options ro;
  ro.scheme = parse_scheme("rowwise");
  ro.target = parse_target("int8");
  const Quantized qa = quantize(xa, {M, K}, ro);
  const Quantized qb = quantize(xb, {N, K}, ro);
  std::vector<std::int8_t> a(qa.codes.begin(), qa.codes.end()), b(qb.codes.begin(), qb.codes.end());
  const auto acc = matmul_int8_nt(a, b, M, N, K);
  for (std::size_t m = 0; m < M; ++m) {
    for (std::size_t n = 0; n < N; ++n) {
      long long s = 0;
      for (std::size_t k = 0; k < K; ++k) s += static_cast<long long>(a[m * K + k]) * b[n * K + k];
      CHECK(acc[m * N + n] == s);
    }
  }
  const double d = rn32(1.0 / 16129.0);
  for (const auto order : {native::DequantOrder::switchback, native::DequantOrder::factor_first}) {
    const auto out = dequantize_product(acc, M, N, qa.state, qb.state, order);
    for (std::size_t m = 0; m < M; ++m) {
      for (std::size_t n = 0; n < N; ++n) {
        const double sr = qa.state[m], sc = qb.state[n], fa = rn32(double(acc[m * N + n]));
        const float want = order == native::DequantOrder::switchback
                               ? rn32(sc * rn32(sr * rn32(fa * d)))
                               : rn32(fa * rn32(rn32(sr * sc) * d));
        CHECK(native::bits_of(out[m * N + n]) == native::bits_of(want));
      }
    }
  }
  // Tensor-wise state of B (SwitchBack's mixed kernel): one column state.
  const auto out1 =
      dequantize_product(acc, M, N, qa.state, {2.0f}, native::DequantOrder::switchback);
  CHECK(out1[0] == rn32(2.0 * rn32(qa.state[0] * rn32(rn32(double(acc[0])) * d))));
  CHECK_THROWS_AS(
      dequantize_product(acc, M, N, qa.state, {1.0f, 2.0f}, native::DequantOrder::switchback),
      InputError);
  CHECK_THROWS_AS(matmul_int8_nt(a, b, M, N, K + 1), InputError);
}

// Regression: the no-wrap bound was first written as K <= 133143 with a wrong product; the exact
// bound is floor((2^31 - 1) / 127^2) = 133144.
TEST_CASE("regression: int8 dot product exact up to K = 133144, wraps beyond",
          "[quant][matmul][regression]") {
  // 133144 * 127^2 = 2147479576 <= 2^31 - 1: exact; one more term of 127*127 wraps (two's
  // complement) to 2147495705 - 2^32.
  const std::size_t K = 133144;
  std::vector<std::int8_t> a(K + 1, 127), b(K + 1, 127);
  CHECK(native::dot_int8(a.data(), 1, b.data(), 1, K) == static_cast<std::int32_t>(K * 16129));
  CHECK(native::dot_int8(a.data(), 1, b.data(), 1, K + 1) ==
        static_cast<std::int32_t>((K + 1) * 16129 - (std::int64_t{1} << 32)));
}

TEST_CASE("fp32-accumulated matmul: sequential and pairwise orders", "[quant][matmul]") {
  std::mt19937_64 rng(31337);
  for (const std::size_t K : {0, 1, 2, 3, 5, 8, 33, 100, 1000}) {
    const std::size_t M = 3, N = 4;
    // FP8 (e4m3fn) operands decoded to fp32: products exact in fp32.
    auto a = quant_test::random_floats(rng, M * K), b = quant_test::random_floats(rng, N * K);
    for (auto& v : a)
      v = native::to_float(formats::e4m3fn,
                           quant_test::nearest_code_satfinite(formats::e4m3fn, v * 100));
    for (auto& v : b)
      v = native::to_float(formats::e4m3fn,
                           quant_test::nearest_code_satfinite(formats::e4m3fn, v * 100));
    const auto seq = matmul_fp32_nt(a, b, M, N, K, native::AccumOrder::sequential);
    const auto pw = matmul_fp32_nt(a, b, M, N, K, native::AccumOrder::pairwise);
    for (std::size_t m = 0; m < M; ++m) {
      for (std::size_t n = 0; n < N; ++n) {
        double s = 0;
        for (std::size_t k = 0; k < K; ++k) s = rn32(s + double(a[m * K + k]) * b[n * K + k]);
        CHECK(native::bits_of(seq[m * N + n]) == native::bits_of(static_cast<float>(s)));
        std::function<double(std::size_t, std::size_t)> rec = [&](std::size_t lo,
                                                                  std::size_t hi) -> double {
          if (hi - lo == 1) return rn32(double(a[m * K + lo]) * b[n * K + lo]);
          const std::size_t h = lo + (hi - lo + 1) / 2;
          return rn32(rec(lo, h) + rec(h, hi));
        };
        const float want = K == 0 ? 0.0f : static_cast<float>(rec(0, K));
        CHECK(native::bits_of(pw[m * N + n]) == native::bits_of(want));
      }
    }
  }
}

TEST_CASE("masked matmul (seed 003): masked inputs, fp32 accumulation", "[quant][matmul]") {
  // e4m3 grid with IEEE limits: max 240, min normal 2^-6. 1.9 truncates to 1.875, 300 clamps to
  // 240, 2^-8 lifts to 2^-6 (inner = min).
  const std::vector<float> a = {1.9f, 300.0f, 0x1p-8f};
  const std::vector<float> b = {1.0f, 1.0f, 1.0f};
  const auto out = matmul_masked_nt(a, b, 1, 1, 3, 4, 3, MaskOuter::clamp, MaskInner::min,
                                    native::AccumOrder::sequential);
  CHECK(out[0] == rn32(rn32(1.875 + 240.0) + 0x1p-6));
  const auto keep = matmul_masked_nt(a, b, 1, 1, 3, 4, 3, MaskOuter::keep, MaskInner::zero,
                                     native::AccumOrder::sequential);
  CHECK(keep[0] == rn32(1.875 + 288.0));  // 300 truncated to 3 mantissa bits: 288
  CHECK_THROWS_AS(matmul_masked_nt(a, b, 1, 1, 3, 9, 3, MaskOuter::keep, MaskInner::zero,
                                   native::AccumOrder::sequential),
                  InputError);
}

TEST_CASE("SwitchBack forward (eq. 2): int8 product approximates X W^T", "[quant][matmul]") {
  // X row-wise, W tensor-wise (recip-mul, SwitchBack quantize_global), int8 matmul, mixed
  // dequantization. Each code errs by <= 1/2 of a/127, so per term
  // |x w - x^ w^| <= |x| aw/254 + |w| ax/254 + ax aw/127^2/4; summed over K plus fp32 roundings.
  std::mt19937_64 rng(1001);
  const std::size_t M = 5, N = 6, K = 300;
  const auto x = quant_test::random_floats(rng, M * K);
  const auto w = quant_test::random_floats(rng, N * K);
  Options ox, ow;
  ox.scheme = parse_scheme("rowwise");
  ox.target = ow.target = parse_target("int8");
  ow.scheme = parse_scheme("tensor");
  ow.order = native::ScaleOrder::recip_mul;
  const Quantized qx = quantize(x, {M, K}, ox), qw = quantize(w, {N, K}, ow);
  const auto acc =
      matmul_int8_nt(std::vector<std::int8_t>(qx.codes.begin(), qx.codes.end()),
                     std::vector<std::int8_t>(qw.codes.begin(), qw.codes.end()), M, N, K);
  const auto out =
      dequantize_product(acc, M, N, qx.state, qw.state, native::DequantOrder::switchback);
  for (std::size_t m = 0; m < M; ++m) {
    for (std::size_t n = 0; n < N; ++n) {
      double exact = 0, bound = 0;
      const double ax = qx.state[m], aw = qw.state[0];
      for (std::size_t k = 0; k < K; ++k) {
        exact += double(x[m * K + k]) * w[n * K + k];
        bound += std::fabs(x[m * K + k]) * aw / 254 + std::fabs(w[n * K + k]) * ax / 254 +
                 ax * aw / (127.0 * 127.0 * 4);
      }
      bound += std::fabs(exact) * 0x1p-20 + ax * aw * K * 0x1p-20;
      CHECK(std::fabs(out[m * N + n] - exact) <= bound);
    }
  }
}
