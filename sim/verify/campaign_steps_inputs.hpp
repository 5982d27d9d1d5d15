// The input classes of the steps campaign (`exmy verify --campaign steps`, docs/SEMANTICS.md
// 13.1): values of the parameter's storage type drawn per class, so that the native engine and
// the step oracle see the same exact inputs. Internal to sim/verify (campaign_steps.cpp).
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <random>

#include "sim/native/optim_storage.hpp"

namespace exmy::verify::steps_inputs {

using native::Storage;

// ---- input classes ---------------------------------------------------------------------------
enum class Cls { random, zeros, subnormal, ties, pow2, nonfinite, overflow, allzero, wide };
constexpr Cls kAllClasses[] = {Cls::random,    Cls::zeros,    Cls::subnormal, Cls::ties, Cls::pow2,
                               Cls::nonfinite, Cls::overflow, Cls::allzero,   Cls::wide};
inline const char* cls_name(Cls c) {
  switch (c) {
    case Cls::random:
      return "random";
    case Cls::zeros:
      return "zeros";
    case Cls::subnormal:
      return "subnormal";
    case Cls::ties:
      return "ties";
    case Cls::pow2:
      return "pow2";
    case Cls::nonfinite:
      return "inf-nan";
    case Cls::overflow:
      return "overflow";
    case Cls::allzero:
      return "all-zero";
    case Cls::wide:
      return "wide";
  }
  return "?";
}

// Values of the storage type T (so that both engines see the same exact inputs), by class.
class Gen {
 public:
  Gen(std::uint64_t seed, Storage st) : rng_(seed) {
    man_ = st == Storage::bf16 ? 7 : st == Storage::f16 ? 10 : 23;
    emin_ = st == Storage::f16 ? -14 : -126;
    emax_ = st == Storage::f16 ? 15 : 127;
  }
  enum class Role { param, grad };

  float value(Cls c, Role role, std::size_t i) {
    const bool g = role == Role::grad;
    switch (c) {
      case Cls::random:
        return normal(sign(), g ? range(-12, 0) : range(-8, 2), mant());
      case Cls::zeros:
        if (coin(0.4)) return sign() ? -0.0f : 0.0f;
        return normal(sign(), g ? range(-12, 0) : range(-8, 2), mant());
      case Cls::subnormal:
        if (coin(0.5)) return subnormal(sign());
        return normal(sign(), range(emin_, emin_ + 4), mant());
      case Cls::ties: {  // coarse grid k·2^e: exact sums and exact ties in later roundings
        const std::uint32_t top = static_cast<std::uint32_t>(range(0, 3));
        return normal(sign(), range(-6, 2), man_ >= 2 ? top << (man_ - 2) : 0);
      }
      case Cls::pow2:
        return normal(sign(), g ? range(-10, 0) : range(-6, 3), 0);
      case Cls::nonfinite:
        if (g) {
          const double u = uni();
          if (u < 0.06) return INFINITY;
          if (u < 0.12) return -INFINITY;
          if (u < 0.18) return std::bit_cast<float>(coin(0.5) ? 0x7FC00000u : 0xFFC00001u);
        }
        return normal(sign(), g ? range(-12, 0) : range(-8, 2), mant());
      case Cls::overflow:  // near T's largest finite; squares and sums overflow
        if (coin(0.1)) return normal(sign(), emax_, (1u << man_) - 1);
        return normal(sign(), range(g ? emax_ - 12 : emax_ - 3, emax_), mant());
      case Cls::allzero:  // whole blocks of 256 with a zero gradient
        if (g && (i / 256) % 2 == 0) return 0.0f;
        return normal(sign(), g ? range(-12, 0) : range(-8, 2), mant());
      case Cls::wide:
        if (coin(0.05)) return subnormal(sign());
        return normal(sign(), range(emin_, emax_), mant());
    }
    return 0.0f;
  }
  double uni() { return std::uniform_real_distribution<double>(0.0, 1.0)(rng_); }

 private:
  bool coin(double p) { return uni() < p; }
  bool sign() { return (rng_() & 1) != 0; }
  int range(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  std::uint32_t mant() { return static_cast<std::uint32_t>(rng_() & ((1u << man_) - 1)); }
  // (1 + m/2^M)·2^e, e within T's normal range: exact in fp32 for all three storage types.
  float normal(bool neg, int e, std::uint32_t m) const {
    e = std::clamp(e, emin_, emax_);
    const std::uint32_t u = static_cast<std::uint32_t>(e + 127) << 23 | m << (23 - man_);
    return std::bit_cast<float>(u | (neg ? 0x80000000u : 0u));
  }
  // A nonzero subnormal of T: m·2^(emin − M), 0 < m < 2^M.
  float subnormal(bool neg) {
    std::uint32_t m = 0;
    while (m == 0) m = mant();
    const float x = static_cast<float>(std::ldexp(static_cast<double>(m), emin_ - man_));
    return neg ? -x : x;
  }

  std::mt19937_64 rng_;
  int man_, emin_, emax_;
};

}  // namespace exmy::verify::steps_inputs
