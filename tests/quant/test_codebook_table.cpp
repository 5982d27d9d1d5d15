// The GPU codebook lookup table (gpu/quant/codebook_table.hpp) against the reference search
// codebook_nearest: the table must give the reference's code for every fp32 input. CI checks
// every bit pattern near each midpoint and each bucket edge plus a stride walk over all 2^32
// patterns; the hidden "[.exhaustive]" case checks every bit pattern in [-1, 1] (the normalised
// range x / absmax) for the dynamic tables under both midpoint tie rules.
#include <algorithm>
#include <array>
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdio>
#include <thread>
#include <vector>

#include "gpu/quant/codebook_table.hpp"
#include "sim/format/codebook.hpp"
#include "sim/native/codebook_lookup.hpp"
#include "sim/native/quant_fp32.hpp"

using namespace exmy;
using namespace exmy::gpu;

namespace {

struct Table {
  std::array<float, 256> values;
  std::array<float, 255> mids;
  std::vector<std::uint32_t> entries;
  TieRule tie;
};

Table make_table(const std::array<float, 256>& values, TieRule tie) {
  Table t{values, {}, std::vector<std::uint32_t>(kCbEntries), tie};
  for (int k = 0; k < 255; ++k) t.mids[k] = native::codebook_midpoint(t.values.data(), k);
  for (int i = 0; i < kCbEntries; ++i) t.entries[i] = codebook_table_entry(t.mids.data(), tie, i);
  return t;
}

// Number of patterns in [lo, hi] (as unsigned bit patterns) where the table and the reference
// disagree; prints the first.
std::uint64_t mismatches(const Table& t, std::uint64_t lo, std::uint64_t hi,
                         std::uint64_t stride = 1) {
  std::uint64_t bad = 0;
  for (std::uint64_t u = lo; u <= hi; u += stride) {
    const float n = native::float_of(static_cast<std::uint32_t>(u));
    const int want = codebook_nearest(t.values.data(), n, t.tie);
    const int got = codebook_lookup_table(t.entries.data(), t.values.data(), n, t.tie);
    if (want != got && bad++ == 0) {
      std::printf("table mismatch at 0x%08x: table %d, codebook_nearest %d\n",
                  static_cast<unsigned>(u), got, want);
    }
  }
  return bad;
}

// Every pattern within `r` codes of `center` (clamped to the 32-bit range).
std::uint64_t around(const Table& t, std::uint32_t center, std::uint32_t r) {
  const std::uint64_t lo = center >= r ? center - r : 0;
  const std::uint64_t hi = std::uint64_t{center} + r <= 0xFFFFFFFFu ? center + r : 0xFFFFFFFFu;
  return mismatches(t, lo, hi);
}

struct Named {
  const char* name;
  std::array<float, 256> values;
};

std::vector<Named> builtin_tables() {
  return {{"dynamic", dynamic_codebook(true).values},
          {"dynamic-unsigned", dynamic_codebook(false).values},
          {"linear", linear_codebook(true).values},
          {"linear-unsigned", linear_codebook(false).values}};
}

// How many buckets of the table take the slow path (for the report: the fast path must be the
// rule for the built-in tables, not the exception).
int slow_buckets(const Table& t) {
  int s = 0;
  for (std::uint32_t e : t.entries) s += (e & kCbSlow) != 0 ? 1 : 0;
  return s;
}

}  // namespace

TEST_CASE("codebook table equals codebook_nearest near every midpoint and bucket edge",
          "[quant][codebook]") {
  for (const Named& nt : builtin_tables()) {
    for (TieRule tie : {TieRule::even_index, TieRule::lower_index}) {
      const Table t = make_table(nt.values, tie);
      INFO(nt.name << " tie " << static_cast<int>(tie));
      // Only the two last buckets (inf / NaN / beyond the table) are slow for the built-ins.
      CHECK(slow_buckets(t) == 2);
      std::uint64_t bad = 0;
      for (float m : t.mids) {
        const std::uint32_t b = native::bits_of(m);
        bad += around(t, b, 300);
        bad += around(t, b ^ 0x80000000u, 300);  // the mirrored value
      }
      for (int j = 0; j <= kCbBuckets; ++j) {
        const std::uint32_t edge = static_cast<std::uint32_t>(j + kCbBucketOffset) << kCbLowBits;
        bad += around(t, edge, 40);
        bad += around(t, edge | 0x80000000u, 40);
      }
      // +-0, +-1, +-inf, NaNs of both signs, and a stride walk over the whole code space.
      for (std::uint32_t c : {0x00000000u, 0x3F800000u, 0x7F800000u, 0x7FC00000u}) {
        bad += around(t, c, 1000);
        bad += around(t, c | 0x80000000u, 1000);
      }
      bad += mismatches(t, 0, 0xFFFFFFFFu, 4093);
      CHECK(bad == 0);
    }
  }
}

TEST_CASE("codebook table of a dense user table sends crowded buckets to the exact search",
          "[quant][codebook]") {
  // Regression guard for the slow flag: 256 values packed into [0.5, 0.5 + 255 * 2^-20] put many
  // midpoints into one bucket; a zero-straddling pair puts the midpoint 0 into the clamped bucket.
  std::array<float, 256> v{};
  for (int k = 0; k < 256; ++k) v[k] = 0.5f + static_cast<float>(k) * 0x1p-20f;
  v[0] = -0x1p-40f;
  v[1] = 0x1p-40f;
  for (TieRule tie : {TieRule::even_index, TieRule::lower_index}) {
    const Table t = make_table(v, tie);
    CHECK(slow_buckets(t) > 2);
    std::uint64_t bad = 0;
    for (float m : t.mids) bad += around(t, native::bits_of(m), 64);
    bad += around(t, 0u, 4096);
    bad += around(t, 0x80000000u, 4096);
    bad += mismatches(t, 0, 0xFFFFFFFFu, 65521);
    CHECK(bad == 0);
  }
}

TEST_CASE("codebook table equals codebook_nearest for every fp32 in [-1, 1] (dynamic maps)",
          "[.exhaustive]") {
  // Every bit pattern from +0 to +1.0 and from -0 to -1.0, split over the host's threads.
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  for (bool is_signed : {true, false}) {
    for (TieRule tie : {TieRule::even_index, TieRule::lower_index}) {
      const Table t = make_table(dynamic_codebook(is_signed).values, tie);
      std::vector<std::uint64_t> bad(threads, 0);
      std::vector<std::thread> pool;
      const std::uint64_t span = 0x3F800000u + 1;  // +0 .. 1.0
      for (unsigned w = 0; w < threads; ++w) {
        pool.emplace_back([&, w] {
          const std::uint64_t lo = span * w / threads, hi = span * (w + 1) / threads;
          if (hi > lo) {
            bad[w] += mismatches(t, lo, hi - 1);
            bad[w] += mismatches(t, lo | 0x80000000u, (hi - 1) | 0x80000000u);
          }
        });
      }
      for (auto& th : pool) th.join();
      std::uint64_t total = 0;
      for (auto b : bad) total += b;
      std::printf("dynamic%s tie %d: %llu fp32 inputs in [-1, 1], %llu mismatches\n",
                  is_signed ? "" : "-unsigned", static_cast<int>(tie),
                  static_cast<unsigned long long>(2 * span),
                  static_cast<unsigned long long>(total));
      CHECK(total == 0);
    }
  }
}
