// GPU bitsandbytes 4-bit quantization (gpu/quant/bnb4bit.hpp) against the CPU reference
// (sim/quant/bnb4bit.hpp), byte for byte: nf4/fp4 x every block size x fp32/fp16/bf16 inputs x
// plain/double quantization x odd and short sizes, with special values in the data.
#include <catch2/catch.hpp>

#if EXMY_HAVE_CUDA
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

#include "gpu/common/launch.hpp"
#include "gpu/quant/bnb4bit.hpp"
#include "sim/native/bnb_4bit_cells.hpp"
#include "sim/native/convert.hpp"
#include "sim/quant/bnb4bit.hpp"
#include "tests/gpu/gpu_test_util.hpp"

using namespace exmy;

namespace {

// fp32 bit patterns: varied magnitudes, zeros, and every 29th element a special value.
std::vector<std::uint32_t> data(std::size_t n, std::uint32_t salt) {
  std::vector<std::uint32_t> v(n);
  std::uint32_t h = 0x9E3779B9u ^ salt;
  for (std::size_t i = 0; i < n; ++i) {
    h = h * 1664525u + 1013904223u;
    if (i % 29 == 3) {
      v[i] = exmy::gpu::testing::special_fp32(h >> 8, h);
    } else if (i % 13 == 5) {
      v[i] = (h & 1) ? 0x80000000u : 0u;
    } else {
      const std::uint32_t e = 110 + ((h >> 9) % 24);
      v[i] = (h & 0x80000000u) | (e << 23) | ((h * 2654435761u) & 0x7FFFFFu);
    }
  }
  return v;
}

// The fp32 patterns w in the input dtype, starting `off` elements into raw (the elements before
// them zero), and their exact fp32 widening x, the CPU reference's input.
struct Bnb4Input {
  std::vector<std::uint8_t> raw;
  std::vector<float> x;
};
Bnb4Input encode(const std::vector<std::uint32_t>& w, gpu::CastInput in, std::size_t off = 0) {
  const std::size_t n = w.size(), es = in == gpu::CastInput::fp32 ? 4 : 2;
  Bnb4Input r{std::vector<std::uint8_t>((n + off) * es), std::vector<float>(n)};
  for (std::size_t i = 0; i < n; ++i) {
    if (in == gpu::CastInput::fp32) {
      std::memcpy(&r.raw[(i + off) * 4], &w[i], 4);
      std::memcpy(&r.x[i], &w[i], 4);
    } else {
      const FloatFormat f = in == gpu::CastInput::bf16 ? formats::bf16 : formats::fp16;
      const auto h =
          static_cast<std::uint16_t>(native::convert(formats::fp32, f, Rounding{}, w[i]).code);
      std::memcpy(&r.raw[(i + off) * 2], &h, 2);
      r.x[i] = native::to_float(f, h);
    }
  }
  return r;
}

// gpu::bnb4_quantize of the n elements at dx + off elements into an output qoff bytes into its
// buffer, against quant::bnb4_quantize(x): whether the packed codes and the absmax bytes equal.
struct Bnb4Match {
  bool codes = false, absmax = false;
};
Bnb4Match quantize_matches(const gpu::DeviceBuffer& dx, std::size_t off, std::size_t qoff,
                           gpu::CastInput in, const std::vector<float>& x,
                           const quant::Bnb4Options& o) {
  const std::size_t n = x.size(), es = in == gpu::CastInput::fp32 ? 4 : 2;
  const std::size_t bytes = (n + 1) / 2, blocks = (n + o.block - 1) / o.block;
  gpu::DeviceBuffer dq(bytes + qoff + 8), da(blocks * 4);
  REQUIRE(gpu::is_aligned(dq.get(), 8));
  gpu::bnb4_quantize(static_cast<const std::uint8_t*>(dx.get()) + off * es, in, n, o,
                     dq.as<std::uint8_t>() + qoff, da.as<float>());
  const std::vector<std::uint8_t> q = dq.download<std::uint8_t>(bytes + qoff);
  const std::vector<float> a = da.download<float>(blocks);
  const quant::Bnb4Quantized c = quant::bnb4_quantize(x, o);
  Bnb4Match m;
  m.codes =
      std::vector<std::uint8_t>(q.begin() + static_cast<std::ptrdiff_t>(qoff), q.end()) == c.packed;
  m.absmax = std::memcmp(a.data(), c.absmax.data(), blocks * 4) == 0;
  return m;
}

}  // namespace

TEST_CASE("GPU bnb 4-bit quantize/dequantize equals the CPU reference", "[gpu][quant][bnb4]") {
  const std::size_t sizes[] = {1, 33, 64, 1001, 12345};
  int cases = 0;
  for (const native::Bnb4Type t : {native::Bnb4Type::nf4, native::Bnb4Type::fp4}) {
    for (std::size_t block = 32; block <= 4096; block *= 2) {
      for (const bool dq : {false, true}) {
        for (const gpu::CastInput in :
             {gpu::CastInput::fp32, gpu::CastInput::fp16, gpu::CastInput::bf16}) {
          for (const std::size_t n : sizes) {
            INFO("type " << int(t) << " block " << block << " dq " << dq << " in " << int(in)
                         << " n " << n);
            const std::vector<std::uint32_t> w = data(n, static_cast<std::uint32_t>(n + block));
            // The input in its dtype, and its exact fp32 widening for the CPU reference.
            std::vector<std::uint16_t> h(n);
            std::vector<float> x(n);
            for (std::size_t i = 0; i < n; ++i) {
              if (in == gpu::CastInput::fp32) {
                std::memcpy(&x[i], &w[i], 4);
              } else {
                const FloatFormat f = in == gpu::CastInput::bf16 ? formats::bf16 : formats::fp16;
                h[i] = static_cast<std::uint16_t>(
                    native::convert(formats::fp32, f, Rounding{}, w[i]).code);
                x[i] = native::to_float(f, h[i]);
              }
            }
            quant::Bnb4Options o;
            o.type = t;
            o.block = block;
            o.double_quant = dq;
            const void* raw = in == gpu::CastInput::fp32 ? static_cast<const void*>(w.data())
                                                         : static_cast<const void*>(h.data());
            const quant::Bnb4Quantized g = gpu::bnb4_quantize_host(raw, in, n, o);
            const quant::Bnb4Quantized c = quant::bnb4_quantize(x, o);
            REQUIRE(g.packed == c.packed);
            REQUIRE(g.absmax_codes == c.absmax_codes);
            REQUIRE(std::memcmp(g.absmax.data(), c.absmax.data(), c.absmax.size() * 4) == 0);
            REQUIRE(std::memcmp(g.absmax2.data(), c.absmax2.data(), c.absmax2.size() * 4) == 0);
            REQUIRE(std::memcmp(&g.offset, &c.offset, 4) == 0);
            for (const native::Bnb4Dtype d :
                 {native::Bnb4Dtype::fp32, native::Bnb4Dtype::fp16, native::Bnb4Dtype::bf16}) {
              REQUIRE(gpu::bnb4_dequantize_host(c, n, d, o) == quant::bnb4_dequantize(c, n, d, o));
            }
            ++cases;
          }
        }
      }
    }
  }
  CHECK(cases == 2 * 8 * 2 * 3 * 5);
}

TEST_CASE("GPU bnb 4-bit fused quantizer: large, unaligned and odd inputs equal the CPU reference",
          "[gpu][quant][bnb4]") {
  // Guards bnb4_fused_kernel (gpu/quant/bnb4bit.cu): 16 elements per thread, the block maxima
  // across lanes and warps (blocks 32..4096, 2 to 256 threads), the cell table, packed words, its
  // full steps (8-byte stores) and its other paths: an input and output one element / one byte
  // off (scalar loads and stores), an output 4 bytes off the 8-byte alignment (4-byte stores), a
  // tail shorter than 16 elements, an odd count (the padding nibble) and sizes past one CTA step.
  const std::size_t sizes[] = {(std::size_t{1} << 20) + 7, 4096 * 3 + 1, 8 * 512 + 3};
  for (const native::Bnb4Type t : {native::Bnb4Type::nf4, native::Bnb4Type::fp4}) {
    for (std::size_t block = 32; block <= 4096; block *= 4) {
      for (const gpu::CastInput in :
           {gpu::CastInput::fp32, gpu::CastInput::fp16, gpu::CastInput::bf16}) {
        for (const std::size_t n : sizes) {
          for (const auto& [off, qoff] :
               {std::pair<std::size_t, std::size_t>{0, 0}, {1, 1}, {8, 4}}) {
            INFO("type " << int(t) << " block " << block << " in " << int(in) << " n " << n
                         << " offset " << off << " output offset " << qoff);
            const std::vector<std::uint32_t> w = data(n, static_cast<std::uint32_t>(7 * n + block));
            const Bnb4Input v = encode(w, in, off);
            quant::Bnb4Options o;
            o.type = t;
            o.block = block;
            const gpu::DeviceBuffer dx(v.raw.data(), v.raw.size());
            const Bnb4Match m = quantize_matches(dx, off, qoff, in, v.x, o);
            REQUIRE(m.codes);
            REQUIRE(m.absmax);
          }
        }
      }
    }
  }
}

TEST_CASE("GPU bnb 4-bit cell table on the device's FMA equals the tree on its whole domain",
          "[gpu][quant][bnb4]") {
  // bnb4_fused_kernel's codes: FFMA.RM of n, the table address scaled in 32 bits (a NaN folds
  // onto the code-0 cell), the entry's comparison; every fp32 n with |n| <= kBnb4Reach and every
  // NaN pattern, NF4 and FP4 (the host's model of the FMA is checked in tests/quant).
  const std::uint64_t domain =
      2 * (std::uint64_t{native::f32_bits(native::kBnb4Reach)} + 1) + 2 * std::uint64_t{0x7FFFFF};
  for (const native::Bnb4Type t : {native::Bnb4Type::nf4, native::Bnb4Type::fp4}) {
    INFO("type " << int(t));
    std::uint64_t checked = 0;
    const std::uint64_t bad = gpu::bnb4_cells_mismatches(t, &checked);
    CHECK(checked == domain);
    CHECK(bad == 0);
  }
}

TEST_CASE("GPU bnb 4-bit fused quantizer: full steps at every block size and whole special blocks",
          "[gpu][quant][bnb4]") {
  // Guards the block-size instances of bnb4_fused_kernel (gpu/quant/bnb4bit.cu) on their full
  // steps (16-byte aligned input, 8-byte aligned output, 4 tiles a step for 16-bit inputs, 2 for
  // fp32): every block 32..4096 (shuffles only up to 512; one barrier a step from 1024), a tail
  // step, and blocks that are all NaN, all signed
  // zeros, all tiny (bf16 subnormals, fp16 flushes to zero), +-inf among finite values and
  // values of one sign (h/bnb4b's pipelined-kernel case, 59a7c6b, extended).
  const std::size_t n = (std::size_t{1} << 20) + 4096 * 5 + 77;
  std::vector<std::uint32_t> w = data(n, 0xB4B4u);
  for (std::size_t i = 0; i < 4096; ++i) w[i] = 0x7FC00000u | (i & 0xFFFFu) | (i & 1) << 31;
  for (std::size_t i = 4096; i < 8192; ++i) w[i] = (i & 1) ? 0x80000000u : 0u;
  for (std::size_t i = 8192; i < 12288; ++i)  // fp32 exponents 0..2, random signs
    w[i] =
        static_cast<std::uint32_t>((i & 1) << 31 | (i % 3) << 23 | ((i * 2654435761u) & 0x7FFFFFu));
  for (std::size_t i = 12288; i < 16384; ++i) {  // one inf a 700, negative values otherwise
    w[i] = i % 700 == 5 ? (i & 1 ? 0xFF800000u : 0x7F800000u) : (w[i] | 0x80000000u);
  }
  for (const gpu::CastInput in :
       {gpu::CastInput::fp32, gpu::CastInput::fp16, gpu::CastInput::bf16}) {
    const Bnb4Input v = encode(w, in);
    const gpu::DeviceBuffer dx(v.raw.data(), v.raw.size());
    REQUIRE(gpu::is_aligned(dx.get(), 16));
    for (const native::Bnb4Type t : {native::Bnb4Type::nf4, native::Bnb4Type::fp4}) {
      for (std::size_t block = 32; block <= 4096; block *= 2) {
        INFO("type " << int(t) << " block " << block << " in " << int(in) << " n " << n);
        quant::Bnb4Options o;
        o.type = t;
        o.block = block;
        const Bnb4Match m = quantize_matches(dx, 0, 0, in, v.x, o);
        REQUIRE(m.codes);
        REQUIRE(m.absmax);
      }
    }
  }
}

TEST_CASE("GPU bnb 4-bit fused quantizer: several steps a CTA (EXMY_BNB4_GRID)",
          "[gpu][quant][bnb4]") {
  // A grid of 3 CTAs: each runs 4 to 7 steps, so the two sets of partials alternate across
  // steps (blocks of 1024 and more) and the last step is partial and unaligned in length.
  const std::size_t n = 16384 * 19 + 4096 * 2 + 77;
  const std::vector<std::uint32_t> w = data(n, 0x5EEDu);
  struct GridEnv {  // unset however the case ends
    GridEnv() { setenv("EXMY_BNB4_GRID", "3", 1); }
    ~GridEnv() { unsetenv("EXMY_BNB4_GRID"); }
  } grid_env;
  for (const gpu::CastInput in :
       {gpu::CastInput::fp32, gpu::CastInput::fp16, gpu::CastInput::bf16}) {
    const Bnb4Input v = encode(w, in);
    const gpu::DeviceBuffer dx(v.raw.data(), v.raw.size());
    for (const native::Bnb4Type t : {native::Bnb4Type::nf4, native::Bnb4Type::fp4}) {
      for (const std::size_t block : {std::size_t{64}, std::size_t{1024}, std::size_t{4096}}) {
        INFO("type " << int(t) << " block " << block << " in " << int(in) << " n " << n);
        quant::Bnb4Options o;
        o.type = t;
        o.block = block;
        const Bnb4Match m = quantize_matches(dx, 0, 0, in, v.x, o);
        CHECK(m.codes);
        CHECK(m.absmax);
      }
    }
  }
}

#endif  // EXMY_HAVE_CUDA
