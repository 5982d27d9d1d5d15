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
      // tile=T,tail (the sm90 segment-k TF32 rule): K = 1100 is 35 tiles of 32, 3 extra, last.
      {"fp32", "hw:k=8,frac=25,tf32=rne,split=4,tile=32,tail,tree", false},
      {"fp32", "fp32-seq", false},
      // cuBLAS's CUDA-core kernels (bench/results/2026-12-01-h200-gemm-simt.md): xmma FFMA's
      // split_k and in-kernel fold, dot_kernel + reduce_1Block, gemmSN's per-lane restart.
      {"fp32", "fp32-seq:lanes=26,vec=8,lanesum=fold", false},
      {"fp32", "fp32-seq:lanes=5,vec=8,lanesum=seq", false},
      {"fp32", "fp32-seq:dot=2", false},
      {"fp32", "fp32-seq:lanes=16,lanesum=seq,lanechunk=16", false},
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
TEST_CASE("GPU GEMM staged a block of rows at a time equals the CPU reference (issue 36)",
          "[gpu][gemm][stream][regression]") {
  // gemm_emulate staged whole double copies of A and B on the host (2 GiB for a 1 GiB fp32 A);
  // now blocks of about 2^19 values (7489 rows at K = 70) are staged and C comes back in blocks
  // of rows. Operands of more rows than a block, read in place (an fp32 view, 16-bit codes, MX
  // codes with 8-bit block scale codes), with tf32 truncation, row scales and alpha.
  const std::uint64_t seed = 20261201;
  std::mt19937_64 rng(seed);
  INFO("seed " << seed);
  const std::size_t M = 8000, N = 5, K = 70;
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> av(M * K), bv(N * K);
  for (auto& x : av) x = d(rng);
  for (auto& x : bv) x = d(rng);
  const gemm::Operand A32 = gemm::operand_view_f32(av.data(), M, K, K, 1);
  const gemm::Operand B32 = gemm::operand_view_f32(bv.data(), N, K, K, 1);
  gemm::RowColScales rc;
  rc.a_rows.resize(M, 0.5f);
  rc.b_cols.resize(N, 3.0f);
  for (const char* model : {"fp32-seq", "pairwise", "hw:k=16,frac=25,tf32"}) {
    INFO(model);
    const gemm::AccumModel m = gemm::parse_accum_model(model, 32);
    const auto want = gemm::gemm(A32, B32, m, gemm::OutFormat::fp32, 0.75, &rc);
    REQUIRE(want == gpu::gemm_emulate(A32, B32, m, gemm::OutFormat::fp32, 0.75, &rc));
    std::vector<std::uint32_t> got;
    std::size_t next = 0;
    gpu::gemm_emulate_rows(A32, B32, m, gemm::OutFormat::fp32, 0.75, &rc,
                           [&](std::size_t i0, std::size_t i1, const std::uint32_t* c) {
                             REQUIRE(i0 == next);
                             got.insert(got.end(), c, c + (i1 - i0) * N);
                             next = i1;
                           });
    REQUIRE(got == want);
    REQUIRE(next == M);
  }
  const gemm::Operand A16 = random_codes(M, K, "bf16", rng, true);
  const gemm::Operand B16 = random_codes(N, K, "bf16", rng, true);
  const gemm::AccumModel m16 = gemm::parse_accum_model("sm90", 16);
  for (const auto out : {gemm::OutFormat::fp32, gemm::OutFormat::bf16}) {
    REQUIRE(gemm::gemm(A16, B16, m16, out, 1.0) == gpu::gemm_emulate(A16, B16, m16, out, 1.0));
  }
  const std::size_t K8 = 64, M8 = 8300;  // 8192 rows a block at K = 64
  gemm::Operand A8 = random_codes(M8, K8, "e4m3fn", rng, false);
  gemm::Operand B8 = random_codes(N, K8, "e4m3fn", rng, false);
  std::uniform_int_distribution<int> code(110, 140);
  for (gemm::Operand* o : {&A8, &B8}) {
    o->scale_block = 32;
    o->scale_emin = -127;
    o->scale_table.resize(256);
    for (int c = 0; c < 256; ++c) o->scale_table[c] = native::to_double(formats::e8m0fnu, c);
    for (std::size_t i = 0; i < o->rows * (K8 / 32); ++i) {
      o->scale_codes.push_back(static_cast<std::uint8_t>(code(rng)));
    }
  }
  const gemm::AccumModel m8 = gemm::parse_accum_model("sm100", 8);
  REQUIRE(gemm::gemm(A8, B8, m8, gemm::OutFormat::fp32, 1.0) ==
          gpu::gemm_emulate(A8, B8, m8, gemm::OutFormat::fp32, 1.0));
}

TEST_CASE("GPU GEMM with rp and a 16-bit output sums its chunks on the device (issue 36)",
          "[gpu][gemm][stream][regression]") {
  // rp with a 16-bit output ran gemm::gemm_rounded_parts on the host: M x N fp32 partial sums and
  // a double copy of every K-slice of both operands. Now each thread sums its output's chunks
  // (k_gemm_emulate's rp_chunk). Chunks of 32 over K = 70 (a short last chunk), more rows than
  // a block of C, 16-bit and fp32 operands, alpha and row/column scales, both 16-bit outputs.
  const std::uint64_t seed = 20261203;
  std::mt19937_64 rng(seed);
  INFO("seed " << seed);
  const std::size_t M = 8000, N = 70, K = 70;
  const gemm::Operand A16 = random_codes(M, K, "bf16", rng, true);
  const gemm::Operand B16 = random_codes(N, K, "bf16", rng, true);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> av(M * K), bv(N * K);
  for (auto& x : av) x = d(rng);
  for (auto& x : bv) x = d(rng);
  const gemm::Operand A32 = gemm::operand_view_f32(av.data(), M, K, K, 1);
  const gemm::Operand B32 = gemm::operand_view_f32(bv.data(), N, K, K, 1);
  gemm::RowColScales rc;
  rc.a_rows.resize(M, 0.5f);
  rc.b_cols.resize(N, 3.0f);
  for (const char* model : {"hw:k=16,frac=25,inter=23,chunk=32,rp", "hw:k=8,frac=24,chunk=16,rp"}) {
    INFO(model);
    for (const auto out : {gemm::OutFormat::bf16, gemm::OutFormat::fp16}) {
      const gemm::AccumModel m16 = gemm::parse_accum_model(model, 16);
      REQUIRE(m16.rp);
      REQUIRE(gemm::gemm(A16, B16, m16, out, 1.0) == gpu::gemm_emulate(A16, B16, m16, out, 1.0));
      const gemm::AccumModel m32 = gemm::parse_accum_model(model, 32);
      REQUIRE(gemm::gemm(A32, B32, m32, out, 0.75, &rc) ==
              gpu::gemm_emulate(A32, B32, m32, out, 0.75, &rc));
    }
  }
}

TEST_CASE("GPU layer on views of 16-bit codes equals the CPU layer (issue 36)",
          "[gpu][layer][stream][regression]") {
  // exmy layer --device cuda ran on contiguous fp32 copies of the inputs; it now runs
  // run_layer_rows on the mapped views, the GPU GEMMs staging them a block at a time.
  // The other kinds held their prepared operands, int8 codes and outputs whole on the host
  // (3.5x the inputs); they now stage the views, keep what they prepare on the device and hand
  // every output back a block of rows at a time (gpu/layer/layer.cu). X (8000 x 70) is staged
  // in two blocks of 7489 rows and X_grad comes back in two; fp32 inputs too, and an rp model
  // (its chunks summed on the device).
  const std::uint64_t seed = 20261202;
  std::mt19937_64 rng(seed);
  const std::size_t b = 8000, n = 70, m = 3;
  for (const auto dt : {layer::DType::bf16, layer::DType::fp16, layer::DType::fp32}) {
    for (const char* kind : {"plain", "switchback", "switchback-m", "switchback-q", "llm-int8",
                             "fp8-tensorwise", "switchback-fp8", "masked:e4m3"}) {
      for (const char* accum : {"fp32-seq", "hw:k=16,frac=25,inter=23,chunk=32,rp"}) {
        layer::LayerConfig cfg;
        layer::parse_kind(kind, cfg);
        cfg.dtype = dt;
        cfg.accum = gemm::parse_accum_model(accum, layer::dtype_bits(dt));
        std::uniform_int_distribution<std::uint32_t> any(0, 0xFFFF);
        auto codes = [&](std::size_t cnt, std::uint16_t exp_mask) {
          std::vector<std::uint16_t> v(cnt);
          for (auto& c : v) c = static_cast<std::uint16_t>(any(rng) & ~exp_mask);  // finite
          return v;
        };
        // The top exponent bit cleared: no NaN or infinity codes in either format.
        const std::uint16_t top = 0x4000;
        const auto x = codes(b * n, top), w = codes(m * n, top), g = codes(b * m, top);
        // fp32: the bf16 codes' values as fp32 inputs (fp32 values, read without a table).
        const float* bf = layer::code_values(layer::DType::bf16);
        std::vector<float> xf(x.size()), wf(w.size()), gf(g.size());
        for (std::size_t i = 0; i < x.size(); ++i) xf[i] = bf[x[i]];
        for (std::size_t i = 0; i < w.size(); ++i) wf[i] = bf[w[i]];
        for (std::size_t i = 0; i < g.size(); ++i) gf[i] = bf[g[i]];
        const bool f32 = dt == layer::DType::fp32;
        const layer::MatView X =
            f32 ? layer::view_of(xf.data(), b, n) : layer::view_of_codes(x.data(), b, n, dt);
        const layer::MatView W =
            f32 ? layer::view_of(wf.data(), m, n) : layer::view_of_codes(w.data(), m, n, dt);
        const layer::MatView G =
            f32 ? layer::view_of(gf.data(), b, m) : layer::view_of_codes(g.data(), b, m, dt);
        INFO("seed " << seed << " " << kind << " " << layer::dtype_name(dt) << " " << accum);
        layer::LayerResult cpu, gpu;
        const auto collect = [](std::vector<float>& into, std::size_t cols) {
          return [&into, cols](std::size_t i0, std::size_t i1, const float* v) {
            REQUIRE(into.size() == i0 * cols);
            into.insert(into.end(), v, v + (i1 - i0) * cols);
          };
        };
        layer::run_layer_rows(cfg, {b, n, m}, X, W, G,
                              {collect(cpu.y, m), collect(cpu.x_grad, n), collect(cpu.w_grad, n)});
        gpu::layer::run_layer_rows(
            cfg, {b, n, m}, X, W, G,
            {collect(gpu.y, m), collect(gpu.x_grad, n), collect(gpu.w_grad, n)});
        REQUIRE(cpu.y.size() == b * m);
        REQUIRE(std::memcmp(cpu.y.data(), gpu.y.data(), cpu.y.size() * 4) == 0);
        REQUIRE(std::memcmp(cpu.x_grad.data(), gpu.x_grad.data(), cpu.x_grad.size() * 4) == 0);
        REQUIRE(cpu.w_grad.size() == m * n);
        REQUIRE(std::memcmp(cpu.w_grad.data(), gpu.w_grad.data(), cpu.w_grad.size() * 4) == 0);
      }
    }
  }
}
#endif
