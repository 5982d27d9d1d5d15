// Differential check of exmy's AMD gfx950 OCP conversion model (sim/native/compat_amd_ocp.hpp)
// against AMD's own host model, amd_hip_ocp_host.hpp, compiled as host C++ (its functions
// fcbx::from_float, from_float_sr, to_float with the encodings amd_hip_ocp_fp.hpp passes for the
// `__amd_cvt_*_scale` functions: E4M3Mx, E5M2Mx, E2M3, E3M2, E2M1). Test-only: AMD's headers are
// not part of exmy; point -I at a folder holding amd_hip_ocp_host.hpp and amd_hip_ocp_types.h
// (ROCm/rocm-systems projects/clr/hipamd/include/hip/amd_detail; commits in the results file).
// Build (clang >= 18 for _Float16/__bf16 arithmetic in C++; __HIP__ selects the vector typedefs):
//   clang++-19 -std=c++20 -O2 -D__HIP__ -I tests/peers/amd_ocp/shim -I AMD_DIR -I . \
//     tests/peers/amd_ocp/amd_ocp_compare.cpp -o /tmp/amd_ocp_compare
//   /tmp/amd_ocp_compare [--quick] [--fp32-all TARGETS] [--only-fp32-all] [--fp32-random N]
//                        [--seed S]
// TARGETS: digits 0-4 for e4m3, e5m2, e2m3, e3m2, e2m1 (every fp32 input; --fp32-all-scale X,
// --fp32-all-sr W: at scale X, stochastic with seed W).
// Prints one line per check with the number of inputs compared and the number that differ, and
// exits 1 if any differ.
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "amd_hip_ocp_host.hpp"
#include "sim/native/compat_amd_ocp.hpp"

namespace {

using exmy::native::AmdOcp;
using exmy::native::AmdWide;

template <class T>
T from_bits(std::uint32_t b) {
  T t;
  if constexpr (sizeof(T) == 2) {
    const auto h = static_cast<std::uint16_t>(b);
    std::memcpy(&t, &h, 2);
  } else {
    std::memcpy(&t, &b, 4);
  }
  return t;
}
template <class T>
std::uint32_t bits_of(T t) {
  if constexpr (sizeof(T) == 2) {
    std::uint16_t h;
    std::memcpy(&h, &t, 2);
    return h;
  } else {
    std::uint32_t u;
    std::memcpy(&u, &t, 4);
    return u;
  }
}

const char* target_name(AmdOcp t) {
  static const char* n[] = {"e4m3", "e5m2", "e2m3", "e3m2", "e2m1"};
  return n[static_cast<int>(t)];
}
const char* wide_name(AmdWide w) {
  static const char* n[] = {"fp32", "fp16", "bf16"};
  return n[static_cast<int>(w)];
}

// AMD's encoder for target t from a source of type T given by its bits.
template <class T, fcbx::Encoding E>
std::uint32_t amd_enc_e(std::uint32_t b, std::int8_t scale, bool sr, std::uint32_t seed) {
  const T x = from_bits<T>(b);
  return sr ? fcbx::from_float_sr<T, E, true>(x, seed, scale)
            : fcbx::from_float<T, E, true>(x, scale);
}
template <class T>
std::uint32_t amd_enc(AmdOcp t, std::uint32_t b, std::int8_t scale, bool sr, std::uint32_t seed) {
  using fcbx::Encoding;
  switch (t) {
    case AmdOcp::e4m3:
      return amd_enc_e<T, Encoding::E4M3Mx>(b, scale, sr, seed);
    case AmdOcp::e5m2:
      return amd_enc_e<T, Encoding::E5M2Mx>(b, scale, sr, seed);
    case AmdOcp::e2m3:
      return amd_enc_e<T, Encoding::E2M3>(b, scale, sr, seed);
    case AmdOcp::e3m2:
      return amd_enc_e<T, Encoding::E3M2>(b, scale, sr, seed);
    default:
      return amd_enc_e<T, Encoding::E2M1>(b, scale, sr, seed);
  }
}
template <class T, fcbx::Encoding E>
std::uint32_t amd_dec_e(std::uint32_t c, std::int8_t scale) {
  return bits_of<T>(fcbx::to_float<T, E, true>(c, scale));
}
template <class T>
std::uint32_t amd_dec(AmdOcp t, std::uint32_t c, std::int8_t scale) {
  using fcbx::Encoding;
  switch (t) {
    case AmdOcp::e4m3:
      return amd_dec_e<T, Encoding::E4M3Mx>(c, scale);
    case AmdOcp::e5m2:
      return amd_dec_e<T, Encoding::E5M2Mx>(c, scale);
    case AmdOcp::e2m3:
      return amd_dec_e<T, Encoding::E2M3>(c, scale);
    case AmdOcp::e3m2:
      return amd_dec_e<T, Encoding::E3M2>(c, scale);
    default:
      return amd_dec_e<T, Encoding::E2M1>(c, scale);
  }
}

std::uint32_t amd_encode(AmdWide w, AmdOcp t, std::uint32_t b, std::int8_t scale, bool sr,
                         std::uint32_t seed) {
  switch (w) {
    case AmdWide::fp32:
      return amd_enc<float>(t, b, scale, sr, seed);
    case AmdWide::fp16:
      return amd_enc<_Float16>(t, b, scale, sr, seed);
    default:
      return amd_enc<__bf16>(t, b, scale, sr, seed);
  }
}
std::uint32_t amd_decode(AmdWide w, AmdOcp t, std::uint32_t c, std::int8_t scale) {
  switch (w) {
    case AmdWide::fp32:
      return amd_dec<float>(t, c, scale);
    case AmdWide::fp16:
      return amd_dec<_Float16>(t, c, scale);
    default:
      return amd_dec<__bf16>(t, c, scale);
  }
}

// exmy's model takes the source as fp32 bits (16-bit sources widen exactly).
std::uint32_t widen(AmdWide w, std::uint32_t b) {
  if (w == AmdWide::fp32) return b;
  if (w == AmdWide::bf16) return b << 16;
  return static_cast<std::uint32_t>(
      exmy::native::convert(exmy::formats::fp16, exmy::formats::fp32, exmy::Rounding{}, b).code);
}

constexpr AmdOcp kTargets[] = {AmdOcp::e4m3, AmdOcp::e5m2, AmdOcp::e2m3, AmdOcp::e3m2,
                               AmdOcp::e2m1};
int g_failures = 0;
bool g_quick = false;  // --quick: 8 scales instead of 256 (a first look; not the recorded run)
bool skip_scale(int s) {
  if (!g_quick) return false;
  for (int k : {-128, -127, -20, -3, 0, 1, 5, 127})
    if (s == k) return false;
  return true;
}

struct Tally {
  std::uint64_t n = 0, bad = 0;
  void check(std::uint32_t want, std::uint32_t got, const char* what, AmdWide w, AmdOcp t,
             std::uint32_t in, int scale, std::uint32_t seed) {
    ++n;
    if (want == got) return;
    if (++bad <= 5) {
      std::printf("  DIFF %s %s->%s in 0x%08" PRIx32 " scale %d seed 0x%08" PRIx32
                  ": amd 0x%" PRIx32 " exmy 0x%" PRIx32 "\n",
                  what, wide_name(w), target_name(t), in, scale, seed, want, got);
    }
  }
  void report(const std::string& what) {
    std::printf("%-58s compared %12" PRIu64 "  differ %" PRIu64 "\n", what.c_str(), n, bad);
    if (bad != 0) ++g_failures;
  }
};

// Every 16-bit input x every scale (-128 .. 127) for every target: RNE, and SR with `words`.
void sweep16(AmdWide w, const std::vector<std::uint32_t>& seeds) {
  for (AmdOcp t : kTargets) {
    Tally rne, sr;
    for (int s = -128; s <= 127; ++s) {
      if (skip_scale(s)) continue;
      const auto scale = static_cast<std::int8_t>(s);
      for (std::uint32_t b = 0; b < 0x10000u; ++b) {
        const std::uint32_t u = widen(w, b);
        rne.check(amd_encode(w, t, b, scale, false, 0),
                  exmy::native::amd_ocp_encode(t, w, u, scale), "rne", w, t, b, s, 0);
        for (std::uint32_t seed : seeds) {
          sr.check(amd_encode(w, t, b, scale, true, seed),
                   exmy::native::amd_ocp_encode(t, w, u, scale, true, seed), "sr", w, t, b, s,
                   seed);
        }
      }
    }
    rne.report(std::string("encode rne ") + wide_name(w) + " -> " + target_name(t) +
               " (all inputs x 256 scales)");
    sr.report(std::string("encode sr  ") + wide_name(w) + " -> " + target_name(t) + " (x " +
              std::to_string(seeds.size()) + " seeds)");
  }
}

// SR: every 16-bit input at scale 0 and 3 other scales, every value of the R seed bits in use.
void sweep16_words(AmdWide w, std::mt19937_64& gen) {
  const int src_m = w == AmdWide::fp16 ? 10 : 7;
  for (AmdOcp t : kTargets) {
    const int R = src_m - exmy::native::amd_ocp_format(t).man_bits;
    Tally sr;
    for (int s : {0, -3, 5, -127}) {
      for (std::uint32_t word = 0; word < (1u << R); ++word) {
        const std::uint32_t seed = (word << (32 - R)) | (static_cast<std::uint32_t>(gen()) >> R);
        for (std::uint32_t b = 0; b < 0x10000u; ++b) {
          sr.check(amd_encode(w, t, b, static_cast<std::int8_t>(s), true, seed),
                   exmy::native::amd_ocp_encode(t, w, widen(w, b), static_cast<std::int8_t>(s),
                                                true, seed),
                   "sr-word", w, t, b, s, seed);
        }
      }
    }
    sr.report(std::string("encode sr  ") + wide_name(w) + " -> " + target_name(t) + " (all 2^" +
              std::to_string(R) + " words, 4 scales)");
  }
}

void sweep_decode() {
  for (AmdWide w : {AmdWide::fp32, AmdWide::fp16, AmdWide::bf16}) {
    for (AmdOcp t : kTargets) {
      Tally d;
      const std::uint32_t codes = 1u << exmy::native::amd_ocp_format(t).total_bits();
      for (int s = -128; s <= 127; ++s) {
        for (std::uint32_t c = 0; c < codes; ++c) {
          d.check(amd_decode(w, t, c, static_cast<std::int8_t>(s)),
                  exmy::native::amd_ocp_decode(t, w, c, static_cast<std::int8_t>(s)), "decode", w,
                  t, c, s, 0);
        }
      }
      d.report(std::string("decode ") + target_name(t) + " -> " + wide_name(w) +
               " (all codes x 256 scales)");
    }
  }
}

// fp32 sources: all 2^32 inputs at the given scales (RNE), or a boundary table + random inputs.
void sweep32_all(AmdOcp t, int scale, bool sr = false, std::uint32_t seed = 0) {
  Tally tally;
  const auto x = static_cast<std::int8_t>(scale);
  for (std::uint64_t b = 0; b <= 0xFFFFFFFFull; ++b) {
    const auto u = static_cast<std::uint32_t>(b);
    tally.check(amd_encode(AmdWide::fp32, t, u, x, sr, seed),
                exmy::native::amd_ocp_encode(t, AmdWide::fp32, u, x, sr, seed),
                sr ? "sr32" : "rne32", AmdWide::fp32, t, u, scale, seed);
  }
  char what[96];
  std::snprintf(what, sizeof what, "encode %s fp32 -> %s (all 2^32, scale %d%s)",
                sr ? "sr " : "rne", target_name(t), scale, sr ? ", one seed" : "");
  tally.report(what);
}

void sweep32_sample(std::uint64_t n, std::mt19937_64& gen) {
  for (AmdOcp t : kTargets) {
    Tally rne, sr;
    const int M = exmy::native::amd_ocp_format(t).man_bits;
    const auto one = [&](std::uint32_t u, int s) {
      const auto scale = static_cast<std::int8_t>(s);
      rne.check(amd_encode(AmdWide::fp32, t, u, scale, false, 0),
                exmy::native::amd_ocp_encode(t, AmdWide::fp32, u, scale), "rne32", AmdWide::fp32, t,
                u, s, 0);
      const auto seed = static_cast<std::uint32_t>(gen());
      for (std::uint32_t w : {seed, 0u, 0xFFFFFFFFu}) {
        sr.check(amd_encode(AmdWide::fp32, t, u, scale, true, w),
                 exmy::native::amd_ocp_encode(t, AmdWide::fp32, u, scale, true, w), "sr32",
                 AmdWide::fp32, t, u, s, w);
      }
    };
    // Boundary table: every target grid point and midpoint (and +-1 ulp of fp32 around each),
    // every fp32 exponent, at every scale.
    for (int s = -128; s <= 127; ++s) {
      if (skip_scale(s)) continue;
      for (std::uint32_t e = 0; e < 256; ++e) {
        for (std::uint32_t k = 0; k < (2u << M); ++k) {
          const std::uint32_t mid = (e << 23) | (k << (22 - M));
          for (std::uint32_t d : {0u, 1u, 0xFFFFFFFFu}) {
            const std::uint32_t u = (mid + d) & 0x7FFFFFFFu;
            one(u, s);
            one(u | 0x80000000u, s);
          }
        }
      }
    }
    // Weighted random: exponents near the target's range half the time.
    for (std::uint64_t i = 0; i < n; ++i) {
      std::uint32_t u = static_cast<std::uint32_t>(gen());
      if (i % 2 == 0) u = (u & 0x807FFFFFu) | (static_cast<std::uint32_t>(112 + gen() % 32) << 23);
      one(u, static_cast<int>(static_cast<std::int8_t>(gen())));
    }
    rne.report(std::string("encode rne fp32 -> ") + target_name(t) + " (boundary + random)");
    sr.report(std::string("encode sr  fp32 -> ") + target_name(t) + " (boundary + random)");
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::uint64_t seed = 20261201, random_n = 20000000;
  std::string fp32_all;
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  bool only32 = false;  // --only-fp32-all: skip every sweep but --fp32-all
  int all_scale = 0;    // --fp32-all-scale X: the scale of --fp32-all
  bool all_sr = false;  // --fp32-all-sr W: --fp32-all with stochastic rounding, seed W
  std::uint32_t all_seed = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--quick") g_quick = true;
    if (a == "--only-fp32-all") only32 = true;
    if (a == "--seed" && has_value) seed = std::stoull(argv[++i]);
    if (a == "--fp32-random" && has_value) random_n = std::stoull(argv[++i]);
    if (a == "--fp32-all" && has_value) fp32_all = argv[++i];
    if (a == "--fp32-all-scale" && has_value) all_scale = std::stoi(argv[++i]);
    if (a == "--fp32-all-sr" && has_value) {
      all_sr = true;
      all_seed = static_cast<std::uint32_t>(std::stoul(argv[++i], nullptr, 0));
    }
  }
  std::printf("amd_ocp_compare: seed %" PRIu64 "%s\n", seed, g_quick ? " (--quick: 8 scales)" : "");
  std::mt19937_64 gen(seed);
  if (only32) {
    for (char c : fp32_all) {
      if (c >= '0' && c <= '4') sweep32_all(kTargets[c - '0'], all_scale, all_sr, all_seed);
    }
    if (all_sr) std::printf("seed 0x%08" PRIx32 "\n", all_seed);
    std::printf("%s\n", g_failures == 0 ? "all equal" : "DIFFERENCES");
    return g_failures == 0 ? 0 : 1;
  }
  sweep_decode();
  std::vector<std::uint32_t> seeds = {0u, 0xFFFFFFFFu};
  for (int i = 0; i < 2; ++i) seeds.push_back(static_cast<std::uint32_t>(gen()));
  for (AmdWide w : {AmdWide::fp16, AmdWide::bf16}) {
    sweep16(w, seeds);
    sweep16_words(w, gen);
  }
  sweep32_sample(random_n, gen);
  for (char c : fp32_all) {
    if (c >= '0' && c <= '4') sweep32_all(kTargets[c - '0'], 0);
  }
  std::printf("%s\n", g_failures == 0 ? "all equal" : "DIFFERENCES");
  return g_failures == 0 ? 0 : 1;
}
