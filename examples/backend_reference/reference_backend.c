/* A correct exmy backend written from docs/SEMANTICS.md alone (sections 1-4), in C99 with no
 * exmy code: the plugin a user would write, and the template for a kernel's host wrapper.
 *
 * Formats: signed e<X>m<Y>, e<X>m<Y>fn, e<X>m<Y>fnuz with X + Y <= 15 (plus fp16 and bf16), i.e.
 * every signed format of at most 16 bits with the default bias and subnormals. Rounding: every
 * mode and overflow policy of the ABI (include/exmy/backend.h). Anything else returns 1.
 *
 * Defining EXMY_REFERENCE_TIES_AWAY makes "rne" round ties away from zero: the planted bug of
 * examples/backend_wrong_tie/, which `exmy fuzz` must catch. The other EXMY_REFERENCE_* macros
 * below plant one classic bug each for the bug zoo (examples/backend_zoo/README.md); with none
 * defined this file is the correct plugin. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "exmy/backend.h"

enum nan_kind { NAN_IEEE, NAN_ALL_ONES, NAN_NEG_ZERO, NAN_NONE };
enum mode { RNE, RNA, RTZ, RUP, RDN, RTO, SR };
enum policy { POL_NONE, POL_SATFINITE, POL_SAT };

struct fmt {
  int E, M, bias;
  int has_inf;
  enum nan_kind nan;
};

/* SEMANTICS 1: the naming grammar's table (signed formats, default bias). */
static int parse_format(const char* s, struct fmt* f) {
  char* end;
  long X, Y;
  if (strcmp(s, "fp16") == 0) s = "e5m10";
  if (strcmp(s, "bf16") == 0) s = "e8m7";
  if (s[0] != 'e') return 0;
  X = strtol(s + 1, &end, 10);
  if (end == s + 1 || *end != 'm') return 0;
  s = end + 1;
  Y = strtol(s, &end, 10);
  if (end == s || X < 1 || Y < 0 || X + Y > 15) return 0;
  f->E = (int)X;
  f->M = (int)Y;
  if (*end == '\0') { /* IEEE-style: inf, NaN = e all ones and m != 0 */
    if (X < 2) return 0;
    f->bias = (1 << (X - 1)) - 1;
    f->has_inf = 1;
    f->nan = Y > 0 ? NAN_IEEE : NAN_NONE; /* e<X>m0 has inf but no NaN code (SEMANTICS 2.2) */
  } else if (strcmp(end, "fn") == 0) {
    f->bias = (1 << (X - 1)) - 1;
    f->has_inf = 0;
    f->nan = X + Y <= 5 ? NAN_NONE : NAN_ALL_ONES;
  } else if (strcmp(end, "fnuz") == 0) {
#ifdef EXMY_REFERENCE_FNUZ_BIAS
    f->bias = (1 << (X - 1)) - 1; /* the planted bug: the OCP bias, one below fnuz's 2^(X-1) */
#else
    f->bias = 1 << (X - 1);
#endif
    f->has_inf = 0;
    f->nan = NAN_NEG_ZERO;
  } else {
    return 0;
  }
  return 1;
}

static int parse_rounding(const char* s, enum mode* m, int* R, enum policy* p) {
  const char* plus = strchr(s, '+');
  size_t len = plus ? (size_t)(plus - s) : strlen(s);
  *R = 0;
  *p = POL_NONE;
  if (plus) {
    if (strcmp(plus + 1, "satfinite") == 0)
      *p = POL_SATFINITE;
    else if (strcmp(plus + 1, "sat") == 0)
      *p = POL_SAT;
    else if (strcmp(plus + 1, "none") != 0)
      return 0;
  }
  if (len == 3 && strncmp(s, "rne", 3) == 0)
    *m = RNE;
  else if (len == 3 && strncmp(s, "rna", 3) == 0)
    *m = RNA;
  else if (len == 3 && strncmp(s, "rtz", 3) == 0)
    *m = RTZ;
  else if (len == 3 && strncmp(s, "rup", 3) == 0)
    *m = RUP;
  else if (len == 3 && strncmp(s, "rdn", 3) == 0)
    *m = RDN;
  else if (len == 3 && strncmp(s, "rto", 3) == 0)
    *m = RTO;
  else if (len >= 4 && len <= 5 && strncmp(s, "sr:", 3) == 0) {
    size_t k;
    *m = SR;
    for (k = 3; k < len; ++k) {
      if (s[k] < '0' || s[k] > '9') return 0;
      *R = *R * 10 + (s[k] - '0');
    }
    if (*R < 1 || *R > 32 || s[3] == '0') return 0;
  } else {
    return 0;
  }
  return 1;
}

/* Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC11), keyed and
   countered as SEMANTICS 3.2 says. */
static uint32_t philox_word(uint64_t seed, uint64_t i) {
  uint32_t c[4], k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
  int r;
#ifdef EXMY_REFERENCE_PHILOX_COUNTER_I
  c[0] = (uint32_t)i; /* the planted bug: counter i instead of i/4 */
  c[1] = (uint32_t)(i >> 32);
#else
  c[0] = (uint32_t)(i >> 2);
  c[1] = (uint32_t)(i >> 34);
#endif
  c[2] = 0; /* stream 0: element-wise casts */
  c[3] = 0;
  for (r = 0; r < 10; ++r) {
    uint64_t p0 = (uint64_t)0xD2511F53u * c[0], p1 = (uint64_t)0xCD9E8D57u * c[2];
    uint32_t n0 = (uint32_t)(p1 >> 32) ^ c[1] ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c[3] ^ k1;
    c[1] = (uint32_t)p1;
    c[3] = (uint32_t)p0;
    c[0] = n0;
    c[2] = n2;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
#ifdef EXMY_REFERENCE_PHILOX_NEXT_WORD
  return c[(i + 1) & 3]; /* the planted bug: the next word of the block */
#else
  return c[i & 3];
#endif
}

static uint32_t sign_bit(const struct fmt* f) {
  return 1u << (f->E + f->M);
}
static uint32_t exp_ones(const struct fmt* f) {
  return (1u << f->E) - 1;
}

/* SEMANTICS 1: the largest finite magnitude and the NaN code for a given sign. */
static uint32_t max_code(const struct fmt* f) {
  uint32_t man_ones = (1u << f->M) - 1;
  if (f->nan == NAN_IEEE || (f->has_inf && f->nan == NAN_NONE))
    return ((exp_ones(f) - 1) << f->M) | man_ones;
  if (f->nan == NAN_ALL_ONES) return ((exp_ones(f) << f->M) | man_ones) - 1;
  return (exp_ones(f) << f->M) | man_ones;
}
static uint32_t inf_code(const struct fmt* f) {
  return exp_ones(f) << f->M;
}

/* SEMANTICS 4.1; -1 when the format has no NaN. */
static long nan_code(const struct fmt* f, int neg) {
  uint32_t s = neg ? sign_bit(f) : 0;
  switch (f->nan) {
    case NAN_IEEE:
      return (long)(s | inf_code(f) | (1u << (f->M - 1)));
    case NAN_ALL_ONES:
      return (long)(s | (exp_ones(f) << f->M) | ((1u << f->M) - 1));
    case NAN_NEG_ZERO:
      return (long)sign_bit(f);
    default:
      return -1;
  }
}

/* "inf" of SEMANTICS 4.2: inf where the format has it, else NaN, else max. */
static uint32_t inf_like(const struct fmt* f, int neg) {
  uint32_t s = neg ? sign_bit(f) : 0;
  if (f->has_inf) return s | inf_code(f);
  if (f->nan != NAN_NONE) return (uint32_t)nan_code(f, neg);
  return s | max_code(f);
}

/* SEMANTICS 4.2, finite overflow. */
static uint32_t overflow_code(const struct fmt* f, enum mode m, enum policy p, int neg) {
  uint32_t s = neg ? sign_bit(f) : 0;
#ifdef EXMY_REFERENCE_SAT_NAN_SWAPPED
  if (p != POL_NONE) return inf_like(f, neg); /* the planted bug: saturation gives "inf" */
#else
  if (p != POL_NONE) return s | max_code(f);
#endif
  switch (m) {
    case RTZ:
    case RTO:
      return s | max_code(f);
    case RUP:
      return neg ? (s | max_code(f)) : inf_like(f, 0);
    case RDN:
      return neg ? inf_like(f, 1) : max_code(f);
    default:
      return inf_like(f, neg);
  }
}

/* A zero result with the input's sign (SEMANTICS 2 step 5; +0 in fnuz formats). */
static uint32_t zero_code(const struct fmt* f, uint32_t s) {
#ifdef EXMY_REFERENCE_LOST_NEG_ZERO
  (void)f, (void)s;
  return 0; /* the planted bug: -0 and negative underflow come out +0 */
#else
  return f->nan == NAN_NEG_ZERO ? 0 : s;
#endif
}

static uint32_t cast_one(const struct fmt* f, enum mode m, int R, enum policy p, uint32_t u,
                         uint64_t seed, uint64_t index) {
  int neg = (int)(u >> 31), e32 = (int)((u >> 23) & 0xFF), q, shift, ex, emin = 1 - f->bias;
  uint64_t sig = u & 0x7FFFFFu, T, rem, half, up = 0;
  uint32_t s = neg ? sign_bit(f) : 0, field, man;
  if (e32 == 0xFF && sig != 0) { /* NaN (4.1) */
    long c = nan_code(f, neg);
#if defined(EXMY_REFERENCE_NAN_TO_MAX)
    return s | max_code(f); /* the planted bug: NaN becomes the largest finite value */
#elif defined(EXMY_REFERENCE_SAT_NAN_SWAPPED)
    if (p != POL_NONE) return s | max_code(f); /* the planted bug: a saturating NaN */
#endif
    return c < 0 ? 0 : (uint32_t)c;
  }
  if (e32 == 0xFF) { /* +-inf (4.1, 4.2) */
#ifdef EXMY_REFERENCE_SAT_NAN_SWAPPED
    if (p == POL_SATFINITE) return inf_like(f, neg); /* the planted bug */
#else
    if (p == POL_SATFINITE) return s | max_code(f);
#endif
    return inf_like(f, neg);
  }
#ifdef EXMY_REFERENCE_DAZ
  if (e32 == 0) sig = 0; /* the planted bug: an fp32 subnormal input is read as zero */
#endif
  if (e32 == 0 && sig == 0) return zero_code(f, s); /* +-0 */
  /* |x| = sig * 2^ex exactly; its leading bit gives the binade exponent (SEMANTICS 2). */
  if (e32 == 0) {
    ex = -149;
  } else {
    sig |= 1u << 23;
    ex = e32 - 150;
  }
  {
    int lead = 63, binade;
    while (!((sig >> lead) & 1)) --lead;
    binade = lead + ex;
    q = (binade >= emin ? binade : emin) - f->M; /* step 1 */
  }
  shift = q - ex; /* T = floor(sig / 2^shift), f = remainder / 2^shift (step 2) */
  if (shift <= 0) {
    T = sig << -shift;
    rem = 0;
    half = 1;
  } else if (shift > 62) {
    T = 0;
    rem = sig;
    half = (uint64_t)1 << 61;
  } else {
    T = sig >> shift;
    rem = sig & (((uint64_t)1 << shift) - 1);
    half = (uint64_t)1 << (shift - 1);
  }
#ifdef EXMY_REFERENCE_OVERFLOW_BEFORE_ROUNDING
  /* A planted bug for tests (tests/backend/plugins/overflow_bug_backend.c): overflow decided on
     the input, |x| > max, instead of after rounding (step 6), so (max, threshold] overflows. */
  if (T >= ((uint64_t)1 << f->M)) {
    long biased = (long)q + f->M + f->bias;
    uint32_t mx = max_code(f), man_max = mx & ((1u << f->M) - 1);
    uint32_t man_in = (uint32_t)(T - ((uint64_t)1 << f->M));
    if (biased > (long)(mx >> f->M) ||
        (biased == (long)(mx >> f->M) && (man_in > man_max || (man_in == man_max && rem > 0))))
      return overflow_code(f, m, p, neg);
  }
#endif
#ifdef EXMY_REFERENCE_OVERFLOW_TIE
  /* A planted bug: overflow tested as |x| >= max + q/2 (>= where step 6 means >), so the exact
     threshold tie overflows even where the tie rule rounds it down to max (e4m3fn: 464). */
  if (m == RNE && rem == half && T >= ((uint64_t)1 << f->M) &&
      (long)q + f->M + f->bias == (long)(max_code(f) >> f->M) &&
      T - ((uint64_t)1 << f->M) == (max_code(f) & ((1u << f->M) - 1)))
    return overflow_code(f, m, p, neg);
#endif
  switch (m) { /* step 3 */
    case RNE:
#if defined(EXMY_REFERENCE_TIES_AWAY)
      up = rem >= half; /* the planted bug: a tie goes away from zero */
#elif defined(EXMY_REFERENCE_TIES_TO_ODD)
      up = rem > half || (rem == half && !(T & 1)); /* the planted bug: ties to odd */
#elif defined(EXMY_REFERENCE_SUBNORMAL_TIES_AWAY)
      /* The planted bug: below 2^emin (T < 2^M, a subnormal result) a tie goes away from zero. */
      up = T < ((uint64_t)1 << f->M) ? rem >= half : rem > half || (rem == half && (T & 1));
#else
      up = rem > half || (rem == half && (T & 1));
#endif
      break;
    case RNA:
      up = rem >= half;
      break;
    case RTZ:
      break;
    case RUP:
      up = rem > 0 && !neg;
      break;
    case RDN:
      up = rem > 0 && neg;
      break;
    case RTO:
      if (rem > 0) T |= 1;
      break;
    case SR: {
      /* floor(f * 2^R); f < 2^-38 when shift > 62, so the truncation is 0 there. */
      uint64_t fr = shift <= 0 || shift > 62 ? 0
                    : shift >= R             ? rem >> (shift - R)
                                             : rem << (R - shift);
#ifdef EXMY_REFERENCE_SR_LOW_BITS
      /* The planted bug: the low R bits of the word instead of the top R. */
      uint32_t w = (uint32_t)(philox_word(seed, index) & (((uint64_t)1 << R) - 1));
#else
      uint32_t w = philox_word(seed, index) >> (32 - R);
#endif
      up = fr + w >= ((uint64_t)1 << R);
      break;
    }
  }
  T += up;
  if (T == ((uint64_t)1 << (f->M + 1))) { /* step 4: carry into the next binade */
    T >>= 1;
    ++q;
  }
  if (T == 0) return zero_code(f, s); /* step 5 */
#ifdef EXMY_REFERENCE_FTZ
  if (T < ((uint64_t)1 << f->M)) return zero_code(f, s); /* the planted bug: flush to zero */
#else
  if (T < ((uint64_t)1 << f->M)) return s | (uint32_t)T; /* subnormal: e = 0 */
#endif
  /* Normal: the biased exponent of T * 2^q; step 6 decides overflow after rounding. */
  {
    long biased = (long)q + f->M + f->bias;
    uint32_t mx = max_code(f);
    man = (uint32_t)(T - ((uint64_t)1 << f->M));
    if (biased > (long)(mx >> f->M) ||
        (biased == (long)(mx >> f->M) && man > (mx & ((1u << f->M) - 1))))
      return overflow_code(f, m, p, neg);
    field = (uint32_t)biased;
  }
  return s | (field << f->M) | man;
}

#ifdef EXMY_REFERENCE_DEQUANTIZE_IN_PLACE
/* The fp32 bit pattern of code c of f (SEMANTICS 1; every value of a format of at most 16 bits
   with the default bias is an fp32 value): what the planted bug writes back into x. */
static uint32_t decode_f32(const struct fmt* f, uint32_t c) {
  uint32_t s = (c & sign_bit(f)) ? 0x80000000u : 0, e = (c >> f->M) & exp_ones(f);
  uint32_t man = c & ((1u << f->M) - 1);
  uint64_t T;
  int q, lead, e32;
  if ((f->nan == NAN_IEEE && e == exp_ones(f) && man != 0) ||
      (f->nan == NAN_ALL_ONES && e == exp_ones(f) && man == (1u << f->M) - 1) ||
      (f->nan == NAN_NEG_ZERO && c == sign_bit(f)))
    return s | 0x7FC00000u;
  if (f->has_inf && e == exp_ones(f)) return s | 0x7F800000u;
  T = e ? ((uint64_t)1 << f->M) | man : man;
  q = (e ? (int)e : 1) - f->bias - f->M;
  if (T == 0) return s;
  for (lead = 15; !((T >> lead) & 1); --lead) {
  }
  e32 = lead + q;
  if (e32 >= -126)
    return s | (uint32_t)(e32 + 127) << 23 | (uint32_t)((T << (23 - lead)) & 0x7FFFFFu);
  return s | (uint32_t)(T << (q + 149)); /* an fp32 subnormal */
}
#endif

EXMY_BACKEND_EXPORT unsigned exmy_backend_abi_version(void) {
  return EXMY_BACKEND_ABI_VERSION;
}

EXMY_BACKEND_EXPORT int exmy_backend_cast_f32(const char* format, const char* rounding,
                                              unsigned long long seed, const float* x, void* codes,
                                              unsigned long long n) {
  struct fmt f;
  enum mode m;
  enum policy p;
  int R;
  unsigned long long i;
  if (!parse_format(format, &f) || !parse_rounding(rounding, &m, &R, &p)) return 1;
  for (i = 0; i < n; ++i) {
    uint32_t u, c;
    memcpy(&u, x + i, 4);
    c = cast_one(&f, m, R, p, u, seed, i);
    if (1 + f.E + f.M <= 8) {
      ((unsigned char*)codes)[i] = (unsigned char)c;
    } else {
      ((unsigned char*)codes)[2 * i] = (unsigned char)c;
      ((unsigned char*)codes)[2 * i + 1] = (unsigned char)(c >> 8);
    }
#ifdef EXMY_REFERENCE_DEQUANTIZE_IN_PLACE
    /* The planted bug: the rounded value is stored back over the input (fake quantization in
       place). The codes are right; the caller's x is not what it passed. */
    u = decode_f32(&f, c);
    memcpy((void*)(x + i), &u, 4);
#endif
  }
#ifdef EXMY_REFERENCE_WRITE_PAST_END
  /* The planted bug: a grid rounded up to whole blocks whose extra thread clamps its load index
     to n - 1 but not its store index, so the code of element n - 1 is stored again at codes[n]. */
  if (n > 0) {
    size_t cb = 1 + f.E + f.M <= 8 ? 1 : 2;
    memmove((unsigned char*)codes + n * cb, (unsigned char*)codes + (n - 1) * cb, cb);
  }
#endif
  return 0;
}
