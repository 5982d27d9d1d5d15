#include "sim/fast/array_cast.hpp"

#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#if defined(_OPENMP)
#include <omp.h>
#endif

#include "sim/common/error.hpp"
#include "sim/fast/cast_simd.hpp"
#include "sim/fast/fp32_cast_table.hpp"
#include "sim/native/convert.hpp"
#include "sim/native/fast_cast.hpp"
#include "sim/native/philox.hpp"
#include "sim/native/widen.hpp"

namespace exmy::fast {

namespace {

// Elements per thread task of cast_to_codes (a multiple of 4: whole Philox blocks per task).
constexpr std::size_t kThreadChunk = std::size_t{1} << 16;

// Calls emit(i, fp32 bits of element i, R-bit word of element first + i) for i in [0, n); the
// words are 0 unless Sr (fast::for_each_philox_word, docs/SEMANTICS.md 3.2).
template <bool Sr, typename Emit>
void for_each_fp32(const float* in, std::size_t n, int R, std::uint64_t seed, std::uint32_t stream,
                   std::uint64_t first, Emit emit) {
  const auto bits = [&](std::size_t i) {
    std::uint32_t b;
    std::memcpy(&b, in + i, 4);
    return b;
  };
  if constexpr (!Sr) {
    for (std::size_t i = 0; i < n; ++i) emit(i, bits(i), 0u);
  } else {
    fast::for_each_philox_word(seed, stream, first, n, [&](std::size_t i, std::uint32_t w) {
      emit(i, bits(i), native::sr_word(w, R));
    });
  }
}

// fp32 values into 16-bit codes (9..16-bit f) where the vector kernels do not serve (f, r): the
// fast cast's any-mode function where f has one, else the native engine.
void fp32_to_u16(const float* in, std::uint16_t* out, std::size_t n, const FloatFormat& f,
                 const Rounding& r, std::uint64_t seed, std::uint32_t stream, std::uint64_t first) {
  const bool sr = r.mode == RoundMode::sr;
  const int R = r.sr_bits;
  const auto put = [&](auto cast) {
    if (sr) {
      for_each_fp32<true>(in, n, R, seed, stream, first,
                          [&](std::size_t i, std::uint32_t u, std::uint32_t w) {
                            out[i] = static_cast<std::uint16_t>(cast(u, w));
                          });
    } else {
      for_each_fp32<false>(in, n, R, seed, stream, first,
                           [&](std::size_t i, std::uint32_t u, std::uint32_t w) {
                             out[i] = static_cast<std::uint16_t>(cast(u, w));
                           });
    }
  };
  if (!native::fast_cast_supported(f)) {
    put([&](std::uint32_t u, std::uint32_t w) {
      return static_cast<std::uint32_t>(native::convert(formats::fp32, f, r, u, w).code);
    });
    return;
  }
  // The vector kernels take rne, rtz and sr:R (R <= 23 - M): the other modes here.
  const native::FastCastPlan p = native::make_fast_cast_plan(f, r);
  put([&](std::uint32_t u, std::uint32_t w) { return native::fast_cast_fp32(p, r, u, w); });
}

// fp32 values into codes: 1 or 2 bytes each by f's width.
void fp32_to_codes(const float* in, std::size_t n, void* codes, const FloatFormat& f,
                   const Rounding& r, std::uint64_t seed, std::uint32_t stream,
                   std::uint64_t first) {
  if (f.total_bits() <= 8) {
    cast_fp32_to_u8(in, static_cast<std::uint8_t*>(codes), n, f, r, seed, stream, first);
  } else {
    fp32_to_u16(in, static_cast<std::uint16_t*>(codes), n, f, r, seed, stream, first);
  }
}

// One piece of cast_to_codes, on the calling thread.
void cast_piece(const void* in, ArrayInput t, std::size_t n, void* codes, const FloatFormat& f,
                const Rounding& r, std::uint64_t seed, std::uint32_t stream,
                std::uint64_t first_index) {
  if (simd_cast_supported(f, r)) {
    simd_cast_to_codes(in, t, n, codes, f, r, seed, stream, first_index);
    return;
  }
  if (t == ArrayInput::fp32) {
    fp32_to_codes(static_cast<const float*>(in), n, codes, f, r, seed, stream, first_index);
    return;
  }
  // fp16 / bf16: widened exactly into an fp32 buffer, a piece at a time.
  constexpr std::size_t kPiece = 2048;
  float buf[kPiece];
  const std::size_t code_size = f.total_bits() <= 8 ? 1 : 2;
  for (std::size_t at = 0; at < n; at += kPiece) {
    const std::size_t m = n - at < kPiece ? n - at : kPiece;
    for (std::size_t i = 0; i < m; ++i) {
      const std::uint32_t u = widen_to_fp32(in, t, at + i);
      std::memcpy(&buf[i], &u, 4);
    }
    fp32_to_codes(buf, m, static_cast<std::uint8_t*>(codes) + at * code_size, f, r, seed, stream,
                  first_index + at);
  }
}

}  // namespace

std::size_t array_input_bytes(ArrayInput t) {
  return t == ArrayInput::fp32 ? 4 : 2;
}

std::uint32_t widen_to_fp32(const void* in, ArrayInput t, std::size_t i) {
  const auto* p = static_cast<const std::uint8_t*>(in);
  if (t == ArrayInput::fp32) {
    std::uint32_t b;
    std::memcpy(&b, p + 4 * i, 4);
    return b;
  }
  std::uint16_t h;
  std::memcpy(&h, p + 2 * i, 2);
  return t == ArrayInput::bf16 ? native::widen_bf16(h) : native::widen_fp16(h);
}

bool array_cast_supported(const FloatFormat& f) {
  return f.total_bits() <= 16;
}

void cast_to_codes(const void* in, ArrayInput t, std::size_t n, void* codes, const FloatFormat& f,
                   const Rounding& r, std::uint64_t seed, std::uint32_t stream,
                   std::uint64_t first_index, int threads) {
  if (!array_cast_supported(f)) {
    throw InputError("cast_to_codes: format has " + std::to_string(f.total_bits()) +
                     " bits, expected at most 16");
  }
  if (threads == 1 || n <= kThreadChunk) {
    cast_piece(in, t, n, codes, f, r, seed, stream, first_index);
    return;
  }
  // Fixed pieces of kThreadChunk elements, whichever thread takes them: every code depends only
  // on its element and index (the Philox word of sr:R included), so the result does not depend
  // on the number of threads.
  const auto* src = static_cast<const std::uint8_t*>(in);
  auto* dst = static_cast<std::uint8_t*>(codes);
  const std::size_t es = array_input_bytes(t), cb = f.total_bits() <= 8 ? 1 : 2;
  const auto pieces = static_cast<std::ptrdiff_t>((n + kThreadChunk - 1) / kThreadChunk);
#if defined(_OPENMP)
  const int team = threads > 0 ? threads : omp_get_max_threads();
#pragma omp parallel for schedule(dynamic) num_threads(team)
#endif
  for (std::ptrdiff_t k = 0; k < pieces; ++k) {
    const std::size_t at = static_cast<std::size_t>(k) * kThreadChunk;
    const std::size_t m = n - at < kThreadChunk ? n - at : kThreadChunk;
    cast_piece(src + at * es, t, m, dst + at * cb, f, r, seed, stream, first_index + at);
  }
}

const std::vector<float>& decode_table(const FloatFormat& f) {
  if (f.total_bits() > 16) {
    throw InputError("decode_table: format has " + std::to_string(f.total_bits()) +
                     " bits, expected at most 16");
  }
  using Key = std::tuple<int, int, int, bool, bool, int, bool>;
  static std::mutex mu;
  static std::map<Key, std::unique_ptr<std::vector<float>>> cache;
  const Key k{f.exp_bits,  f.man_bits, f.bias, f.is_signed, f.has_inf, static_cast<int>(f.nan),
              f.subnormals};
  std::lock_guard<std::mutex> lock(mu);
  auto& slot = cache[k];
  if (!slot) {
    const std::uint32_t codes = 1u << f.total_bits();
    slot = std::make_unique<std::vector<float>>(codes);
    for (std::uint32_t c = 0; c < codes; ++c) (*slot)[c] = native::to_float(f, c);
  }
  return *slot;
}

}  // namespace exmy::fast
