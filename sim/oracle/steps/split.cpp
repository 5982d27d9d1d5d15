// docs/SEMANTICS.md section 6 (split formats bf16+k / fp16+k, :sr, packing) and 9.6 (Adam and
// SGD on split parameters) on exact values, with the oracle's own encode and Philox.
#include <stdexcept>

#include "sim/oracle/mpfr_engine.hpp"
#include "sim/oracle/steps/philox.hpp"
#include "sim/oracle/steps/steps.hpp"

namespace exmy::oracle::steps {
namespace {

// The extended format e8m(7+k) / e5m(10+k): the 16-bit format's exponent, bias, subnormals and
// IEEE inf/NaN with k more mantissa bits.
FloatFormat extended(const SplitFmt& f) {
  const FloatFormat& base = f.bf16 ? BF16 : f.fp8 ? formats::e5m2 : F16;
  return FloatFormat{base.exp_bits, base.man_bits + f.k, base.bias, true,
                     true,          NanEncoding::ieee,   true};
}

std::uint32_t low_mask(int k) {
  return k == 0 ? 0u : (k >= 32 ? ~0u : (1u << k) - 1u);
}

}  // namespace

SplitElem split(const Real& x, const SplitFmt& f, std::uint32_t word) {
  // Truncation: the code of x in the extended format under rtz (section 2; overflow per 4.2:
  // finite values beyond the extended maximum go to it, inf stays inf, NaN the quiet NaN).
  const FloatFormat ext = extended(f);
  const std::uint64_t code = encode(ext, Rounding{RoundMode::rtz, 0, Overflow::none}, x.get()).code;
  SplitElem e;
  e.hi = static_cast<std::uint16_t>(code >> f.k);
  e.field = static_cast<std::uint32_t>(code) & low_mask(f.k);
  if (f.sr && f.k >= 1) {
    // sr:k on the k discarded bits with r = the top k bits of the word: up iff extra + r ≥ 2^k,
    // never past the largest finite 16-bit magnitude.
    const std::uint64_t r = word >> (32 - f.k);
    const FloatFormat& stored = f.bf16 ? BF16 : f.fp8 ? formats::e5m2 : F16;
    const std::uint64_t max16 = max_finite_code(stored);
    const std::uint32_t mag = f.fp8 ? 0x7Fu : 0x7FFFu;  // all but the stored code's sign bit
    if (e.field + r >= (std::uint64_t{1} << f.k) && (e.hi & mag) != max16) {
      e.hi = static_cast<std::uint16_t>(e.hi + 1);  // magnitude + 1, away from zero
      e.field |= 1u << f.k;
    }
  }
  return e;
}

Real join(const SplitElem& e, const SplitFmt& f) {
  // Un-round first (:sr), then decode the extended code exactly (every such value is an fp32).
  std::uint16_t hi = e.hi;
  if (f.sr && ((e.field >> f.k) & 1u) != 0) hi = static_cast<std::uint16_t>(hi - 1);
  const std::uint64_t code = (static_cast<std::uint64_t>(hi) << f.k) | (e.field & low_mask(f.k));
  return Real::of_code(extended(f), code);
}

std::uint32_t split_word(std::uint64_t seed, long t, std::uint64_t i) {
  return philox_element_word(seed + static_cast<std::uint64_t>(t), 9, i);
}

std::vector<std::uint32_t> pack_fields(const std::vector<SplitElem>& e, const SplitFmt& f) {
  const int w = f.k + (f.sr ? 1 : 0);
  std::vector<std::uint32_t> words((e.size() + 31) / 32 * static_cast<std::size_t>(w), 0u);
  // Element i's field holds stream bits [i·w, i·w + w); stream bit b is bit b mod 32 of word b/32.
  for (std::size_t i = 0; i < e.size(); ++i) {
    for (int j = 0; j < w; ++j) {
      if ((e[i].field >> j) & 1u) {
        const std::size_t b = i * static_cast<std::size_t>(w) + static_cast<std::size_t>(j);
        words[b / 32] |= 1u << (b % 32);
      }
    }
  }
  return words;
}

void split_adam_step(const AdamHyper& h, bool decoupled, const SplitFmt& f, long t,
                     std::uint64_t seed, std::vector<SplitElem>& p, const Tensor& g, Tensor& m,
                     Tensor& v) {
  if (g.size() != p.size() || m.size() != p.size() || v.size() != p.size()) {
    throw std::logic_error("step oracle: tensor sizes differ");
  }
  const TorchAdamScalars s = torch_adam_scalars(h, t, decoupled);
  for (std::size_t i = 0; i < p.size(); ++i) {
    Real x = join(p[i], f);
    torch_adam_element(s, F32, x, g[i], m[i], v[i]);
    p[i] = split(x, f, split_word(seed, t, i));
  }
}

void split_sgd_step(const SgdHyper& h, const SplitFmt& f, long t, std::uint64_t seed,
                    std::vector<SplitElem>& p, const Tensor& g, Tensor& buf) {
  if (g.size() != p.size() || buf.size() != p.size()) {
    throw std::logic_error("step oracle: tensor sizes differ");
  }
  for (std::size_t i = 0; i < p.size(); ++i) {
    Real x = join(p[i], f);
    torch_sgd_element(h, F32, t, x, g[i], buf[i]);
    p[i] = split(x, f, split_word(seed, t, i));
  }
}

}  // namespace exmy::oracle::steps
