// The designed inputs of a backend cast sweep (see backend_inputs.hpp; docs/SEMANTICS.md 13.5.1).
// The values of the target format come from its decode table (sim/fast), which the decode
// campaign proves equal to the MPFR oracle; every input below is an fp32 bit pattern chosen from
// those values by exact double arithmetic (a value of at most 16 bits, its neighbours' midpoint
// and quarter points have at most 18 significant bits, so double holds them and the fp32 test
// `(double)(float)v == v` says whether fp32 does).
#include "sim/verify/backend_inputs.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <utility>

#include "sim/fast/array_cast.hpp"
#include "sim/native/philox.hpp"

namespace exmy::verify {
namespace {

enum InputClass : std::uint8_t {
  kValue,           // a value of F, exactly
  kValueNeighbour,  // a value of F +- 1..3 fp32 ulps
  kTieNormal,       // the midpoint of two adjacent normal values
  kTieSubnormal,    // the midpoint of two adjacent values below the smallest normal (incl. 0)
  kTieBoundary,     // the midpoint of the largest subnormal and the smallest normal
  kTieNeighbour,    // a midpoint +- 1..3 fp32 ulps
  kQuarter,         // a quarter point between adjacent values (inexact, not a tie)
  kBinadeEdge,      // a power of two 2^-149 .. 2^127 (every fp32 binade) +- 0..3 ulps
  kOverflowEdge,    // max, the overflow threshold max + q/2, max + q, each +- 0..4 ulps
  kZero,            // +-0
  kFp32Subnormal,   // fp32 subnormal inputs
  kInf,             // +-inf
  kNanQuiet,        // quiet NaNs with payloads
  kNanSignalling,   // signalling NaNs with payloads
  kRandom,          // the weighted random inputs
  kInputClasses
};
const char* const kInputNames[kInputClasses] = {"value",
                                                "value +-ulp",
                                                "tie (normal)",
                                                "tie (subnormal result)",
                                                "tie (subnormal/normal boundary)",
                                                "tie +-ulp",
                                                "quarter point",
                                                "fp32 binade edge",
                                                "overflow edge",
                                                "zero",
                                                "fp32 subnormal",
                                                "inf",
                                                "nan quiet",
                                                "nan signalling",
                                                "random"};

enum WordClass : std::uint8_t {
  kWordLow,
  kWordHigh,
  kWordUp,
  kWordDown,
  kWordRandom,
  kWordClasses
};
const char* const kWordNames[kWordClasses] = {
    "sr word near 0", "sr word near max", "sr word at the boundary (up)",
    "sr word below the boundary (down)", "sr word random"};

std::uint32_t bits_of(float v) {
  std::uint32_t u;
  std::memcpy(&u, &v, 4);
  return u;
}

// The fp32 pattern of a nonnegative double when fp32 holds it exactly; false otherwise.
bool exact_f32(double v, std::uint32_t& u) {
  if (!(v >= 0) || v > 0x1.fffffep127) return false;
  const float f = static_cast<float>(v);
  if (static_cast<double>(f) != v) return false;
  u = bits_of(f);
  return true;
}

// k fp32 ulps from a nonnegative finite pattern, clamped to [0, inf) so no step flips the sign.
bool step(std::uint32_t mag, int k, std::uint32_t& out) {
  const std::int64_t v = static_cast<std::int64_t>(mag) + k;
  if (v < 0 || v >= 0x7F800000) return false;
  out = static_cast<std::uint32_t>(v);
  return true;
}

// SplitMix64 of (seed, stream, k): counter-based, so a sweep is the same for every layout.
std::uint64_t mix(std::uint64_t seed, std::uint64_t stream, std::uint64_t k) {
  std::uint64_t z = seed + 0x9E3779B97F4A7C15ull * (stream * 0x100000001B3ull + k + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

struct Designed {
  std::uint32_t x;
  std::uint8_t cls;
};

// Magnitudes (sign bit clear) of every designed class but the signed specials.
std::vector<Designed> designed_magnitudes(const FloatFormat& f) {
  std::vector<double> vals;
  double min_normal = 0;
  const auto& table = fast::decode_table(f);
  for (std::uint32_t c = 0; c < table.size(); ++c) {
    const double v = table[c];
    if (!std::isfinite(v) || std::signbit(v)) continue;
    vals.push_back(v);
    if (f.classify(c) == ValueClass::normal && (min_normal == 0 || v < min_normal)) min_normal = v;
  }
  std::sort(vals.begin(), vals.end());
  vals.erase(std::unique(vals.begin(), vals.end()), vals.end());
  std::vector<Designed> out;
  const auto around = [&](std::uint32_t u, int spread, std::uint8_t at, std::uint8_t near) {
    out.push_back({u, at});
    for (int k = 1; k <= spread; ++k) {
      std::uint32_t v;
      if (step(u, k, v)) out.push_back({v, near});
      if (step(u, -k, v)) out.push_back({v, near});
    }
  };
  for (std::size_t i = 0; i < vals.size(); ++i) {
    std::uint32_t u;
    if (vals[i] > 0 && exact_f32(vals[i], u)) around(u, 3, kValue, kValueNeighbour);
    if (i + 1 == vals.size()) break;
    const double lo = vals[i], hi = vals[i + 1], mid = (lo + hi) / 2;
    if (exact_f32(mid, u)) {
      const std::uint8_t cls = hi == min_normal                     ? kTieBoundary
                               : hi < min_normal || min_normal == 0 ? kTieSubnormal
                                                                    : kTieNormal;
      around(u, 3, cls, kTieNeighbour);
    }
    for (const double q : {lo + (hi - lo) / 4, lo + 3 * (hi - lo) / 4}) {
      if (exact_f32(q, u)) out.push_back({u, kQuarter});
    }
  }
  for (int e = -149; e <= 127; ++e)
    around(bits_of(std::ldexp(1.0f, e)), 3, kBinadeEdge, kBinadeEdge);
  // The overflow edge: max, the tie above it (max + q/2, q the quantum of max's binade) and the
  // first value that always overflows (max + q), each +- 4 ulps.
  // (A format whose values all lie beyond fp32's range has no finite value here: no edge then.)
  if (!vals.empty() && vals.back() > 0) {
    const double mx = vals.back();
    const double q = std::ldexp(1.0, std::ilogb(mx) - f.man_bits);
    for (const double v : {mx, mx + q / 2, mx + q}) {
      std::uint32_t u;
      if (exact_f32(v, u)) around(u, 4, kOverflowEdge, kOverflowEdge);
    }
  }
  for (const std::uint32_t s :
       {0x00000001u, 0x00000002u, 0x00000003u, 0x00000004u, 0x00000007u, 0x00000008u, 0x003FFFFFu,
        0x00400000u, 0x00400001u, 0x00555555u, 0x007FFFFEu, 0x007FFFFFu}) {
    out.push_back({s, kFp32Subnormal});
  }
  for (std::uint64_t k = 0; k < 64; ++k) {
    out.push_back({static_cast<std::uint32_t>(mix(7, 1, k) % 0x007FFFFFu) + 1, kFp32Subnormal});
  }
  return out;
}

// The signed specials: +-0, +-inf and NaN payloads.
void add_specials(std::vector<Designed>& out) {
  for (const std::uint32_t s : {0u, 0x80000000u}) {
    out.push_back({s, kZero});
    out.push_back({s | 0x7F800000u, kInf});
    for (const std::uint32_t p :
         {0x7FC00000u, 0x7FC00001u, 0x7FE00000u, 0x7FD55555u, 0x7FFFFFFFu}) {
      out.push_back({s | p, kNanQuiet});
    }
    for (const std::uint32_t p :
         {0x7F800001u, 0x7F800002u, 0x7FA00000u, 0x7F955555u, 0x7FBFFFFFu}) {
      out.push_back({s | p, kNanSignalling});
    }
    for (std::uint64_t k = 0; k < 16; ++k) {
      const std::uint32_t payload = static_cast<std::uint32_t>(mix(7, 2, k)) & 0x003FFFFFu;
      out.push_back({s | 0x7FC00000u | payload, kNanQuiet});
      out.push_back({s | 0x7F800000u | (payload == 0 ? 1u : payload), kNanSignalling});
    }
  }
}

// One weighted random input (class kRandom): exponents inside F's range (40%), near ties of F
// (20%), uniform patterns (20%), fp32 subnormals (10%), near the overflow threshold (10%).
std::uint32_t random_input(const FloatFormat& f, const std::vector<std::uint32_t>& ties,
                           std::uint32_t threshold, std::uint64_t seed, std::uint64_t k) {
  const std::uint64_t a = mix(seed, 3, k), b = mix(seed, 4, k);
  const std::uint32_t sign = static_cast<std::uint32_t>(b >> 63) << 31;
  const unsigned pick = static_cast<unsigned>(a % 100);
  if (pick < 40) {
    const int lo = std::max(-149, f.emin() - f.man_bits - 3), hi = std::min(127, f.emax() + 2);
    const int e = lo + static_cast<int>((a >> 8) % static_cast<std::uint64_t>(hi - lo + 1));
    const float v = std::ldexp(1.0f + static_cast<float>(b & 0x7FFFFF) * 0x1p-23f, e);
    return bits_of(v) | sign;
  }
  if (pick < 60 && !ties.empty()) {
    std::uint32_t v;
    const int off = static_cast<int>((a >> 32) % 33) - 16;
    if (step(ties[(a >> 8) % ties.size()], off, v)) return v | sign;
    return ties[(a >> 8) % ties.size()] | sign;
  }
  if (pick < 80) return static_cast<std::uint32_t>(b);
  if (pick < 90) return (static_cast<std::uint32_t>(b) & 0x007FFFFFu) | sign;
  std::uint32_t v;
  const int off = static_cast<int>((a >> 32) % 4097) - 2048;
  return (step(threshold, off, v) ? v : threshold) | sign;
}

// T's fraction below the rounding quantum of |x| in F, read at R bits: floor(frac * 2^R)
// (SEMANTICS 3.1). 0 for exact and non-finite inputs. `inexact` says whether any fraction is left.
std::uint64_t sr_fraction(const FloatFormat& f, std::uint32_t u, int R, bool& inexact) {
  inexact = false;
  const int e32 = static_cast<int>((u >> 23) & 0xFF);
  std::uint64_t sig = u & 0x7FFFFFu;
  if (e32 == 0xFF || (e32 == 0 && sig == 0)) return 0;
  int ex;
  if (e32 == 0) {
    ex = -149;
  } else {
    sig |= 1u << 23;
    ex = e32 - 150;
  }
  int lead = 63;
  while (!((sig >> lead) & 1)) --lead;
  const int q = std::max(lead + ex, f.emin()) - f.man_bits;
  const int shift = q - ex;
  if (shift <= 0) return 0;
  const std::uint64_t rem = shift >= 64 ? sig : sig & ((std::uint64_t{1} << shift) - 1);
  inexact = rem != 0;
  if (shift >= 64 || shift - R >= 40) return 0;  // rem < 2^24 <= 2^(shift - R - 16)
  return shift >= R ? rem >> (shift - R) : rem << (R - shift);
}

// The element positions of one call ordered by their sr word, with two union-find chains that
// skip the positions already taken: `up` toward larger words, `down` toward smaller ones.
class WordPlacer {
 public:
  WordPlacer(std::uint64_t seed, std::size_t n, int R) : R_(R), shift_(R > 22 ? R - 22 : 0) {
    const std::size_t buckets = std::size_t{1} << (R - shift_);
    std::vector<std::uint32_t> key(n);
    native::for_each_philox_word(seed, 0, 0, n, [&](std::size_t i, std::uint32_t w) {
      key[i] = native::sr_word(w, R) >> shift_;
    });
    start_.assign(buckets + 1, 0);
    for (std::size_t i = 0; i < n; ++i) ++start_[key[i] + 1];
    std::partial_sum(start_.begin(), start_.end(), start_.begin());
    order_.resize(n);
    std::vector<std::uint32_t> fill(start_.begin(), start_.end() - 1);
    for (std::size_t i = 0; i < n; ++i) order_[fill[key[i]]++] = static_cast<std::uint32_t>(i);
    up_.resize(n + 1);
    down_.resize(n + 1);
    std::iota(up_.begin(), up_.end(), 0u);
    std::iota(down_.begin(), down_.end(), 0u);  // down_[k + 1] stands for position k; 0: none
  }

  // A free position whose word is >= target (up) or <= target (down), nearest to it; if that side
  // is exhausted, the nearest on the other side when `either_side`, else -1 (a boundary word on
  // the wrong side would round the other way); -1 when the call is full.
  std::int64_t take(std::uint64_t target, bool up, bool either_side) {
    const std::size_t b = static_cast<std::size_t>(target >> shift_);
    std::int64_t k = up ? find_up(start_[b]) : find_down(start_[b + 1]);
    if (k < 0 && either_side) k = up ? find_down(start_[b]) : find_up(start_[b + 1]);
    if (k < 0) return -1;
    up_[static_cast<std::size_t>(k)] = static_cast<std::uint32_t>(k + 1);
    down_[static_cast<std::size_t>(k) + 1] = static_cast<std::uint32_t>(k);
    ++taken_;
    return order_[static_cast<std::size_t>(k)];
  }
  std::size_t taken() const { return taken_; }
  int R() const { return R_; }

 private:
  // The first free sorted index >= k, or -1.
  std::int64_t find_up(std::size_t k) {
    std::size_t r = k;
    while (up_[r] != r) r = up_[r];
    while (up_[k] != r) k = std::exchange(up_[k], static_cast<std::uint32_t>(r));
    return r < order_.size() ? static_cast<std::int64_t>(r) : -1;
  }
  // The last free sorted index < k, or -1.
  std::int64_t find_down(std::size_t k) {
    std::size_t r = k;
    while (down_[r] != r) r = down_[r];
    while (down_[k] != r) k = std::exchange(down_[k], static_cast<std::uint32_t>(r));
    return r > 0 ? static_cast<std::int64_t>(r) - 1 : -1;
  }
  int R_, shift_;
  std::vector<std::size_t> start_;
  std::vector<std::uint32_t> order_, up_, down_;
  std::size_t taken_ = 0;
};

}  // namespace

DesignedSweep designed_cast_sweep(const FloatFormat& f, const Rounding& r, std::uint64_t seed,
                                  const SweepSize& size) {
  DesignedSweep s;
  s.input_classes.assign(kInputNames, kInputNames + kInputClasses);
  const bool sr = r.mode == RoundMode::sr;
  if (sr) s.word_classes.assign(kWordNames, kWordNames + kWordClasses);
  s.random_seed = seed;

  std::vector<Designed> designed;
  for (const Designed& d : designed_magnitudes(f)) {
    designed.push_back(d);
    designed.push_back({d.x | 0x80000000u, d.cls});
  }
  add_specials(designed);
  // Ties for the random inputs; the overflow threshold.
  std::vector<std::uint32_t> ties;
  std::uint32_t threshold = 0x7F7FFFFFu;
  for (const Designed& d : designed) {
    if (d.x >> 31) continue;
    if (d.cls == kTieNormal || d.cls == kTieSubnormal || d.cls == kTieBoundary) ties.push_back(d.x);
  }
  {
    const auto& table = fast::decode_table(f);
    double mx = 0;
    for (const float v : table) {
      if (std::isfinite(v) && v > mx) mx = v;
    }
    std::uint32_t u;
    if (mx > 0 && exact_f32(mx + std::ldexp(1.0, std::ilogb(mx) - f.man_bits) / 2, u)) {
      threshold = u;
    }
  }

  const std::size_t P = std::max<std::size_t>(size.call_elements, 1024);
  std::uint64_t random_left = size.random_elements, random_k = 0;
  const auto next_random = [&] { return random_input(f, ties, threshold, seed, random_k++); };

  if (!sr) {
    // Designed inputs first, then random ones, packed into calls of P elements.
    std::size_t i = 0;
    while (i < designed.size() || random_left > 0) {
      DesignedCall c;
      c.seed = seed;
      while (c.x.size() < P && i < designed.size()) {
        c.x.push_back(designed[i].x);
        c.input.push_back(designed[i].cls);
        ++i;
      }
      while (c.x.size() < P && random_left > 0) {
        c.x.push_back(next_random());
        c.input.push_back(kRandom);
        --random_left;
      }
      s.calls.push_back(std::move(c));
    }
    s.designed = designed.size();
    return s;
  }

  // sr:R: each designed input at up to four positions chosen by their word; a call is closed when
  // half its positions are taken (the rest hold random inputs), and the next call uses seed + 1.
  const int R = r.sr_bits;
  const std::uint64_t wmax = R >= 32 ? 0xFFFFFFFFull : (std::uint64_t{1} << R) - 1;
  std::size_t i = 0;
  std::uint64_t call_seed = seed;
  while (i < designed.size() || random_left > 0) {
    DesignedCall c;
    c.seed = call_seed++;
    c.x.assign(P, 0);
    c.input.assign(P, kRandom);
    c.word.assign(P, kWordRandom);
    std::vector<bool> used(P, false);
    WordPlacer placer(c.seed, P, R);
    const auto place = [&](const Designed& d, std::uint64_t target, bool up, WordClass w) {
      // Near 0 / near max are nearest-available; the boundary words must stay on their side.
      const bool either_side = w == kWordLow || w == kWordHigh;
      const std::int64_t pos = placer.take(target, up, either_side);
      if (pos < 0) return;
      c.x[static_cast<std::size_t>(pos)] = d.x;
      c.input[static_cast<std::size_t>(pos)] = d.cls;
      c.word[static_cast<std::size_t>(pos)] = w;
      used[static_cast<std::size_t>(pos)] = true;
      ++s.designed;
    };
    while (i < designed.size() && placer.taken() + 4 <= P / 2) {
      const Designed& d = designed[i++];
      bool inexact = false;
      const std::uint64_t fr = sr_fraction(f, d.x & 0x7FFFFFFFu, R, inexact);
      place(d, 0, true, kWordLow);
      if (!inexact) continue;  // exact and special inputs: one word is enough
      place(d, wmax, false, kWordHigh);
      if (fr > 0) {
        const std::uint64_t boundary = wmax + 1 - fr;  // fr + w >= 2^R rounds up
        place(d, boundary, true, kWordUp);
        place(d, boundary - 1, false, kWordDown);
      }
    }
    // The other positions: random inputs (their words are whatever Philox gives there).
    for (std::size_t k = 0; k < P; ++k) {
      if (used[k]) continue;
      c.x[k] = next_random();
      if (random_left > 0) --random_left;
    }
    s.calls.push_back(std::move(c));
  }
  return s;
}

}  // namespace exmy::verify
