#include "sim/fast/cast_simd.hpp"

#include <atomic>
#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

#include "sim/fast/philox_simd.hpp"
#include "sim/fast/simd.hpp"
#include "sim/native/fast_cast.hpp"
#include "sim/native/philox.hpp"
#include "sim/native/widen.hpp"

namespace exmy::fast {

namespace simd {

namespace {

#if defined(__x86_64__)
// CPUID leaf 1 ECX: OSXSAVE (27), AVX (28), F16C (29); leaf 7 EBX: AVX2 (5), AVX512F (16), AVX512DQ
// (17), AVX512BW (30), AVX512VL (31); XCR0: the OS saves the YMM state (bits 1-2) and the opmask
// and ZMM state (bits 5-7); leaf 7 subleaf 1 EAX: AVX512_BF16 (5), on top of the AVX-512 set.
// Read directly, as array_cast.cpp reads F16C.
Isa probe_isa() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(1, &a, &b, &c, &d) == 0) return Isa::sse2;
  // OSXSAVE, AVX and F16C (the AVX2 kernels convert fp16 inputs with VCVTPH2PS).
  if (((c >> 27) & 1u) == 0 || ((c >> 28) & 1u) == 0 || ((c >> 29) & 1u) == 0) return Isa::sse2;
  unsigned lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  if ((lo & 0x6u) != 0x6u) return Isa::sse2;
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d) == 0) return Isa::sse2;
  if (((b >> 5) & 1u) == 0) return Isa::sse2;
  const unsigned avx512 = (1u << 16) | (1u << 17) | (1u << 30) | (1u << 31);
  if ((b & avx512) != avx512 || (lo & 0xE0u) != 0xE0u) return Isa::avx2;
  const unsigned max_sub = a;  // leaf 7 subleaf 0 EAX: the largest subleaf
  if (max_sub >= 1 && __get_cpuid_count(7, 1, &a, &b, &c, &d) != 0 && ((a >> 5) & 1u) != 0) {
    return Isa::avx512bf16;
  }
  return Isa::avx512;
}
#else
Isa probe_isa() {
  return Isa::sse2;
}
#endif

std::atomic<int> g_limit{static_cast<int>(Isa::avx512bf16)};

}  // namespace

Isa detected_isa() {
  static const Isa isa = probe_isa();
  return isa;
}

Isa active_isa() {
  const int d = static_cast<int>(detected_isa()), l = g_limit.load(std::memory_order_relaxed);
  return static_cast<Isa>(d < l ? d : l);
}

void set_isa_limit(Isa limit) {
  g_limit.store(static_cast<int>(limit), std::memory_order_relaxed);
}

void clear_isa_limit() {
  g_limit.store(static_cast<int>(Isa::avx512bf16), std::memory_order_relaxed);
}

const char* isa_name(Isa isa) {
  return isa == Isa::avx512bf16 ? "avx512bf16"
         : isa == Isa::avx512   ? "avx512"
         : isa == Isa::avx2     ? "avx2"
                                : "sse2";
}

}  // namespace simd

namespace {

using native::FastMode;
using simd::select;
using simd::Vec;

// The plan's constants, one per lane (and the uniform shift counts as scalars).
template <int W>
struct VPlan {
  using U32 = typename Vec<W>::u32;
  U32 norm_min, rebias, half_m1, sub_magic, max_code, sign_bit, zero_clear, rmask;
  U32 ov[2], inf[2], nan[2], zero[2];
  U32 neg_code;      // unsigned formats (e8m0fnu): the code of every negative nonzero finite input
  U32 sr_sub_shift;  // sr below the normal range: d - R = (23 - M + e0 - R) - max(e32, 1)
  // The lean domain: norm_min <= |u| <= the fp32 bits of f's largest finite value, tested as
  // (|u| - norm_min) ^ 2^31 <= lean_span ^ 2^31 (an unsigned compare as a signed one).
  U32 lean_span;
  int d, sign_shift, R, sr_norm_shift;

  EXMY_SIMD_INLINE VPlan(const native::FastCastPlan& p, const Rounding& rounding, int r) {
    norm_min = simd::splat<W>(p.norm_min);
    rebias = simd::splat<W>(p.rebias);
    half_m1 = simd::splat<W>(p.half_m1);
    sub_magic = simd::splat<W>(p.sub_magic);
    max_code = simd::splat<W>(p.max_code);
    sign_bit = simd::splat<W>(p.sign_bit);
    zero_clear = simd::splat<W>(p.neg_zero ? 0u : ~0u);
    R = r;
    rmask = simd::splat<W>(static_cast<std::uint32_t>(low_mask(r)));
    for (int k = 0; k < 2; ++k) {
      ov[k] = simd::splat<W>(p.overflow[k]);
      inf[k] = simd::splat<W>(p.inf[k]);
      nan[k] = simd::splat<W>(p.nan[k]);
      zero[k] = simd::splat<W>(p.zero[k]);
    }
    d = p.normal_shift;
    sign_shift = p.sign_shift;
    sr_norm_shift = p.normal_shift - r;
    neg_code = simd::splat<W>(static_cast<std::uint32_t>(
        native::convert(formats::fp32, p.f, rounding, 0xBF800000u).code));
    const std::uint32_t max_bits = native::bits_of(native::to_float(p.f, p.max_code));
    lean_span = simd::splat<W>((max_bits - p.norm_min) ^ 0x80000000u);
    sr_sub_shift =
        simd::splat<W>(static_cast<std::uint32_t>(p.normal_shift + static_cast<int>(p.e0) - r));
  }
};

// native::fast_cast_fp32_fixed<Mode>(p, u, rand, R) on every lane: the same operations, with
// each `cond ? x : y` computed on both sides and selected by a lane mask. The compares are
// signed where both sides are below 2^31 (magnitudes, codes, t: see fast_cast.hpp), which AVX2
// has as one instruction.
template <int W, FastMode Mode>
EXMY_SIMD_INLINE typename Vec<W>::u32 cast_lanes(const VPlan<W>& c, typename Vec<W>::u32 u,
                                                 typename Vec<W>::u32 rand) {
  using U32 = typename Vec<W>::u32;
  using I32 = typename Vec<W>::i32;
  using F32 = typename Vec<W>::f32;
  const U32 a = u & 0x7FFFFFFFu;
  const U32 sub = (U32)((I32)a < (I32)c.norm_min);
  const U32 xn = a - c.rebias;  // wraps below the normal range: not selected there
  U32 t;
  if constexpr (Mode == FastMode::rtz) {
    // round_below_normal<rtz>: the rne sum C + |v|, one ulp down where it exceeds the exact sum
    // (rz_add_in_binade); the mask is -1 there, so adding it subtracts the ulp.
    const F32 v = (F32)a, m = (F32)c.sub_magic;
    const F32 sum = v + m;
    const U32 tb = ((U32)sum + (U32)((sum - m) > v)) - c.sub_magic;
    t = select(sub, tb, xn >> c.d);
  } else if constexpr (Mode == FastMode::rne) {
    const U32 tb = (U32)((F32)a + (F32)c.sub_magic) - c.sub_magic;  // round_below_normal<rne>
    const U32 tn = (xn + c.half_m1 + ((xn >> c.d) & 1u)) >> c.d;
    t = select(sub, tb, tn);
  } else {
    const U32 e32 = a >> 23;
    const U32 em = e32 - (U32)(e32 == 0u);  // max(e32, 1)
    const U32 x = select(sub, a - ((em - 1u) << 23), xn);
    const U32 ss = c.sr_sub_shift - em;  // d - R below the normal range (>= 0)
    const U32 s = select(sub, select((U32)((I32)ss < 31), ss, U32{} + 31u),
                         U32{} + static_cast<std::uint32_t>(c.sr_norm_shift));
    t = ((x >> s) + (rand & c.rmask)) >> c.R;
  }
  const U32 neg = (U32)((I32)u < 0);
  U32 res = t | ((u >> c.sign_shift) & c.sign_bit);
  res &= ~((U32)(t == 0u) & c.zero_clear);  // t == 0 without a negative zero: +0
  res = select((U32)((I32)t > (I32)c.max_code), select(neg, c.ov[1], c.ov[0]), res);
  const U32 special = (U32)((I32)a >= 0x7F800000);
  const U32 inf = (U32)(a == 0x7F800000u);
  const U32 spec = select(inf, select(neg, c.inf[1], c.inf[0]), select(neg, c.nan[1], c.nan[0]));
  return select(special, spec, res);
}

// cast_lanes where every lane is in the lean domain (normal_lanes): a finite input in f's normal
// range no larger than f's largest finite value, which every mode rounds to a finite code of f's
// normal range (rounding is monotone and the largest finite value is representable), so the
// subnormal, zero, overflow and special selects of cast_lanes all pick the normal-range result
// and only the shift of fast_cast.hpp and the sign remain. This is the common case, and it is
// the same function: callers take it only when normal_lanes holds for all W lanes.
template <int W>
EXMY_SIMD_INLINE typename Vec<W>::u32 normal_lanes(const VPlan<W>& c, typename Vec<W>::u32 u) {
  using U32 = typename Vec<W>::u32;
  using I32 = typename Vec<W>::i32;
  const U32 a = u & 0x7FFFFFFFu;
  return (U32)((I32)((a - c.norm_min) ^ 0x80000000u) <= (I32)c.lean_span);
}

template <int W, FastMode Mode>
EXMY_SIMD_INLINE typename Vec<W>::u32 cast_lanes_lean(const VPlan<W>& c, typename Vec<W>::u32 u,
                                                      typename Vec<W>::u32 rand) {
  using U32 = typename Vec<W>::u32;
  const U32 xn = (u & 0x7FFFFFFFu) - c.rebias;
  U32 t;
  if constexpr (Mode == FastMode::rtz) {
    t = xn >> c.d;
  } else if constexpr (Mode == FastMode::rne) {
    t = (xn + c.half_m1 + ((xn >> c.d) & 1u)) >> c.d;
  } else {
    t = ((xn >> c.sr_norm_shift) + (rand & c.rmask)) >> c.R;
  }
  return t | ((u >> c.sign_shift) & c.sign_bit);
}

// cast_lanes, through the lean form where all W lanes allow it.
template <int W, FastMode Mode>
EXMY_SIMD_INLINE typename Vec<W>::u32 cast_vector(const VPlan<W>& c, typename Vec<W>::u32 u,
                                                  typename Vec<W>::u32 rand) {
  if (simd::all_set<W>(normal_lanes<W>(c, u))) return cast_lanes_lean<W, Mode>(c, u, rand);
  return cast_lanes<W, Mode>(c, u, rand);
}

// The plan of the lean kernels (formats of native::fast_fixed_supported outside
// fast_cast_supported: ranges past fp32's, unsigned formats, M = 0, no subnormals), one constant
// per lane: native::fast_cast_fp32_lean's fields, with the sign shape as run-time masks instead of
// template parameters (a signed format keeps the sign through sign_keep, a fnuz one clears it on
// zero through zero_clear, an unsigned one takes neg_code through uns).
template <int W>
struct GPlan {
  using U32 = typename Vec<W>::u32;
  U32 norm_min, cbias, par_or, par_xor, half_m1, sub_magic, below_mask, max_code, ov0, rmask,
      sr_sub_shift;
  U32 sign_keep, zero_clear, uns, neg_code;
  // The lean domain (|u| - lean_lo <= lean_span, unsigned, tested as signed after flipping bit 31)
  // plus zero where f has one (formats reaching below fp32's range: zero is inline there too);
  // the normal test |u| - norm_min <= normal_span: a finite input in f's normal range no larger
  // than f's largest finite value.
  U32 lean_lo, lean_span, zero_ok, normal_span;
  int d, sign_shift, R, sr_norm_shift;

  EXMY_SIMD_INLINE GPlan(const native::FastCastPlan& p, int r) {
    norm_min = simd::splat<W>(p.norm_min);
    cbias = simd::splat<W>(p.cbias);
    par_or = simd::splat<W>(p.par_or);
    par_xor = simd::splat<W>(p.par_xor);
    half_m1 = simd::splat<W>(p.half_m1);
    // Without below_round the below-range sum is masked off: any normal fp32 number serves.
    sub_magic = simd::splat<W>(p.below_round ? p.sub_magic : 0x4B000000u);
    below_mask = simd::splat<W>(p.below_mask);
    max_code = simd::splat<W>(p.max_code);
    ov0 = simd::splat<W>(p.overflow[0]);
    R = r;
    rmask = simd::splat<W>(static_cast<std::uint32_t>(low_mask(r)));
    sr_sub_shift =
        simd::splat<W>(static_cast<std::uint32_t>(p.normal_shift + static_cast<int>(p.e0) - r));
    const bool is_signed = p.f.is_signed;
    sign_keep = simd::splat<W>(is_signed ? p.sign_bit : 0u);
    zero_clear = simd::splat<W>(is_signed && !p.neg_zero ? ~0u : 0u);
    uns = simd::splat<W>(p.neg_special ? ~0u : 0u);
    neg_code = simd::splat<W>(p.neg_code);
    lean_lo = simd::splat<W>(p.lean_lo);
    lean_span = simd::splat<W>(p.lean_span ^ 0x80000000u);
    zero_ok = simd::splat<W>(p.f.has_zero() ? ~0u : 0u);
    // The largest fp32 magnitude not above f's largest finite value (make_fast_cast_plan's hi
    // before the overflow widening).
    std::uint32_t hi = 0x7F7FFFFFu;
    {
      const Rounding down{RoundMode::rtz, 0, Overflow::satfinite};
      const auto m = static_cast<std::uint32_t>(
          native::convert(p.f, formats::fp32, down, p.f.max_code()).code);
      if (m < hi) hi = m;
    }
    normal_span = simd::splat<W>((hi - p.norm_min) ^ 0x80000000u);
    d = p.normal_shift;
    sign_shift = p.sign_shift;
    sr_norm_shift = p.normal_shift - r;
  }
};

// native::fast_cast_fp32_lean<Mode, Signed, NegZero>(p, u, rand, R) on every lane: exact where
// lean_lanes is set (fast_lean_domain, and zero where f has one); the other lanes are redone by
// fix_lanes. Line by line as in fast_cast.hpp: the rounding of the magnitude bits with cbias added
// in the code domain (par_or, par_xor: M = 0), below f's normal range round_below_normal (rne, rtz)
// or the sr shift of the fp32 significand, masked by below_mask (formats without subnormals: code
// 0), overflow as overflow[0] (the sign or'ed in after), then the sign shape.
template <int W, FastMode Mode>
EXMY_SIMD_INLINE typename Vec<W>::u32 lean_full(const GPlan<W>& c, typename Vec<W>::u32 u,
                                                typename Vec<W>::u32 rand) {
  using U32 = typename Vec<W>::u32;
  using I32 = typename Vec<W>::i32;
  using F32 = typename Vec<W>::f32;
  const U32 a = u & 0x7FFFFFFFu;
  const U32 sub = (U32)((I32)a < (I32)c.norm_min);
  U32 t;
  if constexpr (Mode == FastMode::rtz) {
    const F32 v = (F32)a, m = (F32)c.sub_magic;
    const F32 sum = v + m;
    const U32 tb = ((U32)sum + (U32)((sum - m) > v)) - c.sub_magic;  // round_below_normal<rtz>
    t = select(sub, tb & c.below_mask, (a >> c.d) + c.cbias);
  } else if constexpr (Mode == FastMode::rne) {
    const U32 tb = (U32)((F32)a + (F32)c.sub_magic) - c.sub_magic;  // round_below_normal<rne>
    const U32 par = (((a >> c.d) ^ c.par_xor) | c.par_or) & 1u;
    const U32 tn = ((a + c.half_m1 + par) >> c.d) + c.cbias;
    t = select(sub, tb & c.below_mask, tn);
  } else {
    const U32 e32 = a >> 23;
    const U32 em = e32 - (U32)(e32 == 0u);  // max(e32, 1)
    const U32 x = select(sub, a - ((em - 1u) << 23), a);
    const U32 ss = c.sr_sub_shift - em;  // d - R below the normal range (>= 0)
    const U32 s = select(sub, select((U32)((I32)ss < 31), ss, U32{} + 31u),
                         U32{} + static_cast<std::uint32_t>(c.sr_norm_shift));
    const U32 tr = ((x >> s) + (rand & c.rmask)) >> c.R;
    t = select(sub, tr & c.below_mask, tr + c.cbias);
  }
  t = select((U32)((I32)t > (I32)c.max_code), c.ov0, t);
  U32 res = t | ((u >> c.sign_shift) & c.sign_keep);
  res &= ~((U32)(t == 0u) & c.zero_clear);                                     // fnuz: +0
  return select((U32)((I32)u < 0) & (U32)(a != 0u) & c.uns, c.neg_code, res);  // unsigned
}

// The lanes lean_full computes exactly.
template <int W>
EXMY_SIMD_INLINE typename Vec<W>::u32 lean_lanes(const GPlan<W>& c, typename Vec<W>::u32 u) {
  using U32 = typename Vec<W>::u32;
  using I32 = typename Vec<W>::i32;
  const U32 a = u & 0x7FFFFFFFu;
  return (U32)((I32)((a - c.lean_lo) ^ 0x80000000u) <= (I32)c.lean_span) |
         ((U32)(a == 0u) & c.zero_ok);
}

// The lanes outside lean_lanes (inf, NaN, the engine inputs, overflow where its codes are not
// sign-symmetric) through the scalar native::fast_cast_fp32_fixed: out of line, so that the
// vector loop keeps its registers.
template <FastMode Mode>
__attribute__((noinline)) void fix_lanes(const native::FastCastPlan& p, int w,
                                         const std::uint32_t* u, const std::uint32_t* rand,
                                         const std::uint32_t* ok, std::uint32_t* out, int R) {
  for (int k = 0; k < w; ++k) {
    if (ok[k] == 0) out[k] = native::fast_cast_fp32_fixed<Mode>(p, u[k], rand[k], R);
  }
}

template <int W, FastMode Mode>
EXMY_SIMD_INLINE typename Vec<W>::u32 lean_vector(const GPlan<W>& c, const native::FastCastPlan& p,
                                                  typename Vec<W>::u32 u,
                                                  typename Vec<W>::u32 rand) {
  using U32 = typename Vec<W>::u32;
  using I32 = typename Vec<W>::i32;
  // The common case: every lane a finite input of f's normal range no larger than its largest
  // finite value: the rounding plus cbias and the sign (an unsigned f: neg_code where negative).
  const U32 a = u & 0x7FFFFFFFu;
  const U32 normal = (U32)((I32)((a - c.norm_min) ^ 0x80000000u) <= (I32)c.normal_span);
  if (simd::all_set<W>(normal)) {
    U32 t;
    if constexpr (Mode == FastMode::rtz) {
      t = a >> c.d;
    } else if constexpr (Mode == FastMode::rne) {
      t = (a + c.half_m1 + ((((a >> c.d) ^ c.par_xor) | c.par_or) & 1u)) >> c.d;
    } else {
      t = ((a >> c.sr_norm_shift) + (rand & c.rmask)) >> c.R;
    }
    const U32 res = (t + c.cbias) | ((u >> c.sign_shift) & c.sign_keep);
    return select((U32)((I32)u < 0) & c.uns, c.neg_code, res);
  }
  U32 res = lean_full<W, Mode>(c, u, rand);
  const U32 ok = lean_lanes<W>(c, u);
  if (!simd::all_set<W>(ok)) {
    std::uint32_t ua[W], ra[W], oa[W], out[W];
    simd::store(ua, u);
    simd::store(ra, rand);
    simd::store(oa, ok);
    simd::store(out, res);
    fix_lanes<Mode>(p, W, ua, ra, oa, out, c.R);
    res = simd::load<U32>(out);
  }
  return res;
}

// The fp32 bit patterns of W input elements starting at element i (native::widen_bf16 /
// widen_fp16 lane-wise; fp16 subnormals through the same exact fp32 subtraction).
template <int W, ArrayInput T>
EXMY_SIMD_INLINE typename Vec<W>::u32 load_fp32(const std::uint8_t* in, std::size_t i) {
  using U32 = typename Vec<W>::u32;
  using I32 = typename Vec<W>::i32;
  using F32 = typename Vec<W>::f32;
  if constexpr (T == ArrayInput::fp32) {
    return simd::load<U32>(in + 4 * i);
  } else {
    const U32 h = simd::widen_u16<W>(simd::load<typename Vec<W>::u16>(in + 2 * i));
    if constexpr (T == ArrayInput::bf16) {
      return h << 16;
    }
#if defined(__x86_64__) && !defined(__clang__)
    else if constexpr (W == 8 || W == 16) {
      // VCVTPH2PS (F16C; AVX-512F for 16 lanes) is exact for every fp16 value but NaN (fp32
      // holds them all, subnormals included; exmy never sets MXCSR's DAZ), and a NaN stays a NaN
      // of its sign (quieted). Every NaN of one sign casts to one code (nan[sign], section 4.1),
      // so the codes are those of the payload-keeping native::widen_fp16.
      using I16 = typename Vec<W>::i16;
      const auto raw = simd::load<typename Vec<W>::u16>(in + 2 * i);
      if constexpr (W == 8) {
        return (U32)__builtin_ia32_vcvtph2ps256((I16)raw);
      } else {
        return (U32)__builtin_ia32_vcvtph2ps512_mask((I16)raw, F32{}, static_cast<short>(-1), 4);
      }
    }
#endif
    else {
      const U32 sign = (h & 0x8000u) << 16;
      const U32 mag = h & 0x7FFFu;
      const U32 moved = mag << 13;
      const U32 rsub = (U32)((F32)(moved + (113u << 23)) - (F32)simd::splat<W>(113u << 23));
      const U32 r = select((U32)((I32)mag >= 0x7C00), moved + (224u << 23),
                           select((U32)((I32)mag >= 0x0400), moved + (112u << 23), rsub));
      return sign | r;
    }
  }
}

template <ArrayInput T>
std::uint32_t load_fp32_scalar(const std::uint8_t* in, std::size_t i) {
  if constexpr (T == ArrayInput::fp32) {
    std::uint32_t b;
    std::memcpy(&b, in + 4 * i, 4);
    return b;
  } else {
    std::uint16_t h;
    std::memcpy(&h, in + 2 * i, 2);
    return T == ArrayInput::bf16 ? native::widen_bf16(h) : native::widen_fp16(h);
  }
}

// Codes of elements i .. i + W - 1 at byte offset i * sizeof(Out) (memcpy: the codes may sit at
// any byte address).
template <int W, typename Out>
EXMY_SIMD_INLINE void store_codes(std::uint8_t* out, std::size_t i, typename Vec<W>::u32 codes) {
  if constexpr (sizeof(Out) == 1) {
    simd::store(out + i, simd::narrow_u8<W>(codes));
  } else {
    simd::store(out + 2 * i, simd::narrow_u16<W>(codes));
  }
}

// The kernels: the fast cast into 1- or 2-byte codes, the e8m0 cast, or the lean cast (the other
// formats of native::fast_fixed_supported) into 1- or 2-byte codes.
enum class Target { u8, u16, e8m0, lean8, lean16 };
enum class Kernel { fast, e8m0, lean };

struct Args {
  const native::FastCastPlan* plan;
  Rounding round;
  const void* in;
  void* out;
  std::size_t n;
  int R;
  std::uint64_t seed;
  std::uint32_t stream;
  std::uint64_t first;
  const std::uint32_t* words;  // sr: the R-bit words of the elements instead of Philox's, or null
};

// Elements the vectors do not cover (a head up to the next Philox block, a tail of fewer than W)
// take the scalar function itself.
template <FastMode Mode, ArrayInput T, typename Out, Kernel K>
void cast_scalar(const Args& g, const native::FastCastPlan& p, std::size_t k) {
  const auto* in = static_cast<const std::uint8_t*>(g.in);
  std::uint32_t w = 0;
  if constexpr (Mode == FastMode::sr) {
    w = g.words ? g.words[k]
                : native::sr_word(native::philox_word(g.seed, g.stream, g.first + k), g.R);
  }
  const std::uint32_t u = load_fp32_scalar<T>(in, k);
  std::uint32_t code;
  if constexpr (K == Kernel::e8m0) {
    code = native::fast_cast_fp32_e8m0<Mode>(p, g.round, u, w);
  } else {
    code = native::fast_cast_fp32_fixed<Mode>(p, u, w, g.R);
  }
  const Out c = static_cast<Out>(code);
  std::memcpy(static_cast<std::uint8_t*>(g.out) + k * sizeof(Out), &c, sizeof c);
}

// native::fast_cast_fp32_e8m0<Mode> (e8m0fnu: fp32's exponent field is the code) on every lane:
// a positive normal fp32 input rounds by its mantissa alone (rne: up at m >= 2^22, since the kept
// significand 1 is odd; sr:R: the top R mantissa bits plus the word carry), and a carry past the
// largest finite code is overflow. The inputs the scalar function sends to the native engine
// have results fixed by section 4.1, taken from the engine once (VPlan): negative nonzero finite
// -> neg_code (NaN), +-0 -> zero (NaN: no zero), inf and NaN -> the plan's codes. Only positive
// fp32 subnormals (below 2^-126, inside e8m0's range) take the scalar function, lane by lane.
template <int W, FastMode Mode>
EXMY_SIMD_INLINE typename Vec<W>::u32 e8m0_normal(const VPlan<W>& c, typename Vec<W>::u32 u,
                                                  typename Vec<W>::u32 rand) {
  using U32 = typename Vec<W>::u32;
  using I32 = typename Vec<W>::i32;
  const U32 m = u & 0x007FFFFFu;
  U32 up{};
  if constexpr (Mode == FastMode::rne) {
    up = m >> 22;
  } else if constexpr (Mode == FastMode::sr) {
    up = ((m >> c.sr_norm_shift) + (rand & c.rmask)) >> c.R;
  }
  const U32 code = (u >> 23) + up;
  return select((U32)((I32)code > (I32)c.max_code), c.ov[0], code);
}

// A vector with a lane outside the positive normal range.
template <int W, FastMode Mode>
EXMY_SIMD_INLINE typename Vec<W>::u32 e8m0_mixed(const VPlan<W>& c, const Args& g,
                                                 typename Vec<W>::u32 u,
                                                 typename Vec<W>::u32 rand) {
  using U32 = typename Vec<W>::u32;
  using I32 = typename Vec<W>::i32;
  U32 res = e8m0_normal<W, Mode>(c, u, rand);
  const U32 a = u & 0x7FFFFFFFu;
  const U32 neg = (U32)((I32)u < 0);
  const U32 is_zero = (U32)(a == 0u);
  res = select(neg & ~is_zero, c.neg_code, res);
  res = select(is_zero, select(neg, c.zero[1], c.zero[0]), res);
  const U32 special = (U32)((I32)a >= 0x7F800000);
  const U32 inf = (U32)(a == 0x7F800000u);
  res = select(special,
               select(inf, select(neg, c.inf[1], c.inf[0]), select(neg, c.nan[1], c.nan[0])), res);
  const U32 tiny = ~neg & ~is_zero & (U32)((I32)a < 0x00800000);  // positive fp32 subnormals
  if (!simd::all_set<W>(~tiny)) {
    // Lane by lane through arrays, so that res stays a register value on the paths above.
    std::uint32_t ua[W], ra[W], ta[W], out[W];
    simd::store(ua, u);
    simd::store(ra, rand);
    simd::store(ta, tiny);
    simd::store(out, res);
    for (int k = 0; k < W; ++k) {
      if (ta[k] != 0) out[k] = native::fast_cast_fp32_e8m0<Mode>(*g.plan, g.round, ua[k], ra[k]);
    }
    res = simd::load<U32>(out);
  }
  return res;
}

template <int W, FastMode Mode>
EXMY_SIMD_INLINE typename Vec<W>::u32 e8m0_lanes(const VPlan<W>& c, const Args& g,
                                                 typename Vec<W>::u32 u,
                                                 typename Vec<W>::u32 rand) {
  using U32 = typename Vec<W>::u32;
  using I32 = typename Vec<W>::i32;
  const U32 in_range = (U32)((I32)((u - 0x00800000u) ^ 0x80000000u) <
                             static_cast<std::int32_t>(0x7F000000u ^ 0x80000000u));
  if (simd::all_set<W>(in_range)) return e8m0_normal<W, Mode>(c, u, rand);  // the common case
  return e8m0_mixed<W, Mode>(c, g, u, rand);
}

template <int W, FastMode Mode, Kernel K, typename Plan>
EXMY_SIMD_INLINE typename Vec<W>::u32 lanes(const Plan& c, const Args& g, typename Vec<W>::u32 u,
                                            typename Vec<W>::u32 rand) {
  if constexpr (K == Kernel::e8m0) {
    return e8m0_lanes<W, Mode>(c, g, u, rand);
  } else if constexpr (K == Kernel::lean) {
    return lean_vector<W, Mode>(c, *g.plan, u, rand);
  } else {
    return cast_vector<W, Mode>(c, u, rand);
  }
}

template <int W, Kernel K>
EXMY_SIMD_INLINE auto make_vplan(const native::FastCastPlan& p, const Args& g) {
  if constexpr (K == Kernel::lean) {
    return GPlan<W>(p, g.R);
  } else {
    return VPlan<W>(p, g.round, g.R);
  }
}

template <int W, FastMode Mode, ArrayInput T, typename Out, Kernel K>
EXMY_SIMD_INLINE void cast_body(const Args& g) {
  using U32 = typename Vec<W>::u32;
  const native::FastCastPlan p = *g.plan;
  const auto c = make_vplan<W, K>(p, g);
  const auto* in = static_cast<const std::uint8_t*>(g.in);
  auto* out = static_cast<std::uint8_t*>(g.out);
  const std::size_t n = g.n;
  std::size_t i = 0;
  if constexpr (Mode != FastMode::sr) {
    const U32 none{};
    for (; i + 2 * W <= n; i += 2 * W) {
      store_codes<W, Out>(out, i, lanes<W, Mode, K>(c, g, load_fp32<W, T>(in, i), none));
      store_codes<W, Out>(out, i + W, lanes<W, Mode, K>(c, g, load_fp32<W, T>(in, i + W), none));
    }
    for (; i + W <= n; i += W) {
      store_codes<W, Out>(out, i, lanes<W, Mode, K>(c, g, load_fp32<W, T>(in, i), none));
    }
  } else if (g.words) {
    for (; i + W <= n; i += W) {
      store_codes<W, Out>(
          out, i, lanes<W, Mode, K>(c, g, load_fp32<W, T>(in, i), simd::load<U32>(g.words + i)));
    }
  } else {
    for (; i < n && ((g.first + i) & 3u) != 0; ++i) cast_scalar<Mode, T, Out, K>(g, p, i);
    simd::PhiloxVec<W> gen(g.seed, g.stream, (g.first + i) >> 2);
    const int shift = 32 - g.R;  // sr_word: the top R bits (R <= 22 here)
    constexpr int U = 4;         // four independent Philox chains per step
    for (; i + U * W <= n; i += U * W) {
      U32 w[U];
      gen.template next<U>(w);
      for (int k = 0; k < U; ++k) {
        store_codes<W, Out>(out, i + k * W,
                            lanes<W, Mode, K>(c, g, load_fp32<W, T>(in, i + k * W), w[k] >> shift));
      }
    }
    for (; i + W <= n; i += W) {
      store_codes<W, Out>(out, i,
                          lanes<W, Mode, K>(c, g, load_fp32<W, T>(in, i), gen.next() >> shift));
    }
  }
  for (; i < n; ++i) cast_scalar<Mode, T, Out, K>(g, p, i);
}

template <int W, FastMode Mode, ArrayInput T>
EXMY_SIMD_INLINE void run_out(const Args& g, Target target) {
  switch (target) {
    case Target::u8:
      cast_body<W, Mode, T, std::uint8_t, Kernel::fast>(g);
      break;
    case Target::u16:
      cast_body<W, Mode, T, std::uint16_t, Kernel::fast>(g);
      break;
    case Target::e8m0:
      cast_body<W, Mode, T, std::uint8_t, Kernel::e8m0>(g);
      break;
    case Target::lean8:
      cast_body<W, Mode, T, std::uint8_t, Kernel::lean>(g);
      break;
    case Target::lean16:
      cast_body<W, Mode, T, std::uint16_t, Kernel::lean>(g);
      break;
  }
}

template <int W, FastMode Mode>
EXMY_SIMD_INLINE void run_in(const Args& g, ArrayInput t, Target target) {
  switch (t) {
    case ArrayInput::fp32:
      run_out<W, Mode, ArrayInput::fp32>(g, target);
      break;
    case ArrayInput::fp16:
      run_out<W, Mode, ArrayInput::fp16>(g, target);
      break;
    case ArrayInput::bf16:
      run_out<W, Mode, ArrayInput::bf16>(g, target);
      break;
  }
}

template <int W>
EXMY_SIMD_INLINE void run(const Args& g, FastMode m, ArrayInput t, Target target) {
  switch (m) {
    case FastMode::rne:
      run_in<W, FastMode::rne>(g, t, target);
      break;
    case FastMode::rtz:
      run_in<W, FastMode::rtz>(g, t, target);
      break;
    default:
      run_in<W, FastMode::sr>(g, t, target);
      break;
  }
}

template <int W>
EXMY_SIMD_INLINE void words_body(std::uint64_t seed, std::uint32_t stream, std::uint64_t first,
                                 std::size_t n, std::uint32_t* out) {
  std::size_t i = 0;
  for (; i < n && ((first + i) & 3u) != 0; ++i)
    out[i] = native::philox_word(seed, stream, first + i);
  simd::PhiloxVec<W> gen(seed, stream, (first + i) >> 2);
  constexpr int U = 4;
  for (; i + U * W <= n; i += U * W) {
    typename Vec<W>::u32 w[U];
    gen.template next<U>(w);
    for (int k = 0; k < U; ++k) simd::store(out + i + k * W, w[k]);
  }
  for (; i + W <= n; i += W) simd::store(out + i, gen.next());
  for (; i < n; ++i) out[i] = native::philox_word(seed, stream, first + i);
}

// One function per instruction set: the generic bodies are inlined into each and compiled for
// its set (objdump shows zmm / ymm code in the first two).
#if defined(__x86_64__)
EXMY_TARGET_AVX512 void run_avx512(const Args& g, FastMode m, ArrayInput t, Target target) {
  run<16>(g, m, t, target);
}
EXMY_TARGET_AVX2 void run_avx2(const Args& g, FastMode m, ArrayInput t, Target target) {
  run<8>(g, m, t, target);
}
EXMY_TARGET_AVX512 void words_avx512(std::uint64_t seed, std::uint32_t stream, std::uint64_t first,
                                     std::size_t n, std::uint32_t* out) {
  words_body<16>(seed, stream, first, n, out);
}
EXMY_TARGET_AVX2 void words_avx2(std::uint64_t seed, std::uint32_t stream, std::uint64_t first,
                                 std::size_t n, std::uint32_t* out) {
  words_body<8>(seed, stream, first, n, out);
}
// fp32 -> bf16 under rne with overflow `none` by VCVTNEPS2BF16, which rounds to nearest even
// (ignoring MXCSR) and gives +-inf on overflow as that policy does (SEMANTICS 4.2), but treats
// input denormals as zero and gives NaN its quieted payload. bf16 has fp32's exponent range, so
// only fp32 subnormal inputs (exponent field 0, mantissa != 0) round into bf16's subnormals or
// to zero by value: a vector with such a lane (rare) takes the scalar function lane by lane.
// NaN lanes become sign | 0x7FC0 (SEMANTICS 4.1: no payload) by a masked move; the instruction
// keeps the sign.
//
// Memory (1 thread, AMD EPYC build machine, against torch's .to(bfloat16) in the same Python
// round robin, bench/results/2026-11-26-cpu-bf16-stream.md):
//   - the elements before the first 32-byte boundary of the output take the scalar function, so
//     that no vector store splits a cache line (NumPy's arrays start 16 bytes into one);
//   - outputs of kBf16StreamBytes and more are written by non-temporal stores: the codes of a
//     large cast are not read back by the cast, and streaming them spares the read for ownership
//     of every output line (exmy.cast 1.23-1.31x torch at 2^20..2^23 elements in the round robin
//     of experiments/round-robin-after.txt, 1.04-1.25x in the peers benchmark; 0.84-1.01x before).
//     Streaming stores that split lines were slower than plain ones (the earlier measurement
//     that kept them out): the alignment above is what makes them pay;
//   - the scalar elements (head, rare vectors, tail) run out of line (bf16_rne_scalar): inlined,
//     their state pushed the loop's constants to the stack, four reloads per vector.
constexpr std::size_t kBf16StreamBytes = std::size_t{1} << 20;

__attribute__((noinline)) void bf16_rne_scalar(const Args& g, std::size_t from, std::size_t to) {
  const native::FastCastPlan p = *g.plan;
  for (std::size_t k = from; k < to; ++k)
    cast_scalar<FastMode::rne, ArrayInput::fp32, std::uint16_t, Kernel::fast>(g, p, k);
}

// The vectors from element i on until the end or a vector with an fp32 subnormal lane, whose
// index it returns (n - n % 16 past the last vector). No call inside: the constants stay in
// registers.
template <bool Stream>
EXMY_TARGET_AVX512BF16 std::size_t bf16_rne_vectors(const Args& g, std::size_t i) {
  const auto* in = static_cast<const std::uint8_t*>(g.in);
  auto* out = static_cast<std::uint8_t*>(g.out);
  const std::size_t n = g.n;
  const __m512i mag = _mm512_set1_epi32(0x7FFFFFFF);
  const __m512i one = _mm512_set1_epi32(1);
  const __m512i sub_top = _mm512_set1_epi32(0x007FFFFE);  // |u| - 1 <= this: an fp32 subnormal
  const __m512i inf_bits = _mm512_set1_epi32(0x7F800000);
  const __m256i sign16 = _mm256_set1_epi16(static_cast<short>(0x8000));
  const __m256i qnan16 = _mm256_set1_epi16(0x7FC0);
  for (; i + 16 <= n; i += 16) {
    const __m512 x = _mm512_loadu_ps(in + 4 * i);
    const __m512i a = _mm512_and_si512(_mm512_castps_si512(x), mag);
    const __mmask16 sub = _mm512_cmple_epu32_mask(_mm512_sub_epi32(a, one), sub_top);
    if (__builtin_expect(sub != 0, 0)) break;
    __m256i h = (__m256i)_mm512_cvtneps_pbh(x);
    const __mmask16 nan = _mm512_cmpgt_epu32_mask(a, inf_bits);
    h = _mm256_mask_mov_epi16(h, nan, _mm256_or_si256(_mm256_and_si256(h, sign16), qnan16));
    auto* dst = reinterpret_cast<__m256i*>(out + 2 * i);
    if constexpr (Stream) {
      _mm256_stream_si256(dst, h);
    } else {
      _mm256_storeu_si256(dst, h);
    }
  }
  return i;
}

void bf16_rne_avx512bf16(const Args& g) {
  const std::size_t n = g.n;
  const auto addr = reinterpret_cast<std::uintptr_t>(g.out);
  // Elements up to the output's next 32-byte boundary (none where the codes are not 2-aligned).
  const std::size_t head = addr % 2 != 0 ? 0 : std::min<std::size_t>(n, (32 - addr % 32) % 32 / 2);
  bf16_rne_scalar(g, 0, head);
  const bool stream = addr % 2 == 0 && 2 * n >= kBf16StreamBytes;
  std::size_t i = head;
  for (;;) {
    i = stream ? bf16_rne_vectors<true>(g, i) : bf16_rne_vectors<false>(g, i);
    if (i + 16 > n) break;
    bf16_rne_scalar(g, i, i + 16);  // a vector with an fp32 subnormal lane
    i += 16;
  }
  if (stream) _mm_sfence();  // the streamed codes ordered before any later store
  bf16_rne_scalar(g, i, n);
}
#endif
void run_sse2(const Args& g, FastMode m, ArrayInput t, Target target) {
  run<4>(g, m, t, target);
}
void words_sse2(std::uint64_t seed, std::uint32_t stream, std::uint64_t first, std::size_t n,
                std::uint32_t* out) {
  words_body<4>(seed, stream, first, n, out);
}

}  // namespace

bool simd_cast_supported(const FloatFormat& f, const Rounding& r) {
  if (native::fast_e8m0_supported(f)) return native::fast_e8m0_mode_for(r) != FastMode::any;
  if (!native::fast_fixed_supported(f)) return false;
  return native::fast_mode_for(f, r) != FastMode::any;
}

namespace {

void run_kernel(const void* in, ArrayInput t, std::size_t n, void* codes, const FloatFormat& f,
                const Rounding& r, std::uint64_t seed, std::uint32_t stream,
                std::uint64_t first_index, const std::uint32_t* words) {
  const native::FastCastPlan plan = native::make_fast_cast_plan(f, r);
  const bool e8m0 = native::fast_e8m0_supported(f);
  const FastMode m = e8m0 ? native::fast_e8m0_mode_for(r) : native::fast_mode_for(plan, r);
  const Args g{&plan, r,      in,          codes, n, m == FastMode::sr ? r.sr_bits : 0,
               seed,  stream, first_index, words};
  const bool wide = f.total_bits() > 8;
  const Target target = e8m0                             ? Target::e8m0
                        : native::fast_cast_supported(f) ? (wide ? Target::u16 : Target::u8)
                                                         : (wide ? Target::lean16 : Target::lean8);
  switch (simd::active_isa()) {
#if defined(__x86_64__)
    case simd::Isa::avx512bf16:
      if (t == ArrayInput::fp32 && m == FastMode::rne && target == Target::u16 &&
          f == formats::bf16 && r.overflow == Overflow::none) {
        bf16_rne_avx512bf16(g);
        return;
      }
      run_avx512(g, m, t, target);
      return;
    case simd::Isa::avx512:
      run_avx512(g, m, t, target);
      return;
    case simd::Isa::avx2:
      run_avx2(g, m, t, target);
      return;
#endif
    default:
      run_sse2(g, m, t, target);
      return;
  }
}

}  // namespace

void simd_cast_to_codes(const void* in, ArrayInput t, std::size_t n, void* codes,
                        const FloatFormat& f, const Rounding& r, std::uint64_t seed,
                        std::uint32_t stream, std::uint64_t first_index) {
  run_kernel(in, t, n, codes, f, r, seed, stream, first_index, nullptr);
}

void simd_cast_to_codes_with_words(const void* in, ArrayInput t, std::size_t n, void* codes,
                                   const FloatFormat& f, const Rounding& r,
                                   const std::uint32_t* words) {
  run_kernel(in, t, n, codes, f, r, 0, 0, 0, r.mode == RoundMode::sr ? words : nullptr);
}

void philox_words(std::uint64_t seed, std::uint32_t stream, std::uint64_t first_index,
                  std::size_t n, std::uint32_t* out) {
  switch (simd::active_isa()) {
#if defined(__x86_64__)
    case simd::Isa::avx512bf16:
    case simd::Isa::avx512:
      words_avx512(seed, stream, first_index, n, out);
      return;
    case simd::Isa::avx2:
      words_avx2(seed, stream, first_index, n, out);
      return;
#endif
    default:
      words_sse2(seed, stream, first_index, n, out);
      return;
  }
}

}  // namespace exmy::fast
