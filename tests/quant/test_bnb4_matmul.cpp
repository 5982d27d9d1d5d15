// bitsandbytes' 4-bit matmul (docs/SEMANTICS.md 7.17): the dispatch against a table evaluated by
// hand from bitsandbytes 0.50.2's bitsandbytes/backends/cuda/ops.py and csrc/gemm_4bit.cu for an
// H200 (132 SMs, sm_90); gemm_4bit_simt against a reference written here from
// csrc/gemm_4bit_simt.cu (its own rounding: frexp/nearbyint, FTZ by comparison), on weighted
// random inputs with a printed seed; the MMA kernel's B; the CLI's files and its refusals.
#include <array>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "sim/common/error.hpp"
#include "sim/io/npy.hpp"
#include "sim/native/bnb_dynamic_map.hpp"
#include "sim/native/convert.hpp"
#include "sim/quant/bnb4_matmul.hpp"
#include "tests/support/cli_run.hpp"

using namespace exmy;
using native::Bnb4Dtype;
using quant::Bnb4MatmulPath;

namespace {

// ---- the reference (from csrc/gemm_4bit_simt.cu; shares no code with sim/quant) ---------------
float flush(float x) {
  return std::fabs(x) < 0x1p-126f ? std::copysign(0.0f, x) : x;
}
float fadd(float a, float b) {  // add.ftz.f32
  return flush(flush(a) + flush(b));
}
float fmul(float a, float b) {  // mul.ftz.f32
  return flush(flush(a) * flush(b));
}
float ffma(float a, float b, float c) {  // fma.rn.ftz.f32
  return flush(std::fma(flush(a), flush(b), flush(c)));
}

struct Fmt {
  int mant, emin;
  double max;
};
const Fmt kBf16{7, -126, 0x1.fep127}, kFp16{10, -14, 65504.0};

// Round x (exact in double) to the format, nearest-even; overflow to inf.
double round_to(double x, const Fmt& f) {
  if (x == 0 || !std::isfinite(x)) return x;
  int e = 0;
  std::frexp(x, &e);  // |x| = m 2^e, m in [0.5, 1)
  const int q = std::max(e - 1, f.emin) - f.mant;
  const double r = std::ldexp(std::nearbyint(std::ldexp(x, -q)), q);
  return std::fabs(r) > f.max ? std::copysign(INFINITY, x) : r;
}

float nf4(int c) {  // NF4_LUT_F32 (csrc/gemm_4bit_common.cuh)
  static const float v[16] = {-1.0f,
                              -0.6961928009986877f,
                              -0.5250730514526367f,
                              -0.39491748809814453f,
                              -0.28444138169288635f,
                              -0.18477343022823334f,
                              -0.09105003625154495f,
                              0.0f,
                              0.07958029955625534f,
                              0.16093020141124725f,
                              0.24611230194568634f,
                              0.33791524171829224f,
                              0.44070982933044434f,
                              0.5626170039176941f,
                              0.7229568362236023f,
                              1.0f};
  return v[c];
}
float fp4(int c) {  // FP4_LUT_F32
  static const float v[16] = {
      0.0f,  0.005208333333f,  0.66666667f,  1.0f,  0.33333333f,  0.5f,  0.16666667f,  0.25f,
      -0.0f, -0.005208333333f, -0.66666667f, -1.0f, -0.33333333f, -0.5f, -0.16666667f, -0.25f};
  return v[c];
}

struct Problem {
  std::size_t M, N, K, block;
  bool nf4 = true, nested = false;
  std::vector<std::uint8_t> packed, codes;
  std::vector<float> absmax, absmax2;
  float offset = 0;
  std::vector<double> a;     // M x K values of the activation dtype
  std::vector<double> bias;  // N or empty
};

// One output as gemm_4bit_simt<T, M_BLOCK> computes it (CUDA path, not HIP).
double ref_simt(const Problem& p, std::size_t m, std::size_t n, Bnb4Dtype dt) {
  std::array<float, 256> code{};
  native::bnb_dynamic_map(true, code);
  const Fmt& f = dt == Bnb4Dtype::fp16 ? kFp16 : kBf16;
  float lane[32] = {};
  for (std::size_t g = 0; g * 1024 < p.K; ++g) {
    for (std::size_t l = 0; l < 32; ++l) {
      const std::size_t k0 = g * 1024 + l * 32;
      if (k0 >= p.K) continue;
      const std::size_t blk = (n * p.K + k0) / p.block;
      const float s =
          p.nested ? ffma(code[p.codes[blk]], p.absmax2[blk / 256], p.offset) : p.absmax[blk];
      float acc = lane[l];
      for (std::size_t sub = 0; sub < 4; ++sub) {
        double b[8];
        for (int e = 0; e < 8; ++e) {
          const std::size_t i = n * p.K + k0 + sub * 8 + e;
          const int c = (e % 2 == 0) ? p.packed[i / 2] >> 4 : p.packed[i / 2] & 15;
          const float lut = p.nf4 ? nf4(c) : fp4(c);
          b[e] =
              dt == Bnb4Dtype::fp32 ? fmul(lut, s) : round_to(round_to(lut, f) * round_to(s, f), f);
        }
        const double* a = &p.a[m * p.K + k0 + sub * 8];
        if (dt == Bnb4Dtype::fp32) {
          for (int k = 0; k < 4; ++k) {
            acc = ffma(static_cast<float>(a[k]), static_cast<float>(b[k]), acc);
            acc = ffma(static_cast<float>(a[k + 4]), static_cast<float>(b[k + 4]), acc);
          }
        } else {
          for (int k = 0; k < 8; k += 2) {
            const float x = static_cast<float>(round_to(a[k] * b[k], f));
            const float y = static_cast<float>(round_to(a[k + 1] * b[k + 1], f));
            acc = fadd(acc, fadd(x, y));
          }
        }
      }
      lane[l] = acc;
    }
  }
  for (int off = 16; off > 0; off /= 2) {
    for (int l = 0; l < off; ++l) lane[l] = fadd(lane[l], lane[l + off]);
  }
  const float y = fadd(lane[0], p.bias.empty() ? 0.0f : static_cast<float>(p.bias[n]));
  return dt == Bnb4Dtype::fp32 ? y : round_to(y, f);
}

// Heavy-tailed values of the dtype: Student t (df 2.5) times powers of two, some exact zeros.
double heavy(std::mt19937_64& rng, Bnb4Dtype dt, double scale) {
  std::student_t_distribution<double> t(2.5);
  std::uniform_int_distribution<int> e(-3, 1), z(0, 19);
  if (z(rng) == 0) return 0.0;
  const double v = std::ldexp(t(rng) * scale, e(rng));
  if (dt == Bnb4Dtype::fp32) return static_cast<float>(v);
  return round_to(v, dt == Bnb4Dtype::fp16 ? kFp16 : kBf16);
}

std::uint32_t code_of(double v, Bnb4Dtype dt) {
  constexpr FloatFormat kF64 = formats::fp64, kB = formats::bf16, kH = formats::fp16;
  if (dt == Bnb4Dtype::fp32) return native::bits_of(static_cast<float>(v));
  return static_cast<std::uint32_t>(
      native::convert(kF64, dt == Bnb4Dtype::fp16 ? kH : kB, Rounding{}, native::bits_of(v)).code);
}
double value_of(std::uint32_t c, Bnb4Dtype dt) {
  constexpr FloatFormat kB = formats::bf16, kH = formats::fp16;
  if (dt == Bnb4Dtype::fp32) return native::float_of(c);
  return native::to_double(dt == Bnb4Dtype::fp16 ? kH : kB, c);
}

Problem random_problem(std::mt19937_64& rng, std::size_t M, std::size_t N, std::size_t K,
                       std::size_t block, bool is_nf4, bool nested, bool bias, Bnb4Dtype dt) {
  Problem p{M, N, K, block, is_nf4, nested, {}, {}, {}, {}, 0, {}, {}};
  std::uniform_int_distribution<int> byte(0, 255);
  p.packed.resize(N * K / 2);
  for (auto& b : p.packed) b = static_cast<std::uint8_t>(byte(rng));
  const std::size_t blocks = N * K / block;
  std::uniform_real_distribution<float> am(0.0f, 1.0f);
  if (nested) {
    p.codes.resize(blocks);
    for (auto& c : p.codes) c = static_cast<std::uint8_t>(byte(rng));
    p.absmax2.resize((blocks + 255) / 256);
    for (auto& v : p.absmax2) v = std::ldexp(am(rng), -2);
    p.offset = std::ldexp(am(rng), -3);
  } else {
    p.absmax.resize(blocks);
    for (auto& v : p.absmax) v = std::ldexp(am(rng) + 0.01f, static_cast<int>(byte(rng) % 9) - 6);
  }
  p.a.resize(M * K);
  for (auto& v : p.a) v = heavy(rng, dt, 1.0);
  if (bias) {
    p.bias.resize(N);
    for (auto& v : p.bias) v = heavy(rng, dt, 0.5);
  }
  return p;
}

quant::Bnb4Weight weight_of(const Problem& p) {
  quant::Bnb4Weight w;
  w.N = p.N;
  w.K = p.K;
  w.opt.type = p.nf4 ? native::Bnb4Type::nf4 : native::Bnb4Type::fp4;
  w.opt.block = p.block;
  w.opt.double_quant = p.nested;
  w.q.packed = p.packed;
  w.q.absmax = p.absmax;
  w.q.absmax_codes = p.codes;
  w.q.absmax2 = p.absmax2;
  w.q.offset = p.offset;
  return w;
}

Bnb4MatmulPath h200(std::size_t M, std::size_t N, std::size_t K, Bnb4Dtype dt = Bnb4Dtype::bf16,
                    std::size_t block = 64) {
  return quant::bnb4_matmul_path(M, N, K, dt, block, quant::Bnb4Gpu{});
}

}  // namespace

TEST_CASE("bnb4 matmul: the H200 dispatch, evaluated by hand from ops.py and gemm_4bit.cu",
          "[bnb4mm]") {
  using P = Bnb4MatmulPath;
  // 4096 x 4096 (n_blocks 64 < 66 = SMs / 2): custom to M = 7, then dequantize + linear.
  for (std::size_t M : {1, 2, 3, 4, 5, 6, 7}) CHECK(h200(M, 4096, 4096) == P::simt);
  for (std::size_t M : {8, 16, 64, 1536, 1537}) CHECK(h200(M, 4096, 4096) == P::dequant_linear);
  // 11008 x 4096 (n_blocks 172 >= 132): M = 4 already fills the GPU with 32x64 MMA tiles; the
  // custom kernel to M = 32 (sm90: n_blocks >= SMs).
  for (std::size_t M : {1, 2, 3}) CHECK(h200(M, 11008, 4096) == P::simt);
  for (std::size_t M : {4, 5, 6, 7, 8, 16, 32}) CHECK(h200(M, 11008, 4096) == P::mma_sm80);
  for (std::size_t M : {33, 48, 64}) CHECK(h200(M, 11008, 4096) == P::dequant_linear);
  // fp32: custom (always SIMT) below M = 8.
  CHECK(h200(7, 11008, 4096, Bnb4Dtype::fp32) == P::simt);
  CHECK(h200(8, 11008, 4096, Bnb4Dtype::fp32) == P::dequant_linear);
  // K not a multiple of the block: the fallback at every M.
  CHECK(h200(1, 704, 576, Bnb4Dtype::bf16, 128) == P::dequant_linear);
  // Small weight, K * 2 < N, low wave (n_blocks 5): custom to M = 512; K % 64 != 0 forces SIMT.
  CHECK(h200(64, 300, 96, Bnb4Dtype::bf16, 32) == P::simt);
  CHECK(h200(512, 300, 96, Bnb4Dtype::bf16, 32) == P::simt);
  CHECK(h200(513, 300, 96, Bnb4Dtype::bf16, 32) == P::dequant_linear);
  // 4096 x 11008 (N 4096, K 11008; n_blocks 64): M = 6 and 7 are tall-K under 3/4 wave.
  CHECK(h200(5, 4096, 11008) == P::simt);
  CHECK(h200(6, 4096, 11008) == P::dequant_linear);
  // An A100 (108 SMs, sm_80) at 11008 x 4096, M = 64 (n_blocks 172 >= SMs, K < N: M <= 64).
  CHECK(quant::bnb4_matmul_path(64, 11008, 4096, Bnb4Dtype::bf16, 64, {108, 8, 0}) == P::mma_sm80);
}

TEST_CASE("bnb4 matmul: gemm_4bit_simt equals the reference written from the kernel", "[bnb4mm]") {
  const std::uint64_t seed = std::random_device{}();
  std::printf("bnb4 matmul simt seed %llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  struct Shape {
    std::size_t M, N, K, block;
  };
  // K = 1088: the second 1024-step has two active lanes; K = 96: one step, three lanes.
  const Shape shapes[] = {{1, 7, 1088, 64},   {3, 5, 2048, 32},   {2, 4, 96, 32},
                          {9, 3, 4096, 4096}, {1, 6, 3072, 1024}, {4, 3, 512, 256}};
  std::size_t checked = 0;
  for (Bnb4Dtype dt : {Bnb4Dtype::bf16, Bnb4Dtype::fp16, Bnb4Dtype::fp32}) {
    for (const Shape& s : shapes) {
      for (int v = 0; v < 4; ++v) {
        const bool is_nf4 = v % 2 == 0, nested = v >= 2, bias = (v + s.M) % 2 == 1;
        const Problem p = random_problem(rng, s.M, s.N, s.K, s.block, is_nf4, nested, bias, dt);
        std::vector<std::uint32_t> a(p.a.size()), b(p.bias.size());
        for (std::size_t i = 0; i < a.size(); ++i) a[i] = code_of(p.a[i], dt);
        for (std::size_t i = 0; i < b.size(); ++i) b[i] = code_of(p.bias[i], dt);
        const std::vector<std::uint32_t> y = quant::bnb4_gemm_simt(a, s.M, weight_of(p), dt, b);
        for (std::size_t m = 0; m < s.M; ++m) {
          for (std::size_t n = 0; n < s.N; ++n) {
            const double want = ref_simt(p, m, n, dt), got = value_of(y[m * s.N + n], dt);
            INFO("dtype " << static_cast<int>(dt) << " M " << s.M << " N " << s.N << " K " << s.K
                          << " variant " << v << " (" << m << ", " << n << ")");
            if (std::isnan(want)) {
              CHECK(std::isnan(got));
            } else {
              CHECK(std::signbit(got) == std::signbit(want));
              CHECK(got == want);
            }
            ++checked;
          }
        }
      }
    }
  }
  CHECK(checked > 300);
}

TEST_CASE("bnb4 matmul: the MMA kernel's B is one rounding of lut * scale", "[bnb4mm]") {
  std::mt19937_64 rng(20261201);
  const Problem p = random_problem(rng, 1, 4, 256, 64, false, true, false, Bnb4Dtype::bf16);
  const std::vector<std::uint16_t> b = quant::bnb4_mma_weight(weight_of(p), Bnb4Dtype::bf16);
  std::array<float, 256> code{};
  native::bnb_dynamic_map(true, code);
  for (std::size_t i = 0; i < b.size(); ++i) {
    const std::size_t blk = i / 64;
    const float s = ffma(code[p.codes[blk]], p.absmax2[blk / 256], p.offset);
    const int c = i % 2 == 0 ? p.packed[i / 2] >> 4 : p.packed[i / 2] & 15;
    REQUIRE(value_of(b[i], Bnb4Dtype::bf16) == round_to(fmul(fp4(c), s), kBf16));
  }
}

TEST_CASE("bnb4 matmul: the CLI writes Y in X's shape and refuses bad input", "[bnb4mm]") {
  namespace fs = std::filesystem;
  const exmy::testing::TempDir tmp("exmy_test_bnb4mm");
  const fs::path dir = tmp.path;
  std::mt19937_64 rng(5);
  const Problem p = random_problem(rng, 2, 6, 128, 64, true, false, false, Bnb4Dtype::bf16);
  std::vector<std::uint16_t> x(p.a.size());
  for (std::size_t i = 0; i < x.size(); ++i)
    x[i] = static_cast<std::uint16_t>(code_of(p.a[i], Bnb4Dtype::bf16));
  io::write_npy((dir / "x.npy").string(), io::make_npy(x, {1, 2, 128}));
  io::write_npy((dir / "q.npy").string(), io::make_npy(p.packed));
  io::write_npy((dir / "s.npy").string(), io::make_npy(p.absmax));
  const std::string base =
      "gemm --a " + (dir / "x.npy").string() + " --a-format bf16 --b " + (dir / "q.npy").string() +
      " --b-format nf4 --b-shape 6x128 --block-scale-b " + (dir / "s.npy").string() +
      " --block 64 --compat bnb-cuda --out " + (dir / "y.npy").string();
  fs::remove(dir / "y.npy");
  const auto ok = exmy::testing::run_captured(base + " --out-format bf16 --json", "bnb4mm");
  REQUIRE(ok.status == 0);
  CHECK(ok.out.find("\"path\":\"simt\"") != std::string::npos);
  const io::NpyArray y = io::read_npy((dir / "y.npy").string());
  CHECK(y.shape == std::vector<std::size_t>{1, 2, 6});
  const std::vector<std::uint16_t> yc = io::as_u16(y, "y");
  for (std::size_t m = 0; m < 2; ++m) {
    for (std::size_t n = 0; n < 6; ++n) {
      CHECK(value_of(yc[m * 6 + n], Bnb4Dtype::bf16) == ref_simt(p, m, n, Bnb4Dtype::bf16));
    }
  }
  fs::remove(dir / "y.npy");
  for (const std::string bad :
       {base + " --out-format fp32", base + " --out-format bf16 --block 128",
        base + " --out-format bf16 --path nope", base + " --out-format bf16 --compat torch-cuda",
        base + " --out-format bf16 --double-quant"}) {
    const auto r = exmy::testing::run_captured(bad, "bnb4mm");
    INFO(bad << ": " << r.err);
    CHECK(r.status == 2);
    CHECK(r.err.find('\n') == r.err.size() - 1);  // one line
    CHECK(!fs::exists(dir / "y.npy"));
  }
}

// Regression: `--path mma` once fell through to dequant-linear (an edit that replaced the MMA
// refusal had not applied); the JSON line names the path taken.
TEST_CASE("bnb4 matmul: --path mma runs the MMA model (regression)", "[bnb4mm][regression]") {
  const exmy::testing::TempDir tmp("exmy_test_bnb4mma");
  std::mt19937_64 rng(11);
  const Problem p = random_problem(rng, 4, 8, 128, 64, true, false, false, Bnb4Dtype::bf16);
  std::vector<std::uint16_t> x(p.a.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    x[i] = static_cast<std::uint16_t>(code_of(p.a[i], Bnb4Dtype::bf16));
  }
  io::write_npy(tmp / "x.npy", io::make_npy(x, {4, 128}));
  io::write_npy(tmp / "q.npy", io::make_npy(p.packed));
  io::write_npy(tmp / "s.npy", io::make_npy(p.absmax));
  const std::string cmd = "gemm --a " + (tmp / "x.npy") + " --a-format bf16 --b " +
                          (tmp / "q.npy") + " --b-format nf4 --b-shape 8x128 --block-scale-b " +
                          (tmp / "s.npy") + " --compat bnb-cuda --out-format bf16 --out " +
                          (tmp / "y.npy") + " --json --path ";
  const auto mma = exmy::testing::run_captured(cmd + "mma", "bnb4mma");
  REQUIRE(mma.status == 0);
  CHECK(mma.out.find("\"path\":\"mma_sm80\"") != std::string::npos);
  const auto lin = exmy::testing::run_captured(cmd + "dequant-linear", "bnb4mma");
  REQUIRE(lin.status == 0);
  CHECK(lin.out.find("\"path\":\"dequant_linear\"") != std::string::npos);
  // fp32 has no MMA kernel (an fp32 X, written here, is refused on --path mma).
  std::vector<float> xf(p.a.begin(), p.a.end());
  io::write_npy(tmp / "xf.npy", io::make_npy(xf, {4, 128}));
  const auto f32 = exmy::testing::run_captured(
      "gemm --a " + (tmp / "xf.npy") + " --a-format fp32 --b " + (tmp / "q.npy") +
          " --b-format nf4 --b-shape 8x128 --block-scale-b " + (tmp / "s.npy") +
          " --compat bnb-cuda --out-format fp32 --out " + (tmp / "y2.npy") + " --path mma",
      "bnb4mma");
  CHECK(f32.status == 2);
  CHECK(f32.err.find("MMA kernel needs bf16/fp16") != std::string::npos);
}

namespace {

// One output of kgemm_4bit_inference_naive<T, 128, BITS> (csrc/kernels.cu) for an even K: the
// absmax as F.gemv_4bit passes it (plain here), cast to T; per lane the chunks k0 = 32 lane +
// 1024 j; each element's product in T added to the lane's fp32 sum; cub's warp sum (offsets 1,
// 2, 4, 8, 16); T(sum).
double ref_gemv(const Problem& p, std::size_t n, Bnb4Dtype dt) {
  const Fmt& f = dt == Bnb4Dtype::fp16 ? kFp16 : kBf16;
  float v[32] = {};
  for (std::size_t l = 0; l < 32; ++l) {
    for (std::size_t k0 = 32 * l; k0 < p.K; k0 += 1024) {
      const float s = p.absmax[(n * p.K + k0) / p.block];
      for (std::size_t e = 0; e < 32 && k0 + e < p.K; ++e) {
        const std::size_t i = n * p.K + k0 + e;
        const int c = e % 2 == 0 ? p.packed[i / 2] >> 4 : p.packed[i / 2] & 15;
        const float lut = p.nf4 ? nf4(c) : fp4(c);
        const double a = p.a[k0 + e];
        if (dt == Bnb4Dtype::fp32) {
          v[l] = ffma(static_cast<float>(a), fmul(lut, s), v[l]);
        } else {
          const double b = round_to(round_to(lut, f) * round_to(s, f), f);
          v[l] = fadd(v[l], static_cast<float>(round_to(a * b, f)));
        }
      }
    }
  }
  for (int off = 1; off < 32; off *= 2) {
    float old[32];
    std::memcpy(old, v, sizeof v);
    for (int l = 0; l + off < 32; ++l) v[l] = fadd(old[l], old[l + off]);
  }
  return dt == Bnb4Dtype::fp32 ? v[0] : round_to(v[0], f);
}

}  // namespace

TEST_CASE("bnb4 matmul: F.gemv_4bit's naive kernel equals the reference from kernels.cu",
          "[bnb4mm]") {
  const std::uint64_t seed = std::random_device{}();
  std::printf("bnb4 gemv seed %llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  std::size_t checked = 0;
  for (Bnb4Dtype dt : {Bnb4Dtype::bf16, Bnb4Dtype::fp16, Bnb4Dtype::fp32}) {
    for (std::size_t K : {std::size_t{96}, std::size_t{1088}, std::size_t{2048}}) {
      for (bool is_nf4 : {true, false}) {
        const Problem p = random_problem(rng, 1, 5, K, 32, is_nf4, false, false, dt);
        std::vector<std::uint32_t> a(K);
        for (std::size_t i = 0; i < K; ++i) a[i] = code_of(p.a[i], dt);
        const std::vector<std::uint32_t> y = quant::bnb4_gemv_naive(a, weight_of(p), dt);
        for (std::size_t n = 0; n < p.N; ++n) {
          INFO("dtype " << static_cast<int>(dt) << " K " << K << " nf4 " << is_nf4 << " n " << n);
          const double want = ref_gemv(p, n, dt), got = value_of(y[n], dt);
          if (std::isnan(want)) {
            CHECK(std::isnan(got));
          } else {
            CHECK(got == want);
            CHECK(std::signbit(got) == std::signbit(want));
          }
          ++checked;
        }
      }
    }
  }
  CHECK(checked == 90);
}

// bitsandbytes' dequantize + F.linear path (SEMANTICS 7.17, 15.6): F.linear(X, W_dq) is
// torch.mm(X, W_dq.t()), the GEMM of the launch records "T>T" at (M, N, K); with a bias it is
// addmm with cuBLASLt's bias epilogue, other kernels: the records "T>T+bias". Here a profile
// ($EXMY_GEMM_PROFILE) holds an nvjet record of each (the names of the H200's kernels at
// 4096x4096 M = 8, shrunk to 8 x 16 x 256): tst_64x8 cluster 2x1, tiles 2 (ceil(16/64) = 1 ->
// 2) x 1; 8 CTAs: split 4, parts of 64 ceil(64/64) = 64; the bias kernel 4 CTAs: split 2, parts
// of 128. Worked by hand from launch_rules.cpp's nvjet rule.
TEST_CASE("bnb4 matmul: dequant-linear takes F.linear's launch record, the bias one with a bias",
          "[bnb4mm][launch]") {
  const exmy::testing::TempDir tmp("exmy_test_bnb4lin");
  std::mt19937_64 rng(29);
  const std::size_t M = 8, N = 16, K = 256;
  Problem p = random_problem(rng, M, N, K, 64, true, false, true, Bnb4Dtype::bf16);
  REQUIRE(p.bias.size() == N);
  std::vector<std::uint16_t> x(p.a.size()), bias(N);
  for (std::size_t i = 0; i < x.size(); ++i) {
    x[i] = static_cast<std::uint16_t>(code_of(p.a[i], Bnb4Dtype::bf16));
  }
  for (std::size_t n = 0; n < N; ++n) {
    bias[n] = static_cast<std::uint16_t>(code_of(p.bias[n], Bnb4Dtype::bf16));
  }
  io::write_npy(tmp / "x.npy", io::make_npy(x, {M, K}));
  io::write_npy(tmp / "b.npy", io::make_npy(bias));
  io::write_npy(tmp / "q.npy", io::make_npy(p.packed));
  io::write_npy(tmp / "s.npy", io::make_npy(p.absmax));
  const std::string prof = tmp / "h200.json";
  {
    std::ofstream f(prof);
    f << R"({"launch": {"info": {"device": "NVIDIA H200"}, "kernels": [
      ["nvjet", "nvjet_sm90_tst_64x8_64x16_2x1_v_bz_splitK_TNT", "splitKreduce/f32"],
      ["nvjet", "nvjet_sm90_tst_64x8_64x16_2x1_v_bz_splitK_bias_TNT", "splitKreduce/f32"]],
      "records": {"bf16>bf16": [8, 16, 256, 0, 8], "bf16>bf16+bias": [8, 16, 256, 1, 4]}},
      "entries": [{"type": "bf16", "M": 64, "N": 64, "K": 512, "model": "hw:k=16,frac=25"}]})";
  }
  const std::string cmd = "gemm --a " + (tmp / "x.npy") + " --a-format bf16 --b " +
                          (tmp / "q.npy") + " --b-format nf4 --b-shape 16x256 --block-scale-b " +
                          (tmp / "s.npy") + " --compat bnb-cuda --out-format bf16 --json " +
                          "--path dequant-linear --out ";
  const std::string with_bias = " --bias " + (tmp / "b.npy");
  ::setenv("EXMY_GEMM_PROFILE", prof.c_str(), 1);
  const auto plan = exmy::testing::run_captured(cmd + (tmp / "p.npy") + " --plan", "bnb4lin");
  const auto plan_b =
      exmy::testing::run_captured(cmd + (tmp / "p.npy") + " --plan" + with_bias, "bnb4lin");
  const auto run_b = exmy::testing::run_captured(cmd + (tmp / "y.npy") + with_bias, "bnb4lin");
  // Without the bias record: the nearest-shape rule, announced in one line.
  {
    std::ofstream f(prof);
    f << R"({"launch": {"info": {"device": "NVIDIA H200"}, "kernels": [
      ["nvjet", "nvjet_sm90_tst_64x8_64x16_2x1_v_bz_splitK_TNT", "splitKreduce/f32"]],
      "records": {"bf16>bf16": [8, 16, 256, 0, 8]}},
      "entries": [{"type": "bf16", "M": 64, "N": 64, "K": 512, "model": "hw:k=16,frac=25"}]})";
  }
  const auto plan_nb =
      exmy::testing::run_captured(cmd + (tmp / "p.npy") + " --plan" + with_bias, "bnb4lin");
  ::unsetenv("EXMY_GEMM_PROFILE");
  INFO(plan.err << plan_b.err << run_b.err << plan_nb.err);
  REQUIRE(plan.status == 0);
  CHECK(plan.out.find("\"accum_model\":\"hw:k=16,frac=25,chunk=64\",\"verified\":true") !=
        std::string::npos);
  CHECK(plan.err.empty());
  CHECK(!std::filesystem::exists(tmp / "p.npy"));  // --plan writes nothing
  REQUIRE(plan_b.status == 0);
  CHECK(plan_b.out.find("\"bias\":true,\"accum_model\":\"hw:k=16,frac=25,chunk=128\","
                        "\"verified\":true") != std::string::npos);
  CHECK(plan_b.out.find("splitK_bias_TNT") != std::string::npos);
  REQUIRE(run_b.status == 0);
  CHECK(run_b.out == plan_b.out);
  REQUIRE(plan_nb.status == 0);
  CHECK(plan_nb.out.find("\"verified\":false") != std::string::npos);
  CHECK(plan_nb.err.find("bf16 (bias) 8x16x256 lies outside the verified set") !=
        std::string::npos);
  CHECK(plan_nb.err.find('\n') == plan_nb.err.size() - 1);
  // The model string runs as given (no profile): the same bits.
  const auto expl = exmy::testing::run_captured(
      cmd + (tmp / "y2.npy") + with_bias + " --accum hw:k=16,frac=25,chunk=128", "bnb4lin");
  REQUIRE(expl.status == 0);
  CHECK(io::as_u16(io::read_npy(tmp / "y.npy"), "y") ==
        io::as_u16(io::read_npy(tmp / "y2.npy"), "y2"));
  // The bias epilogue, against a reference written from its definition: the GEMM's fp32 result
  // (`exact`: one rounding of the exact sum) plus the bias in one fp32 addition, then RNE to
  // bf16. W_dq is bitsandbytes' dequantize_4bit (exmy's, checked byte for byte against it in
  // bench/results/2026-12-01-h200-qlora-matmul.md).
  const auto ex =
      exmy::testing::run_captured(cmd + (tmp / "y3.npy") + with_bias + " --accum exact", "bnb4lin");
  REQUIRE(ex.status == 0);
  const std::vector<std::uint16_t> y3 = io::as_u16(io::read_npy(tmp / "y3.npy"), "y3");
  const std::vector<std::uint32_t> wd =
      quant::bnb4_dequantize(weight_of(p).q, N * K, Bnb4Dtype::bf16, weight_of(p).opt);
  for (std::size_t m = 0; m < M; ++m) {
    for (std::size_t n = 0; n < N; ++n) {
      long double s = 0;  // bf16 products: 16 significant bits; 256 terms, exact here
      for (std::size_t k = 0; k < K; ++k) {
        s += static_cast<long double>(p.a[m * K + k]) * value_of(wd[n * K + k], Bnb4Dtype::bf16);
      }
      const float acc = static_cast<float>(s);  // one rounding to fp32
      const float y = acc + static_cast<float>(p.bias[n]);
      INFO("m " << m << " n " << n);
      CHECK(value_of(y3[m * N + n], Bnb4Dtype::bf16) == round_to(y, kBf16));
    }
  }
}
