// The tiled GEMM kernel's algebra (sim/native/gemm_tile.hpp) on the CPU against the hw model's
// definition (dot_model_fp32, sim/native/gemm_dot.hpp): finite operands of every 8- and 16-bit
// type the fast path takes, zeros of both signs and subnormals mixed in, and the unit layouts
// of promotion chunks and split-K parts at K on and off the group and chunk boundaries. Every
// output either equals the reference bit for bit or is flagged for the generic kernel.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "sim/format/registry.hpp"
#include "sim/gemm/accum_model.hpp"
#include "sim/native/gemm_dot.hpp"
#include "sim/native/gemm_tile.hpp"

using namespace exmy;

namespace {

// Finite values of `fmt`: random codes (NaN and infinity codes replaced by zero), with zeros of
// both signs, subnormals and the largest finite magnitude at a few percent each.
std::vector<double> finite_values(const std::string& fmt, std::size_t n, std::mt19937_64& rng) {
  const Format f = parse_format(fmt);
  const int bits = f.fp.total_bits();
  std::uniform_int_distribution<std::uint32_t> any(0, (1u << bits) - 1);
  std::uniform_int_distribution<int> pick(0, 99);
  std::vector<double> v(n);
  for (auto& x : v) {
    std::uint32_t c = any(rng);
    const int p = pick(rng);
    const std::uint32_t sign = c & (1u << (bits - 1));
    if (p < 3) c = sign;
    if (p >= 3 && p < 6) c = sign | (any(rng) & ((1u << f.fp.man_bits) - 1));
    double d = native::to_double(f.fp, c);
    if (!(d - d == 0)) d = 0.0;
    x = d;
  }
  return v;
}

}  // namespace

TEST_CASE("tiled hw model equals dot_model_fp32 or flags the output", "[gemm][tile]") {
  struct Case {
    const char* fmt;
    const char* model;
  };
  const Case cases[] = {
      {"e4m3fn", "hw:k=32,frac=13,inter=13,chunk=128"},  // cublas-sm90 FP8
      {"e5m2", "hw:k=32,frac=13,inter=13,chunk=128"},
      {"e4m3fn", "hw:k=32,frac=13,inter=13"},  // sm90 FP8
      {"bf16", "hw:k=16,frac=25"},             // sm90 16-bit
      {"fp16", "hw:k=16,frac=25"},
      {"bf16", "hw:k=16,frac=25,chunk=1408"},
      {"bf16", "hw:k=16,frac=25,chunk=64,split=3"},
      {"fp16", "hw:k=16,frac=25,split=4,tile=64"},
      {"bf16", "hw:k=16,frac=24,rne"},
      {"e4m3fn", "hw:k=16,frac=13,inter=10,rne,chunk=32,split=2"},
      {"e4m3fn", "hw:k=16,frac=20,ktile=64"},
      {"e4m3fn", "hw:k=32,frac=25"},  // the int32 bound refuses it: the generic path
  };
  const std::uint64_t seed = 20261202;
  std::mt19937_64 rng(seed);
  std::size_t compared = 0, flagged = 0, skipped_layouts = 0;
  for (const Case& c : cases) {
    const Format f = parse_format(c.fmt);
    const int emin = f.fp.emin();
    const gemm::AccumModel am = gemm::parse_accum_model(c.model, f.fp.total_bits());
    const native::DotModel m = gemm::dot_model(am);
    for (const std::size_t K : {1, 5, 16, 31, 32, 33, 127, 128, 129, 1000, 4096}) {
      INFO("seed " << seed << " " << c.fmt << " " << c.model << " K " << K);
      std::vector<std::uint8_t> gflags, uflags;
      std::vector<std::uint32_t> ustart;
      if (!native::tile_layout(K, m, m.k_group, &gflags, &uflags, &ustart)) {
        ++skipped_layouts;
        continue;
      }
      const std::size_t G = static_cast<std::size_t>(m.k_group), ng = gflags.size();
      const std::size_t rows = 14;
      const std::vector<double> a = finite_values(c.fmt, rows * K, rng);
      const std::vector<double> b = finite_values(c.fmt, rows * K, rng);
      // The encoder's precision: the OR of every significand.
      std::uint32_t or_a = 0, or_b = 0;
      for (double x : a) {
        if (!native::dot_is_zero(x)) or_a |= static_cast<std::uint32_t>(native::dot_sig(x, emin).m);
      }
      for (double x : b) {
        if (!native::dot_is_zero(x)) or_b |= static_cast<std::uint32_t>(native::dot_sig(x, emin).m);
      }
      const int pa = native::tile_precision(or_a), pb = native::tile_precision(or_b);
      CHECK(pa <= f.fp.man_bits + 1);
      int L = 0;
      if (!native::tile_shift(m.frac_bits, pa, pb, m.k_group, &L)) {
        ++skipped_layouts;
        continue;
      }
      std::vector<std::uint32_t> ea(rows * ng * G,
                                    native::tile_pack(0, native::kTileZeroExp, false));
      std::vector<std::uint32_t> eb(ea);
      for (std::size_t r = 0; r < rows; ++r) {
        for (std::size_t k = 0; k < K; ++k) {
          ea[r * ng * G + k] = native::tile_encode(a[r * K + k], emin, pa);
          eb[r * ng * G + k] = native::tile_encode(b[r * K + k], emin, pb);
        }
      }
      for (std::size_t i = 0; i < rows; ++i) {
        for (std::size_t j = 0; j < rows; ++j) {
          const float want =
              native::dot_model_fp32(a.data() + i * K, 1, b.data() + j * K, 1, K, emin, emin, m);
          float got = 0;
          if (!native::tile_dot(ea.data() + i * ng * G, 1, eb.data() + j * ng * G, 1, ng, m.k_group,
                                gflags.data(), L, m, &got)) {
            ++flagged;
            continue;
          }
          ++compared;
          REQUIRE(native::f32_bits(got) == native::f32_bits(want));
        }
      }
    }
  }
  INFO("compared " << compared << " flagged " << flagged << " layouts skipped " << skipped_layouts);
  CHECK(compared > 10000);
  CHECK(flagged < compared);  // random 16-bit codes overflow and underflow often
}

TEST_CASE("tiled layout refuses misaligned units and moved k-tile groups", "[gemm][tile]") {
  std::vector<std::uint8_t> gflags, uflags;
  std::vector<std::uint32_t> ustart;
  native::DotModel m;
  m.k_group = 16;
  m.chunk = 24;  // chunk starts 24, 48, ...: not multiples of 16
  CHECK_FALSE(native::tile_layout(100, m, 16, &gflags, &uflags, &ustart));
  m.chunk = 64;
  REQUIRE(native::tile_layout(100, m, 16, &gflags, &uflags, &ustart));
  CHECK(ustart == std::vector<std::uint32_t>{0, 4, 7});
  CHECK(gflags == std::vector<std::uint8_t>{0, 0, 0, 1, 0, 0, 3});
  m.chunk = 0;
  m.split_k = 3;  // parts of ceil(100 / 3) = 34: the second starts at 34
  CHECK_FALSE(native::tile_layout(100, m, 16, &gflags, &uflags, &ustart));
  m.split_k = 2;  // parts of 50: 50 is not a multiple of 16
  CHECK_FALSE(native::tile_layout(100, m, 16, &gflags, &uflags, &ustart));
  REQUIRE(native::tile_layout(128, m, 16, &gflags, &uflags, &ustart));
  CHECK(gflags == std::vector<std::uint8_t>{0, 0, 0, 3, 0, 0, 0, 3});
  m.split_k = 1;
  m.ktile = 32;  // K = 100: a residue of 4 first
  CHECK_FALSE(native::tile_layout(100, m, 16, &gflags, &uflags, &ustart));
  CHECK(native::tile_layout(128, m, 16, &gflags, &uflags, &ustart));
}

TEST_CASE("tiled helpers: accumulator exponent and the -0 and special flags", "[gemm][tile]") {
  std::mt19937_64 rng(5);
  for (int t = 0; t < 200000; ++t) {
    std::uint32_t u = static_cast<std::uint32_t>(rng());
    if (t < 1000) u = static_cast<std::uint32_t>(t);  // subnormals
    float x;
    std::memcpy(&x, &u, 4);
    if (!native::tile_c_ok(x)) {
      CHECK((u == 0x80000000u || (u & 0x7F800000u) == 0x7F800000u));
      continue;
    }
    if ((u & 0x7FFFFFFFu) != 0) {
      REQUIRE(native::tile_c_exp(x) == native::dot_sig(static_cast<double>(x), -126).e);
    }
  }
  CHECK_FALSE(native::tile_c_ok(-0.0f));
  CHECK(native::tile_c_ok(0.0f));
  int L = 0;
  CHECK(native::tile_shift(13, 4, 4, 32, &L));
  CHECK(L == 7);
  CHECK(native::tile_shift(25, 8, 8, 16, &L));
  CHECK(L == 11);
  CHECK(native::tile_shift(25, 11, 11, 16, &L));
  CHECK_FALSE(native::tile_shift(25, 11, 11, 32, &L));  // the int32 sum could overflow
  CHECK_FALSE(native::tile_shift(25, 24, 24, 8, &L));   // fp32 operands: L < 0
}

TEST_CASE("tiled group tail in 32-bit arithmetic equals the reference's", "[gemm][tile]") {
  // tile_group_end_fast (the kernel's) against tile_group_end (dot_sig, dot_normalise): random
  // accumulators (zero, subnormal, small and large exponents), group maxima at and above their
  // exponent, sums up to the int32 bound, frac 10..25, inter 7..23, both roundings.
  const std::uint64_t seed = 99;
  std::mt19937_64 r(seed);
  std::size_t n = 0;
  for (long it = 0; it < 2000000; ++it) {
    const int fracs[] = {13, 24, 25, 10, 20}, inters[] = {13, 23, 10, 0, 23};
    const int frac = fracs[r() % 5], inter = inters[r() % 5];
    const bool rne = (r() & 1) != 0;
    float c = 0.0f;
    const int mode = static_cast<int>(r() % 4);
    if (mode != 0) {
      const int be = mode == 1   ? static_cast<int>(r() % 255)
                     : mode == 2 ? static_cast<int>(r() % 12)
                                 : 100 + static_cast<int>(r() % 60);
      const std::uint32_t u =
          (static_cast<std::uint32_t>(r()) & 0x807FFFFFu) | (static_cast<std::uint32_t>(be) << 23);
      c = native::f32_from_bits(u);
      if (!native::tile_c_ok(c)) continue;
    }
    const int E = (native::f32_bits(c) & 0x7FFFFFFFu) == 0
                      ? -300 + static_cast<int>(r() % 450)
                      : native::tile_c_exp(c) + static_cast<int>(r() % 45);
    const std::int64_t lim = std::int64_t{1} << (r() % 32);
    auto sum = static_cast<std::int32_t>(static_cast<std::int64_t>(r() % (2 * lim + 1)) - lim);
    if (r() % 50 == 0) sum = (r() & 1) != 0 ? 2147483647 : -2147483647;
    if (r() % 20 == 0) sum = 0;
    INFO("seed " << seed << " c " << c << " E " << E << " sum " << sum << " frac " << frac
                 << " inter " << inter << " rne " << rne);
    REQUIRE(native::f32_bits(native::tile_group_end_fast(c, E, sum, frac, inter, rne)) ==
            native::f32_bits(native::tile_group_end(c, E, sum, frac, inter, rne)));
    ++n;
  }
  CHECK(n > 1500000);
}

TEST_CASE("tiled branch-free group tail equals the reference's on its boundaries", "[gemm][tile]") {
  // The kernel's tail computes every case and selects (issue 37): sums at and around every
  // power of two and its ties (rne's half, the right shifts of 31, 32 and 33), the int32
  // extremes, accumulators of both signs (smallest subnormal, largest, 1, the normal/subnormal
  // edge), and every group maximum from the accumulator's exponent upward across the subnormal
  // results (two steps), the normal range and the overflow to infinity; inter 0 (n = 1 at q >
  // 127) to 23.
  std::vector<std::int32_t> sums = {0, 1, -1, 2147483647, -2147483647, -2147483647 - 1};
  for (int b = 1; b < 31; ++b) {
    for (int d = -2; d <= 2; ++d) {
      sums.push_back((1 << b) + d);
      sums.push_back(-((1 << b) + d));
      sums.push_back((3 << (b - 1)) + d);
    }
  }
  const float cs[] = {0.0f,
                      native::f32_from_bits(1),
                      native::f32_from_bits(0x807FFFFFu),
                      native::f32_from_bits(0x00800000u),
                      1.0f,
                      -1.5f,
                      3.0e38f,
                      -3.0e38f};
  std::size_t n = 0;
  for (const float c : cs) {
    const bool zero = (native::f32_bits(c) & 0x7FFFFFFFu) == 0;
    const int base = zero ? -4200 : native::tile_c_exp(c);
    for (const int frac : {13, 25}) {
      for (const int inter : {0, 13, 23}) {
        for (const bool rne : {false, true}) {
          for (int E = base; E < base + 8400; E += (E > 300 || E < -300) ? 97 : 1) {
            for (const std::int32_t sum : sums) {
              const float want = native::tile_group_end(c, E, sum, frac, inter, rne);
              const float got = native::tile_group_end_fast(c, E, sum, frac, inter, rne);
              if (native::f32_bits(got) != native::f32_bits(want)) {
                INFO("c " << c << " E " << E << " sum " << sum << " frac " << frac << " inter "
                          << inter << " rne " << rne);
                REQUIRE(native::f32_bits(got) == native::f32_bits(want));
              }
              ++n;
            }
          }
        }
      }
    }
  }
  CHECK(n > 10000000);
}

TEST_CASE("tiled float pass: element values and group sums equal the integer pass",
          "[gemm][tile]") {
  // tile_value gives each element's value; the float pass's terms trunc(a b 2^(frac - E))
  // (computed here in fp64, exact) sum to the integer pass's int32 on random FP8 groups.
  for (const char* fmt : {"e4m3fn", "e5m2", "bf16", "fp16"}) {
    const Format f = parse_format(fmt);
    const int bits = f.fp.total_bits(), p = f.fp.man_bits + 1, emin = f.fp.emin();
    for (std::uint32_t c = 0; c < (1u << bits); ++c) {
      const double x = native::to_double(f.fp, c);
      if (!(x - x == 0)) continue;
      INFO(fmt << " code " << c);
      REQUIRE(native::f32_bits(native::tile_value(native::tile_encode(x, emin, p), p)) ==
              native::f32_bits(static_cast<float>(x)));
    }
  }
  const std::uint64_t seed = 3;
  std::mt19937_64 rng(seed);
  for (int it = 0; it < 20000; ++it) {
    const char* fmt = (rng() & 1) != 0 ? "e4m3fn" : "e5m2";
    const Format f = parse_format(fmt);
    const int p = f.fp.man_bits + 1, emin = f.fp.emin(), G = 32, frac = 13;
    const std::vector<double> a = finite_values(fmt, G, rng), b = finite_values(fmt, G, rng);
    int E = -32768;
    std::uint32_t wa[32], wb[32];
    for (int k = 0; k < G; ++k) {
      wa[k] = native::tile_encode(a[k], emin, p);
      wb[k] = native::tile_encode(b[k], emin, p);
      E = std::max(E, native::tile_exp(wa[k]) + native::tile_exp(wb[k]));
    }
    if (E < native::kTileNoProduct) continue;
    int L = 0;
    REQUIRE(native::tile_shift(frac, p, p, G, &L));
    std::uint32_t si = 0;
    double sf = 0;
    const double sc = native::tile_float_scale(frac, E);
    for (int k = 0; k < G; ++k) {
      const std::uint32_t t =
          native::tile_term(native::tile_sig(wa[k]) << L, native::tile_sig(wb[k]),
                            E - native::tile_exp(wa[k]) - native::tile_exp(wb[k]));
      si += native::tile_neg(wa[k]) != native::tile_neg(wb[k]) ? 0u - t : t;
      const float pr = native::tile_value(wa[k], p) * native::tile_value(wb[k], p);
      sf += std::trunc(static_cast<double>(pr) * sc);
    }
    INFO("seed " << seed << " iteration " << it);
    REQUIRE(static_cast<std::int64_t>(static_cast<std::int32_t>(si)) ==
            static_cast<std::int64_t>(sf));
  }
}
