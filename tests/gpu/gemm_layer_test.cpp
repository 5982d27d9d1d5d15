// The GEMM emulation kernel and the GPU layers against the CPU reference, bit for bit: random
// operands with special values mixed in (NaN, infinities, zeros of both signs, subnormals), every
// model family and its options (split-K in order and as a tree, tiles, promotion chunks, tf32
// roundings), and every layer kind in bf16 and fp16. Seeds are printed on failure.
#include <catch2/catch.hpp>

#if EXMY_HAVE_CUDA
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gpu/gemm/gemm_emulation.hpp"
#include "gpu/layer/layer.hpp"
#include "sim/format/registry.hpp"
#include "sim/gemm/gemm.hpp"
#include "sim/layer/linear_layer.hpp"

using namespace exmy;

namespace {

// Codes of `fmt` (8 or 16 bits): mostly finite normal values near 1, with NaN, infinities,
// zeros and subnormals at a few percent each.
gemm::Operand random_codes(std::size_t rows, std::size_t cols, const std::string& name,
                           std::mt19937_64& rng, bool specials) {
  const Format f = parse_format(name);
  const int bits = f.fp.total_bits();
  std::vector<std::uint16_t> codes(rows * cols);
  std::uniform_int_distribution<std::uint32_t> any(0, (1u << bits) - 1);
  std::uniform_int_distribution<int> pick(0, 99);
  for (auto& c : codes) {
    std::uint32_t v = any(rng);
    const int p = pick(rng);
    const std::uint32_t sign = v & (1u << (bits - 1));
    if (specials && p < 2)
      v = sign;  // +-0
    else if (specials && p < 4)
      v = sign | (any(rng) & ((1u << f.fp.man_bits) - 1));  // subnormal
    c = static_cast<std::uint16_t>(v);
  }
  if (!specials) {
    // Finite values only: replace NaN/inf codes by zero.
    for (auto& c : codes) {
      const double d = native::to_double(f.fp, c);
      if (!(d - d == 0)) c = 0;
    }
  }
  return gemm::operand_from_codes(codes, rows, cols, f.fp);
}

gemm::Operand random_fp32(std::size_t rows, std::size_t cols, std::mt19937_64& rng) {
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(rows * cols);
  for (auto& x : v) x = d(rng);
  return gemm::operand_from_fp32(v, rows, cols);
}

}  // namespace

TEST_CASE("GPU GEMM emulation equals the CPU reference bit for bit", "[gpu][gemm]") {
  struct Case {
    const char* a;
    const char* model;
    bool specials;
  };
  const Case cases[] = {
      {"e4m3fn", "sm90", true},
      {"e4m3fn", "cublas-sm90", false},
      {"e5m2", "sm100", true},
      {"bf16", "sm90", true},
      {"bf16", "cublas-sm90", false},
      {"fp16", "sm80", true},
      {"fp16", "fp32-seq", true},
      {"bf16", "pairwise", true},
      {"e4m3fn", "hw:k=4,frac=10,inter=7,rne,split=3,tile=8,tree", true},
      {"bf16", "hw:k=16,frac=25,split=5,chunk=24", false},
      {"e3m4", "hw:k=32,frac=13,inter=13,chunk=64", true},
      {"fp32", "cublas-sm90", false},
      {"fp32", "hw:k=8,frac=25,tf32=rna,split=2", false},
      {"fp32", "fp32-seq", false},
      {"e4m3fn", "cdna3", true},
      {"bf16", "cdna3", true},
      {"e5m2", "amd:k=4,two-stage,split=2", true},
  };
  const std::uint64_t seed = 20261125;
  std::mt19937_64 rng(seed);
  for (const Case& c : cases) {
    for (const auto& [M, N, K] : {std::tuple<std::size_t, std::size_t, std::size_t>{7, 33, 5},
                                  {16, 40, 257},
                                  {3, 65, 1100}}) {
      INFO("seed " << seed << " " << c.a << " " << c.model << " " << M << "x" << N << "x" << K);
      const bool f32 = std::string(c.a) == "fp32";
      const gemm::Operand A =
          f32 ? random_fp32(M, K, rng) : random_codes(M, K, c.a, rng, c.specials);
      const gemm::Operand B =
          f32 ? random_fp32(N, K, rng) : random_codes(N, K, c.a, rng, c.specials);
      const gemm::AccumModel m = gemm::parse_accum_model(c.model, A.code_bits);
      for (const auto out : {gemm::OutFormat::fp32, gemm::OutFormat::bf16}) {
        const auto cpu = gemm::gemm(A, B, m, out, 1.0);
        const auto gpu = gpu::gemm_emulate(A, B, m, out, 1.0);
        REQUIRE(cpu == gpu);
      }
      REQUIRE(gemm::gemm(A, B, m, gemm::OutFormat::fp16, 0.375) ==
              gpu::gemm_emulate(A, B, m, gemm::OutFormat::fp16, 0.375));
      // Row/column scales in every order.
      gemm::RowColScales rc;
      std::uniform_real_distribution<float> u(0.25f, 4.0f);
      for (std::size_t r = 0; r < M; ++r) rc.a_rows.push_back(u(rng));
      for (std::size_t r = 0; r < N; ++r) rc.b_cols.push_back(u(rng));
      for (auto o : {gemm::RowColScales::Order::product, gemm::RowColScales::Order::a_first,
                     gemm::RowColScales::Order::b_first}) {
        rc.order = o;
        REQUIRE(gemm::gemm(A, B, m, gemm::OutFormat::fp32, 1.0, &rc) ==
                gpu::gemm_emulate(A, B, m, gemm::OutFormat::fp32, 1.0, &rc));
      }
    }
  }
}

TEST_CASE("GPU GEMM emulation with block scales equals the CPU reference", "[gpu][gemm]") {
  // MX (E8M0 per 32) and NVFP4 (UE4M3 per 16) scales, every model kind: sm100's block-scaled
  // kinds (mxf8f6f4; mxf4 sub-groups for FP4 x FP4), explicit hw with sub-groups, the chains.
  struct Case {
    const char* a;
    const char* scale;
    std::size_t block;
    const char* model;
  };
  const Case cases[] = {
      {"e4m3fn", "e8m0fnu", 32, "sm100"},
      {"e5m2", "e8m0fnu", 32, "sm100"},
      {"e2m1fn", "e8m0fnu", 32, "sm100"},
      {"e2m1fn", "e4m3fn", 16, "sm100"},
      {"e2m1fn", "e4m3fn", 16, "hw:k=32,frac=20,sub=16,chunk=64"},
      {"e3m2fn", "e8m0fnu", 32, "fp32-seq"},
      {"e4m3fn", "e4m3fn", 16, "pairwise"},
  };
  const std::uint64_t seed = 20261126;
  std::mt19937_64 rng(seed);
  for (const Case& c : cases) {
    const std::size_t M = 9, N = 37, K = 256;
    INFO("seed " << seed << " " << c.a << " scales " << c.scale << " " << c.model);
    gemm::Operand A = random_codes(M, K, c.a, rng, false);
    gemm::Operand B = random_codes(N, K, c.a, rng, false);
    const FloatFormat sf = parse_format(c.scale).fp;
    std::uniform_int_distribution<int> code(c.scale == std::string("e8m0fnu") ? 100 : 0,
                                            c.scale == std::string("e8m0fnu") ? 150 : 0x7E);
    for (gemm::Operand* o : {&A, &B}) {
      o->scale_block = c.block;
      o->scale_emin = c.scale == std::string("e8m0fnu") ? -127 : 1 - sf.bias;
      for (std::size_t i = 0; i < o->rows * (K / c.block); ++i) {
        o->scales.push_back(native::to_double(sf, static_cast<std::uint64_t>(code(rng))));
      }
    }
    const gemm::AccumModel m = gemm::parse_accum_model(c.model, A.code_bits);
    for (const auto out : {gemm::OutFormat::fp32, gemm::OutFormat::bf16}) {
      REQUIRE(gemm::gemm(A, B, m, out, 1.0) == gpu::gemm_emulate(A, B, m, out, 1.0));
    }
  }
}

TEST_CASE("GPU GEMM emulation with fp32 tile scales equals the CPU reference", "[gpu][gemm]") {
  // SEMANTICS 15.7: the three cuBLASLt pairs under cublas-sm90, deepgemm, cutlass-sm90 and an
  // explicit chunk of 64; M, N not multiples of 128 and K not a multiple of 128.
  const std::uint64_t seed = 20261201;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> ex(-20.0f, 3.0f);
  const std::size_t M = 131, N = 150, K = 128 * 3 + 32, L = 4;
  for (const auto& [ra, rb] : {std::pair<std::size_t, std::size_t>{1, 128}, {1, 1}, {128, 1}}) {
    for (const char* model : {"cublas-sm90", "deepgemm", "cutlass-sm90",
                              "hw:k=32,frac=13,inter=13,chunk=64,promote=b-first"}) {
      INFO("seed " << seed << " tiles " << ra << "x128 . " << rb << "x128 " << model);
      gemm::Operand A = random_codes(M, K, "e4m3fn", rng, false);
      gemm::Operand B = random_codes(N, K, "e4m3fn", rng, false);
      for (auto [o, r] : {std::pair<gemm::Operand*, std::size_t>{&A, ra}, {&B, rb}}) {
        o->tile_rows = r;
        o->tile_cols = 128;
        o->tile_scales.resize(((o->rows + r - 1) / r) * L);
        for (float& s : o->tile_scales) s = std::exp2(ex(rng));
      }
      const gemm::AccumModel m = gemm::parse_accum_model(model, 8);
      for (const auto out : {gemm::OutFormat::fp32, gemm::OutFormat::bf16}) {
        REQUIRE(gemm::gemm(A, B, m, out, 1.0) == gpu::gemm_emulate(A, B, m, out, 1.0));
      }
    }
  }
}

TEST_CASE("GPU layers equal the CPU layers bit for bit", "[gpu][layer]") {
  const std::uint64_t seed = 424242;
  std::mt19937_64 rng(seed);
  for (const char* kind :
       {"plain", "switchback", "switchback-m", "switchback-q", "llm-int8", "fp8-tensorwise",
        "switchback-fp8", "masked:e4m3", "masked:e5m2", "masked:e8m5"}) {
    for (const auto dt : {layer::DType::bf16, layer::DType::fp16}) {
      for (const char* accum : {"fp32-seq", "cublas-sm90"}) {
        layer::LayerConfig cfg;
        layer::parse_kind(kind, cfg);
        cfg.dtype = dt;
        cfg.accum = gemm::parse_accum_model(accum, 16);
        const std::size_t b = 37, n = 24, m = 19;
        std::normal_distribution<float> d(0.0f, 1.0f);
        auto values = [&](std::size_t cnt, float scale) {
          std::vector<float> v(cnt);
          for (auto& x : v) x = layer::to_dtype(scale * d(rng), dt);
          return v;
        };
        const auto x = values(b * n, 2.0f), w = values(m * n, 0.05f), g = values(b * m, 1e-3f);
        INFO("seed " << seed << " " << kind << " " << layer::dtype_name(dt) << " " << accum);
        const layer::LayerResult cpu = layer::run_layer(cfg, {b, n, m}, x, w, g);
        const layer::LayerResult gpu = gpu::layer::run_layer(cfg, {b, n, m}, x, w, g);
        auto same = [](const std::vector<float>& p, const std::vector<float>& q) {
          return p.size() == q.size() && std::memcmp(p.data(), q.data(), p.size() * 4) == 0;
        };
        REQUIRE(same(cpu.y, gpu.y));
        REQUIRE(same(cpu.x_grad, gpu.x_grad));
        REQUIRE(same(cpu.w_grad, gpu.w_grad));
      }
    }
  }
}
#endif
