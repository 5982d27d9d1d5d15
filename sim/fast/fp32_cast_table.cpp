#include "sim/fast/fp32_cast_table.hpp"

#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>

#include "sim/fast/cast_simd.hpp"
#include "sim/native/convert.hpp"
#include "sim/native/fast_cast.hpp"
#include "sim/native/philox.hpp"

namespace exmy::fast {

namespace {

// The arithmetic path, with the format as a compile-time constant where it is a preset so that
// the compiler folds the descriptor into the rounding routine (3-4x faster than a runtime one).
template <typename Fmt>
void arith_cast_with(const float* in, std::uint8_t* out, std::size_t n, const Fmt& fmt,
                     const Rounding& r, std::uint64_t seed, std::uint32_t stream,
                     std::uint64_t first_index) {
  const FloatFormat f = fmt();
  if (r.mode != RoundMode::sr) {
    for (std::size_t i = 0; i < n; ++i) {
      std::uint32_t b;
      std::memcpy(&b, in + i, 4);
      out[i] = static_cast<std::uint8_t>(native::convert(formats::fp32, f, r, b).code);
    }
    return;
  }
  // The mode is pinned to sr here so that the rounding switch folds away.
  const Rounding sr{RoundMode::sr, r.sr_bits, r.overflow};
  const auto one = [&](std::size_t i, std::uint32_t word) {
    std::uint32_t b;
    std::memcpy(&b, in + i, 4);
    const std::uint32_t w = native::sr_word(word, sr.sr_bits);
    out[i] = static_cast<std::uint8_t>(native::convert(formats::fp32, f, sr, b, w).code);
  };
  fast::for_each_philox_word(seed, stream, first_index, n, one);
}

template <const FloatFormat& F>
struct Fixed {
  constexpr FloatFormat operator()() const { return F; }
};
struct Runtime {
  const FloatFormat& f;
  FloatFormat operator()() const { return f; }
};

// sr:R through the 32-bit mode-fixed fast cast (sim/native/fast_cast.hpp, the GPU kernels' own
// arithmetic): Cast(plan, u, word) is one of its sr entry points.
template <typename Cast>
void fixed_sr_cast(const float* in, std::uint8_t* out, std::size_t n, int R, std::uint64_t seed,
                   std::uint32_t stream, std::uint64_t first_index, Cast cast) {
  fast::for_each_philox_word(seed, stream, first_index, n, [&](std::size_t i, std::uint32_t w) {
    std::uint32_t b;
    std::memcpy(&b, in + i, 4);
    out[i] = static_cast<std::uint8_t>(cast(b, native::sr_word(w, R)));
  });
}

// True (and the cast done) when sr:R has a mode-fixed fast path for f.
bool try_fixed_sr(const float* in, std::uint8_t* out, std::size_t n, const FloatFormat& f,
                  const Rounding& r, std::uint64_t seed, std::uint32_t stream,
                  std::uint64_t first_index) {
  if (r.mode != RoundMode::sr) return false;
  const int R = r.sr_bits;
  if (native::fast_cast_supported(f)) {
    const native::FastCastPlan plan = native::make_fast_cast_plan(f, r);
    if (native::fast_mode_for(plan, r) != native::FastMode::sr) return false;
    fixed_sr_cast(in, out, n, R, seed, stream, first_index, [&](std::uint32_t u, std::uint32_t w) {
      return native::fast_cast_fp32_fixed<native::FastMode::sr>(plan, u, w, R);
    });
    return true;
  }
  if (native::fast_e8m0_supported(f) && native::fast_e8m0_mode_for(r) == native::FastMode::sr) {
    const native::FastCastPlan plan = native::make_fast_cast_plan(f, r);
    fixed_sr_cast(in, out, n, R, seed, stream, first_index, [&](std::uint32_t u, std::uint32_t w) {
      return native::fast_cast_fp32_e8m0<native::FastMode::sr>(plan, r, u, w);
    });
    return true;
  }
  return false;
}

void arith_cast(const float* in, std::uint8_t* out, std::size_t n, const FloatFormat& f,
                const Rounding& r, std::uint64_t seed, std::uint32_t stream,
                std::uint64_t first_index) {
#define EXMY_FIXED(P)                                                               \
  if (f == formats::P) {                                                            \
    arith_cast_with(in, out, n, Fixed<formats::P>{}, r, seed, stream, first_index); \
    return;                                                                         \
  }
  EXMY_FIXED(e4m3fn)
  EXMY_FIXED(e5m2)
  EXMY_FIXED(e4m3fnuz)
  EXMY_FIXED(e5m2fnuz)
  EXMY_FIXED(e4m3)
  EXMY_FIXED(e3m4)
  EXMY_FIXED(e4m3b11fnuz)
  EXMY_FIXED(e2m3fn)
  EXMY_FIXED(e3m2fn)
  EXMY_FIXED(e2m1fn)
  EXMY_FIXED(e8m0fnu)
#undef EXMY_FIXED
  arith_cast_with(in, out, n, Runtime{f}, r, seed, stream, first_index);
}

}  // namespace

bool Fp32CastTable::eligible(const FloatFormat& f, const Rounding& r) {
  return f.total_bits() <= 8 && f.man_bits <= 6 && r.mode != RoundMode::sr;
}

Fp32CastTable::Fp32CastTable(const FloatFormat& f, const Rounding& r) : table_(1u << 17) {
  for (std::uint32_t top = 0; top < (1u << 16); ++top) {
    // Representatives: low bits all zero, and low bits nonzero (any nonzero pattern will do,
    // since only the sticky bit can matter; the test sweeps others).
    table_[top << 1] =
        static_cast<std::uint8_t>(native::convert(formats::fp32, f, r, top << 16).code);
    table_[(top << 1) | 1] =
        static_cast<std::uint8_t>(native::convert(formats::fp32, f, r, (top << 16) | 1u).code);
  }
}

const Fp32CastTable& Fp32CastTable::cached(const FloatFormat& f, const Rounding& r) {
  // Tables are built once per (format, rounding) and kept: 128 KiB each.
  using Key = std::tuple<int, int, int, bool, bool, int, bool, int, int>;
  static std::mutex mu;
  static std::map<Key, std::unique_ptr<Fp32CastTable>> cache;
  const Key k{f.exp_bits,
              f.man_bits,
              f.bias,
              f.is_signed,
              f.has_inf,
              static_cast<int>(f.nan),
              f.subnormals,
              static_cast<int>(r.mode),
              static_cast<int>(r.overflow)};
  std::lock_guard<std::mutex> lock(mu);
  auto& slot = cache[k];
  if (!slot) slot = std::make_unique<Fp32CastTable>(f, r);
  return *slot;
}

void cast_fp32_to_u8(const float* in, std::uint8_t* out, std::size_t n, const FloatFormat& f,
                     const Rounding& r, std::uint64_t seed, std::uint32_t stream,
                     std::uint64_t first_index) {
  if (Fp32CastTable::eligible(f, r)) {
    const Fp32CastTable& table = Fp32CastTable::cached(f, r);
    for (std::size_t i = 0; i < n; ++i) {
      std::uint32_t b;
      std::memcpy(&b, in + i, 4);
      out[i] = table(b);
    }
    return;
  }
  if (try_fixed_sr(in, out, n, f, r, seed, stream, first_index)) return;
  arith_cast(in, out, n, f, r, seed, stream, first_index);
}

}  // namespace exmy::fast
