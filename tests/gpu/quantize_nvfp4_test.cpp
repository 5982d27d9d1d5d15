// The GPU NVFP4 single pass (gpu/quant/detail_nvfp4.cuh, nvfp4_kernel: torchao one- and two-level,
// TE two-level; the level measured on the device, or given as a tensor amax or scale) against the
// CPU reference (docs/SEMANTICS.md 7.11), every code byte or packed nibble pair, every block-scale
// byte and the tensor scale's bits: designed blocks that sweep every e4m3 block-scale code with
// elements on and beside each e2m1 grid point and tie of their block's product, whole tensors at
// the level's edges (zeros, subnormals, inf, NaN under both policies, FLT_MAX), weighted random
// blocks under printed seeds, each input type, bytes and packed codes, 16-byte aligned and
// misaligned pointers (the kernel's scalar loads and stores) and a partial last tile.
#include <catch2/catch.hpp>

#if EXMY_HAVE_CUDA
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "gpu/cast/widen.hpp"
#include "gpu/quant/quantize.hpp"
#include "sim/native/convert.hpp"
#include "sim/native/pack4.hpp"
#include "sim/native/quant_nvfp4.hpp"
#include "sim/quant/quantize.hpp"
#include "tests/gpu/gpu_test_util.hpp"
#include "tests/gpu/quant_compare.hpp"

using namespace exmy;
using namespace exmy::gpu;

namespace {

using Bits = std::vector<std::uint32_t>;

struct Rng {
  std::uint64_t s;
  std::uint32_t next() {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<std::uint32_t>(s >> 32);
  }
};

// The NVFP4 profiles of the single pass: torchao one-level, and each two-level source of the
// level (measured on the device; a given tensor amax; torchao's given tensor scale).
struct Profile {
  const char* name;
  bool te, two;
  float amax = NAN, scale = NAN;  // NaN: not given
};

quant::Options nvfp4_options(const Profile& p) {
  quant::Options o;
  o.scheme = quant::parse_scheme("nvfp4");
  o.target = quant::parse_target("e2m1fn");
  o.variant = quant::parse_variant(p.te ? "te" : "torchao");
  o.two_level = p.two;
  o.tensor_amax = p.amax;
  o.tensor_scale = p.scale;
  return o;
}

// Patterns of `in` (fp32 bits, bf16 bits by truncation, fp16 bits by RNE) from fp32 patterns.
Bits to_input(CastInput in, const Bits& xs) {
  if (in == CastInput::fp32) return xs;
  Bits v(xs.size());
  constexpr FloatFormat kF32 = formats::fp32, kF16 = formats::fp16;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    v[i] = in == CastInput::bf16
               ? xs[i] >> 16
               : static_cast<std::uint32_t>(native::convert(kF32, kF16, Rounding{}, xs[i], 0).code);
  }
  return v;
}

// e2m1 grid points and midpoints (the ties), and one value past the clamp at 6.
const float kGrid[] = {0.0f, 0.25f, 0.5f, 0.75f, 1.0f, 1.25f, 1.5f, 1.75f,
                       2.0f, 2.5f,  3.0f, 3.5f,  4.0f, 5.0f,  6.0f, 7.0f};

float with_sign(float v, std::uint32_t u) {
  return native::float_of(native::bits_of(v) | (u & 0x80000000u));
}

// Designed blocks under the profile's level for a tensor of absmax G: block b has absmax
// A = G 2^(-(b % 353) / 16) (so 448 A / G, the two-level block scale, runs from 448 to 2^-13.1,
// below e4m3's smallest subnormal 2^-9: every code, with one level its clamp at 2^-6 and past
// 2688 its saturation), element 0 = +-A, the others x = RN32(t / r) or a neighbour (one ulp
// either side) for t of kGrid, r the block's factor as the reference computes it, so that
// RN32(x r) is on or next to each grid point and tie; a value that would exceed A becomes a
// fraction of it. Every 11th block is zeros of both signs, every 13th small subnormals.
Bits designed(std::size_t blocks, float G, const Profile& pr, Rng& rng) {
  const quant::Options o = nvfp4_options(pr);
  const native::Nvfp4Tensor lv = quant::nvfp4_tensor_level(o, G);
  Bits v;
  v.reserve(blocks * 16);
  for (std::size_t b = 0; b < blocks; ++b) {
    if (b % 11 == 10) {
      for (int k = 0; k < 16; ++k) v.push_back(rng.next() & 0x80000000u);
      continue;
    }
    if (b % 13 == 12) {
      for (int k = 0; k < 16; ++k) {
        const std::uint32_t u = rng.next();
        v.push_back((u & 0x80000000u) | ((u >> 12) & 0xFFu));
      }
      continue;
    }
    const float A = G * std::exp2(-static_cast<float>(b % 353) / 16.0f);
    const std::uint8_t code =
        pr.te ? native::nvfp4_te_scale_code(A, lv) : native::nvfp4_torchao_scale_code(A, lv);
    const float r = pr.te ? native::nvfp4_te_element_scale(code, lv)
                          : native::nvfp4_torchao_element_scale(code, lv);
    v.push_back(native::bits_of(with_sign(A, rng.next())));
    for (int k = 1; k < 16; ++k) {
      const std::uint32_t u = rng.next();
      const float t = kGrid[(u >> 3) % 16];
      float x = t / r;
      std::uint32_t xb = native::bits_of(x);
      if (xb != 0 && (u & 3u) == 1u) --xb;
      if ((u & 3u) == 2u) ++xb;
      x = native::float_of(xb);
      if (!(std::fabs(x) <= A)) x = A * native::float_of(0x3F000000u | ((u >> 8) & 0x7FFFFFu));
      v.push_back(native::bits_of(with_sign(x, u << 4)));
    }
  }
  return v;
}

// gpu::quantize (codes as bytes or packed, x and the codes at `pad_x` / `pad_codes` bytes past a
// 16-byte boundary) against quant::quantize: every scale byte, code byte (packed: sim/native/
// pack4.hpp's bytes of the CPU codes) and, two-level, the tensor scale's bits. "" when all match.
std::string compare_nvfp4(CastInput in, const Bits& xs, std::size_t rows, std::size_t cols,
                          const quant::Options& o, bool packed, std::size_t pad_x,
                          std::size_t pad_codes) {
  const std::size_t n = rows * cols;
  std::vector<float> xf;
  std::vector<std::uint8_t> raw;
  exmy::gpu::testing::encode_quant_input(in, xs, n, xf, raw);
  const quant::Quantized ref = quant::quantize(xf, {rows, cols}, o);
  std::vector<std::uint8_t> want = ref.codes;
  if (packed) {
    want.assign(native::packed4_bytes(n), 0);
    native::pack4(ref.codes.data(), n, want.data());
  }
  const std::size_t groups = quant::group_count(o.scheme, rows, cols);
  exmy::gpu::testing::DeviceBytes dx(raw.size(), pad_x), dcodes(want.size(), pad_codes),
      dstate(groups * 4 + 4), dmx(groups), dtensor(8);
  dx.upload(raw);
  QuantizedOut out;
  out.codes = static_cast<std::uint8_t*>(dcodes.get());
  out.state = static_cast<float*>(dstate.get());
  out.scale_codes = static_cast<std::uint8_t*>(dmx.get());
  out.tensor_scale = static_cast<float*>(dtensor.get());
  out.packed4 = packed;
  quantize(dx.get(), in, rows, cols, o, out);
  const auto got = dcodes.download<std::uint8_t>(want.size());
  const auto scales = dmx.download<std::uint8_t>(groups);
  std::ostringstream s;
  s << std::hex;
  if (o.two_level) {
    const std::uint32_t ts = dtensor.download<std::uint32_t>(1)[0];
    if (ts != native::bits_of(ref.tensor_scale)) {
      s << "tensor scale: gpu 0x" << ts << " cpu 0x" << native::bits_of(ref.tensor_scale);
      return s.str();
    }
  }
  for (std::size_t g = 0; g < groups; ++g) {
    if (scales[g] != ref.scale_codes[g]) {
      s << "scale of block " << std::dec << g << std::hex << ": gpu 0x" << unsigned(scales[g])
        << " cpu 0x" << unsigned(ref.scale_codes[g]);
      return s.str();
    }
  }
  for (std::size_t j = 0; j < want.size(); ++j) {
    if (got[j] != want[j]) {
      const std::size_t i = packed ? 2 * j : j;
      s << (packed ? "packed byte " : "code ") << std::dec << j << std::hex << " (input 0x" << xs[i]
        << (packed && i + 1 < n ? "," : "");
      if (packed && i + 1 < n) s << " 0x" << xs[i + 1];
      s << "): gpu 0x" << unsigned(got[j]) << " cpu 0x" << unsigned(want[j]);
      return s.str();
    }
  }
  return "";
}

const std::vector<Profile>& profiles() {
  static const std::vector<Profile> p = {
      {"torchao 1-level", false, false},
      {"torchao 2-level", false, true},
      {"torchao 2-level amax", false, true, 5000.0f},
      {"torchao 2-level scale", false, true, NAN, 0.375f},
      {"te 2-level", true, true},
      {"te 2-level amax", true, true, 1234.5f},
  };
  return p;
}

}  // namespace

TEST_CASE("GPU NVFP4 single pass: designed blocks equal the CPU reference", "[gpu][quant]") {
  // 67 rows of 256: 1072 blocks (three sweeps of the block-scale codes), 4.19 tiles of 4096.
  const std::size_t rows = 67, cols = 256;
  int cases = 0;
  for (const Profile& pr : profiles()) {
    for (auto in : {CastInput::fp32, CastInput::bf16, CastInput::fp16}) {
      Rng rng{0x5EED0000u + static_cast<std::uint64_t>(cases)};
      // G inside fp16's range; past 2688 the one-level scale saturates.
      const Bits xs = to_input(in, designed(rows * cols / 16, 6963.2f, pr, rng));
      const quant::Options o = nvfp4_options(pr);
      REQUIRE(quantize_is_single_pass(rows, cols, o));
      for (bool packed : {false, true}) {
        for (std::size_t pad : {std::size_t{0}, std::size_t{1}}) {
          INFO(pr.name << " input " << static_cast<int>(in) << " packed " << packed << " pad "
                       << pad);
          // pad 1: x one element and the codes one byte off 16 bytes (the scalar path).
          REQUIRE(compare_nvfp4(in, xs, rows, cols, o, packed, pad * input_bytes(in), pad) == "");
          ++cases;
        }
      }
    }
  }
  CHECK(cases == 6 * 3 * 2 * 2);
}

TEST_CASE("GPU NVFP4 single pass: tensors at the level's edges equal the CPU reference",
          "[gpu][quant]") {
  // Whole tensors whose absmax sits where the level (torchao's RN32(A / 2688), TE's
  // RN32(2688 / A) and its reciprocal) is zero, subnormal, huge, infinite or NaN, and blocks whose
  // factor r is NaN, 0 or infinite (nvfp4_fixup's blocks): zeros, one subnormal, subnormals only,
  // FLT_MAX, +-inf, NaN under both NaN policies; each beside ordinary blocks.
  struct Edge {
    const char* name;
    std::uint32_t fill;   // every element's magnitude pattern (a random sign each)
    std::uint32_t first;  // element 0's pattern
  };
  const Edge edges[] = {
      {"+0", 0x00000000u, 0x00000000u},
      {"-0 and +0", 0x80000000u, 0x00000000u},
      {"one subnormal", 0x00000000u, 0x00000001u},
      {"subnormals", 0x00000123u, 0x007FFFFFu},
      {"2^-140", 0x0000F000u, 0x00000800u},
      {"2^-126 1.5", 0x00400000u, 0x00C00000u},
      {"FLT_MAX", 0x3F800000u, 0x7F7FFFFFu},
      {"2688", 0x40000000u, 0x45280000u},
      {"+inf", 0x3F800000u, 0x7F800000u},
      {"-inf", 0x3F800000u, 0xFF800000u},
      {"NaN", 0x3F800000u, 0x7FC00000u},
      {"-NaN payload", 0x3F800000u, 0xFF800001u},
  };
  int cases = 0;
  for (const Edge& e : edges) {
    for (const Profile& pr : profiles()) {
      for (auto nan : {native::NanPolicy::propagate, native::NanPolicy::ignore}) {
        Rng rng{0xED6Eu + static_cast<std::uint64_t>(cases)};
        // 3 rows of 64: element 0 and a fill with random low mantissa bits, then ordinary values.
        Bits v(3 * 64);
        for (std::size_t i = 0; i < v.size(); ++i) {
          const std::uint32_t u = rng.next();
          const std::uint32_t m = i == 0   ? e.first
                                  : i < 70 ? (e.fill == 0 ? 0u : e.fill ^ ((u >> 20) & 0x7u))
                                           : (static_cast<std::uint32_t>(100 + (u >> 27)) << 23) |
                                                 ((u >> 5) & 0x7FFFFFu);
          v[i] = i == 0 ? m : m | (u & 0x80000000u);
        }
        quant::Options o = nvfp4_options(pr);
        o.nan = nan;
        for (auto in : {CastInput::fp32, CastInput::bf16}) {
          const Bits xs = to_input(in, v);
          for (bool packed : {false, true}) {
            INFO(e.name << " " << pr.name << " nan " << static_cast<int>(nan) << " input "
                        << static_cast<int>(in) << " packed " << packed);
            REQUIRE(compare_nvfp4(in, xs, 3, 64, o, packed, 0, 0) == "");
            // One block alone.
            const Bits one(xs.begin(), xs.begin() + 16);
            REQUIRE(compare_nvfp4(in, one, 1, 16, o, packed, 0, 0) == "");
            ++cases;
          }
        }
      }
    }
  }
  CHECK(cases == 12 * 6 * 2 * 2 * 2);
}

TEST_CASE("GPU NVFP4 single pass: weighted random blocks equal the CPU reference", "[gpu][quant]") {
  // Blocks drawn by weight: 5 in 10 designed (kGrid ties under the block's factor), 1 zeros,
  // 1 subnormals, 1 with a NaN or an inf among random values, 2 random values over 2^-60 .. 2^67.
  // One row of 9 tiles and 3 blocks; the seeds are printed.
  const std::uint64_t seeds[] = {1, 20261204, 0x9E3779B97F4A7C15ull};
  const std::size_t blocks = 9 * 256 + 3;
  int cases = 0;
  for (std::uint64_t seed : seeds) {
    std::printf("NVFP4 weighted random: seed %llu\n", static_cast<unsigned long long>(seed));
    for (const Profile& pr : profiles()) {
      Rng rng{seed};
      const Bits pool = designed(blocks, 1.0e5f, pr, rng);
      Bits v;
      for (std::size_t b = 0; b < blocks; ++b) {
        const std::uint32_t kind = rng.next() % 10;
        for (int k = 0; k < 16; ++k) {
          const std::uint32_t u = rng.next();
          std::uint32_t x = pool[16 * b + k];
          if (kind == 5) x = u & 0x80000000u;
          if (kind == 6) x = (u & 0x807FFFFFu) >> (u & 15u);
          if (kind >= 7) x = (u & 0x80000000u) | ((67 + (u >> 25)) << 23) | (u & 0x7FFFFFu);
          if (kind == 7 && k == static_cast<int>(u % 16)) {
            x = (u & 16u) ? 0x7F800000u | (u & 0x80000000u) : 0x7FC00000u | (u & 0x803FFFFFu);
          }
          v.push_back(x);
        }
      }
      for (auto nan : {native::NanPolicy::propagate, native::NanPolicy::ignore}) {
        quant::Options o = nvfp4_options(pr);
        o.nan = nan;
        for (auto in : {CastInput::fp32, CastInput::bf16, CastInput::fp16}) {
          INFO("seed " << seed << " " << pr.name << " nan " << static_cast<int>(nan) << " input "
                       << static_cast<int>(in));
          REQUIRE(compare_nvfp4(in, to_input(in, v), 1, v.size(), o, true, 0, 0) == "");
          ++cases;
        }
      }
    }
  }
  CHECK(cases == 3 * 6 * 2 * 3);
}

#endif  // EXMY_HAVE_CUDA
