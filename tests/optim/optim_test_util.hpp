// Shared generators for the optimizer tests: fixed, printed seeds; value patterns that mix normal,
// tiny, huge and special magnitudes.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

namespace exmy::optim_test {

inline std::vector<float> normal_values(std::size_t n, std::uint64_t seed, float scale = 1.0f) {
  std::printf("optim test data: normal n=%zu seed=%llu\n", n,
              static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// Magnitudes spread over 2^-140 .. 2^100 with random signs (subnormals included).
inline std::vector<float> wide_values(std::size_t n, std::uint64_t seed) {
  std::printf("optim test data: wide n=%zu seed=%llu\n", n, static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> e(-140.0, 100.0), m(1.0, 2.0);
  std::vector<float> v(n);
  for (auto& x : v) {
    x = static_cast<float>(std::ldexp(m(rng), static_cast<int>(e(rng))) * ((rng() & 1) ? -1 : 1));
  }
  return v;
}

inline std::vector<float> random_bits(std::size_t n, std::uint64_t seed) {
  std::printf("optim test data: bits n=%zu seed=%llu\n", n, static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  std::vector<float> v(n);
  for (auto& x : v) {
    const std::uint32_t u = static_cast<std::uint32_t>(rng());
    std::memcpy(&x, &u, 4);
  }
  return v;
}

inline std::uint32_t bits(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
}

}  // namespace exmy::optim_test
