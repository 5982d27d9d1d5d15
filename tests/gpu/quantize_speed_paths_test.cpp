// GPU quantization paths written for speed (issue 37) against the CPU reference, every byte: the
// tensor-wise sr:8 span kernel (gpu/quant/detail_tensor_sr8.cuh) and the MX e2m1fn run
// (gpu/quant/detail_mx_e2m1.cuh). Sizes around their span and run widths, the special values that
// send vectors to their software paths, each input type, several seeds.
#include <catch2/catch.hpp>

#if EXMY_HAVE_CUDA
#include <cstdint>
#include <string>
#include <vector>

#include "gpu/cast/widen.hpp"
#include "gpu/quant/quantize.hpp"
#include "sim/native/pack4.hpp"
#include "sim/quant/quantize.hpp"
#include "tests/gpu/gpu_test_util.hpp"
#include "tests/gpu/quant_compare.hpp"

using namespace exmy;
using namespace exmy::gpu;

namespace {

quant::Options speed_options(const std::string& scheme, const std::string& target) {
  quant::Options o;
  o.scheme = quant::parse_scheme(scheme);
  o.target = quant::parse_target(target);
  return o;
}

// n fp32 patterns: normal values over 2^-20 .. 2^12 with random mantissas; where `special_every`
// is nonzero, every special_every-th element (from offset 3) is one of `specials` in turn.
std::vector<std::uint32_t> speed_data(std::size_t n, std::uint32_t salt,
                                      const std::vector<std::uint32_t>& specials,
                                      std::size_t special_every) {
  std::vector<std::uint32_t> v(n);
  std::uint32_t h = 0x85EBCA6Bu ^ salt;
  std::size_t s = 0;
  for (std::size_t i = 0; i < n; ++i) {
    h = h * 1664525u + 1013904223u;
    if (special_every != 0 && i % special_every == 3 && !specials.empty()) {
      v[i] = specials[s++ % specials.size()];
    } else {
      const std::uint32_t e = 107 + ((h >> 9) % 32);
      v[i] = (h & 0x80000000u) | (e << 23) | ((h * 2654435761u) & 0x7FFFFFu);
    }
  }
  return v;
}

// 16-bit inputs from fp32 patterns: the top halves (bf16 bits, and as fp16 bits a spread of
// fp16 values, NaN and inf among them).
std::vector<std::uint32_t> top_halves(std::vector<std::uint32_t> v) {
  for (auto& x : v) x >>= 16;
  return v;
}

// Finite specials: zeros, fp32 subnormals, the fp8 ties and edges of special_fp32.
const std::vector<std::uint32_t> kFinite = {
    0x00000000u, 0x80000000u, 0x00000001u, 0x807FFFFFu, 0x00400000u, 0x43E00000u,
    0x43E80000u, 0x43E80001u, 0x3F880000u, 0x3F900000u, 0x3F980000u, 0x3B000000u,
    0x3A800000u, 0x3A000000u, 0x37800000u, 0x33800000u, 0x00800000u, 0x80800000u};
// NaNs of either sign and payload (ignored by the absmax under NanPolicy::ignore).
const std::vector<std::uint32_t> kNans = {0x7FC00000u, 0xFFC00001u, 0x7F800001u, 0xFFBFFFFFu};

std::vector<std::uint32_t> concat(std::vector<std::uint32_t> a,
                                  const std::vector<std::uint32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// compare_quantize for packed 4-bit codes: gpu::quantize with QuantizedOut::packed4 against
// native::pack4 of the CPU codes, and the MX scale codes, every byte. "" when all match.
std::string compare_packed4(CastInput in, const std::vector<std::uint32_t>& xs, std::size_t rows,
                            std::size_t cols, const quant::Options& o) {
  const std::size_t n = rows * cols;
  std::vector<float> xf;
  std::vector<std::uint8_t> raw;
  exmy::gpu::testing::encode_quant_input(in, xs, n, xf, raw);
  const quant::Quantized ref = quant::quantize(xf, {rows, cols}, o);
  std::vector<std::uint8_t> want(native::packed4_bytes(n));
  native::pack4(ref.codes.data(), n, want.data());
  const std::size_t groups = quant::group_count(o.scheme, rows, cols);
  exmy::gpu::testing::DeviceBytes dx(raw.size() + 1), dcodes(want.size() + 16),
      dstate(groups * 4 + 4), dmx(groups + 1), dtensor(8);
  dx.upload(raw);
  QuantizedOut out;
  out.codes = static_cast<std::uint8_t*>(dcodes.get());
  out.state = static_cast<float*>(dstate.get());
  out.scale_codes = static_cast<std::uint8_t*>(dmx.get());
  out.tensor_scale = static_cast<float*>(dtensor.get());
  out.packed4 = true;
  quantize(dx.get(), in, rows, cols, o, out);
  const auto got = dcodes.download<std::uint8_t>(want.size());
  const auto scales = dmx.download<std::uint8_t>(groups);
  for (std::size_t g = 0; g < groups; ++g) {
    if (scales[g] != ref.scale_codes[g]) return "mx scale of group " + std::to_string(g);
  }
  for (std::size_t j = 0; j < want.size(); ++j) {
    if (got[j] != want[j]) {
      return "packed byte " + std::to_string(j) + ": gpu " + std::to_string(got[j]) + " cpu " +
             std::to_string(want[j]);
    }
  }
  return "";
}

}  // namespace

TEST_CASE("GPU tensor-wise sr:8 span kernel equals the CPU reference", "[gpu][quant]") {
  // Warp spans are 1024 elements (32 lanes x 32): n below one span (tail only), exactly one, one
  // plus a partial tail, many spans, and more than one resident grid's sweep (132 SMs x 2 blocks
  // x 8 warps x 1024 = 2.16 M elements on an H200), with finite specials everywhere, NaNs that
  // send their vectors to the software path (NanPolicy::ignore keeps the scale finite), and an
  // inf that makes the scale's y of every finite element 0 or NaN.
  const std::vector<std::size_t> sizes = {1, 5, 1023, 1024, 1024 + 37, 300 * 1024 + 5};
  const std::vector<std::uint64_t> seeds = {0, 1, 0x9E3779B97F4A7C15ull, ~0ull};
  int cases = 0;
  for (const char* tgt : {"e4m3fn", "e5m2"}) {
    for (std::size_t n : sizes) {
      const auto clean = speed_data(n, static_cast<std::uint32_t>(n), kFinite, 61);
      const auto nans =
          speed_data(n, static_cast<std::uint32_t>(n) + 1, concat(kFinite, kNans), 29);
      for (auto in : {CastInput::fp32, CastInput::bf16, CastInput::fp16}) {
        const bool half = in != CastInput::fp32;
        const auto a = half ? top_halves(clean) : clean;
        const auto b = half ? top_halves(nans) : nans;
        for (auto order : {native::ScaleOrder::div_mul, native::ScaleOrder::recip_mul,
                           native::ScaleOrder::mul_recip}) {
          quant::Options o = speed_options("tensor", tgt);
          o.mode = RoundMode::sr;
          o.sr_bits = 8;
          o.order = order;
          o.seed = seeds[static_cast<std::size_t>(cases) % seeds.size()];
          INFO(tgt << " n " << n << " input " << static_cast<int>(in) << " order "
                   << static_cast<int>(order) << " seed " << o.seed);
          o.nan = native::NanPolicy::propagate;
          REQUIRE(exmy::gpu::testing::compare_quantize(in, a, 1, n, o) == "");
          o.nan = native::NanPolicy::ignore;
          REQUIRE(exmy::gpu::testing::compare_quantize(in, b, 1, n, o) == "");
          ++cases;
        }
      }
    }
  }
  // More than one resident grid's sweep of spans (the CPU reference's time bounds the cases).
  const std::size_t big = (std::size_t{3} << 20) + 13;
  for (const char* tgt : {"e4m3fn", "e5m2"}) {
    const auto clean = speed_data(big, 17, kFinite, 61);
    const auto nans = speed_data(big, 18, concat(kFinite, kNans), 29);
    for (auto in : {CastInput::fp32, CastInput::bf16}) {
      quant::Options o = speed_options("tensor", tgt);
      o.mode = RoundMode::sr;
      o.sr_bits = 8;
      o.seed = 0xC0FFEEull;
      INFO(tgt << " n " << big << " input " << static_cast<int>(in));
      const bool half = in != CastInput::fp32;
      o.nan = native::NanPolicy::propagate;
      REQUIRE(exmy::gpu::testing::compare_quantize(in, half ? top_halves(clean) : clean, 1, big,
                                                   o) == "");
      o.nan = native::NanPolicy::ignore;
      REQUIRE(exmy::gpu::testing::compare_quantize(in, half ? top_halves(nans) : nans, 1, big, o) ==
              "");
    }
  }
  // Every seed on one many-span shape, as rows x cols (the flat index runs across rows).
  const auto x = speed_data(257 * 1024, 9, kFinite, 53);
  for (std::uint64_t seed : seeds) {
    for (auto variant : {native::CastVariant::te, native::CastVariant::torchao}) {
      quant::Options o = speed_options("tensor", "e4m3fn");
      o.mode = RoundMode::sr;
      o.sr_bits = 8;
      o.seed = seed;
      o.variant = variant;  // the scale_mul form of y
      INFO("seed " << seed << " variant " << static_cast<int>(variant));
      REQUIRE(exmy::gpu::testing::compare_quantize(CastInput::fp32, x, 257, 1024, o) == "");
    }
  }
  // inf in the data: +-inf codes (the software path) beside the finite elements' y.
  auto infs = speed_data(64 * 1024 + 9, 11, concat(kFinite, {0x7F800000u, 0xFF800000u}), 97);
  for (auto nan : {native::NanPolicy::propagate, native::NanPolicy::ignore}) {
    quant::Options o = speed_options("tensor", "e5m2");
    o.mode = RoundMode::sr;
    o.sr_bits = 8;
    o.seed = 5;
    o.nan = nan;
    REQUIRE(exmy::gpu::testing::compare_quantize(CastInput::fp32, infs, 1, infs.size(), o) == "");
  }
  // The all-zero tensor (the unscaled form of y), -0 among the zeros.
  std::vector<std::uint32_t> zeros(4096 + 3, 0u);
  for (std::size_t i = 0; i < zeros.size(); i += 7) zeros[i] = 0x80000000u;
  for (auto in : {CastInput::fp32, CastInput::bf16}) {
    quant::Options o = speed_options("tensor", "e4m3fn");
    o.mode = RoundMode::sr;
    o.sr_bits = 8;
    o.seed = 3;
    const auto z = in == CastInput::fp32 ? zeros : top_halves(zeros);
    REQUIRE(exmy::gpu::testing::compare_quantize(in, z, 1, z.size(), o) == "");
  }
  CHECK(cases == 2 * 6 * 3 * 3);
}

TEST_CASE("GPU MX e2m1fn magic-number run equals the CPU reference", "[gpu][quant]") {
  // Guards mx_e2m1_kernel (OCP MX, e2m1fn, rne): blocks whose absmax sits at every 3rd binade of
  // fp32 (scale codes over the whole E8M0 range, 2^-127's subnormal factor included), elements
  // spread below their block's absmax (ties of e2m1's grid, values under its smallest step, fp32
  // subnormals, -0), NaN and inf elements (their runs redone natively; a NaN block scale under
  // NanPolicy::propagate), each input type, both scale rules of the OCP path that differ in X
  // (floor and rceil modes), bytes and packed nibbles, and sizes that end inside a run and inside
  // a block.
  std::vector<std::uint32_t> xs;
  std::uint32_t h = 4242;
  // e2m1 grid points and midpoints (ties) relative to the block's absmax 6 * 2^k: 0.25 .. 5.
  const std::uint32_t ties[] = {0x3E800000u, 0x3F400000u, 0x3FA00000u, 0x3FE00000u,
                                0x40200000u, 0x40600000u, 0x40A00000u, 0x40C00000u};
  for (int top = 1; top < 255; top += 3) {
    xs.push_back((static_cast<std::uint32_t>(top) << 23) | 0x400000u);  // 1.5 * 2^(top-127)
    for (int k = 1; k < 32; ++k) {
      h = h * 1664525u + 1013904223u;
      const std::uint32_t sign = h & 0x80000000u;
      if (k % 5 == 0) {  // a tie of the block's grid: ties[] * 2^(top - 127 - 2)
        const std::uint32_t t = ties[(h >> 12) % 8];
        const int e = static_cast<int>(t >> 23) + top - 127 - 2;
        xs.push_back(e > 0 && e < 255
                         ? sign | (static_cast<std::uint32_t>(e) << 23) | (t & 0x7FFFFFu)
                         : sign);
      } else if (k == 7) {
        xs.push_back(sign);  // +-0
      } else {
        const int e = top - static_cast<int>(h >> 28) * 3;
        xs.push_back(e > 0 ? sign | (static_cast<std::uint32_t>(e) << 23) | ((h >> 3) & 0x7FFFFFu)
                           : sign | ((h >> 9) & 0x7FFFFFu));
      }
    }
  }
  std::vector<std::uint32_t> specials = xs;
  for (std::size_t i = 3; i < specials.size(); i += 83) {
    specials[i] = i % 3 == 0 ? 0x7FC00000u : i % 3 == 1 ? 0xFF800000u : 0x7F800000u;
  }
  // Many tiles: the same blocks repeated past several grid-wide steps of the one-block-per-tile
  // launch would need a 2^28-sized input; 64 tiles of 4096 cover the loop's indexing.
  std::vector<std::uint32_t> many;
  while (many.size() < 64 * 4096 + 48) many.insert(many.end(), xs.begin(), xs.end());
  many.resize(64 * 4096 + 48);
  int cases = 0;
  for (auto mode : {native::MxScaleMode::floor, native::MxScaleMode::rceil}) {
    for (auto nan : {native::NanPolicy::propagate, native::NanPolicy::ignore}) {
      for (bool packed : {false, true}) {
        quant::Options o = speed_options("mx", "e2m1fn");
        o.nan = nan;
        o.scale_mode = mode;
        for (auto in : {CastInput::fp32, CastInput::bf16, CastInput::fp16}) {
          for (const auto* src : {&xs, &specials, &many}) {
            std::vector<std::uint32_t> a = *src;
            if (in != CastInput::fp32) {
              for (auto& v : a) v >>= 16;
            }
            // Whole rows of 64, and one row ending inside a run (n % 16 == 9) and a block.
            for (std::size_t cols : {std::size_t{64}, a.size() - 23}) {
              const std::size_t rows = cols == 64 ? a.size() / 64 : 1;
              INFO("mode " << static_cast<int>(mode) << " nan " << static_cast<int>(nan)
                           << " packed " << packed << " input " << static_cast<int>(in) << " "
                           << rows << "x" << cols);
              if (cols == 64) REQUIRE(quantize_is_single_pass(rows, cols, o));
              const std::vector<std::uint32_t> v(a.begin(), a.begin() + rows * cols);
              const std::string diff =
                  packed ? compare_packed4(in, v, rows, cols, o)
                         : exmy::gpu::testing::compare_quantize(in, v, rows, cols, o);
              REQUIRE(diff == "");
              ++cases;
            }
          }
        }
      }
    }
  }
  CHECK(cases == 2 * 2 * 2 * 3 * 3 * 2);
}

#endif  // EXMY_HAVE_CUDA
