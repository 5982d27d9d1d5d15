// bitsandbytes' 4-bit quantization (docs/SEMANTICS.md 7.14): the native element functions against
// the MPFR oracle (sim/oracle/steps/quant_bnb4.cpp, the document's tables) on every threshold's
// neighbourhood and the special values; the NF4 levels re-derived from QLoRA's quantiles; the
// block rules (absmax 0, subnormal absmax, NaN blocks, odd n, every block size) against a
// reference written here from the document; torch's CUDA mean order; the CLI.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <random>
#include <string>
#include <vector>

// <cstdint> before <mpfr.h> (MPFR's intmax_t functions).
// clang-format off
#include <mpfr.h>
// clang-format on

#include "sim/common/error.hpp"
#include "sim/io/npy.hpp"
#include "sim/native/bnb_4bit.hpp"
#include "sim/native/bnb_dynamic_map.hpp"
#include "sim/native/convert.hpp"
#include "sim/native/torch_mean_cuda.hpp"
#include "sim/oracle/steps/quant.hpp"
#include "sim/oracle/steps/real.hpp"
#include "sim/quant/bnb4bit.hpp"
#include "sim/sfu/sfu_tables.hpp"
#include "tests/support/cli_run.hpp"

using namespace exmy;
namespace oq = exmy::oracle::steps::quant;
using exmy::oracle::steps::Real;

namespace {

float f32(std::uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}
std::uint32_t bits(float f) {
  std::uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}
oq::Bnb4 otype(native::Bnb4Type t) {
  return t == native::Bnb4Type::nf4 ? oq::Bnb4::nf4 : oq::Bnb4::fp4;
}
std::uint8_t native_code_of_n(native::Bnb4Type t, float n) {
  return t == native::Bnb4Type::nf4 ? native::bnb_nf4_code(n) : native::bnb_fp4_code(n);
}
// The fp32 values k ulps away from v (k in -w..w), crossing zero into the other sign.
std::vector<float> ulps_around(float v, int w) {
  std::vector<float> out;
  float lo = v, hi = v;
  out.push_back(v);
  for (int k = 0; k < w; ++k) {
    lo = std::nextafter(lo, -INFINITY);
    hi = std::nextafter(hi, INFINITY);
    out.push_back(lo);
    out.push_back(hi);
  }
  return out;
}
const native::Bnb4Type kTypes[] = {native::Bnb4Type::nf4, native::Bnb4Type::fp4};

// FTZ multiply written from the document (RN32 of the exact product in fp64, subnormal operands
// and results to signed zero): the reference's, not the engine's ftz_mul.
float ref_ftz(float v) {
  return std::fpclassify(v) == FP_SUBNORMAL ? std::copysign(0.0f, v) : v;
}
float ref_ftz_mul(float a, float b) {
  return ref_ftz(static_cast<float>(static_cast<double>(ref_ftz(a)) * ref_ftz(b)));
}

}  // namespace

TEST_CASE("bnb 4-bit tables equal the document's literals, parsed by the oracle", "[quant][bnb4]") {
  for (int k = 0; k < 16; ++k) {
    CHECK(bits(native::bnb_nf4_level(k)) == oq::bnb4_level(oq::Bnb4::nf4, k).f32_bits());
  }
  for (int k = 0; k < 15; ++k) {
    CHECK(bits(native::bnb_nf4_threshold(k)) == oq::bnb4_threshold(oq::Bnb4::nf4, k).f32_bits());
    // The document: each NF4 threshold is the decimal of the exact midpoint of its neighbours
    // rounded once to fp32: within half an ulp of the midpoint, and for t0, t8, t12, t14 (fp32
    // ties) the odd neighbour instead of RN32(midpoint).
    const double mid =
        (static_cast<double>(native::bnb_nf4_level(k)) + native::bnb_nf4_level(k + 1)) / 2;
    const float t = native::bnb_nf4_threshold(k);
    CHECK(std::fabs(t - mid) <= std::fabs(std::nextafter(t, 2.0f) - t) / 2);
    const bool tie_case = k == 0 || k == 8 || k == 12 || k == 14;
    CHECK((t != static_cast<float>(mid)) == tie_case);
  }
  for (int k = 0; k < 8; ++k) {
    CHECK(bits(native::bnb_fp4_magnitude(k)) == oq::bnb4_level(oq::Bnb4::fp4, k).f32_bits());
  }
  for (int k = 0; k < 7; ++k) {
    CHECK(bits(native::bnb_fp4_threshold(k)) == oq::bnb4_threshold(oq::Bnb4::fp4, k).f32_bits());
  }
  // The three FP4 literals that are not the rounded midpoints (SEMANTICS 7.14.1).
  CHECK(bits(native::bnb_fp4_threshold(0)) == 0x3B2AAAB9u);
  CHECK(bits(native::bnb_fp4_threshold(4)) == 0x3ED55556u);
  CHECK(bits(native::bnb_fp4_threshold(5)) == 0x3F155550u);
  CHECK(bits(native::bnb_fp4_magnitude(1)) == 0x3BAAAAABu);  // 1/192 (not Triton's 0x3BAAAAA4)
}

TEST_CASE("NF4 levels are QLoRA's normal quantiles as create_normal_map stores them",
          "[quant][bnb4]") {
  // create_normal_map(0.9677083, use_extra_value=True): v1 = ppf(linspace(offset, 0.5, 9)[:-1]),
  // v3 = -ppf(linspace(offset, 0.5, 8)[:-1]) (scipy, fp64), torch.Tensor -> fp32, sorted,
  // divided by the max in fp32. ppf is computed here exactly (bisection on MPFR's erf) and
  // rounded once to fp32.
  // Φ⁻¹ by bisection on Φ(x) = (1 + erf(x / √2)) / 2 at 200 bits.
  const auto phi_inv = [](double p) {
    mpfr_t lo, hi, mid, s, v, pp;
    mpfr_inits2(200, lo, hi, mid, s, v, pp, static_cast<mpfr_ptr>(nullptr));
    mpfr_set_si(lo, -10, MPFR_RNDN);
    mpfr_set_si(hi, 10, MPFR_RNDN);
    mpfr_set_d(pp, p, MPFR_RNDN);
    mpfr_sqrt_ui(s, 2, MPFR_RNDN);
    for (int it = 0; it < 195; ++it) {
      mpfr_add(mid, lo, hi, MPFR_RNDN);
      mpfr_div_2ui(mid, mid, 1, MPFR_RNDN);
      mpfr_div(v, mid, s, MPFR_RNDN);
      mpfr_erf(v, v, MPFR_RNDN);
      mpfr_add_ui(v, v, 1, MPFR_RNDN);
      mpfr_div_2ui(v, v, 1, MPFR_RNDN);
      if (mpfr_cmp(v, pp) < 0) {
        mpfr_set(lo, mid, MPFR_RNDN);
      } else {
        mpfr_set(hi, mid, MPFR_RNDN);
      }
    }
    const float f = mpfr_get_flt(lo, MPFR_RNDN);
    mpfr_clears(lo, hi, mid, s, v, pp, static_cast<mpfr_ptr>(nullptr));
    return f;
  };
  // torch.linspace(offset, 0.5, steps) is float32 (torch's CPU kernel, bnb_dynamic_map.hpp's
  // model); scipy reads those float32 values as doubles.
  const double offset = 0.9677083;
  std::vector<float> v;
  const std::vector<float> p1 = native::torch_linspace_f32(offset, 0.5, 9),
                           p3 = native::torch_linspace_f32(offset, 0.5, 8);
  for (int i = 0; i < 8; ++i) v.push_back(phi_inv(p1[static_cast<std::size_t>(i)]));
  v.push_back(0.0f);
  for (int i = 0; i < 7; ++i) v.push_back(-phi_inv(p3[static_cast<std::size_t>(i)]));
  std::sort(v.begin(), v.end());
  const float mx = v.back();
  int differ = 0;
  for (int k = 0; k < 16; ++k) {
    const float level = v[static_cast<std::size_t>(k)] / mx;
    INFO("level " << k << " derived " << level << " table " << native::bnb_nf4_level(k));
    // scipy's ppf is not correctly rounded: at most one ulp of fp32 apart, and equal for all
    // but a few levels.
    const auto d = static_cast<std::int64_t>(bits(level)) -
                   static_cast<std::int64_t>(bits(native::bnb_nf4_level(k)));
    CHECK(std::llabs(d) <= 1);
    differ += d != 0;
  }
  CHECK(differ <= 2);
}

TEST_CASE("bnb 4-bit codes equal the oracle on every threshold's neighbourhood", "[quant][bnb4]") {
  for (const native::Bnb4Type t : kTypes) {
    std::vector<float> xs;
    const int nt = t == native::Bnb4Type::nf4 ? 15 : 7;
    for (int k = 0; k < nt; ++k) {
      const float th =
          t == native::Bnb4Type::nf4 ? native::bnb_nf4_threshold(k) : native::bnb_fp4_threshold(k);
      for (const float v : ulps_around(th, 6)) {
        xs.push_back(v);
        xs.push_back(-v);
      }
    }
    for (int k = 0; k < 16; ++k) {
      for (const float v : ulps_around(native::bnb_nf4_level(k), 2)) xs.push_back(v);
    }
    for (int k = 0; k < 8; ++k) {
      for (const float v : ulps_around(native::bnb_fp4_magnitude(k), 2)) {
        xs.push_back(v);
        xs.push_back(-v);
      }
    }
    for (const std::uint32_t b :
         {0x00000000u, 0x80000000u, 0x00000001u, 0x80000001u, 0x007FFFFFu, 0x807FFFFFu, 0x00800000u,
          0x80800000u, 0x7F7FFFFFu, 0xFF7FFFFFu, 0x7F800000u, 0xFF800000u, 0x7FC00000u, 0xFFC00000u,
          0x7FFFFFFFu, 0x3F800000u, 0xBF800000u, 0x3F800001u, 0xBF800001u}) {
      xs.push_back(f32(b));
    }
    for (const float x : xs) {
      INFO(quant::bnb4_type_name(t) << " x bits " << std::hex << bits(x));
      REQUIRE(native_code_of_n(t, x) == oq::bnb4_code(otype(t), Real::of_f32_bits(bits(x))));
    }
  }
  // Ties: x exactly on a threshold takes the lower code (strict >).
  for (int k = 0; k < 15; ++k) CHECK(native::bnb_nf4_code(native::bnb_nf4_threshold(k)) == k);
  CHECK(native::bnb_fp4_code(native::bnb_fp4_threshold(6)) == 0b010);
  CHECK(native::bnb_fp4_code(-native::bnb_fp4_threshold(6)) == 0b1010);
  // -0 and NaN: sign clear, code 0 (FP4); NaN is code 0 (-1) in NF4, -0 is code 7 (0).
  CHECK(native::bnb_fp4_code(-0.0f) == 0);
  CHECK(native::bnb_fp4_code(f32(0xFFC00000u)) == 0);
  CHECK(native::bnb_nf4_code(f32(0x7FC00000u)) == 0);
  CHECK(native::bnb_nf4_code(-0.0f) == 7);
}

TEST_CASE("bnb 4-bit codes equal the counting rule on a strided sweep of all fp32",
          "[quant][bnb4]") {
  // The document's rule, written here: NF4 #{k : x > t_k}; FP4 rank of |x| with sign x < 0.
  std::uint64_t checked = 0;
  for (std::uint64_t b = 0; b < (std::uint64_t{1} << 32); b += 4099) {
    const float x = f32(static_cast<std::uint32_t>(b));
    int c = 0;
    for (int k = 0; k < 15; ++k) c += x > native::bnb_nf4_threshold(k);
    REQUIRE(native::bnb_nf4_code(x) == c);
    int r = 0;
    for (int k = 0; k < 7; ++k) r += std::fabs(x) > native::bnb_fp4_threshold(k);
    REQUIRE(native::bnb_fp4_code(x) == (native::bnb_fp4_code_of_rank(r) | (x < 0 ? 8 : 0)));
    ++checked;
  }
  CHECK(checked > 1000000);
}

TEST_CASE("bnb 4-bit values and stores equal the oracle for every code", "[quant][bnb4]") {
  const std::uint32_t absmaxes[] = {0x3F800000u, 0x40490FDBu, 0x00000000u, 0x00400000u,
                                    0x00800000u, 0x00800001u, 0x7F7FFFFFu, 0xFF7FFFFFu,
                                    0x7F800000u, 0x7FC00000u, 0x3A83126Fu, 0x477FE000u,
                                    0x47800000u, 0x2F800000u, 0x4B800001u};
  for (const native::Bnb4Type t : kTypes) {
    for (int c = 0; c < 16; ++c) {
      for (const std::uint32_t ab : absmaxes) {
        INFO("code " << c << " absmax " << std::hex << ab);
        const float y = native::bnb4_value(t, static_cast<std::uint8_t>(c), f32(ab));
        const Real r =
            oq::bnb4_value(otype(t), static_cast<std::uint8_t>(c), Real::of_f32_bits(ab));
        if (r.is_nan()) {
          CHECK(y != y);
          CHECK(native::bnb4_store(y, native::Bnb4Dtype::fp32) == 0x7FFFFFFFu);
          CHECK(native::bnb4_store(y, native::Bnb4Dtype::bf16) == 0x7FFFu);
          CHECK(native::bnb4_store(y, native::Bnb4Dtype::fp16) == 0x7FFFu);
          continue;
        }
        CHECK(bits(y) == r.f32_bits());
        CHECK(native::bnb4_store(y, native::Bnb4Dtype::fp32) == r.f32_bits());
        CHECK(native::bnb4_store(y, native::Bnb4Dtype::bf16) ==
              oracle::steps::round(oracle::steps::BF16, r).code(oracle::steps::BF16));
        CHECK(native::bnb4_store(y, native::Bnb4Dtype::fp16) ==
              oracle::steps::round(oracle::steps::F16, r).code(oracle::steps::F16));
      }
    }
  }
  // FP4 code 8 is -0 whatever the (finite) absmax: (0 * -1) * a.
  CHECK(bits(native::bnb4_value(native::Bnb4Type::fp4, 8, 3.0f)) == 0x80000000u);
}

namespace {

// The document's block rules (SEMANTICS 7.14.2), written here: absmax, then each element's code
// from the oracle on ftz(RN32(x * rcp.approx(absmax))). The reciprocal is the SFU table's value
// (the SFU model is verified on its own, sim/sfu).
struct RefQuant {
  std::vector<std::uint8_t> packed;
  std::vector<float> absmax;
};
RefQuant reference_quantize(const std::vector<float>& x, std::size_t block, native::Bnb4Type t) {
  RefQuant r;
  const std::size_t n = x.size(), blocks = (n + block - 1) / block;
  std::vector<std::uint8_t> codes(n + 1);
  const native::SfuTables& sfu = sfu::sm90_rcp_view();
  for (std::size_t b = 0; b < blocks; ++b) {
    const std::size_t lo = b * block, hi = std::min(n, lo + block);
    float a = -std::numeric_limits<float>::max();
    for (std::size_t i = lo; i < hi; ++i) {
      const float m = ref_ftz(std::fabs(x[i]));
      if (m == m && m > a) a = m;
    }
    if (hi - lo < block && a < 0.0f) a = 0.0f;
    r.absmax.push_back(a);
    const float rcp = f32(native::sfu_rcp(sfu, bits(a)));
    for (std::size_t i = lo; i < std::max(hi, std::min(lo + block, n + (n & 1))); ++i) {
      const float xi = i < n ? x[i] : 0.0f;
      const float nv = ref_ftz_mul(xi, rcp);
      codes[i] = oq::bnb4_code(otype(t), Real::of_f32_bits(bits(nv)));
    }
  }
  for (std::size_t j = 0; j < (n + 1) / 2; ++j) {
    r.packed.push_back(static_cast<std::uint8_t>(codes[2 * j] << 4 | codes[2 * j + 1]));
  }
  return r;
}

std::vector<float> heavy_tailed(std::mt19937_64& rng, std::size_t n) {
  std::student_t_distribution<float> st(2.5f);
  std::uniform_int_distribution<int> pick(0, 99);
  std::vector<float> x(n);
  for (float& v : x) {
    const int p = pick(rng);
    if (p < 8) {
      v = 0.0f;
    } else if (p < 9) {
      v = -0.0f;
    } else {
      v = st(rng) * std::ldexp(1.0f, pick(rng) % 7 - 3);
    }
  }
  return x;
}

}  // namespace

TEST_CASE("bnb 4-bit block rules: zero, subnormal and NaN blocks, odd n, every block size",
          "[quant][bnb4]") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float sub = f32(0x00000123u);
  struct Case {
    const char* name;
    std::vector<float> x;
    std::size_t block;
  };
  std::vector<Case> cases = {
      {"all zero", std::vector<float>(64, 0.0f), 64},
      {"zeros and -0", {0.0f, -0.0f, -0.0f, 0.0f}, 32},
      {"subnormal absmax (FTZ: 0)", {sub, -sub, 0.0f, sub}, 32},
      {"full NaN block", std::vector<float>(32, nan), 32},
      {"partial NaN block", {1.0f, 2.0f, nan, nan, nan}, 4 * 32},
      {"odd n < block", {0.5f, -1.0f, 0.25f}, 64},
      {"inf", {1.0f, INFINITY, -2.0f, 0.0f}, 32},
  };
  cases[4].x.resize(32 + 3, nan);  // a full block then a partial block of NaNs
  cases[4].block = 32;
  for (const Case& c : cases) {
    for (const native::Bnb4Type t : kTypes) {
      INFO(c.name << " " << quant::bnb4_type_name(t));
      quant::Bnb4Options o;
      o.type = t;
      o.block = c.block;
      const quant::Bnb4Quantized q = quant::bnb4_quantize(c.x, o);
      const RefQuant r = reference_quantize(c.x, c.block, t);
      CHECK(q.packed == r.packed);
      REQUIRE(q.absmax.size() == r.absmax.size());
      for (std::size_t b = 0; b < r.absmax.size(); ++b)
        CHECK(bits(q.absmax[b]) == bits(r.absmax[b]));
    }
  }
  // The named outcomes of SEMANTICS 7.14.2.
  quant::Bnb4Options o;
  o.block = 32;
  CHECK(bits(quant::bnb4_quantize(std::vector<float>(32, nan), o).absmax[0]) == 0xFF7FFFFFu);
  CHECK(quant::bnb4_quantize(std::vector<float>(5, nan), o).absmax[0] == 0.0f);
  const quant::Bnb4Quantized z = quant::bnb4_quantize(std::vector<float>(32, 0.0f), o);
  CHECK(z.packed[0] == 0x00);  // NF4: 0 * inf = NaN -> code 0 (-1)
  const std::vector<std::uint32_t> zy = quant::bnb4_dequantize(z, 32, native::Bnb4Dtype::fp32, o);
  CHECK(zy[0] == 0x80000000u);  // -1 * 0 = -0
  const quant::Bnb4Quantized odd = quant::bnb4_quantize(std::vector<float>{0.5f, -1.0f, 0.25f}, o);
  CHECK((odd.packed[1] & 0x0F) == 7);  // the padding zero: NF4 code 7
}

TEST_CASE("bnb 4-bit quantize/dequantize equals the reference on random tensors", "[quant][bnb4]") {
  const std::uint64_t seed = std::random_device{}();
  INFO("seed " << seed);
  std::printf("[bnb4] random tensors, seed %llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  const std::size_t sizes[] = {1, 2, 31, 33, 63, 64, 65, 255, 511, 1000, 4097, 12345};
  for (std::size_t block = 32; block <= 4096; block *= 2) {
    for (const std::size_t n : sizes) {
      for (const native::Bnb4Type t : kTypes) {
        INFO("block " << block << " n " << n << " " << quant::bnb4_type_name(t));
        const std::vector<float> x = heavy_tailed(rng, n);
        quant::Bnb4Options o;
        o.type = t;
        o.block = block;
        const quant::Bnb4Quantized q = quant::bnb4_quantize(x, o);
        const RefQuant r = reference_quantize(x, block, t);
        REQUIRE(q.packed == r.packed);
        const std::vector<std::uint32_t> y =
            quant::bnb4_dequantize(q, n, native::Bnb4Dtype::bf16, o);
        for (std::size_t i = 0; i < n; ++i) {
          const std::uint8_t c = (r.packed[i / 2] >> ((i & 1) ? 0 : 4)) & 0x0F;
          const Real v = oq::bnb4_value(otype(t), c, Real::of_f32_bits(bits(r.absmax[i / block])));
          REQUIRE(y[i] == oracle::steps::round(oracle::steps::BF16, v).code(oracle::steps::BF16));
        }
        // Double quantization: the absmax goes through the 8-bit path and back.
        o.double_quant = true;
        const quant::Bnb4Quantized d = quant::bnb4_quantize(x, o);
        CHECK(d.packed == q.packed);
        CHECK(d.absmax_codes.size() == q.absmax.size());
        CHECK(d.absmax2.size() == (q.absmax.size() + 255) / 256);
        CHECK(bits(d.offset) == bits(native::torch_cuda_mean(q.absmax.data(), q.absmax.size())));
      }
    }
  }
}

TEST_CASE("torch's CUDA mean: launch shapes and the summation order", "[quant][bnb4]") {
  // setReduceConfig for one output over a contiguous fp32 vector (SEMANTICS 7.14.4).
  CHECK(native::torch_cuda_mean_launch(100).vectorized == false);
  CHECK(native::torch_cuda_mean_launch(100).block_width == 64);
  CHECK(native::torch_cuda_mean_launch(129).vectorized == true);
  CHECK(native::torch_cuda_mean_launch(129).block_width == 32);
  CHECK(native::torch_cuda_mean_launch(130560).ctas == 1);           // vpt 255
  CHECK(native::torch_cuda_mean_launch(131072).ctas == 16);          // vpt 256
  CHECK(native::torch_cuda_mean_launch(262144).ctas == 32);          // 4096^2 weights, block 64
  CHECK(native::torch_cuda_mean_launch(8u << 20, 114).ctas == 456);  // SM-bound (H100 PCIe)
  CHECK(native::torch_cuda_mean_launch(8u << 20, 132).ctas == 528);
  // n = 4: one lane per element, the warp tree (x0 + x2) + (x1 + x3). A left-to-right sum gives
  // 1; the tree keeps 2^-23.
  const float e = std::ldexp(1.0f, -24);
  const float v4[] = {1.0f, e, e, e};
  CHECK(native::torch_cuda_mean_sum(v4, 4) == 1.0f + 2 * e);
  CHECK(native::torch_cuda_mean(v4, 4) == (1.0f + 2 * e) / 4);
  // The mean multiplies by RN32(1/n): for n = 3 and S = 3, 3 * RN32(1/3) = 1 (not 3/3 in general:
  // S = 5 gives RN32(5 * RN32(1/3)) = 0x3FD55556, while 5/3 rounds to 0x3FD55555).
  const float v3[] = {5.0f, 0.0f, 0.0f};
  CHECK(bits(native::torch_cuda_mean(v3, 3)) == 0x3FD55556u);
  // Vectorized: 4 accumulators per lane over strided float4s, then the lane sum.
  std::vector<float> big(1000, 1.0f);
  CHECK(native::torch_cuda_mean(big.data(), big.size()) == 1.0f);
}

// Regression (H200 run 2026-12-01, torch 2.11: 13 of 690 bitsandbytes 4-bit cases differed, all
// with compress_statistics; offset 1 ulp off at N = 128, 130, 131, 257, 1023 and larger). torch
// 2.11's Reduce.cuh: setReduceConfig vectorizes when dim0 >= 128 (not > 128), and block_x_reduce's
// CUDA intra-warp loop is `for (offset = dim_x >> 1; offset > 0; offset >>= 1)` (decreasing;
// ROCm/fbcode keep 1, 2, 4, ...). Values worked by hand from that source.
TEST_CASE("torch's CUDA mean: torch 2.11's vectorization bound and decreasing warp shuffle",
          "[quant][bnb4][bnbfix]") {
  CHECK(native::torch_cuda_mean_launch(127).vectorized == false);
  CHECK(native::torch_cuda_mean_launch(127).block_width == 64);
  CHECK(native::torch_cuda_mean_launch(128).vectorized == true);  // dim0 = 128 >= 128
  CHECK(native::torch_cuda_mean_launch(128).block_width == 32);   // last_pow2(128 / 4)
  // n = 4, lanes 0..3 = x: decreasing offsets (x0 + x2) + (x1 + x3), increasing (x0 + x1) +
  // (x2 + x3). x = {1, e, -1, e}, e = 2^-24: (1 - 1) + (e + e) = 2^-23, while 1 + e rounds to 1
  // (tie to even) and -1 + e = -(1 - 2^-24) is exact: 1 - (1 - 2^-24) = 2^-24.
  const float e = std::ldexp(1.0f, -24);
  const float x4[] = {1.0f, e, -1.0f, e};
  CHECK(native::torch_cuda_mean_sum(x4, 4) == std::ldexp(1.0f, -23));
  native::TorchCudaDevice rocm;
  rocm.shuffle_decreasing = false;
  CHECK(native::torch_cuda_mean_sum(x4, 4, rocm) == e);
  // n = 128: 32 lanes, lane t sums its float4 x[4t .. 4t+3]. Lane sums 1 (lane 0), e (lanes 1
  // and 2), -1 (lane 16). Decreasing offsets pair (0, 16) first: 1 - 1 = 0, then offset 2 adds
  // lane 2 (e) and offset 1 lane 1 (e): 2e. Increasing: 1 + e = 1 twice (ties to even), then
  // offset 16 adds -1: 0.
  std::vector<float> x128(128, 0.0f);
  x128[0] = 1.0f;    // lane 0
  x128[4] = e;       // lane 1
  x128[8] = e;       // lane 2
  x128[64] = -1.0f;  // lane 16
  CHECK(native::torch_cuda_mean_sum(x128.data(), 128) == 2 * e);
  CHECK(native::torch_cuda_mean_sum(x128.data(), 128, rocm) == 0.0f);
  // The H200's "specials block 32" case: bitsandbytes wrote absmax2 = +inf (0x7F800000). The
  // absmax of special_blocks() (bench/peers/bnb4bit_vs_exmy.py) at B = 32, N = 15 (< 128:
  // scalar loads, bw = 8, lane t sums x[t] + x[t + 8]): -FLT_MAX at 4, 5 (NaN blocks), +inf at 6,
  // 0.5 at 7, 3.4e38 at 10, 11, 2e-30 at 12, 13. Lanes: 0, 0, 3.4e38, 3.4e38, -M, -M, inf, 0.5.
  // Decreasing: offset 4 gives -M, -M, inf, 3.4e38; offset 2: inf, -M + 3.4e38; offset 1: inf.
  // Increasing: 3.4e38 + 3.4e38 overflows to inf and -M + -M to -inf, then -inf + inf = NaN.
  const float M = FLT_MAX, big = 3.4e38f, tiny = 2e-30f, inf = INFINITY;
  const float a15[] = {0, 0, 0, 0, -M, -M, inf, 0.5f, 0, 0, big, big, tiny, tiny, 0};
  CHECK(native::torch_cuda_mean_launch(15).block_width == 8);
  CHECK(bits(native::torch_cuda_mean(a15, 15)) == 0x7F800000u);
  CHECK(bits(native::torch_cuda_mean(a15, 15, rocm)) == 0x7FFFFFFFu);
  // ... and through quantize_4bit: A - inf is -inf or NaN, absmax2 = fmaxf |.| = +inf.
  std::vector<float> sp;
  const float nan = NAN, sub = native::f32_from_bits(0x00000123u);
  for (int i = 0; i < 64; ++i) sp.push_back(0.0f);
  for (int i = 0; i < 32; ++i) {
    sp.push_back(sub);
    sp.push_back(-sub);
  }
  for (int i = 0; i < 64; ++i) sp.push_back(nan);
  sp.push_back(1.0f);
  sp.push_back(inf);
  for (int i = 0; i < 62; ++i) sp.push_back(0.5f);
  for (int i = 0; i < 64; ++i) sp.push_back(-0.0f);
  for (int i = 0; i < 32; ++i) {
    sp.push_back(3.0e38f);
    sp.push_back(-3.4e38f);
  }
  for (int i = 0; i < 32; ++i) {
    sp.push_back(1e-30f);
    sp.push_back(-2e-30f);
  }
  for (int i = 0; i < 5; ++i) sp.push_back(nan);
  REQUIRE(sp.size() == 453);
  for (const auto t : {native::Bnb4Type::nf4, native::Bnb4Type::fp4}) {
    quant::Bnb4Options o;
    o.type = t;
    o.block = 32;
    o.double_quant = true;
    const quant::Bnb4Quantized d = quant::bnb4_quantize(sp, o);
    CHECK(bits(d.offset) == 0x7F800000u);
    REQUIRE(d.absmax2.size() == 1);
    CHECK(bits(d.absmax2[0]) == 0x7F800000u);
  }
}

TEST_CASE("bnb 4-bit input checks", "[quant][bnb4]") {
  quant::Bnb4Options o;
  o.block = 48;
  CHECK_THROWS_AS(quant::bnb4_quantize(std::vector<float>(4, 1.0f), o), InputError);
  o.block = 64;
  CHECK_THROWS_AS(quant::bnb4_quantize(std::vector<float>{}, o), InputError);
  quant::Bnb4Quantized q = quant::bnb4_quantize(std::vector<float>(100, 1.0f), o);
  CHECK_THROWS_AS(quant::bnb4_dequantize(q, 98, native::Bnb4Dtype::fp32, o), InputError);
  q.absmax.pop_back();
  CHECK_THROWS_AS(quant::bnb4_dequantize(q, 100, native::Bnb4Dtype::fp32, o), InputError);
  CHECK_THROWS_AS(quant::parse_bnb4_type("int4"), InputError);
}

TEST_CASE("CLI nf4/fp4 quantize and dequantize equal the library", "[quant][bnb4][cli]") {
  if (testing::cli().empty()) {
    WARN("EXMY_CLI not set (run through ctest): CLI not exercised");
    return;
  }
  const testing::TempDir dir("exmy_bnb4_cli");
  std::mt19937_64 rng(4242);
  const std::vector<float> x = heavy_tailed(rng, 777);
  const std::string w = dir.path + "/w.npy";
  io::write_npy(w, io::make_npy(x, {777}));
  for (const char* type : {"nf4", "fp4"}) {
    for (const bool dq : {false, true}) {
      INFO(type << " double " << dq);
      const std::string q = dir.path + "/q.npy", s = dir.path + "/s.npy", s2 = dir.path + "/s2.npy",
                        off = dir.path + "/o.npy", y = dir.path + "/y.npy";
      const std::string dqq =
          dq ? " --double-quant --state2-out " + s2 + " --offset-out " + off : "";
      const std::string dqd = dq ? " --double-quant --state2 " + s2 + " --offset " + off : "";
      REQUIRE(testing::run(std::string("quantize --scheme block:128 --to ") + type +
                           " --compat bnb-cuda --in " + w + " --out " + q + " --state-out " + s +
                           dqq) == 0);
      REQUIRE(testing::run(std::string("dequantize --scheme block:128 --from ") + type +
                           " --compat bnb-cuda --in " + q + " --state " + s + " --out " + y +
                           " --shape 777" + dqd) == 0);
      quant::Bnb4Options o;
      o.type = quant::parse_bnb4_type(type);
      o.block = 128;
      o.double_quant = dq;
      const quant::Bnb4Quantized lib = quant::bnb4_quantize(x, o);
      CHECK(io::as_u8(io::read_npy(q), q) == lib.packed);
      const std::vector<float> yv = io::as_f32(io::read_npy(y), y);
      const std::vector<std::uint32_t> ly =
          quant::bnb4_dequantize(lib, 777, native::Bnb4Dtype::fp32, o);
      REQUIRE(yv.size() == ly.size());
      for (std::size_t i = 0; i < ly.size(); ++i) REQUIRE(bits(yv[i]) == ly[i]);
    }
  }
  // Refusals: no profile, a block bitsandbytes has no kernel for, double quant without files.
  const std::string base =
      " --in " + w + " --out " + dir.path + "/q.npy --state-out " + dir.path + "/s.npy";
  CHECK(testing::run("quantize --scheme block:64 --to nf4" + base) != 0);
  CHECK(testing::run("quantize --scheme block:48 --to nf4 --compat bnb-cuda" + base) != 0);
  CHECK(testing::run("quantize --scheme rowwise --to fp4 --compat bnb-cuda" + base) != 0);
  CHECK(testing::run("quantize --scheme block:64 --to fp4 --compat bnb-cuda --double-quant" +
                     base) != 0);
  CHECK(testing::run("quantize --scheme block:64 --to nf4 --compat bnb-cuda --pack" + base) != 0);
}
