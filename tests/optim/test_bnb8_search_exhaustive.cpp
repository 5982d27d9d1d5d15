// The bucketed nearest-code search of the GPU 8-bit kernels (sim/native/optim_bnb8_search.hpp)
// against the reference search bnb_nearest, for both dynamic maps: every bucket's boundary
// patterns and a strided sweep of all 2^32 fp32 patterns in CI, and every pattern in the hidden
// "[.exhaustive]" case (OpenMP; run on a many-core machine, result in bench/results).
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdio>

#include "sim/format/codebook.hpp"
#include "sim/native/optim_bnb8.hpp"
#include "sim/native/optim_bnb8_search.hpp"

using namespace exmy;

namespace {

struct Tables {
  const float* code;
  float mids256[256];
  float t[native::kBucketMids];
  std::uint8_t start[native::kBucketTable];
  bool strictly_increasing = false;
  int spread = 0;
  explicit Tables(bool is_signed) : code(dynamic_codebook(is_signed).values.data()) {
    native::bnb_midpoints(code, mids256);
    strictly_increasing = native::bnb_thresholds(mids256, t);
    spread = native::bnb_bucket_build(t, start);
  }
  bool agrees(std::uint32_t u) const {
    const float x = native::f32_from_bits(u);
    return native::bnb_nearest(mids256, x) == native::bnb_nearest_bucketed(t, start, x);
  }
};

// Mismatches over patterns first, first + step, ... (< 2^32), in parallel.
std::uint64_t sweep(const Tables& t, std::uint64_t step) {
  std::uint64_t bad = 0;
  const std::int64_t count = static_cast<std::int64_t>((std::uint64_t{1} << 32) / step);
#pragma omp parallel for reduction(+ : bad) schedule(static)
  for (std::int64_t i = 0; i < count; ++i) {
    bad += t.agrees(static_cast<std::uint32_t>(static_cast<std::uint64_t>(i) * step)) ? 0 : 1;
  }
  return bad;
}

}  // namespace

TEST_CASE("bucketed 8-bit search: spread <= 1 and bucket boundaries agree", "[optim][bnb8]") {
  for (const bool is_signed : {true, false}) {
    const Tables t(is_signed);
    INFO("signed map " << is_signed);
    REQUIRE(t.strictly_increasing);
    REQUIRE(t.spread <= 1);
    std::uint64_t bad = 0, checked = 0;
    for (int idx = 0; idx < native::kBucketTable; ++idx) {
      float lo, hi;
      native::bnb_bucket_range(idx, lo, hi);
      for (const float edge : {lo, hi}) {
        const std::uint32_t u = native::f32_bits(edge);
        for (std::uint32_t d = 0; d <= 8; ++d) {  // 8 patterns either side of each edge
          for (const std::uint32_t v : {u + d, u - d}) {
            bad += t.agrees(v) ? 0 : 1;
            ++checked;
          }
        }
      }
    }
    // Midpoints themselves and their neighbours: the tie rule (folded into the thresholds).
    for (int k = 0; k < 255; ++k) {
      const std::uint32_t u = native::f32_bits(t.mids256[k]);
      for (std::uint32_t d = 0; d <= 2; ++d) {
        for (const std::uint32_t v : {u + d, u - d}) {
          bad += t.agrees(v) ? 0 : 1;
          ++checked;
        }
      }
    }
    std::printf("bucketed search (signed=%d): %llu boundary patterns, %llu mismatches\n", is_signed,
                static_cast<unsigned long long>(checked), static_cast<unsigned long long>(bad));
    CHECK(bad == 0);
  }
}

TEST_CASE("8-bit sign guard: the negative codes of the signed map are a prefix", "[optim][bnb8]") {
  const float* code = dynamic_codebook(true).values.data();
  const int z = native::bnb_negative_prefix(code);
  REQUIRE(z > 0);
  for (int c = 0; c < 256; ++c) CHECK((c < z) == native::f32_signbit(code[c]));
  // Both guards on every code and state sign: the shortcut equals the lookup.
  float mids[256], t[native::kBucketMids];
  std::uint8_t start[native::kBucketTable];
  native::bnb_midpoints(code, mids);
  REQUIRE(native::bnb_thresholds(mids, t));
  native::bnb_bucket_build(t, start);
  int bad = 0;
  for (int c = 0; c < 256; ++c) {
    for (const float s : {code[c], -code[c], 0.0f, -0.0f, code[c] * 0.999f, NAN}) {
      bad += native::bnb_quant_signed(native::Bnb8Scalars{}, code, mids, s, 1.0f) !=
             native::bnb_quant_signed_bucketed(native::bnb_norm(native::Bnb8Scalars{}, 1.0f), z, t,
                                               start, s);
    }
  }
  CHECK(bad == 0);
}

TEST_CASE("bucketed 8-bit search: strided sweep of all fp32 patterns", "[optim][bnb8]") {
  // 4093 is prime, so the sweep visits every exponent and mantissa residue: ~1.05M patterns.
  for (const bool is_signed : {true, false}) {
    const Tables t(is_signed);
    const std::uint64_t bad = sweep(t, 4093);
    std::printf("bucketed search (signed=%d): stride-4093 sweep, %llu mismatches\n", is_signed,
                static_cast<unsigned long long>(bad));
    CHECK(bad == 0);
  }
}

TEST_CASE("bucketed 8-bit search: every fp32 pattern", "[optim][bnb8][.exhaustive]") {
  for (const bool is_signed : {true, false}) {
    const Tables t(is_signed);
    const std::uint64_t bad = sweep(t, 1);
    std::printf("bucketed search (signed=%d): all 2^32 patterns, %llu mismatches\n", is_signed,
                static_cast<unsigned long long>(bad));
    CHECK(bad == 0);
  }
}
