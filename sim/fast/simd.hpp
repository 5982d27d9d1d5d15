// The one vector layer of the host fast path (issue 15: "the same fast engine vectorised for the
// host"). Kernels are written once, as templates over the lane count W, with GCC/Clang vector
// extensions (element-wise integer and IEEE fp32 operations: no fast-math, and lane-wise fp32
// addition is the same correctly rounded operation as the scalar one, so -ffp-contract=off keeps
// its meaning). A template body is `EXMY_SIMD_INLINE` and carries no target attribute; it is
// instantiated inside one function per instruction set that does (EXMY_TARGET_AVX2 / _AVX512),
// so its vector code is compiled for that set, and the widest one the CPU supports is chosen at
// run time (simd::active_isa()). The build stays x86-64 baseline: outside those functions only
// SSE2 (W = 4) is used.
//
// Two operations have no portable spelling that both compilers turn into one instruction: the
// 32 x 32 -> 64-bit multiply of the even lanes (PMULUDQ, Philox's mulhilo) and the reversal of
// the four lanes of each 128-bit group (PSHUFD 0x1B). GCC gets its x86 builtins (checked against
// the enclosing function's target when expanded, so they work inside the generic templates);
// clang recognises the portable forms.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>

#if defined(__x86_64__) && !defined(__clang__)
#include <immintrin.h>  // declares GCC's __builtin_ia32_* vector builtins
#endif

#define EXMY_SIMD_INLINE inline __attribute__((always_inline))
#if defined(__x86_64__)
#define EXMY_TARGET_AVX2 __attribute__((target("avx2,f16c")))
#define EXMY_TARGET_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq")))
// The AVX-512 set plus VCVTNEPS2BF16 (AVX512_BF16): only the fp32 -> bf16 rne kernel.
#define EXMY_TARGET_AVX512BF16 \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16")))
#endif

namespace exmy::fast::simd {

// The instruction sets with kernels, narrowest first. avx512bf16 is avx512 plus AVX512_BF16
// (CPUID.(EAX=7,ECX=1):EAX bit 5): the AVX-512 kernels, and fp32 -> bf16 under rne with overflow
// `none` by VCVTNEPS2BF16 (cast_simd.cpp); a limit of avx512 keeps the integer path there.
enum class Isa : int { sse2 = 0, avx2 = 1, avx512 = 2, avx512bf16 = 3 };

// The widest set this CPU and its OS support (CPUID and XGETBV, read once).
Isa detected_isa();
// The set the kernels use now: detected_isa(), or less where a limit is set.
Isa active_isa();
// Internal, for tests: cap the set the kernels use (so the AVX2 and SSE2 kernels run on an
// AVX-512 machine); clear_isa_limit() restores the detected one.
void set_isa_limit(Isa limit);
void clear_isa_limit();
const char* isa_name(Isa isa);
// The lane count of each set's kernels.
constexpr int lanes(Isa isa) {
  return isa >= Isa::avx512 ? 16 : isa == Isa::avx2 ? 8 : 4;
}

// W lanes of each element type. (Specialisations, because GCC ignores vector_size on a dependent
// alias.)
template <int W>
struct Vec;
#define EXMY_SIMD_VEC(W)                                                       \
  template <>                                                                  \
  struct Vec<W> {                                                              \
    typedef std::uint32_t u32 __attribute__((vector_size(4 * W), aligned(4))); \
    typedef std::int32_t i32 __attribute__((vector_size(4 * W), aligned(4)));  \
    typedef std::uint64_t u64 __attribute__((vector_size(4 * W), aligned(4))); \
    typedef long long i64 __attribute__((vector_size(4 * W), aligned(4)));     \
    typedef float f32 __attribute__((vector_size(4 * W), aligned(4)));         \
    typedef std::uint16_t u16 __attribute__((vector_size(2 * W), aligned(2))); \
    typedef short i16 __attribute__((vector_size(2 * W), aligned(2)));         \
    typedef std::uint8_t u8 __attribute__((vector_size(W), aligned(1)));       \
  };
EXMY_SIMD_VEC(4)
EXMY_SIMD_VEC(8)
EXMY_SIMD_VEC(16)
#undef EXMY_SIMD_VEC

// Unaligned loads and stores (memcpy: no alignment or aliasing assumption).
template <typename V>
EXMY_SIMD_INLINE V load(const void* p) {
  V v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <typename V>
EXMY_SIMD_INLINE void store(void* p, V v) {
  std::memcpy(p, &v, sizeof v);
}

// A vector with every lane x.
template <int W>
EXMY_SIMD_INLINE typename Vec<W>::u32 splat(std::uint32_t x) {
  return typename Vec<W>::u32{} + x;
}

// Lane-wise m ? a : b for a mask m of all-ones / all-zeros lanes.
template <typename V>
EXMY_SIMD_INLINE V select(V m, V a, V b) {
  return (a & m) | (b & ~m);
}

// The 64-bit products of the even 32-bit lanes: lane pair (2j, 2j + 1) of the result holds
// a[2j] * b[2j] (low word first).
template <int W>
EXMY_SIMD_INLINE typename Vec<W>::u64 mul_even_u32(typename Vec<W>::u32 a, typename Vec<W>::u32 b) {
  using U64 = typename Vec<W>::u64;
#if defined(__x86_64__) && !defined(__clang__)
  using I32 = typename Vec<W>::i32;
  if constexpr (W == 4) {
    return (U64)__builtin_ia32_pmuludq128((I32)a, (I32)b);
  } else if constexpr (W == 8) {
    return (U64)__builtin_ia32_pmuludq256((I32)a, (I32)b);
  } else {
    return (U64)__builtin_ia32_pmuludq512_mask((I32)a, (I32)b, typename Vec<W>::i64{}, 0xFF);
  }
#else
  return ((U64)a & 0xFFFFFFFFu) * ((U64)b & 0xFFFFFFFFu);
#endif
}

// Lanes (3, 2, 1, 0) of every group of four.
template <int W, std::size_t... I>
EXMY_SIMD_INLINE typename Vec<W>::u32 reverse4_impl(typename Vec<W>::u32 v,
                                                    std::index_sequence<I...>) {
#if defined(__clang__)
  return __builtin_shufflevector(v, v, static_cast<int>(I ^ 3u)...);
#else
  return __builtin_shuffle(v, typename Vec<W>::u32{static_cast<std::uint32_t>(I ^ 3u)...});
#endif
}
template <int W>
EXMY_SIMD_INLINE typename Vec<W>::u32 reverse4(typename Vec<W>::u32 v) {
  return reverse4_impl<W>(v, std::make_index_sequence<W>{});
}

// True when every lane of the mask m (all-ones / all-zeros lanes) is set: MOVMSKPS on SSE2 and
// AVX, a mask compare on AVX-512; elsewhere a loop the compiler reduces.
template <int W>
EXMY_SIMD_INLINE bool all_set(typename Vec<W>::u32 m) {
#if defined(__x86_64__) && !defined(__clang__)
  using F32 = typename Vec<W>::f32;
  if constexpr (W == 4) {
    return __builtin_ia32_movmskps((F32)m) == 0xF;
  } else if constexpr (W == 8) {
    return __builtin_ia32_movmskps256((F32)m) == 0xFF;
  } else {
    return __builtin_ia32_ptestmd512((typename Vec<W>::i32)m, (typename Vec<W>::i32)m, 0xFFFF) ==
           0xFFFF;
  }
#else
  std::uint32_t all = ~0u;
  for (int i = 0; i < W; ++i) all &= m[i];
  return all != 0;
#endif
}

// The low 8 / 16 bits of every lane. narrow_u8 requires every lane below 256 (codes of formats of
// at most 8 bits): GCC turns the generic conversion into byte-by-byte scalar code for 4 and 8
// lanes, so there the saturating packs (exact below 256) and one lane permutation do it (SSE2:
// PACKSSDW, PACKUSWB; AVX2: the same per 128-bit half, then VPERMD), and VPMOVDB on AVX-512.
template <int W>
EXMY_SIMD_INLINE typename Vec<W>::u8 narrow_u8(typename Vec<W>::u32 v) {
#if defined(__x86_64__) && !defined(__clang__)
  if constexpr (W == 16) {
    // VPMOVDB from the register (the generic conversion becomes byte inserts from memory when
    // the vector was spilled).
    typedef char i8x16 __attribute__((vector_size(16)));
    const i8x16 b =
        __builtin_ia32_pmovdb512_mask((typename Vec<W>::i32)v, i8x16{}, static_cast<short>(-1));
    return (typename Vec<W>::u8)b;
  } else {
    typedef short i16x8 __attribute__((vector_size(16)));
    typedef char i8x16 __attribute__((vector_size(16)));
    typedef short i16x16 __attribute__((vector_size(32)));
    using I32 = typename Vec<W>::i32;
    using U32 = typename Vec<W>::u32;
    typename Vec<W>::u8 out;
    if constexpr (W == 4) {
      const i16x8 w = __builtin_ia32_packssdw128((I32)v, (I32)v);
      const i8x16 b = __builtin_ia32_packuswb128(w, w);
      std::memcpy(&out, &b, sizeof out);
    } else {
      const i16x16 w = __builtin_ia32_packssdw256((I32)v, (I32)v);
      const U32 b = (U32)__builtin_ia32_packuswb256(w, w);  // bytes 0-3 of each half
      const U32 p = __builtin_shuffle(b, U32{0, 4, 0, 4, 0, 4, 0, 4});
      std::memcpy(&out, &p, sizeof out);
    }
    return out;
  }
#endif
  return __builtin_convertvector(v, typename Vec<W>::u8);
}
template <int W>
EXMY_SIMD_INLINE typename Vec<W>::u16 narrow_u16(typename Vec<W>::u32 v) {
  return __builtin_convertvector(v, typename Vec<W>::u16);
}
template <int W>
EXMY_SIMD_INLINE typename Vec<W>::u32 widen_u16(typename Vec<W>::u16 v) {
  return __builtin_convertvector(v, typename Vec<W>::u32);
}

}  // namespace exmy::fast::simd
