#include "sim/format/registry.hpp"

#include <cmath>

#include "sim/common/error.hpp"
#include "sim/format/float_names.hpp"
#include "sim/format/int_format.hpp"
#include "sim/format/rounding_names.hpp"
#include "sim/oracle/mpfr_engine.hpp"

namespace exmy {

namespace {

// Comparison of an exact value with a float32 (every float32 is exact as a double).
int cmp_f32(mpfr_srcptr x, float v) {
  return mpfr_cmp_d(x, static_cast<double>(v));
}

// Codebook rounding of an exact value (docs/SEMANTICS.md 5.3).
Encoded codebook_encode(const Codebook& cb, mpfr_srcptr x, const Rounding& r, std::uint32_t rand,
                        TieRule tie) {
  const float* v = cb.values.data();
  if (mpfr_nan_p(x)) return {0, flag::invalid};  // bitsandbytes' search also ends on code 0
  int code = 0;
  switch (r.mode) {
    case RoundMode::rne:
    case RoundMode::rna: {
      if (tie == TieRule::bnb_cpu) {
        // The CPU path works on the fp32 input it is given: RN32(x) first.
        code = codebook_nearest(v, mpfr_get_flt(x, MPFR_RNDN), TieRule::bnb_cpu);
        break;
      }
      // Count the fp32 midpoints m_k = RN32(c_k + c_{k+1}) * 0.5f strictly below x, exactly.
      int lo = 0, hi = 255;
      while (lo < hi) {
        const int mid = (lo + hi) / 2;
        if (cmp_f32(x, native::codebook_midpoint(v, mid)) > 0) {
          lo = mid + 1;
        } else {
          hi = mid;
        }
      }
      code = lo;
      if (lo < 255 && cmp_f32(x, native::codebook_midpoint(v, lo)) == 0) {
        if (r.mode == RoundMode::rna) {
          code = mpfr_sgn(x) > 0 ? lo + 1 : lo;  // the larger magnitude
        } else if (tie == TieRule::even_index) {
          code = (lo & 1) ? lo + 1 : lo;
        }
      }
      break;
    }
    case RoundMode::rtz:
    case RoundMode::rup:
    case RoundMode::rdn: {
      const bool down = r.mode == RoundMode::rdn || (r.mode == RoundMode::rtz && mpfr_sgn(x) >= 0);
      if (down) {  // the last code <= x (0 below c_0)
        int lo = 0, hi = 256;
        while (lo < hi) {
          const int mid = (lo + hi) / 2;
          if (cmp_f32(x, v[mid]) >= 0) {
            lo = mid + 1;
          } else {
            hi = mid;
          }
        }
        code = lo > 0 ? lo - 1 : 0;
      } else {  // the first code >= x (255 above c_255)
        int lo = 0, hi = 256;
        while (lo < hi) {
          const int mid = (lo + hi) / 2;
          if (cmp_f32(x, v[mid]) > 0) {
            lo = mid + 1;
          } else {
            hi = mid;
          }
        }
        code = lo < 256 ? lo : 255;
      }
      break;
    }
    case RoundMode::sr: {
      // bitsandbytes' stochastic lookup on RN32(x), with u = w * 2^-R (exact for R <= 24; the
      // top 24 bits of a 32-bit word for larger R, as native::uniform_from_word).
      const int R = r.sr_bits;
      const std::uint32_t w = rand & static_cast<std::uint32_t>(low_mask(R));
      const float u = R <= 24 ? std::ldexp(static_cast<float>(w), -R)
                              : std::ldexp(static_cast<float>(w >> (R - 24)), -24);
      code = codebook_stochastic(v, mpfr_get_flt(x, MPFR_RNDN), u);
      break;
    }
    case RoundMode::rto: {
      std::string modes;  // every mode of the rounding registry but this one
      for (const RoundMode m : round_modes()) {
        if (m == RoundMode::rto) continue;
        modes += (modes.empty() ? "" : ", ") + std::string(round_mode_name(m)) +
                 (m == RoundMode::sr ? ":R" : "");
      }
      throw InputError("round-to-odd is not defined for codebook " + cb.name + " (expected " +
                       modes + ")");
    }
  }
  std::uint32_t flags = 0;
  const int c = cmp_f32(x, v[code]);
  if (c != 0) flags |= flag::inexact;
  if (mpfr_inf_p(x) || (c > 0 && code == 255) || (c < 0 && code == 0)) {
    if (c != 0) flags |= flag::overflow;  // outside [c_0, c_255]: held at the end code
  }
  return {static_cast<std::uint64_t>(code), flags};
}

}  // namespace

native::Unpacked unpack_mpfr(mpfr_srcptr x) {
  native::Unpacked u;
  u.negative = mpfr_signbit(x) != 0;
  if (mpfr_nan_p(x)) {
    u.cls = ValueClass::nan;
    return u;
  }
  if (mpfr_inf_p(x)) {
    u.cls = ValueClass::inf;
    return u;
  }
  if (mpfr_zero_p(x)) {
    u.cls = ValueClass::zero;
    return u;
  }
  u.cls = ValueClass::normal;
  // x = m * 2^e with 0.5 <= |m| < 1, so |x| = sig * 2^(exp - 63) with exp = e - 1.
  const long e = mpfr_get_exp(x);
  u.exp = static_cast<int>(e - 1);
  mpfr_t t;
  mpfr_init2(t, std::max<mpfr_prec_t>(mpfr_get_prec(x), 64));
  mpfr_abs(t, x, MPFR_RNDN);              // exact (same or larger precision)
  mpfr_mul_2si(t, t, 64 - e, MPFR_RNDN);  // exact: into [2^63, 2^64)
  mpfr_t whole;
  mpfr_init2(whole, 64);
  mpfr_rint_floor(whole, t, MPFR_RNDN);  // exact at 64 bits
  u.sig = mpfr_get_uj(whole, MPFR_RNDN);
  u.sticky = mpfr_cmp(whole, t) != 0;
  mpfr_clear(whole);
  mpfr_clear(t);
  return u;
}

int Format::code_bits() const {
  switch (kind) {
    case FormatKind::floating:
      return fp.total_bits();
    case FormatKind::integer:
      return in.bits;
    case FormatKind::codebook:
      return 8;
  }
  return 0;
}

bool Format::is_signed() const {
  switch (kind) {
    case FormatKind::floating:
      return fp.is_signed;
    case FormatKind::integer:
      return in.is_signed;
    case FormatKind::codebook:
      return cb->values[0] < 0.0f;
  }
  return true;
}

bool Format::has_nan() const {
  return kind == FormatKind::floating && oracle::has_nan_code(fp);
}

ValueClass Format::classify(std::uint64_t code) const {
  switch (kind) {
    case FormatKind::floating:
      return oracle::classify(fp, code);
    case FormatKind::integer:
      return in.value_of(code) == 0 ? ValueClass::zero : ValueClass::normal;
    case FormatKind::codebook:
      return cb->values[code & 0xFF] == 0.0f ? ValueClass::zero : ValueClass::normal;
  }
  return ValueClass::normal;
}

void Format::exact_value(std::uint64_t code, mpfr_ptr out) const {
  switch (kind) {
    case FormatKind::floating:
      oracle::decode(fp, code, out);
      return;
    case FormatKind::integer:
      if (mpfr_get_prec(out) < 64) mpfr_set_prec(out, 64);
      mpfr_set_sj(out, in.value_of(code), MPFR_RNDN);
      return;
    case FormatKind::codebook:
      if (mpfr_get_prec(out) < 24) mpfr_set_prec(out, 24);
      mpfr_set_flt(out, cb->values[code & 0xFF], MPFR_RNDN);
      return;
  }
}

Encoded Format::encode(mpfr_srcptr x, const Rounding& r, std::uint32_t rand, TieRule tie) const {
  switch (kind) {
    case FormatKind::floating:
      return oracle::encode(fp, r, x, rand);
    case FormatKind::integer:
      return native::int_encode(in, r, unpack_mpfr(x), rand);
    case FormatKind::codebook:
      return codebook_encode(*cb, x, r, rand, tie);
  }
  return {};
}

std::string format_name_help() {
  std::string s = "floats: ";
  for (const auto& p : float_presets()) s += std::string(p.name) + " ";
  s += "or e<X>m<Y>[b<N>][fn|fnuz|fnu][b<N>]; ints: int<N> (symmetric), int<N>full, uint<N> "
       "(N = 2..32; int8, int8full, uint8); codebooks: dynamic, dynamic-unsigned, linear, "
       "linear-unsigned, table:PATH";
  return s;
}

Format parse_format(std::string_view name) {
  Format f;
  f.name = std::string(name);
  if (const auto fp = parse_float_format(name)) {
    f.kind = FormatKind::floating;
    f.fp = *fp;
    return f;
  }
  if (const auto in = parse_int_format(name)) {
    f.kind = FormatKind::integer;
    f.in = *in;
    return f;
  }
  f.kind = FormatKind::codebook;
  if (name == "dynamic" || name == "dynamic-unsigned") {
    f.cb = std::make_shared<const Codebook>(dynamic_codebook(name == "dynamic"));
    return f;
  }
  if (name == "linear" || name == "linear-unsigned") {
    f.cb = std::make_shared<const Codebook>(linear_codebook(name == "linear"));
    return f;
  }
  if (name.substr(0, 6) == "table:" && name.size() > 6) {
    f.cb = std::make_shared<const Codebook>(load_codebook(std::string(name.substr(6))));
    return f;
  }
  throw InputError("unknown format '" + std::string(name) + "' (expected " + format_name_help() +
                   ")");
}

}  // namespace exmy
