#include "sim/fast/array_cast.hpp"

#include <cstring>
#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif
#include <map>
#include <memory>
#include <mutex>
#include <tuple>

#include "sim/common/error.hpp"
#include "sim/fast/fp32_cast_table.hpp"
#include "sim/native/convert.hpp"
#include "sim/native/fast_cast.hpp"
#include "sim/native/philox.hpp"
#include "sim/native/widen.hpp"

namespace exmy::fast {

namespace {

// Calls emit(i, fp32 bits of element i, R-bit word of element first + i) for i in [0, n); the
// words are 0 unless Sr (native::for_each_philox_word, docs/SEMANTICS.md 3.2).
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
    native::for_each_philox_word(seed, stream, first, n, [&](std::size_t i, std::uint32_t w) {
      emit(i, bits(i), native::sr_word(w, R));
    });
  }
}

// ---- the 16-bit fast calls: fp32 → bf16 and fp32 → fp16 under rne and rtz ---------------------
// bf16 has fp32's exponent range, so rounding to bf16 is integer rounding of the fp32 bit pattern
// at bit 16: a carry moves into the next binade (into inf above the largest finite: IEEE overflow,
// section 4.2 `none`), subnormals stay subnormal, ±0 and ±inf are fixed points. Only NaNs need
// the canonical code (section 4.1: sign | 0x7FC0) and the saturating policies a clamp. The loop is
// branch-free so the compiler vectorises it (no intrinsics, no fast-math).
template <bool Rne>
void fp32_to_bf16(const float* in, std::uint16_t* out, std::size_t n, Overflow ov) {
  const std::uint32_t sat_inf = ov == Overflow::satfinite ? 1u : 0u;  // inf inputs saturate too
  const std::uint32_t sat = ov == Overflow::none ? 0u : 1u;
  for (std::size_t i = 0; i < n; ++i) {
    std::uint32_t u;
    std::memcpy(&u, in + i, 4);
    const std::uint32_t mag = u & 0x7FFFFFFFu, sign = (u >> 16) & 0x8000u;
    const std::uint32_t r = Rne ? (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16 : u >> 16;
    const std::uint32_t rmag = r & 0x7FFFu;
    // Overflow: a finite input rounded to inf (sat, satfinite), or an inf input (satfinite).
    const bool to_max = (rmag == 0x7F80u) & (((mag < 0x7F800000u) & (sat != 0)) |
                                             ((mag == 0x7F800000u) & (sat_inf != 0)));
    std::uint32_t c = to_max ? (sign | 0x7F7Fu) : r;
    c = mag > 0x7F800000u ? (sign | 0x7FC0u) : c;
    out[i] = static_cast<std::uint16_t>(c);
  }
}

// fp32 → fp16 under rne / rtz with the x86 F16C conversion (VCVTPS2PH: IEEE rounding with the
// mode in its immediate, subnormal results kept; this process never sets MXCSR's FTZ/DAZ), then
// section 4's fix-ups branch-free: NaN → sign | 0x7E00 (F16C keeps payload bits), and the
// saturating policies. Chosen at run time where the CPU has F16C; otherwise the fast cast below.
#if defined(__x86_64__)
__attribute__((target("avx,f16c"))) void fp32_to_fp16_f16c(const float* in, std::uint16_t* out,
                                                           std::size_t n, bool rne, Overflow ov) {
  const std::uint32_t sat = ov == Overflow::none ? 0u : 1u;
  const std::uint32_t sat_inf = ov == Overflow::satfinite ? 1u : 0u;
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(in + i);
    const __m128i h = rne ? _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
                          : _mm256_cvtps_ph(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), h);
  }
  for (; i < n; ++i) {  // the tail, one element at a time through the same instruction
    const __m128i h =
        rne ? _mm_cvtps_ph(_mm_set_ss(in[i]), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
            : _mm_cvtps_ph(_mm_set_ss(in[i]), _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    out[i] = static_cast<std::uint16_t>(_mm_extract_epi16(h, 0));
  }
  for (std::size_t k = 0; k < n; ++k) {
    std::uint32_t u;
    std::memcpy(&u, in + k, 4);
    const std::uint32_t mag = u & 0x7FFFFFFFu, sign = (u >> 16) & 0x8000u, r = out[k];
    const bool to_max = ((r & 0x7FFFu) == 0x7C00u) & (((mag < 0x7F800000u) & (sat != 0)) |
                                                      ((mag == 0x7F800000u) & (sat_inf != 0)));
    std::uint32_t c = to_max ? (sign | 0x7BFFu) : r;
    c = mag > 0x7F800000u ? (sign | 0x7E00u) : c;
    out[k] = static_cast<std::uint16_t>(c);
  }
}
// F16C and AVX from CPUID leaf 1 (ECX bits 29 and 28) plus the OS's consent to save the YMM state
// (OSXSAVE, ECX bit 27, and XCR0 bits 1-2). Read directly rather than through
// __builtin_cpu_supports, whose feature strings differ between compilers (clang 14 rejects "f16c").
bool cpu_has_f16c() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(1, &a, &b, &c, &d) == 0) return false;
  const bool f16c = (c >> 29) & 1u, avx = (c >> 28) & 1u, osxsave = (c >> 27) & 1u;
  if (!(f16c && avx && osxsave)) return false;
  unsigned lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (lo & 0x6u) == 0x6u;
}
bool have_f16c() {
  static const bool has = cpu_has_f16c();
  return has;
}
#endif

// fp32 values into 16-bit codes (9..16-bit f): the bf16 / fp16 calls above, the fast cast where f
// has one, else the native engine.
void fp32_to_u16(const float* in, std::uint16_t* out, std::size_t n, const FloatFormat& f,
                 const Rounding& r, std::uint64_t seed, std::uint32_t stream, std::uint64_t first) {
  if (f == formats::bf16 && (r.mode == RoundMode::rne || r.mode == RoundMode::rtz)) {
    if (r.mode == RoundMode::rne) {
      fp32_to_bf16<true>(in, out, n, r.overflow);
    } else {
      fp32_to_bf16<false>(in, out, n, r.overflow);
    }
    return;
  }
#if defined(__x86_64__)
  if (f == formats::fp16 && (r.mode == RoundMode::rne || r.mode == RoundMode::rtz) && have_f16c()) {
    fp32_to_fp16_f16c(in, out, n, r.mode == RoundMode::rne, r.overflow);
    return;
  }
#endif
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
  const native::FastCastPlan p = native::make_fast_cast_plan(f, r);
  using native::FastMode;
  switch (native::fast_mode_for(p, r)) {
    case FastMode::rne:
      put([&](std::uint32_t u, std::uint32_t) {
        return native::fast_cast_fp32_fixed<FastMode::rne>(p, u, 0, 0);
      });
      break;
    case FastMode::rtz:
      put([&](std::uint32_t u, std::uint32_t) {
        return native::fast_cast_fp32_fixed<FastMode::rtz>(p, u, 0, 0);
      });
      break;
    case FastMode::sr:
      put([&](std::uint32_t u, std::uint32_t w) {
        return native::fast_cast_fp32_fixed<FastMode::sr>(p, u, w, R);
      });
      break;
    case FastMode::any:
      put([&](std::uint32_t u, std::uint32_t w) { return native::fast_cast_fp32(p, r, u, w); });
      break;
  }
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
                   std::uint64_t first_index) {
  if (!array_cast_supported(f)) {
    throw InputError("cast_to_codes: format has " + std::to_string(f.total_bits()) +
                     " bits, expected at most 16");
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
