// Deterministic GPU quantization checks against the CPU reference (quant::quantize /
// dequantize): every scheme x target x variant x rounding on shapes that hit the single-pass
// kernel, the two-pass kernels and the transpose kernel, with special values in the data.
#include <catch2/catch.hpp>

#if EXMY_HAVE_CUDA
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "gpu/quant/quantize.hpp"
#include "gpu/quant/tile_path.hpp"
#include "gpu/verify/verify.hpp"
#include "sim/common/error.hpp"
#include "sim/native/pack4.hpp"
#include "sim/quant/quantize.hpp"
#include "tests/gpu/gpu_test_util.hpp"
#include "tests/gpu/quant_compare.hpp"

using namespace exmy;
using namespace exmy::gpu;

namespace {

// Mostly normal values of varied magnitude, with specials sprinkled in (every 37th element).
std::vector<std::uint32_t> data(std::size_t n, std::uint32_t salt, bool specials) {
  std::vector<std::uint32_t> v(n);
  std::uint32_t h = 0x9E3779B9u ^ salt;
  for (std::size_t i = 0; i < n; ++i) {
    h = h * 1664525u + 1013904223u;
    if (specials && i % 37 == 5) {
      v[i] = exmy::gpu::testing::special_fp32(h >> 8, h);
    } else {
      // sign, exponent in [2^-20, 2^12), random mantissa
      const std::uint32_t e = 107 + ((h >> 9) % 32);
      v[i] = (h & 0x80000000u) | (e << 23) | ((h * 2654435761u) & 0x7FFFFFu);
    }
  }
  return v;
}

quant::Options options(const std::string& scheme, const std::string& target) {
  quant::Options o;
  o.scheme = quant::parse_scheme(scheme);
  o.target = quant::parse_target(target);
  return o;
}

struct Shape {
  std::size_t rows, cols;
};

}  // namespace

TEST_CASE("GPU quantize/dequantize equals the CPU reference for every scheme", "[gpu][quant]") {
  const std::vector<std::string> schemes = {"tensor",   "rowwise",   "colwise",    "block:32",
                                            "block:64", "block:100", "block:4096", "mx"};
  const std::vector<std::string> targets = {"int8",   "e4m3fn",  "e5m2",           "e2m1fn",
                                            "e3m2fn", "dynamic", "linear-unsigned"};
  // 64x256: single pass for rowwise (256 = 16*16) and block:32/64/4096, mx.
  // 37x19 and 1x1: odd shapes, two-pass kernels.  3x4096 and 5x3000: long rows.
  const std::vector<Shape> shapes = {{64, 256}, {37, 19}, {1, 1}, {3, 4096}, {5, 3000}};
  const std::vector<std::pair<RoundMode, int>> modes = {
      {RoundMode::rne, 0}, {RoundMode::rtz, 0}, {RoundMode::sr, 8}};
  int cases = 0;
  for (const auto& sch : schemes) {
    for (const auto& tgt : targets) {
      quant::Options o = options(sch, tgt);
      if (o.scheme.kind == quant::Granularity::mx && o.target.kind != FormatKind::floating) {
        continue;
      }
      for (const Shape& sh : shapes) {
        for (const auto& [mode, bits] : modes) {
          for (bool transpose : {false, true}) {
            for (bool specials : {false, true}) {
              o.mode = mode;
              o.sr_bits = bits;
              o.seed = 77;
              o.transpose = transpose;
              o.nan =
                  specials && cases % 2 ? native::NanPolicy::ignore : native::NanPolicy::propagate;
              const auto xs = data(sh.rows * sh.cols, static_cast<std::uint32_t>(cases), specials);
              const CastInput in = cases % 3 == 0   ? CastInput::fp32
                                   : cases % 3 == 1 ? CastInput::bf16
                                                    : CastInput::fp16;
              // bf16/fp16: the top half of the fp32 pattern, or fp16 bits of a small exponent
              std::vector<std::uint32_t> ys = xs;
              if (in != CastInput::fp32) {
                for (auto& y : ys) y >>= 16;
              }
              INFO(sch << " " << tgt << " " << sh.rows << "x" << sh.cols << " mode "
                       << static_cast<int>(mode) << " transpose " << transpose << " input "
                       << static_cast<int>(in));
              const std::string diff =
                  exmy::gpu::testing::compare_quantize(in, ys, sh.rows, sh.cols, o);
              REQUIRE(diff == "");
              ++cases;
            }
          }
        }
      }
    }
  }
  CHECK(cases > 1000);
}

TEST_CASE("GPU scaled casts te and torchao equal the CPU reference", "[gpu][quant]") {
  for (const auto& sch : {"tensor", "rowwise", "block:128", "colwise"}) {
    for (auto variant : {native::CastVariant::te, native::CastVariant::torchao}) {
      for (const char* tgt : {"e4m3fn", "e5m2"}) {
        quant::Options o = options(sch, tgt);
        o.variant = variant;
        o.te_margin = 1;
        o.te_prev_scale = 2.0f;
        o.torchao_fp16_source = true;
        const auto xs = data(48 * 128, 5, true);
        INFO(sch << " " << tgt << " variant " << static_cast<int>(variant));
        REQUIRE(exmy::gpu::testing::compare_quantize(CastInput::fp32, xs, 48, 128, o) == "");
        o.order = native::ScaleOrder::recip_mul;
        REQUIRE(exmy::gpu::testing::compare_quantize(CastInput::fp32, xs, 48, 128, o) == "");
      }
    }
  }
}

TEST_CASE("GPU int8 and codebook orders and tie rules equal the CPU reference", "[gpu][quant]") {
  const auto xs = data(16 * 512, 11, true);
  for (auto order : {native::ScaleOrder::div_mul, native::ScaleOrder::recip_mul,
                     native::ScaleOrder::mul_recip}) {
    quant::Options o = options("rowwise", "int8");
    o.order = order;
    REQUIRE(exmy::gpu::testing::compare_quantize(CastInput::fp32, xs, 16, 512, o) == "");
  }
  for (auto tie : {TieRule::even_index, TieRule::lower_index, TieRule::bnb_cpu}) {
    for (auto norm : {native::NormOrder::recip_mul, native::NormOrder::div}) {
      quant::Options o = options("block:256", "dynamic");
      o.tie = tie;
      o.norm = norm;
      REQUIRE(exmy::gpu::testing::compare_quantize(CastInput::fp32, xs, 16, 512, o) == "");
    }
  }
}

TEST_CASE("GPU absmax: all-zero groups, NaN policies, -0", "[gpu][quant]") {
  // Regression guard for the bit-pattern absmax: -0 must count as 0, a NaN must give the
  // canonical +NaN under propagate and vanish under ignore, an all-zero group must give state 0.
  std::vector<std::uint32_t> xs(4 * 64, 0);
  xs[3] = 0x80000000u;        // -0 in group 0 (all zero otherwise)
  xs[64 + 1] = 0xFFC00123u;   // negative NaN with payload in row 1
  xs[64 + 2] = 0x3F800000u;   // 1.0 in row 1
  xs[128 + 7] = 0xFF800000u;  // -inf in row 2
  xs[192 + 9] = 0x00000001u;  // smallest subnormal in row 3
  for (auto nan : {native::NanPolicy::propagate, native::NanPolicy::ignore}) {
    for (const char* sch : {"rowwise", "tensor", "colwise", "block:32"}) {
      quant::Options o = options(sch, "int8");
      o.nan = nan;
      INFO(sch << " nan policy " << static_cast<int>(nan));
      REQUIRE(exmy::gpu::testing::compare_quantize(CastInput::fp32, xs, 4, 64, o) == "");
    }
  }
}

TEST_CASE("GPU int8 hardware-rounding fast path equals native::round_to_int8 for all 2^32 y",
          "[gpu][quant]") {
  for (RoundMode m : {RoundMode::rne, RoundMode::rtz, RoundMode::rup, RoundMode::rdn}) {
    INFO("mode " << static_cast<int>(m));
    REQUIRE(verify_int8_rounding_exhaustive(m) == 0);
  }
}

TEST_CASE("GPU te_current, power-of-two and given scales equal the CPU reference", "[gpu][quant]") {
  const auto xs = data(32 * 128, 9, true);
  for (const char* sch : {"tensor", "rowwise", "block:64"}) {
    for (auto variant : {native::CastVariant::te_current, native::CastVariant::torchao}) {
      quant::Options o = options(sch, "e4m3fn");
      o.variant = variant;
      o.pow2_scale = true;
      o.te_amax_epsilon = 1e-3f;
      INFO(sch << " variant " << static_cast<int>(variant));
      REQUIRE(exmy::gpu::testing::compare_quantize(CastInput::fp32, xs, 32, 128, o) == "");
      o.given_scale = 3.5f;
      REQUIRE(exmy::gpu::testing::compare_quantize(CastInput::fp32, xs, 32, 128, o) == "");
    }
  }
}

TEST_CASE("GPU fast paths on every fp16 and bf16 code", "[gpu][quant]") {
  // Guards the hardware fp16 widening (int8 / codebook paths), the 16-bit absmax before
  // widening, and the rne fast paths: all 2^16 codes as a 16 x 4096 tensor, every scheme that
  // takes a fast path (single pass, tensor-wise, 2-d column-wise).
  std::vector<std::uint32_t> xs(1u << 16);
  for (std::uint32_t c = 0; c < xs.size(); ++c) xs[c] = c;
  for (CastInput in : {CastInput::fp16, CastInput::bf16}) {
    for (const char* sch : {"rowwise", "tensor", "colwise", "block:256", "block:64"}) {
      for (const char* tgt : {"int8", "e4m3fn", "e2m1fn", "dynamic", "dynamic-unsigned"}) {
        for (auto nan : {native::NanPolicy::propagate, native::NanPolicy::ignore}) {
          quant::Options o = options(sch, tgt);
          o.nan = nan;
          INFO(sch << " " << tgt << " input " << static_cast<int>(in) << " nan "
                   << static_cast<int>(nan));
          REQUIRE(exmy::gpu::testing::compare_quantize(in, xs, 16, 4096, o) == "");
        }
      }
    }
    quant::Options o = options("mx", "e4m3fn");
    REQUIRE(exmy::gpu::testing::compare_quantize(in, xs, 16, 4096, o) == "");
  }
}

TEST_CASE("GPU tensor-wise and column-wise fast paths over many blocks", "[gpu][quant]") {
  // Guards the one-wave tensor-wise absmax (one atomicMax per block) and the 2-d column kernels
  // on shapes that need many blocks and row strips, under every int8 order and both NaN policies.
  const auto xs = data(600 * 1024, 21, true);
  const auto clean = data(600 * 1024, 22, false);
  for (const char* sch : {"tensor", "colwise"}) {
    for (auto order : {native::ScaleOrder::div_mul, native::ScaleOrder::recip_mul,
                       native::ScaleOrder::mul_recip}) {
      for (const char* tgt : {"int8", "e4m3fn", "e5m2"}) {
        quant::Options o = options(sch, tgt);
        o.order = order;
        INFO(sch << " " << tgt << " order " << static_cast<int>(order));
        REQUIRE(exmy::gpu::testing::compare_quantize(CastInput::fp32, clean, 600, 1024, o) == "");
        o.nan = native::NanPolicy::ignore;
        REQUIRE(exmy::gpu::testing::compare_quantize(CastInput::fp32, xs, 600, 1024, o) == "");
      }
    }
    for (auto norm : {native::NormOrder::recip_mul, native::NormOrder::div}) {
      quant::Options o = options(sch, "dynamic");
      o.norm = norm;
      o.nan = native::NanPolicy::ignore;
      INFO(sch << " dynamic norm " << static_cast<int>(norm));
      REQUIRE(exmy::gpu::testing::compare_quantize(CastInput::fp32, xs, 600, 1024, o) == "");
    }
  }
}

TEST_CASE("GPU sr:R quantize words over many blocks and a 64-bit seed", "[gpu][quant]") {
  // Guards the Philox words of the sr paths (the key schedule built once on the host, the shared
  // counter prefix of a run's four blocks): every element must take word i % 4 of block i / 4 of
  // (seed, stream) as on the CPU, on shapes of many blocks (tensor-wise prefetching loop, the
  // single pass, the 2-d column kernel, the tiled transpose) and odd ones (element-wise paths).
  const auto xs = data(600 * 1024, 31, true);
  const std::vector<Shape> shapes = {{600, 1024}, {37, 19}, {3, 4096}};
  for (const char* sch : {"tensor", "rowwise", "colwise", "block:64"}) {
    for (const char* tgt : {"e4m3fn", "e5m2", "e2m1fn"}) {
      for (int bits : {8, 3}) {
        for (bool transpose : {false, true}) {
          for (const Shape& sh : shapes) {
            quant::Options o = options(sch, tgt);
            o.mode = RoundMode::sr;
            o.sr_bits = bits;
            o.seed = 0x9E3779B97F4A7C15ull;
            o.transpose = transpose;
            o.nan = native::NanPolicy::ignore;
            const std::vector<std::uint32_t> x(xs.begin(), xs.begin() + sh.rows * sh.cols);
            INFO(sch << " " << tgt << " sr:" << bits << " transpose " << transpose << " " << sh.rows
                     << "x" << sh.cols);
            REQUIRE(exmy::gpu::testing::compare_quantize(CastInput::fp32, x, sh.rows, sh.cols, o) ==
                    "");
          }
        }
      }
    }
  }
}

TEST_CASE("GPU tensor-wise e4m3fn / e5m2 codes by the fp8 instruction equal the CPU reference",
          "[gpu][quant]") {
  // Guards the tensor-wise kernel's instruction path (QArgs::flt_hw): rne, and sr:R rounded on
  // the fp32 value, from R = 1 to the largest R its constants hold (21 - M) and one past it (the
  // software path), in every form of y (the absmax orders, te / torchao's scale, the all-zero
  // tensor's unscaled y), with NaN and inf in the data (the runs redone in software), each input
  // type, over many blocks of the one-wave loop.
  const auto xs = data(300 * 1024, 71, true);
  const auto clean = data(300 * 1024, 72, false);
  std::vector<std::uint32_t> xs16 = xs, clean16 = clean;
  for (auto& v : xs16) v >>= 16;
  for (auto& v : clean16) v >>= 16;
  const std::vector<std::uint32_t> zeros(64 * 64, 0u);
  for (const char* tgt : {"e4m3fn", "e5m2"}) {
    const int man = std::string(tgt) == "e4m3fn" ? 3 : 2;
    for (const int bits : {0, 1, 8, 21 - man, 22 - man}) {
      quant::Options o = options("tensor", tgt);
      o.mode = bits == 0 ? RoundMode::rne : RoundMode::sr;
      o.sr_bits = bits;
      o.seed = 0x0123456789ABCDEFull;
      for (auto order : {native::ScaleOrder::div_mul, native::ScaleOrder::recip_mul,
                         native::ScaleOrder::mul_recip}) {
        o.order = order;
        for (auto in : {CastInput::fp32, CastInput::bf16, CastInput::fp16}) {
          INFO(tgt << " sr_bits " << bits << " order " << static_cast<int>(order) << " input "
                   << static_cast<int>(in));
          const bool half = in != CastInput::fp32;  // 16-bit inputs: the top halves
          o.nan = native::NanPolicy::propagate;
          REQUIRE(exmy::gpu::testing::compare_quantize(in, half ? clean16 : clean, 300, 1024, o) ==
                  "");
          o.nan = native::NanPolicy::ignore;
          REQUIRE(exmy::gpu::testing::compare_quantize(in, half ? xs16 : xs, 300, 1024, o) == "");
        }
      }
      INFO(tgt << " sr_bits " << bits << " all zero");
      REQUIRE(exmy::gpu::testing::compare_quantize(CastInput::fp32, zeros, 64, 64, o) == "");
    }
    for (auto variant : {native::CastVariant::te, native::CastVariant::torchao}) {
      quant::Options o = options("tensor", tgt);
      o.variant = variant;
      o.nan = native::NanPolicy::ignore;
      INFO(tgt << " variant " << static_cast<int>(variant));
      REQUIRE(exmy::gpu::testing::compare_quantize(CastInput::fp32, xs, 300, 1024, o) == "");
      REQUIRE(exmy::gpu::testing::compare_quantize(CastInput::bf16, clean16, 300, 1024, o) == "");
    }
  }
}

TEST_CASE("GPU MX software run (e2m1fn, fp6) with its native fix-ups equals the CPU reference",
          "[gpu][quant]") {
  // Guards MxRun::ocp_sw: the lean cast of every element, then the native codes of the elements
  // out of the exponent-shift range (and of NaN-scale blocks) written over the stored run, as
  // bytes and as packed nibbles (an element of either parity), from each input type.
  std::vector<std::uint32_t> xs;
  std::uint32_t h = 777;
  for (int top = 0; top < 255; top += 5) {  // block absmax at every 5th binade
    xs.push_back((static_cast<std::uint32_t>(top) << 23) | 0x155555u);
    for (int k = 1; k < 32; ++k) {
      h = h * 1664525u + 1013904223u;
      const int e = top - static_cast<int>(h >> 28) * 9;
      const std::uint32_t sign = h & 0x80000000u;
      xs.push_back(e > 0 ? sign | (static_cast<std::uint32_t>(e) << 23) | ((h >> 3) & 0x7FFFFFu)
                         : sign | ((h >> 9) & 0x7FFFFFu));
    }
  }
  std::vector<std::uint32_t> specials = xs;
  for (std::size_t i = 3; i < specials.size(); i += 101) {
    specials[i] = i % 2 ? 0x7FC00000u : 0xFF800000u;
  }
  const std::size_t rows = xs.size() / 64;
  for (const char* tgt : {"e2m1fn", "e3m2fn", "e2m3fn"}) {
    for (auto nan : {native::NanPolicy::propagate, native::NanPolicy::ignore}) {
      quant::Options o = options("mx", tgt);
      o.nan = nan;
      REQUIRE(quantize_is_single_pass(rows, 64, o));
      for (auto in : {CastInput::fp32, CastInput::bf16, CastInput::fp16}) {
        // 16-bit inputs: the top halves (bf16), or the low halves as fp16 bits.
        std::vector<std::uint32_t> a = xs, b = specials;
        if (in != CastInput::fp32) {
          for (auto& v : a) v >>= 16;
          for (auto& v : b) v >>= 16;
        }
        INFO(tgt << " nan " << static_cast<int>(nan) << " input " << static_cast<int>(in));
        REQUIRE(exmy::gpu::testing::compare_quantize(in, a, rows, 64, o) == "");
        REQUIRE(exmy::gpu::testing::compare_quantize(in, b, rows, 64, o) == "");
      }
    }
  }
}

TEST_CASE("GPU column-wise kernels over strips with and without whole row batches",
          "[gpu][quant]") {
  // Guards the 2-d column kernels' batches of kColBatch rows (gpu/quant/detail_args.cuh) and
  // their remainder: strips of 16 rows (1003 rows: a last strip of 11), of 34 rows (70001 rows),
  // and one strip of 37; every input type, int8 and e4m3fn under rne and sr:8.
  // Also amax_col_stripe_kernel's partial 256-column stripe (264 columns) and short stripes (9
  // rows), and the scalar column kernels of a column count that is not a multiple of 8 (13).
  const std::vector<Shape> shapes = {{1003, 64}, {70001, 64}, {37, 4096},
                                     {523, 264}, {9, 8},      {101, 13}};
  for (const Shape& sh : shapes) {
    const auto xs = data(sh.rows * sh.cols, 51, true);
    for (auto in : {CastInput::fp32, CastInput::bf16, CastInput::fp16}) {
      std::vector<std::uint32_t> ys = xs;
      if (in != CastInput::fp32) {
        for (auto& y : ys) y >>= 16;
      }
      for (const char* tgt : {"int8", "e4m3fn"}) {
        for (bool sr : {false, true}) {
          if (sr && std::string(tgt) == "int8") continue;
          quant::Options o = options("colwise", tgt);
          o.nan = native::NanPolicy::ignore;
          if (sr) {
            o.mode = RoundMode::sr;
            o.sr_bits = 8;
            o.seed = 5;
          }
          INFO(sh.rows << "x" << sh.cols << " " << tgt << " sr " << sr << " input "
                       << static_cast<int>(in));
          REQUIRE(exmy::gpu::testing::compare_quantize(in, ys, sh.rows, sh.cols, o) == "");
        }
      }
    }
  }
}

TEST_CASE("GPU absmax of groups of whole tiles (rows and blocks of 4096 k elements)",
          "[gpu][quant]") {
  // Guards amax_tiles_kernel (gpu/quant/absmax.cu): one block-wide max per 4096-element tile and
  // one atomicMax per tile, where every tile lies in one group: rows of 8192 (two tiles per
  // group; rows of 12288: three), rows of 4096 transposed, block:4096 with a partial last group
  // (a partial last tile); both NaN policies, every input type. (block:8192 was here: block sizes
  // are 32..4096 (SEMANTICS, the scheme registry), so the case threw before it ran; it first ran on
  // the H200 on 2026-12-02 and was a test bug.)
  struct Case {
    const char* scheme;
    Shape shape;
    bool transpose;
  };
  const Case cases[] = {{"rowwise", {40, 8192}, false},   {"rowwise", {64, 4096}, true},
                        {"rowwise", {48, 4096}, true},    {"rowwise", {5, 12288}, false},
                        {"block:4096", {3, 5000}, false}, {"block:4096", {7, 4096}, true}};
  for (const Case& cs : cases) {
    const auto xs = data(cs.shape.rows * cs.shape.cols, 61, true);
    for (auto in : {CastInput::fp32, CastInput::bf16, CastInput::fp16}) {
      std::vector<std::uint32_t> ys = xs;
      if (in != CastInput::fp32) {
        for (auto& y : ys) y >>= 16;
      }
      for (const char* tgt : {"int8", "e4m3fn"}) {
        for (auto nan : {native::NanPolicy::propagate, native::NanPolicy::ignore}) {
          quant::Options o = options(cs.scheme, tgt);
          o.transpose = cs.transpose;
          o.nan = nan;
          INFO(cs.scheme << " " << cs.shape.rows << "x" << cs.shape.cols << " transpose "
                         << cs.transpose << " " << tgt << " nan " << static_cast<int>(nan)
                         << " input " << static_cast<int>(in));
          REQUIRE(exmy::gpu::testing::compare_quantize(in, ys, cs.shape.rows, cs.shape.cols, o) ==
                  "");
        }
      }
    }
  }
}

TEST_CASE("GPU tiled fast transpose across partial tiles", "[gpu][quant]") {
  // Guards transpose_fast_kernel's 64-column x 128-row tiles (gpu/quant/detail_code_kernels.cuh):
  // four consecutive rows per thread packed into one shared word per column, 128-byte column
  // segments: row counts past whole tiles (144, 1040, 16) and column counts past whole tiles (72,
  // 200, 8), tensor-, row- and column-wise groups, int8, e4m3fn (rne, sr:8) and the codebook.
  const std::vector<Shape> shapes = {{144, 72}, {1040, 200}, {16, 8}, {4096, 64}};
  for (const Shape& sh : shapes) {
    const auto xs = data(sh.rows * sh.cols, 71, true);
    for (auto in : {CastInput::fp32, CastInput::fp16}) {
      std::vector<std::uint32_t> ys = xs;
      if (in != CastInput::fp32) {
        for (auto& y : ys) y >>= 16;
      }
      for (const char* sch : {"tensor", "rowwise", "colwise"}) {
        for (const char* tgt : {"int8", "e4m3fn", "dynamic"}) {
          for (bool sr : {false, true}) {
            if (sr && std::string(tgt) != "e4m3fn") continue;
            quant::Options o = options(sch, tgt);
            o.transpose = true;
            o.nan = native::NanPolicy::ignore;
            if (sr) {
              o.mode = RoundMode::sr;
              o.sr_bits = 8;
              o.seed = 9;
            }
            INFO(sh.rows << "x" << sh.cols << " " << sch << " " << tgt << " sr " << sr << " input "
                         << static_cast<int>(in));
            REQUIRE(exmy::gpu::testing::compare_quantize(in, ys, sh.rows, sh.cols, o) == "");
          }
        }
      }
    }
  }
}

TEST_CASE("GPU MX fast path at the scale boundaries", "[gpu][quant]") {
  // Guards the exponent-shift fast path of MX elements: blocks whose absmax sits at every 8th
  // binade from 2^-149 to 2^127, with elements at every binade below it (so the shifted exponent
  // leaves [1, 254] and the native path must take over), fp32 subnormals, zeros, and, in some
  // blocks, inf / NaN (NaN scale) under both NaN policies.
  std::vector<std::uint32_t> xs;
  std::uint32_t h = 12345;
  for (int top = 0; top < 255; top += 8) {
    std::vector<std::uint32_t> blk(32);
    blk[0] = (static_cast<std::uint32_t>(top) << 23) | 0x2AAAAAu;  // the absmax (or subnormal)
    for (int k = 1; k < 32; ++k) {
      h = h * 1664525u + 1013904223u;
      const int e = top - static_cast<int>(h >> 27) * 8;
      const std::uint32_t sign = h & 0x80000000u;
      blk[k] = e > 0 ? sign | (static_cast<std::uint32_t>(e) << 23) | ((h >> 3) & 0x7FFFFFu)
                     : sign | ((h >> 9) & 0x7FFFFFu);
    }
    xs.insert(xs.end(), blk.begin(), blk.end());
  }
  std::vector<std::uint32_t> specials = xs;
  for (std::size_t i = 0; i < specials.size(); i += 97)
    specials[i] = i % 2 ? 0x7FC00000u : 0xFF800000u;
  for (const char* tgt : {"e4m3fn", "e5m2", "e2m1fn", "e3m2fn", "e2m3fn"}) {
    for (auto nan : {native::NanPolicy::propagate, native::NanPolicy::ignore}) {
      quant::Options o = options("mx", tgt);
      o.nan = nan;
      INFO(tgt << " nan " << static_cast<int>(nan));
      REQUIRE(exmy::gpu::testing::compare_quantize(CastInput::fp32, xs, xs.size() / 64, 64, o) ==
              "");
      REQUIRE(exmy::gpu::testing::compare_quantize(CastInput::fp32, specials, xs.size() / 64, 64,
                                                   o) == "");
    }
  }
}

TEST_CASE("GPU codebook lookup with a crowded user table uses the exact search", "[gpu][quant]") {
  // Guards the table's slow buckets on the device: a table whose midpoints crowd into single
  // buckets (and one at 0 in the clamped bucket) must still give codebook_nearest's codes.
  quant::Options o = options("block:256", "dynamic");
  // Ascending: 127 values from -0.5 in steps of 2^-12, then -+2^-40, then 127 from 0.25.
  Codebook crowded = *o.target.cb;
  for (int k = 0; k < 256; ++k) {
    crowded.values[k] = k < 127    ? -0.5f + static_cast<float>(k) * 0x1p-12f
                        : k == 127 ? -0x1p-40f
                        : k == 128 ? 0x1p-40f
                                   : 0.25f + static_cast<float>(k - 129) * 0x1p-12f;
  }
  o.target.cb = std::make_shared<const Codebook>(crowded);
  const auto xs = data(32 * 256, 31, true);
  for (auto tie : {TieRule::even_index, TieRule::lower_index}) {
    o.tie = tie;
    REQUIRE(exmy::gpu::testing::compare_quantize(CastInput::fp32, xs, 32, 256, o) == "");
  }
}

TEST_CASE("GPU one-wave kernels with several tiles per block equal the CPU reference",
          "[gpu][quant]") {
  // Guards the prefetching loops (tensor-wise codes, the fast codebook single pass) and the
  // alternating group-max slots of the single pass: 4M elements exceed one wave of blocks of
  // 4096-element tiles on any current GPU.
  const auto big = data(1024 * 4096, 43, true);
  for (const char* sch : {"rowwise", "tensor", "block:256", "block:4096"}) {
    for (const char* tgt : {"int8", "e4m3fn", "dynamic"}) {
      quant::Options o = options(sch, tgt);
      o.nan = native::NanPolicy::ignore;
      INFO(sch << " " << tgt);
      CHECK(exmy::gpu::testing::compare_quantize(CastInput::fp32, big, 1024, 4096, o) == "");
    }
  }
}

TEST_CASE("GPU quantize rejects bad option combinations", "[gpu][quant]") {
  exmy::gpu::testing::DeviceBytes d(256);
  QuantizedOut out{static_cast<std::uint8_t*>(d.get()), static_cast<float*>(d.get()),
                   static_cast<std::uint8_t*>(d.get())};
  quant::Options o = options("mx", "e4m3fn");
  o.target = quant::parse_target("int8");
  CHECK_THROWS_AS(quantize(d.get(), CastInput::fp32, 2, 32, o, out), InputError);
  o = options("rowwise", "int8");
  o.mode = RoundMode::sr;
  o.sr_bits = 0;
  CHECK_THROWS_AS(quantize(d.get(), CastInput::fp32, 2, 32, o, out), InputError);
  o = options("rowwise", "int8");
  CHECK(quantize_is_single_pass(64, 4096, o));
  CHECK_FALSE(quantize_is_single_pass(64, 4095, o));
}

TEST_CASE("GPU MX scale modes and variants equal the CPU reference", "[gpu][quant]") {
  // Every scale mode under both the OCP and torchao arithmetic, every MX element format, random
  // data with specials (NaN, inf, zeros, subnormals) spread over several binades per block.
  const auto xs = data(64 * 96, 41, true);
  for (const char* fmt : {"e4m3fn", "e5m2", "e2m3fn", "e3m2fn", "e2m1fn"}) {
    for (const char* mode : quant::kScaleModeNames) {
      for (const char* variant : {"ocp", "torchao"}) {
        quant::Options o = options("mx", fmt);
        o.scale_mode = quant::parse_scale_mode(mode);
        o.variant = quant::parse_variant(variant);
        INFO(fmt << " " << mode << " " << variant);
        for (auto in : {CastInput::fp32, CastInput::bf16}) {
          REQUIRE(exmy::gpu::testing::compare_quantize(in, xs, 64, 96, o) == "");
        }
      }
    }
  }
}

TEST_CASE("GPU MX --variant te (TransformerEngine's MXFP8 quantizer) equals the CPU reference",
          "[gpu][quant]") {
  // The generic plan kernels (no fast path for ScaleRule::mx_te): NaN/inf/zero/subnormal blocks,
  // e4m3fn and e5m2, fp32 and bf16 sources.
  const auto xs = data(64 * 96, 43, true);
  for (const char* fmt : {"e4m3fn", "e5m2"}) {
    quant::Options o = options("mx", fmt);
    o.variant = native::CastVariant::te;
    INFO(fmt);
    for (auto in : {CastInput::fp32, CastInput::bf16}) {
      REQUIRE(exmy::gpu::testing::compare_quantize(in, xs, 64, 96, o) == "");
    }
  }
}

TEST_CASE("GPU NVFP4 (torchao and te, one and two levels) equals the CPU reference",
          "[gpu][quant]") {
  const auto xs = data(48 * 128, 43, true);
  for (const char* variant : {"torchao", "te"}) {
    for (const bool two : {false, true}) {
      if (std::string(variant) == "te" && !two) continue;  // TE always has a tensor scale
      quant::Options o = options("nvfp4", "e2m1fn");
      o.variant = quant::parse_variant(variant);
      o.two_level = two;
      INFO(variant << " two_level " << two);
      for (auto in : {CastInput::fp32, CastInput::bf16, CastInput::fp16}) {
        REQUIRE(exmy::gpu::testing::compare_quantize(in, xs, 48, 128, o) == "");
      }
      // Without specials too: the tensor scale is then finite and every block has a scale.
      const auto clean = data(48 * 128, 44, false);
      REQUIRE(exmy::gpu::testing::compare_quantize(CastInput::fp32, clean, 48, 128, o) == "");
      if (!two) continue;
      // The two-level level measured on the device (the single pass: many tiles, an odd row
      // count, an all-zero tensor, NaN ignored) and given on the host (a tensor amax).
      const auto big = data(67 * 4096, 45, true);
      REQUIRE(exmy::gpu::testing::compare_quantize(CastInput::fp32, big, 67, 4096, o) == "");
      REQUIRE(exmy::gpu::testing::compare_quantize(CastInput::bf16, big, 67, 4096, o) == "");
      REQUIRE(exmy::gpu::testing::compare_quantize(
                  CastInput::fp32, std::vector<std::uint32_t>(16 * 64, 0u), 16, 64, o) == "");
      o.nan = native::NanPolicy::ignore;
      REQUIRE(exmy::gpu::testing::compare_quantize(CastInput::fp32, big, 67, 4096, o) == "");
      o.tensor_amax = 1234.5f;
      REQUIRE(exmy::gpu::testing::compare_quantize(CastInput::fp32, clean, 48, 128, o) == "");
    }
  }
}

// Packed 4-bit codes (QuantizedOut::packed4): the single-pass kernel packs as it stores (NVFP4,
// MX e2m1fn), the other paths (tensor-, row-wise over odd rows, transpose) pack a scratch copy;
// both must equal sim/native/pack4.hpp's layout of the CPU codes, including an odd element count.
TEST_CASE("GPU packed 4-bit codes equal pack4 of the CPU codes", "[gpu][quant]") {
  struct Case {
    const char* scheme;
    const char* variant;
    std::size_t rows, cols;
    bool single;
  };
  const Case cases[] = {{"nvfp4", "torchao", 48, 128, true}, {"nvfp4", "te", 16, 64, true},
                        {"mx", "ocp", 40, 96, true},         {"tensor", "", 33, 35, false},
                        {"rowwise", "", 7, 33, false},       {"tensor", "", 1, 1, false}};
  for (const Case& c : cases) {
    const std::size_t n = c.rows * c.cols;
    const auto xs = data(n, 61, true);
    quant::Options o = options(c.scheme, "e2m1fn");
    if (*c.variant) o.variant = quant::parse_variant(c.variant);
    if (std::string(c.variant) == "te") o.two_level = true;
    INFO(c.scheme << " " << c.variant << " " << c.rows << "x" << c.cols);
    CHECK(quantize_is_single_pass(c.rows, c.cols, o) == c.single);
    std::vector<float> xf(n);
    for (std::size_t i = 0; i < n; ++i) xf[i] = native::float_of(xs[i]);
    const quant::Quantized ref = quant::quantize(xf, {c.rows, c.cols}, o);
    std::vector<std::uint8_t> want(native::packed4_bytes(n));
    native::pack4(ref.codes.data(), n, want.data());
    const std::size_t groups = quant::group_count(o.scheme, c.rows, c.cols);
    exmy::gpu::testing::DeviceBytes dx(n * 4), dcodes(want.size() + 16), dstate(groups * 4 + 4),
        dmx(groups + 1), dtensor(8);
    std::vector<std::uint8_t> raw(n * 4);
    std::memcpy(raw.data(), xs.data(), n * 4);
    dx.upload(raw);
    QuantizedOut out;
    out.codes = static_cast<std::uint8_t*>(dcodes.get());
    out.state = static_cast<float*>(dstate.get());
    out.scale_codes = static_cast<std::uint8_t*>(dmx.get());
    out.tensor_scale = static_cast<float*>(dtensor.get());
    out.packed4 = true;
    quantize(dx.get(), CastInput::fp32, c.rows, c.cols, o, out);
    const auto got = dcodes.download<std::uint8_t>(want.size());
    std::size_t bad = 0;
    for (std::size_t j = 0; j < want.size(); ++j) bad += got[j] != want[j];
    CHECK(bad == 0);
  }
  // A format wider than 4 bits cannot be packed: a named error, nothing launched.
  quant::Options wide = options("mx", "e4m3fn");
  QuantizedOut out;
  exmy::gpu::testing::DeviceBytes dx(64 * 4), d(64 * 4);
  out.codes = out.scale_codes = static_cast<std::uint8_t*>(d.get());
  out.packed4 = true;
  CHECK_THROWS_AS(quantize(dx.get(), CastInput::fp32, 1, 64, wide, out), InputError);
}

TEST_CASE("GPU block:RxC tiles equal the CPU reference (deepgemm, te, torchao, absmax)",
          "[gpu][quant][block2d]") {
  // Tiles of 1x128, 128x128, 16x16, 32x32, 1x32 and 128x1 on whole and partial shapes, every input
  // type (the plan takes the source dtype from it on both sides), specials in the data.
  struct Case {
    const char* scheme;
    const char* variant;
    const char* fmt;
    const char* to;
  };
  const Case cases[] = {
      {"block:1x128", "deepgemm", "fp32", "e4m3fn"},
      {"block:1x128", "deepgemm", "ue8m0", "e4m3fn"},
      {"block:128x128", "deepgemm", "fp32", "e4m3fn"},
      {"block:128x128", "deepgemm", "ue8m0", "e4m3fn"},
      {"block:1x128", "te", "fp32", "e4m3fn"},
      {"block:128x128", "te", "pow2", "e5m2"},
      {"block:1x128", "torchao", "fp32", "e4m3fn"},
      {"block:128x128", "torchao", "fp32", "e4m3fn"},
      {"block:16x16", "absmax", "fp32", "e2m1fn"},
      {"block:32x32", "te", "pow2", "e4m3fn"},
      {"block:1x32", "absmax", "fp32", "int8"},
      {"block:128x1", "deepgemm", "fp32", "e4m3fn"},
  };
  // Whole tiles and partial ones; 130x200 and 300x264 (cols % 8 == 0) take the fast path on their
  // whole tiles and the generic kernel on the right / bottom strips, 37x19 is generic only.
  const std::vector<Shape> whole = {{256, 256}, {128, 384}};
  const std::vector<Shape> partial = {{130, 200}, {300, 264}, {1, 1}, {37, 19}};
  for (const Case& c : cases) {
    quant::Options o = options(c.scheme, c.to);
    o.variant = quant::parse_variant(c.variant);
    o.scale_format = quant::parse_scale_format(c.fmt);
    const bool whole_only = std::string(c.variant) == "torchao";
    for (const CastInput in : {CastInput::fp32, CastInput::bf16, CastInput::fp16}) {
      o.source = in == CastInput::bf16   ? native::Storage::bf16
                 : in == CastInput::fp16 ? native::Storage::f16
                                         : native::Storage::f32;
      for (const auto* shapes : {&whole, &partial}) {
        if (whole_only && shapes == &partial) continue;
        for (const Shape& sh : *shapes) {
          for (bool specials : {false, true}) {
            auto xs = data(sh.rows * sh.cols, 11, specials);
            if (in != CastInput::fp32) {
              for (auto& v : xs) v >>= 16;  // bf16 / fp16 codes from the top halves
            }
            INFO(c.scheme << " " << c.variant << " " << c.fmt << " " << c.to << " input "
                          << static_cast<int>(in) << " " << sh.rows << "x" << sh.cols);
            REQUIRE(exmy::gpu::testing::compare_quantize(in, xs, sh.rows, sh.cols, o) == "");
          }
          // The library rules' 1x128 / 128x128 fp8 cases are the fast path's (quantize_tile.cu).
          const std::string sch = c.scheme, var = c.variant;
          if (var != "absmax" && (sch == "block:1x128" || sch == "block:128x128") &&
              shapes == &whole) {
            CHECK(tile_fast_path_covers(in, sh.rows, sh.cols, o));
          }
        }
      }
    }
  }
  // An all-zero tile and a tile holding only NaN, per library rule.
  std::vector<std::uint32_t> edge(2 * 128, 0u);
  for (std::size_t i = 128; i < 256; ++i) edge[i] = 0x7FC00000u;
  for (const char* v : {"deepgemm", "te", "torchao"}) {
    quant::Options o = options("block:1x128", "e4m3fn");
    o.variant = quant::parse_variant(v);
    REQUIRE(exmy::gpu::testing::compare_quantize(CastInput::fp32, edge, 2, 128, o) == "");
  }
}

TEST_CASE("GPU nvfp4:16x16 (TE 2-D weight scaling) equals the CPU reference",
          "[gpu][quant][nvfp4_2d]") {
  // E4M3 tile scales through the tile launcher, the two-level tensor scale, every input type,
  // whole and partial tiles, specials (NaN, inf) in the data.
  quant::Options o = options("nvfp4:16x16", "e2m1fn");
  o.variant = quant::parse_variant("te");
  o.two_level = true;
  for (const CastInput in : {CastInput::fp32, CastInput::bf16, CastInput::fp16}) {
    for (const Shape& sh : std::vector<Shape>{{256, 256}, {48, 80}, {37, 18}, {1, 2}}) {
      for (bool specials : {false, true}) {
        auto xs = data(sh.rows * sh.cols, 13, specials);
        if (in != CastInput::fp32) {
          for (auto& v : xs) v >>= 16;
        }
        INFO("input " << static_cast<int>(in) << " " << sh.rows << "x" << sh.cols << " specials "
                      << specials);
        REQUIRE(exmy::gpu::testing::compare_quantize(in, xs, sh.rows, sh.cols, o) == "");
      }
    }
  }
}

namespace {

// fp32 bits of a matrix whose 1x128 tiles (and so 128x128 tiles) are of eight kinds, by a hash of
// the tile: plain values of a per-tile magnitude; one NaN; +-inf; -0 and fp32 subnormals among
// small values; all +-0; a tiny amax below DeepGEMM's 1e-4 and TE's eps floors; values near the
// fp32 maximum; one outlier 2^20 times the rest (codes flushed to zero and subnormal).
std::vector<std::uint32_t> tile_kinds_data(std::size_t rows, std::size_t cols, std::uint32_t salt) {
  std::vector<std::uint32_t> v(rows * cols);
  std::uint32_t h = 0x85EBCA6Bu ^ salt;
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < cols; ++c) {
      const std::uint32_t tile = static_cast<std::uint32_t>(r * 977 + c / 128) * 2654435761u ^ salt;
      const std::uint32_t kind = (tile >> 13) % 8;
      h = h * 1664525u + 1013904223u;
      const std::uint32_t sign = h & 0x80000000u, man = (h >> 4) & 0x7FFFFFu;
      std::uint32_t e = 100 + (tile >> 20) % 40 + (h >> 28) % 4;  // per-tile magnitude
      std::uint32_t b = sign | (e << 23) | man;
      const bool pick = (h >> 9) % 61 == 0;  // about two elements of a 128-element run
      switch (kind) {
        case 1:
          if (pick) b = sign | 0x7FC00000u | (man & 0xFFu);
          break;
        case 2:
          if (pick) b = sign | 0x7F800000u;
          break;
        case 3:
          if ((h >> 9) % 5 == 0) b = sign | ((h >> 9) % 3 == 0 ? 0u : (man >> (h % 23)));
          break;
        case 4:
          b = sign;
          break;
        case 5:
          b = sign | ((90 + (h >> 28) % 8) << 23) | man;  // |x| < 2^-30 < 1e-4
          break;
        case 6:
          b = sign | (254u << 23) | man;
          break;
        case 7:
          if (pick) b = sign | ((e + 20) << 23) | man;
          break;
        default:
          break;
      }
      v[r * cols + c] = b;
    }
  }
  return v;
}

struct TileRun {
  std::vector<std::uint8_t> codes;
  std::vector<std::uint32_t> state;
};

TileRun run_tiles(CastInput in, const std::vector<std::uint32_t>& xs, std::size_t rows,
                  std::size_t cols, const quant::Options& o, TilePath path) {
  const std::size_t n = rows * cols, bytes = input_bytes(in);
  std::vector<std::uint8_t> raw(n * bytes);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t k = 0; k < bytes; ++k) raw[i * bytes + k] = (xs[i] >> (8 * k)) & 0xFF;
  }
  const std::size_t groups = quant::group_count(o.scheme, rows, cols);
  exmy::gpu::testing::DeviceBytes dx(raw.size()), dcodes(n), dstate(groups * 4);
  dx.upload(raw);
  QuantizedOut out;
  out.codes = static_cast<std::uint8_t*>(dcodes.get());
  out.state = static_cast<float*>(dstate.get());
  set_tile_path(path);
  quantize(dx.get(), in, rows, cols, o, out);
  set_tile_path(TilePath::automatic);
  return {dcodes.download<std::uint8_t>(n), dstate.download<std::uint32_t>(groups)};
}

// The library rules' cases of the fast tile kernels: every rule and scale format, both fp8
// targets where the rule takes them.
struct FastTileCase {
  const char* variant;
  const char* fmt;
  const char* to;
};
const FastTileCase kFastTileCases[] = {
    {"deepgemm", "fp32", "e4m3fn"}, {"deepgemm", "ue8m0", "e4m3fn"}, {"te", "fp32", "e4m3fn"},
    {"te", "pow2", "e4m3fn"},       {"te", "pow2", "e5m2"},          {"te", "fp32", "e5m2"},
    {"torchao", "fp32", "e4m3fn"},
};

// Runs one fast-path call (it must be one) and the generic kernel on the same input, and requires
// equal codes and states, then the automatic path against the CPU reference, byte for byte. The
// reference's source dtype is the input's, as gpu::quantize sets it: te's scale of a tile whose
// 448 / amax overflows is the source dtype's max (bf16 subnormal tiles reach it).
void require_fast_equals_generic_and_reference(CastInput in, const std::vector<std::uint32_t>& xs,
                                               std::size_t rows, std::size_t cols,
                                               const quant::Options& o_in) {
  quant::Options o = o_in;
  o.source = in == CastInput::bf16   ? native::Storage::bf16
             : in == CastInput::fp16 ? native::Storage::f16
                                     : native::Storage::f32;
  REQUIRE(tile_fast_path_covers(in, rows, cols, o));
  const TileRun fast = run_tiles(in, xs, rows, cols, o, TilePath::automatic);
  const TileRun generic = run_tiles(in, xs, rows, cols, o, TilePath::generic);
  REQUIRE(fast.state == generic.state);
  REQUIRE(fast.codes == generic.codes);
  REQUIRE(exmy::gpu::testing::compare_quantize(in, xs, rows, cols, o) == "");
}

bool is_nan16(CastInput in, std::uint32_t code) {
  const std::uint32_t mag = code & 0x7FFFu;
  return in == CastInput::fp16 ? mag > 0x7C00u : mag > 0x7F80u;
}

// n 16-bit codes in one of three layouts: 0 every code in order (whole tiles of NaN payloads of
// both signs, of +-inf, of subnormals and -0); 1 every code once, scattered by an odd multiplier
// (a bijection mod 2^16), so specials sit among normal values; 2 as 1 with NaN codes replaced by
// normal ones, so subnormal, -0 and inf elements meet a finite tile multiplier. n > 2^16 repeats.
std::vector<std::uint32_t> codes16_layout(CastInput in, std::size_t n, int layout) {
  std::vector<std::uint32_t> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    const auto k = static_cast<std::uint32_t>(i & 0xFFFFu);
    std::uint32_t c = layout == 0 ? k : (k * 40503u + 7u) & 0xFFFFu;
    if (layout == 2 && is_nan16(in, c)) c = (c & 0x80FFu) | 0x3C00u;  // a normal value near 1
    v[i] = c;
  }
  return v;
}

}  // namespace

TEST_CASE(
    "GPU block:RxC fast tile path on every fp16 and bf16 code (NaN payloads, inf, -0, "
    "subnormals)",
    "[gpu][quant][block2d]") {
  // Guards the fast kernels' hardware fp16 widening (cvt.f32.f16, with NaN elements recoded by
  // tile_fixup from the exact widening) and the 16-bit absmax over packed tile pairs: all 2^16
  // codes of each 16-bit input in 1x128 and 128x128 tiles, fast path == generic kernel == CPU
  // reference. 300x264 has a partial right tile column (rem 8) and 600 1x128 tiles, not a
  // multiple of a block's 128.
  int compared = 0;
  for (const char* scheme : {"block:1x128", "block:128x128"}) {
    for (const FastTileCase& c : kFastTileCases) {
      quant::Options o = options(scheme, c.to);
      o.variant = quant::parse_variant(c.variant);
      o.scale_format = quant::parse_scale_format(c.fmt);
      for (const CastInput in : {CastInput::fp16, CastInput::bf16}) {
        for (int layout = 0; layout < 3; ++layout) {
          for (const Shape& sh : std::vector<Shape>{{512, 128}, {256, 256}, {300, 264}}) {
            const bool partial = sh.rows % 128 != 0 || sh.cols % 128 != 0;
            if (std::string(c.variant) == "torchao" && partial) continue;  // whole tiles only
            INFO(scheme << " " << c.variant << " " << c.fmt << " " << c.to << " input "
                        << static_cast<int>(in) << " layout " << layout << " " << sh.rows << "x"
                        << sh.cols);
            const auto xs = codes16_layout(in, sh.rows * sh.cols, layout);
            require_fast_equals_generic_and_reference(in, xs, sh.rows, sh.cols, o);
            ++compared;
          }
        }
      }
    }
  }
  CHECK(compared == 2 * (6 * 2 * 3 * 3 + 1 * 2 * 3 * 2));
}

TEST_CASE("GPU block:RxC fast tile path over tile counts not a multiple of a block's tiles",
          "[gpu][quant][block2d]") {
  // Guards the 1x128 kernel's several tiles per 16-lane group (8 for 16-bit inputs, 2 for fp32:
  // 128 or 32 tiles per block), its per-tile states computed in one lane each and shuffled, and its
  // division-free offsets when cols % 128 == 0 (row_tile_offset): tile counts from 1 to 385, with
  // and without a partial right tile column, every input type; 128x128 tiles beside them.
  const std::vector<Shape> rows1 = {{1, 128},   {3, 384},   {77, 640},         {1, 128 * 67},
                                    {33, 1032}, {129, 136}, {5, 128 * 13 + 64}};
  const std::vector<Shape> rows128 = {{384, 640}, {257, 392}, {128, 128}};
  int compared = 0;
  for (const char* scheme : {"block:1x128", "block:128x128"}) {
    const bool square = std::string(scheme) == "block:128x128";
    for (const FastTileCase& c : kFastTileCases) {
      quant::Options o = options(scheme, c.to);
      o.variant = quant::parse_variant(c.variant);
      o.scale_format = quant::parse_scale_format(c.fmt);
      for (const CastInput in : {CastInput::fp32, CastInput::bf16, CastInput::fp16}) {
        for (const Shape& sh : square ? rows128 : rows1) {
          const bool partial = sh.rows % (square ? 128 : 1) != 0 || sh.cols % 128 != 0;
          if (std::string(c.variant) == "torchao" && partial) continue;  // whole tiles only
          auto xs = tile_kinds_data(sh.rows, sh.cols, static_cast<std::uint32_t>(compared) * 7u);
          if (in != CastInput::fp32) {
            for (auto& v : xs) v >>= 16;
          }
          INFO(scheme << " " << c.variant << " " << c.fmt << " " << c.to << " input "
                      << static_cast<int>(in) << " " << sh.rows << "x" << sh.cols);
          require_fast_equals_generic_and_reference(in, xs, sh.rows, sh.cols, o);
          ++compared;
        }
      }
    }
  }
  // 1x128: 6 rules x 7 shapes + torchao x 4 whole shapes; 128x128: 6 x 3 + torchao x 2; x 3 inputs.
  CHECK(compared == 3 * (6 * 7 + 4 + 6 * 3 + 2));
}

namespace {

// Input bits (fp32, or bf16 / fp16 patterns) of a rows x cols matrix of finite normal values with
// specials (NaN payloads of both signs, +-inf: elements whose codes the 1x128 row kernel leaves
// to row_tiles_fixup) at chosen places of the whole tiles, t the row-major whole-tile index: the
// first element of tile 0, the last element of the last whole tile, one element (at a column
// that moves from tile to tile, so every lane and tile slot of a pass) of tiles t % 37 == 5, two
// (lanes 0 and 15) of tiles t % 29 == 11, every element of tiles t % 53 == 20; and the last
// element of odd rows' partial right tile.
std::vector<std::uint32_t> sparse_fixup_data(CastInput in, std::size_t rows, std::size_t cols) {
  const std::size_t tcf = cols / 128;
  std::vector<std::uint32_t> v(rows * cols);
  std::uint32_t h = 0x9E3779B9u;
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < cols; ++c) {
      h = h * 1664525u + 1013904223u;
      const std::uint32_t sign = h >> 31, e = (h >> 24) % 20;
      std::uint32_t b = in == CastInput::fp32   ? sign << 31 | (110 + e) << 23 | (h & 0x7FFFFFu)
                        : in == CastInput::bf16 ? sign << 15 | (110 + e) << 7 | (h & 0x7Fu)
                                                : sign << 15 | (5 + e) << 10 | (h & 0x3FFu);
      const std::size_t t = r * tcf + c / 128, k = c % 128;
      const bool whole = c < tcf * 128;
      const bool special = (whole && ((t == 0 && k == 0) || (t == rows * tcf - 1 && k == 127) ||
                                      (t % 37 == 5 && k == (t * 13) % 128) ||
                                      (t % 29 == 11 && (k == 3 || k == 120)) || t % 53 == 20)) ||
                           (!whole && r % 2 == 1 && c == cols - 1);
      if (special) {
        const std::uint32_t kind = (h >> 8) % 4;  // NaN +, NaN -, +inf, -inf
        const std::uint32_t neg = kind % 2;
        const bool nan = kind < 2;
        b = in == CastInput::fp32   ? neg << 31 | (nan ? 0x7FC00000u | (h & 0xFFu) : 0x7F800000u)
            : in == CastInput::bf16 ? neg << 15 | (nan ? 0x7FC0u | (h & 0xFu) : 0x7F80u)
                                    : neg << 15 | (nan ? 0x7E00u | (h & 0xFu) : 0x7C00u);
      }
      v[r * cols + c] = b;
    }
  }
  return v;
}

}  // namespace

TEST_CASE("GPU block:1x128 fast tile path re-codes flagged tiles after the pass",
          "[gpu][quant][block2d]") {
  // Guards row_tiles_fixup (gpu/quant/quantize_tile.cu): a thread's tiles whose codes need
  // tile_fixup are flagged during the pass and re-coded after its stores with their states
  // recomputed from the input. Sparse specials (sparse_fixup_data) put flagged tiles at the
  // first and last tile, in every tile slot j of a pass (8 per 16-bit group, 2 for fp32), with
  // one, two or 128 flagged elements, in partial last blocks (300, 133 and 8 tiles) and rows
  // with a partial right tile (the kRem kernel); fast path == generic kernel == CPU reference.
  const std::vector<Shape> shapes = {
      {300, 128}, {7, 128 * 19}, {1, 128 * 8}, {17, 128 * 16}, {5, 128 * 13 + 64}};
  int compared = 0;
  for (const FastTileCase& c : kFastTileCases) {
    quant::Options o = options("block:1x128", c.to);
    o.variant = quant::parse_variant(c.variant);
    o.scale_format = quant::parse_scale_format(c.fmt);
    for (const CastInput in : {CastInput::fp32, CastInput::bf16, CastInput::fp16}) {
      for (const Shape& sh : shapes) {
        if (std::string(c.variant) == "torchao" && sh.cols % 128 != 0) continue;  // whole tiles
        INFO(c.variant << " " << c.fmt << " " << c.to << " input " << static_cast<int>(in) << " "
                       << sh.rows << "x" << sh.cols);
        require_fast_equals_generic_and_reference(in, sparse_fixup_data(in, sh.rows, sh.cols),
                                                  sh.rows, sh.cols, o);
        ++compared;
      }
    }
  }
  CHECK(compared == 3 * (6 * 5 + 4));
}

TEST_CASE("GPU block:RxC fast tile path equals the generic tile kernel and the CPU reference",
          "[gpu][quant][block2d]") {
  // Guards the fast kernels of gpu/quant/quantize_tile.cu (1x128 and 128x128 tiles, the library
  // rules): every rule and scale format, both fp8 targets where the rule takes them, every input
  // type, each rule's own NaN policy (torchao's skips NaN; --nan is refused there), tile kinds
  // covering NaN / inf / -0 / subnormal inputs and the amax floors; whole shapes and shapes with
  // partial right / bottom tiles (fast on the whole tiles). Each case runs the fast path and the
  // generic kernel on the same input and compares their codes and states byte for byte, then the
  // automatic path against the CPU reference.
  struct Case {
    const char* variant;
    const char* fmt;
    const char* to;
  };
  const Case cases[] = {
      {"deepgemm", "fp32", "e4m3fn"}, {"deepgemm", "ue8m0", "e4m3fn"}, {"te", "fp32", "e4m3fn"},
      {"te", "pow2", "e4m3fn"},       {"te", "pow2", "e5m2"},          {"te", "fp32", "e5m2"},
      {"torchao", "fp32", "e4m3fn"},
  };
  const std::vector<Shape> shapes = {{256, 384}, {136, 264}, {3, 1024}};
  int compared = 0;
  for (const char* scheme : {"block:1x128", "block:128x128"}) {
    for (const Case& c : cases) {
      quant::Options o = options(scheme, c.to);
      o.variant = quant::parse_variant(c.variant);
      o.scale_format = quant::parse_scale_format(c.fmt);
      for (const CastInput in : {CastInput::fp32, CastInput::bf16, CastInput::fp16}) {
        for (const Shape& sh : shapes) {
          const bool partial = sh.rows % 128 != 0 || sh.cols % 128 != 0;
          if (std::string(c.variant) == "torchao" && partial) continue;  // whole tiles only
          if (std::string(scheme) == "block:128x128" && sh.rows < 128) continue;
          auto xs = tile_kinds_data(sh.rows, sh.cols, static_cast<std::uint32_t>(compared));
          if (in != CastInput::fp32) {
            for (auto& v : xs) v >>= 16;
          }
          INFO(scheme << " " << c.variant << " " << c.fmt << " " << c.to << " input "
                      << static_cast<int>(in) << " " << sh.rows << "x" << sh.cols);
          REQUIRE(tile_fast_path_covers(in, sh.rows, sh.cols, o));
          const TileRun fast = run_tiles(in, xs, sh.rows, sh.cols, o, TilePath::automatic);
          const TileRun generic = run_tiles(in, xs, sh.rows, sh.cols, o, TilePath::generic);
          REQUIRE(fast.state == generic.state);
          REQUIRE(fast.codes == generic.codes);
          REQUIRE(exmy::gpu::testing::compare_quantize(in, xs, sh.rows, sh.cols, o) == "");
          ++compared;
        }
      }
    }
  }
  CHECK(compared > 90);
}

TEST_CASE("GPU int8 div_mul estimate path on every input value below many column scales",
          "[gpu][quant]") {
  // Guards fast_int8_div_estimate (gpu/quant/detail_fast_element.cuh): column j holds every
  // 16-bit pattern (row r = pattern r), those whose magnitude exceeds the column's limit L_j
  // replaced by a smaller one of the same sign, so the column's absmax is L_j: normal,
  // subnormal, tiny, huge, all-zero (+-0), inf and NaN limits; fp32 columns take random patterns
  // below 32-bit limits (fp32 subnormals, FLT_MAX). Column-wise and transposed (the 2-d column and
  // tiled transpose kernels), row-wise over the transposed layout (rows of 65536: the warp-per-tile
  // absmax), both NaN policies, every code and state byte against the CPU reference.
  const std::vector<std::uint32_t> lim16 = {0x3C00, 0x3BFF, 0x7BFF, 0x0001, 0x0003, 0x03FF,
                                            0x0400, 0x2E66, 0x63D0, 0x57F0, 0x5BF0, 0x0000,
                                            0x7C00, 0x7FFF, 0x4000, 0x3555};
  const std::vector<std::uint32_t> lim32 = {0x3F800000, 0x00000001, 0x007FFFFF, 0x00800000,
                                            0x7F7FFFFF, 0x42FE0000, 0x3DCCCCCD, 0x00000000,
                                            0x7F800000, 0x7FFFFFFF, 0x0DA24260, 0x5E000001,
                                            0x3F7FFFFF, 0x40000000, 0x447A0000, 0x01000000};
  const std::size_t rows = 65536;
  for (auto in : {CastInput::fp16, CastInput::bf16, CastInput::fp32}) {
    const auto& lim = in == CastInput::fp32 ? lim32 : lim16;
    const std::size_t cols = lim.size();
    const std::uint32_t sign = in == CastInput::fp32 ? 0x80000000u : 0x8000u;
    std::vector<std::uint32_t> xs(rows * cols), xt(rows * cols);
    for (std::size_t r = 0; r < rows; ++r) {
      for (std::size_t j = 0; j < cols; ++j) {
        std::uint32_t h = static_cast<std::uint32_t>(r * 2654435761u + j * 40503u);
        h ^= h >> 13;
        h *= 2246822519u;
        const std::uint32_t v = in == CastInput::fp32 ? h ^ static_cast<std::uint32_t>(r) : r;
        std::uint32_t mag = v & (sign - 1);
        if (mag > lim[j]) mag = lim[j] == 0 ? 0 : (h >> 1) % (lim[j] + 1);
        if (r == j) mag = lim[j];  // the limit itself, once per column
        xs[r * cols + j] = (v & sign) | mag;
        xt[j * rows + r] = xs[r * cols + j];
      }
    }
    for (auto nan : {native::NanPolicy::propagate, native::NanPolicy::ignore}) {
      for (bool transpose : {false, true}) {
        quant::Options o = options("colwise", "int8");
        o.nan = nan;
        o.transpose = transpose;
        INFO("colwise input " << static_cast<int>(in) << " nan " << static_cast<int>(nan)
                              << " transpose " << transpose);
        REQUIRE(exmy::gpu::testing::compare_quantize(in, xs, rows, cols, o) == "");
        quant::Options ow = options("rowwise", "int8");
        ow.nan = nan;
        ow.transpose = transpose;
        INFO("rowwise over the transposed layout");
        REQUIRE(exmy::gpu::testing::compare_quantize(in, xt, cols, rows, ow) == "");
      }
    }
  }
}
#endif  // EXMY_HAVE_CUDA
