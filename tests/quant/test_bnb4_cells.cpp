// The cell table of the GPU's 4-bit quantizer (sim/native/bnb_4bit_cells.hpp) against the
// reference decision trees bnb_nf4_code / bnb_fp4_code (sim/native/bnb_4bit.hpp) on the
// normalised values the kernel can produce (|n| <= kBnb4Reach, +-0 and every NaN): every cell's
// edges, every threshold's neighbours, the special values and a strided sweep of the fp32
// patterns in CI; every pattern in the hidden "[.exhaustive]" case (OpenMP; result in
// docs/SEMANTICS.md 7.14). Also the table's construction checks, the host's model of the cell
// FMA's rounding at its binade edge, and the one-FMNMX absmax fold against bnb4_absmax_step.
#include <catch2/catch.hpp>
#include <cfenv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "sim/native/bnb_4bit.hpp"
#include "sim/native/bnb_4bit_cells.hpp"

using namespace exmy;
using native::Bnb4Type;

namespace {

bool in_domain(std::uint32_t u) {
  return (u & 0x7FFFFFFFu) <= native::f32_bits(native::kBnb4Reach) ||
         (u & 0x7FFFFFFFu) > 0x7F800000u;
}

template <Bnb4Type T>
struct Cells {
  native::Bnb4Cell c[native::kBnb4CellsMax];
  Cells() {
    for (int i = 0; i < native::kBnb4CellCount<T>; ++i) c[i] = native::bnb4_cell_entry<T>(i);
  }
  // Patterns outside the domain are no normalised value of the kernel's: counted as agreeing.
  bool agrees(std::uint32_t u) const {
    const float n = native::f32_from_bits(u);
    if (!in_domain(u)) return true;
    const std::uint32_t ref =
        T == Bnb4Type::nf4 ? native::bnb_nf4_code(n) : native::bnb_fp4_code(n);
    return ref == native::bnb4_code_cells<T>(c, n);
  }
};

// Mismatches over patterns 0, step, 2 step, ... (< 2^32), in parallel.
template <Bnb4Type T>
std::uint64_t sweep(std::uint64_t step) {
  const Cells<T> t;
  std::uint64_t bad = 0;
  const std::int64_t count = static_cast<std::int64_t>((std::uint64_t{1} << 32) / step);
#pragma omp parallel for reduction(+ : bad) schedule(static)
  for (std::int64_t i = 0; i < count; ++i) {
    bad += t.agrees(static_cast<std::uint32_t>(static_cast<std::uint64_t>(i) * step)) ? 0 : 1;
  }
  return bad;
}

template <Bnb4Type T>
void check_edges(const char* name) {
  REQUIRE(native::bnb4_cells_valid<T>());
  const Cells<T> t;
  std::uint64_t bad = 0, checked = 0;
  std::vector<std::uint32_t> probes = {0x00000000u, 0x80000000u, 0x7F800000u, 0xFF800000u,
                                       0x7FC00000u, 0xFFC00000u, 0x7F800001u, 0xFFFFFFFFu,
                                       0x00000001u, 0x807FFFFFu, 0x3F800000u, 0xBF800000u};
  constexpr int kCount = T == Bnb4Type::nf4 ? 15 : 7;
  for (int k = 0; k < kCount; ++k) {  // each threshold, its neighbours and its negation's
    const std::uint32_t u = native::f32_bits(native::bnb4_threshold_key<T>(k));
    for (std::uint32_t d = 0; d <= 16; ++d) {
      for (const std::uint32_t v : {u + d, u - d})
        probes.insert(probes.end(), {v, v ^ 0x80000000u});
    }
  }
  // Each cell's edges: the smallest and largest pattern of every cell, by bisection on the
  // monotone cell function over the domain's non-negative and non-positive patterns.
  const std::uint32_t top = native::f32_bits(native::kBnb4Reach);
  for (std::uint32_t sign : {0u, 0x80000000u}) {
    for (std::uint32_t lo = 0, hi; lo <= top; lo = hi + 1) {
      const int c = native::bnb4_cell_of<T>(native::f32_from_bits(sign | lo));
      REQUIRE(c >= 0);
      REQUIRE(c < native::kBnb4CellCount<T>);
      std::uint32_t a = lo, b = top;  // the last pattern of cell c: in [a, b]
      while (a < b) {
        const std::uint32_t m = a + (b - a + 1) / 2;
        if (native::bnb4_cell_of<T>(native::f32_from_bits(sign | m)) == c) {
          a = m;
        } else {
          b = m - 1;
        }
      }
      hi = a;
      for (std::uint32_t d = 0; d <= 4; ++d) {
        probes.insert(probes.end(),
                      {sign | (lo + d), sign | (lo - d), sign | (hi + d), sign | (hi - d)});
      }
    }
  }
  for (const std::uint32_t u : probes) {
    bad += t.agrees(u) ? 0 : 1;
    ++checked;
  }
  std::printf("bnb4 cells (%s): %llu edge patterns, %llu mismatches\n", name,
              static_cast<unsigned long long>(checked), static_cast<unsigned long long>(bad));
  CHECK(bad == 0);
}

}  // namespace

TEST_CASE("bnb4 cell table: cell edges, thresholds and specials agree with the tree",
          "[quant][bnb4]") {
  check_edges<Bnb4Type::nf4>("nf4");
  check_edges<Bnb4Type::fp4>("fp4");
}

TEST_CASE("bnb4 cell table: strided sweep of all fp32 patterns", "[quant][bnb4]") {
  // 4093 is prime, so the sweep visits every exponent and mantissa residue: ~1.05M patterns.
  CHECK(sweep<Bnb4Type::nf4>(4093) == 0);
  CHECK(sweep<Bnb4Type::fp4>(4093) == 0);
}

// Hidden, and tagged apart from [bnb4] and [quant] so that neither filter runs it.
TEST_CASE("bnb4 cell table: every fp32 pattern", "[.exhaustive][bnb4cells]") {
  const std::uint64_t nf4 = sweep<Bnb4Type::nf4>(1), fp4 = sweep<Bnb4Type::fp4>(1);
  std::printf("bnb4 cells: all 2^32 patterns, nf4 %llu and fp4 %llu mismatches\n",
              static_cast<unsigned long long>(nf4), static_cast<unsigned long long>(fp4));
  CHECK(nf4 == 0);
  CHECK(fp4 == 0);
}

TEST_CASE("bnb4 cell table: the host's cell pattern is the FMA rounded down", "[quant][bnb4]") {
  // bnb4_cell_bits computes RD(n K + B) by floors on the host; the device issues fma.rm. Check
  // the floors against the C library's fma under FE_DOWNWARD (x86's FMA rounds as the fma.rm of
  // the device for every non-NaN operand) on the patterns around every cell pattern's edge (n = j /
  // 32 or j / 33 and its neighbours) and a strided sweep of the domain.
  std::vector<float> ns;
  for (int j = -40; j <= 40; ++j) {
    for (const double d : {32.0, 33.0, 16.0, 16.5}) {
      const float c = static_cast<float>(j / d);
      for (int e = -3; e <= 3; ++e) {
        ns.push_back(native::f32_from_bits(native::f32_bits(c) + e));
        ns.push_back(-native::f32_from_bits(native::f32_bits(c) + e));
      }
    }
  }
  for (std::uint32_t u = 0; u <= native::f32_bits(native::kBnb4Reach); u += 9973) {
    ns.push_back(native::f32_from_bits(u));
    ns.push_back(native::f32_from_bits(u | 0x80000000u));
  }
  ns.insert(ns.end(),
            {0.0f, -0.0f, native::f32_from_bits(0x00800000u), native::f32_from_bits(0x80800000u),
             native::kBnb4Reach, -native::kBnb4Reach});
  int bad = 0, checked = 0;
  const int old = std::fegetround();
  for (const float n : ns) {
    // A NaN: the device's FMA returns the canonical 0x7FFFFFFF, x86's keeps the payload.
    if (!in_domain(native::f32_bits(n)) || n != n) continue;
    volatile float vn = n, k4 = 0x1p-18f, b4 = 2.0f - 0x1p-23f, k16 = 33.0f * 0x1p-23f,
                   b16 = 2.0f + 0x1p-18f;
    std::fesetround(FE_DOWNWARD);
    const float h4 =
        std::fma(static_cast<float>(vn), static_cast<float>(k4), static_cast<float>(b4));
    const float h16 =
        std::fma(static_cast<float>(vn), static_cast<float>(k16), static_cast<float>(b16));
    std::fesetround(old);
    bad += native::bnb4_cell_bits<Bnb4Type::fp4>(n) != native::f32_bits(h4);
    bad += native::bnb4_cell_bits<Bnb4Type::nf4>(n) != native::f32_bits(h16);
    checked += 2;
  }
  std::printf("bnb4 cell rounding: %d patterns, %d mismatches\n", checked, bad);
  CHECK(checked > 1000);
  CHECK(bad == 0);
}

TEST_CASE("bnb4 absmax: the FMNMX fold, flushed once, equals bnb4_absmax_step's", "[quant][bnb4]") {
  // Runs of specials, subnormals of both signs, zeros and normals; folds of 1..40 elements,
  // split at every point into two partial folds combined by a max (the GPU's shuffles).
  const std::uint32_t pool[] = {0x00000000u, 0x80000000u, 0x00000001u, 0x807FFFFFu, 0x00400000u,
                                0x00800000u, 0x80800000u, 0x3F800000u, 0xBF800001u, 0x7F7FFFFFu,
                                0xFF7FFFFFu, 0x7F800000u, 0xFF800000u, 0x7FC00000u, 0xFFC00001u,
                                0x7F800001u, 0x3A000000u, 0x80000010u, 0x00FFFFFFu, 0x4B000000u};
  constexpr int kPool = sizeof(pool) / sizeof(pool[0]);
  std::uint32_t h = 12345;
  int bad = 0, checked = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    const int len = 1 + trial % 40;
    std::vector<float> x(len);
    for (float& v : x) {
      h = h * 1664525u + 1013904223u;
      const std::uint32_t u =
          (h >> 28) < 12 ? pool[(h >> 8) % kPool] : ((h & 0x80000000u) | ((h >> 3) & 0x007FFFFFu));
      v = native::f32_from_bits(u);
    }
    float ref = native::kBnb4AbsmaxInit;
    for (const float v : x) ref = native::bnb4_absmax_step(ref, v);
    for (int split = 0; split <= len; ++split) {
      float a = native::kBnb4AbsmaxInit, b = native::kBnb4AbsmaxInit;
      for (int i = 0; i < split; ++i) a = native::bnb4_absmax_raw_step(a, x[i]);
      for (int i = split; i < len; ++i) b = native::bnb4_absmax_raw_step(b, x[i]);
      const float got = native::bnb4_absmax_flush(native::f32_fmax_hw(a, b));
      bad += native::f32_bits(got) != native::f32_bits(ref);
      ++checked;
    }
  }
  std::printf("bnb4 absmax fold: %d folds, %d mismatches\n", checked, bad);
  CHECK(bad == 0);
}
