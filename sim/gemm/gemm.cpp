#include "sim/gemm/gemm.hpp"

#include <mpfr.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "sim/common/error.hpp"
#include "sim/format/registry.hpp"
#include "sim/io/npy.hpp"
#include "sim/native/convert.hpp"

namespace exmy::gemm {

namespace {

// |x| = s 2^e with s in [1, 2), or, below the format's minimum exponent, e = emin and s < 1.
// Read from the fp64 bits (every input value here is a normal fp64 number or zero): the
// exponent field and the significand with its exponent set to 0. Only a value below the
// format's minimum exponent takes the slow path.
void sig_exp(double x, int emin, double& s, int& e) {
  std::uint64_t u;
  std::memcpy(&u, &x, 8);
  u &= 0x7FFFFFFFFFFFFFFFull;
  e = static_cast<int>(u >> 52) - 1023;
  u = (u & 0x000FFFFFFFFFFFFFull) | (std::uint64_t{1023} << 52);
  std::memcpy(&s, &u, 8);
  if (e < emin) {
    s = std::ldexp(s, e - emin);
    e = emin;
  }
}

// 2^k for k in [-1022, 1023], from its bits.
double pow2(int k) {
  const std::uint64_t u = static_cast<std::uint64_t>(k + 1023) << 52;
  double d;
  std::memcpy(&d, &u, 8);
  return d;
}

float rn32(double x) {
  return static_cast<float>(x);  // one IEEE conversion, round to nearest even
}

// fp32 with `bits` fraction bits, toward zero (or nearest even), fp32's exponent range: the
// hw model's normalisation of a group sum.
float normalise(double v, int bits, bool rne) {
  if (v == 0.0) return 0.0f;
  int ex = 0;
  std::frexp(std::fabs(v), &ex);
  int e = ex - 1;
  if (e < -126) e = -126;
  const double q = std::ldexp(1.0, e - bits);
  double n = v / q;  // exact: a power-of-two scaling
  n = rne ? std::nearbyint(n) : std::trunc(n);
  const double r = n * q;
  if (std::fabs(r) >= std::ldexp(1.0, 128)) return v > 0 ? INFINITY : -INFINITY;
  return static_cast<float>(r);  // exact: representable in fp32
}

// fp32 -> tf32 (10 fraction bits): toward zero; to nearest, ties away (add half a tf32 ulp to
// the magnitude bits, then clear the low 13); or to nearest even (add half an ulp minus one plus
// the kept lsb). A carry into the exponent is the right result; values near the maximum become
// infinity.
double tf32(double x, AccumModel::Tf32Round r) {
  float f = static_cast<float>(x);
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7F800000u) != 0x7F800000u) {
    if (r == AccumModel::Tf32Round::rna) u += 0x1000u;
    if (r == AccumModel::Tf32Round::rne) u += 0x0FFFu + ((u >> 13) & 1u);
    u &= 0xFFFFE000u;
  }
  std::memcpy(&f, &u, 4);
  return f;
}

// One fused group: c plus the products a_k b_k, k in [k0, k1).
float fused_group(float c, const double* a, const double* b, std::size_t k0, std::size_t k1,
                  int emin_a, int emin_b, const AccumModel& m) {
  // Specials first: any NaN, or infinities of both signs, give NaN; an infinity gives itself.
  bool nan = std::isnan(c), pinf = c == INFINITY, ninf = c == -INFINITY;
  for (std::size_t k = k0; k < k1; ++k) {
    const double p = a[k] * b[k];
    nan = nan || std::isnan(p);
    pinf = pinf || p == INFINITY;
    ninf = ninf || p == -INFINITY;
  }
  if (nan || (pinf && ninf)) return std::numeric_limits<float>::quiet_NaN();
  if (pinf) return INFINITY;
  if (ninf) return -INFINITY;
  // Terms: (sign, significand in [0, 4), exponent).
  struct Term {
    double s;
    int e;
  };
  Term terms[4097];
  std::size_t n = 0;
  int emax = std::numeric_limits<int>::min();
  {
    double s;
    int e;
    sig_exp(c, -126, s, e);
    terms[n++] = {c < 0 ? -s : s, c == 0.0f ? std::numeric_limits<int>::min() : e};
    if (c != 0.0f) emax = e;
  }
  for (std::size_t k = k0; k < k1; ++k) {
    double sa, sb;
    int ea, eb;
    sig_exp(a[k], emin_a, sa, ea);
    sig_exp(b[k], emin_b, sb, eb);
    const double s = sa * sb;  // exact: at most 24 + 24 significant bits
    const bool zero = a[k] == 0.0 || b[k] == 0.0;
    const bool neg = (a[k] < 0) != (b[k] < 0);
    terms[n++] = {neg ? -s : s, zero ? std::numeric_limits<int>::min() : ea + eb};
    if (!zero && ea + eb > emax) emax = ea + eb;
  }
  if (emax == std::numeric_limits<int>::min()) {
    // Every term is zero: the sign of an exact zero sum (IEEE: +0 unless all are -0).
    bool all_neg = std::signbit(c);
    for (std::size_t k = k0; k < k1; ++k) all_neg = all_neg && std::signbit(a[k] * b[k]);
    return all_neg ? -0.0f : 0.0f;
  }
  // Truncate each term toward zero to frac_bits below 2^emax; sum the integers exactly.
  __int128 sum = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (terms[i].e == std::numeric_limits<int>::min()) continue;
    const int k = m.frac_bits + terms[i].e - emax;
    if (k < -60) continue;                             // |s| < 4: the term truncates to 0
    const double scaled = terms[i].s * pow2(k);        // exact: a power-of-two scaling
    sum += static_cast<__int128>(std::trunc(scaled));  // |scaled| < 2^(frac_bits + 2)
  }
  const double v = std::ldexp(static_cast<double>(sum), emax - m.frac_bits);  // exact: < 2^53
  if (sum == 0) return 0.0f;
  return normalise(v, m.inter_bits, m.inter_rne);
}

float chunk_fp32(const double* a, const double* b, std::size_t k0, std::size_t k1, int emin_a,
                 int emin_b, const AccumModel& m) {
  if (m.kind == AccumKind::fp32_seq) {
    float c = 0.0f;
    for (std::size_t k = k0; k < k1; ++k) {
      c = std::fmaf(static_cast<float>(a[k]), static_cast<float>(b[k]), c);
    }
    return c;
  }
  if (m.kind == AccumKind::pairwise) {
    // Leaves: fma(a, b, 0) = RN32(a b); a node adds its halves (left of size n/2) in fp32.
    const std::size_t n = k1 - k0;
    if (n == 0) return 0.0f;
    if (n == 1) return std::fmaf(static_cast<float>(a[k0]), static_cast<float>(b[k0]), 0.0f);
    const std::size_t h = n / 2;
    return chunk_fp32(a, b, k0, k0 + h, emin_a, emin_b, m) +
           chunk_fp32(a, b, k0 + h, k1, emin_a, emin_b, m);
  }
  float c = 0.0f;
  const std::size_t g = static_cast<std::size_t>(m.k_group);
  for (std::size_t k = k0; k < k1; k += g) {
    c = fused_group(c, a, b, k, k + g < k1 ? k + g : k1, emin_a, emin_b, m);
  }
  return c;
}

std::uint32_t bits32(float f) {
  if (f != f) return 0x7FFFFFFFu;  // NaN: the canonical pattern MMA-Sim and CUDA produce
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

std::uint32_t out_code(float acc, OutFormat out) {
  switch (out) {
    case OutFormat::fp32:
      return bits32(acc);
    case OutFormat::bf16:
      return static_cast<std::uint32_t>(
          native::convert(formats::fp32, formats::bf16, Rounding{}, bits32(acc), 0).code);
    case OutFormat::fp16:
      return static_cast<std::uint32_t>(
          native::convert(formats::fp32, formats::fp16, Rounding{}, bits32(acc), 0).code);
  }
  return 0;
}

}  // namespace

Operand operand_from_codes(const std::vector<std::uint16_t>& codes, std::size_t rows,
                           std::size_t cols, const FloatFormat& fmt) {
  Operand o;
  o.rows = rows;
  o.cols = cols;
  o.code_bits = fmt.total_bits() <= 8 ? 8 : 16;
  o.emin = fmt.subnormals ? 1 - fmt.bias : -fmt.bias;
  o.v.resize(codes.size());
  for (std::size_t i = 0; i < codes.size(); ++i) o.v[i] = native::to_double(fmt, codes[i]);
  return o;
}

Operand operand_from_fp32(const std::vector<float>& x, std::size_t rows, std::size_t cols) {
  Operand o;
  o.rows = rows;
  o.cols = cols;
  o.code_bits = 32;
  o.emin = -126;
  o.v.assign(x.begin(), x.end());
  return o;
}

Operand read_operand(const std::string& path, const std::string& fmt_name, const char* which) {
  const io::NpyArray a = io::read_npy(path);
  io::require_c_order(a, path);
  if (a.shape.size() != 2) {
    throw InputError(path + ": " + std::to_string(a.shape.size()) + "-d array (expected the 2-d " +
                     which + ", rows x K)");
  }
  const std::size_t rows = a.shape[0], cols = a.shape[1];
  if (fmt_name == "fp32" || fmt_name == "tf32") {
    if (a.descr != "<f4") {
      throw InputError(path + ": dtype " + a.descr + " (expected <f4 for " + fmt_name + ")");
    }
    return operand_from_fp32(io::as_f32(a, path), rows, cols);
  }
  const Format f = parse_format(fmt_name);
  if (f.kind != FormatKind::floating || f.fp.total_bits() > 16) {
    throw InputError(std::string(which == std::string("A") ? "--a-format" : "--b-format") + " '" +
                     fmt_name + "': expected a float format of at most 16 bits, fp32 or tf32");
  }
  std::vector<std::uint16_t> codes;
  if (f.fp.total_bits() <= 8) {
    const auto u = io::as_u8(a, path);
    codes.assign(u.begin(), u.end());
  } else {
    codes = io::as_u16(a, path);
  }
  const std::uint64_t limit = std::uint64_t{1} << f.fp.total_bits();
  for (std::size_t i = 0; i < codes.size(); ++i) {
    if (codes[i] >= limit) {
      throw InputError(path + ": code " + std::to_string(codes[i]) + " at index " +
                       std::to_string(i) + " (expected a " + fmt_name + " code below " +
                       std::to_string(limit) + ")");
    }
  }
  return operand_from_codes(codes, rows, cols, f.fp);
}

OutFormat parse_out_format(const std::string& s) {
  if (s == "fp32") return OutFormat::fp32;
  if (s == "bf16") return OutFormat::bf16;
  if (s == "fp16") return OutFormat::fp16;
  throw InputError("--out-format '" + s + "': expected fp32, bf16 or fp16");
}

namespace {
// One split-K part [k0, k1): chunks of m.chunk k (the whole part when 0) accumulated by the
// model from +0 and added in fp32 in order.
float part_fp32(const double* a, const double* b, std::size_t k0, std::size_t k1, int emin_a,
                int emin_b, const AccumModel& m) {
  if (m.chunk <= 0) return chunk_fp32(a, b, k0, k1, emin_a, emin_b, m);
  const std::size_t len = static_cast<std::size_t>(m.chunk);
  float total = 0.0f;
  for (std::size_t c = k0; c < k1; c += len) {
    total = total + chunk_fp32(a, b, c, c + len < k1 ? c + len : k1, emin_a, emin_b, m);
  }
  return total;
}
}  // namespace

float dot_fp32(const double* a, const double* b, std::size_t k, int emin_a, int emin_b,
               const AccumModel& m) {
  const std::size_t s = static_cast<std::size_t>(m.split_k > 1 ? m.split_k : 1);
  if (s == 1) return part_fp32(a, b, 0, k, emin_a, emin_b, m);
  // Part boundaries: ceil(K/S) k each, or whole tiles with the remainder on the first parts.
  std::vector<std::size_t> bounds{0};
  if (m.tile > 0) {
    const std::size_t t = static_cast<std::size_t>(m.tile), tiles = (k + t - 1) / t;
    for (std::size_t c = 0; c < s; ++c) {
      const std::size_t n = tiles / s + (c < tiles % s ? 1 : 0);
      bounds.push_back(std::min(k, bounds.back() + n * t));
    }
  } else {
    const std::size_t len = (k + s - 1) / s;
    for (std::size_t c = 0; c < s; ++c) bounds.push_back(std::min(k, bounds.back() + len));
  }
  std::vector<float> parts;
  for (std::size_t c = 0; c < s; ++c) {
    if (bounds[c] >= bounds[c + 1]) continue;
    parts.push_back(part_fp32(a, b, bounds[c], bounds[c + 1], emin_a, emin_b, m));
  }
  if (m.reduce_tree) {
    // Balanced: a node adds its left floor(n/2) parts' sum to its right parts' sum.
    struct Tree {
      static float sum(const std::vector<float>& v, std::size_t lo, std::size_t hi) {
        if (hi - lo == 1) return v[lo];
        const std::size_t mid = lo + (hi - lo) / 2;
        return sum(v, lo, mid) + sum(v, mid, hi);
      }
    };
    return parts.empty() ? 0.0f : Tree::sum(parts, 0, parts.size());
  }
  float total = 0.0f;
  for (float p : parts) total = total + p;
  return total;
}

std::vector<std::uint32_t> gemm(const Operand& a, const Operand& b, const AccumModel& m,
                                OutFormat out, double alpha) {
  if (a.cols != b.cols) {
    throw InputError("A is " + std::to_string(a.rows) + " x " + std::to_string(a.cols) +
                     " and B is " + std::to_string(b.rows) + " x " + std::to_string(b.cols) +
                     ": expected the same K (C = A B^T)");
  }
  const std::size_t M = a.rows, N = b.rows, K = a.cols;
  std::vector<double> av = a.v, bv = b.v;
  if (m.truncate_tf32) {
    if (a.code_bits == 32)
      for (auto& x : av) x = tf32(x, m.tf32_round);
    if (b.code_bits == 32)
      for (auto& x : bv) x = tf32(x, m.tf32_round);
  }
  std::vector<std::uint32_t> c(M * N);
  if (m.kind == AccumKind::exact) {
    // The exact sum in MPFR (precision covers every fp32 x fp32 product exactly and the whole
    // exponent span), scaled by alpha, rounded once to the output format (RNE).
    const Format of = parse_format(out == OutFormat::fp32   ? "fp32"
                                   : out == OutFormat::bf16 ? "bf16"
                                                            : "fp16");
    mpfr_t acc, p;
    mpfr_init2(acc, 1200);
    mpfr_init2(p, 1200);
    for (std::size_t i = 0; i < M; ++i) {
      for (std::size_t j = 0; j < N; ++j) {
        mpfr_set_zero(acc, 1);
        for (std::size_t k = 0; k < K; ++k) {
          mpfr_set_d(p, av[i * K + k], MPFR_RNDN);
          mpfr_mul_d(p, p, bv[j * K + k], MPFR_RNDN);  // exact at 1200 bits
          mpfr_add(acc, acc, p, MPFR_RNDN);            // exact: the span fits
        }
        mpfr_mul_d(acc, acc, alpha, MPFR_RNDN);
        c[i * N + j] = static_cast<std::uint32_t>(of.encode(acc, Rounding{}).code);
      }
    }
    mpfr_clear(acc);
    mpfr_clear(p);
    return c;
  }
  for (std::size_t i = 0; i < M; ++i) {
    for (std::size_t j = 0; j < N; ++j) {
      float acc = dot_fp32(&av[i * K], &bv[j * K], K, a.emin, b.emin, m);
      if (alpha != 1.0) acc = rn32(static_cast<double>(rn32(alpha)) * acc);
      c[i * N + j] = out_code(acc, out);
    }
  }
  return c;
}

}  // namespace exmy::gemm
