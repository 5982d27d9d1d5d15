// TransformerEngine's NVFP4 training pieces (SEMANTICS 7.18-7.20, sim/layer/nvfp4_train.hpp).
// References written from TE's sources (commit d0067d0d), not from the code under test:
// - the RHT matrix by TE's reference construction (reference_nvfp4.py _build_hadamard_matrix:
//   Sylvester doubling [[h, h], [h, -h]], then diag(signs) @ h, times 1/sqrt(16));
// - the stochastic-rounding words by running the tuned 1-D kernel's loops forwards
//   (quantize_transpose_nvfp4_tuned_1D.cuh: per stage, rowwise_scaling's iterations and waves,
//   then colwise_scaling's columns and halves, each drawing get_rbits in order);
// - 4over6 by reference_nvfp4.py's _quantize_blockwise_4over6_reference step by step in host
//   fp32 (one rounding per torch operation);
// - Philox by Random123's published known answers (kat_vectors, philox4x32-10).
// The whole-pipeline comparison with TE's Python reference is
// bench/peers/te_nvfp4_train_vs_exmy.py.
#include <array>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "sim/common/error.hpp"
#include "sim/io/npy.hpp"
#include "sim/layer/nvfp4_train.hpp"
#include "sim/native/convert.hpp"
#include "sim/native/cvt_rs.hpp"
#include "sim/native/philox.hpp"
#include "tests/support/cli_run.hpp"

using namespace exmy;
using namespace exmy::layer;

namespace {

std::uint16_t bf16_of(float v) {  // exact values only
  std::uint32_t u;
  std::memcpy(&u, &v, 4);
  REQUIRE((u & 0xFFFFu) == 0u);
  return static_cast<std::uint16_t>(u >> 16);
}
float float_of_bf16(std::uint16_t c) {
  const std::uint32_t u = static_cast<std::uint32_t>(c) << 16;
  float v;
  std::memcpy(&v, &u, 4);
  return v;
}

}  // namespace

TEST_CASE("nvfp4 rht: TE's sign vector, its bitmask and the matrix diag(s) H16 / 4",
          "[layer][nvfp4_train]") {
  // get_sign_from_vector([1, 1, 1, -1, 1, -1, -1, -1, -1, -1, -1, 1, -1, 1, -1, -1]): bits 3, 5,
  // 6, 7, 8, 9, 10, 12, 14, 15.
  CHECK(te_rht_sign_mask() == 0xD7E8u);
  // Sylvester doubling as the reference builds it.
  std::vector<std::vector<int>> h{{1}};
  while (h.size() < 16) {
    const std::size_t n = h.size();
    std::vector<std::vector<int>> g(2 * n, std::vector<int>(2 * n));
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t j = 0; j < n; ++j) {
        g[i][j] = g[i][j + n] = g[i + n][j] = h[i][j];
        g[i + n][j + n] = -h[i][j];
      }
    }
    h = g;
  }
  for (const bool signs : {true, false}) {
    const auto r = te_rht_matrix_bf16(signs);
    for (int i = 0; i < 16; ++i) {
      for (int j = 0; j < 16; ++j) {
        const int s = signs ? kTeRhtSigns[i] : 1;
        CHECK(float_of_bf16(r[16 * i + j]) == 0.25f * static_cast<float>(s * h[i][j]));
      }
    }
    // Orthogonal: R R^T = I (exact in double).
    for (int i = 0; i < 16; ++i) {
      for (int k = 0; k < 16; ++k) {
        double d = 0;
        for (int j = 0; j < 16; ++j)
          d += double(float_of_bf16(r[16 * i + j])) * float_of_bf16(r[16 * k + j]);
        CHECK(d == (i == k ? 1.0 : 0.0));
      }
    }
  }
}

TEST_CASE("nvfp4 rht: its bits are the accumulation model's (a bf16 tie plus 0.75 fp32 ulp)",
          "[layer][nvfp4_train]") {
  // x_i = s_i 4 v_i makes output 0 (R[i][0] = s_i / 4) the sum of the v_i: 1 + 2^-8 + 1.5 2^-24.
  // Exactly, or in fp32 by RNE (fp32-seq, pairwise: 1 + 2^-8 + 2^-23), it lies above the bf16
  // tie 1 + 2^-8 and rounds up to 1 + 2^-7; the tensor-core model (sm100 = hw:k=16,frac=25, the
  // group's sum normalised toward zero) drops the 0.75 ulp, leaving the tie, which rounds to even.
  std::vector<std::uint16_t> x(16, 0);
  const float v[3] = {1.0f, 0x1p-8f, 0x1.8p-24f};
  for (int i = 0; i < 3; ++i) x[i] = bf16_of(static_cast<float>(kTeRhtSigns[i]) * 4.0f * v[i]);
  const std::map<std::string, std::uint16_t> want{{"sm100", 0x3F80},           {"sm90", 0x3F80},
                                                  {"hw:k=16,frac=25", 0x3F80}, {"fp32-seq", 0x3F81},
                                                  {"pairwise", 0x3F81},        {"exact", 0x3F81}};
  for (const auto& [model, code] : want) {
    INFO(model);
    CHECK(te_rht_apply(x, 1, 16, model, true)[0] == code);
  }
  CHECK_THROWS_AS(te_rht_apply(x, 1, 16, "bogus", true), InputError);
  CHECK_THROWS_AS(te_rht_apply(x, 2, 8, "sm100", true), InputError);
}

TEST_CASE("nvfp4 rht: random bf16 rows under sm100 equal the exact sum where it fits fp32",
          "[layer][nvfp4_train]") {
  // With all 16 terms within 2^12 of the largest, their sum is exact in 24 bits, so every model
  // gives bf16_RNE(exact sum).
  std::mt19937 rng(20261202);
  std::printf("nvfp4 rht random rows: seed 20261202\n");
  std::uniform_int_distribution<int> e(-6, 6), m(0, 127), sg(0, 1);
  std::vector<std::uint16_t> x(16 * 512);
  for (auto& c : x) {
    const float val = std::ldexp(1.0f + m(rng) / 128.0f, e(rng)) * (sg(rng) ? -1.0f : 1.0f);
    c = bf16_of(val);
  }
  const auto a = te_rht_apply(x, 32, 256, "sm100", true);
  const auto b = te_rht_apply(x, 32, 256, "exact", true);
  const auto c = te_rht_apply(x, 32, 256, "fp32-seq", true);
  CHECK(a == b);
  CHECK(a == c);
}

TEST_CASE("nvfp4 sr: te_philox_word is curanddx's Philox4x32-10 with its counter layout",
          "[layer][nvfp4_train]") {
  // Random123 kat_vectors: philox4x32 10, counter 0, key 0 -> 6627e8d5 e169c58d bc57ac4c 9b00dbd8.
  const std::uint32_t kat[4] = {0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u};
  for (int n = 0; n < 4; ++n) CHECK(te_philox_word(0, 0, 0, n) == kat[n]);
  // counter ffffffff x4, key ffffffff x2 -> 408f276d 41c83b0e a20bc7c6 6d5451fd.
  const std::uint32_t kat2[4] = {0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu};
  for (int n = 0; n < 4; ++n) {
    CHECK(te_philox_word(~0ull, ~0ull, ~0ull, n) == kat2[n]);
  }
  // init(seed, subsequence, offset): counter (lo off, hi off, lo sub, hi sub); word n from the
  // block floor(n / 4) further, the increment carrying through all four words.
  const std::uint64_t seed = 0x0123456789ABCDEFull;
  const native::PhiloxKeys k = native::philox_keys(seed);
  const auto block = [&](std::uint32_t x, std::uint32_t y, std::uint32_t z, std::uint32_t w) {
    return native::philox4x32_10(native::Philox4{{x, y, z, w}}, k);
  };
  CHECK(te_philox_word(seed, 1024, 7, 9) == block(1026, 0, 7, 0).w[1]);
  CHECK(te_philox_word(seed, 0xFFFFFFFFull, 5, 4) == block(0, 1, 5, 0).w[0]);
  CHECK(te_philox_word(seed, ~0ull, 0x1FFFFFFFFull, 6) == block(0, 0, 0, 2).w[2]);
}

TEST_CASE("nvfp4 sr: the word of every element is the tuned 1-D kernel's (forward simulation)",
          "[layer][nvfp4_train]") {
  for (const auto [rows, cols] :
       {std::pair<std::size_t, std::size_t>{32, 32}, {64, 96}, {128, 128}, {160, 288}, {256, 64}}) {
    for (const bool both : {false, true}) {
      INFO(rows << " x " << cols << (both ? " with transpose" : ""));
      // (output, r, c) -> (subsequence, n, slot), from the kernel's loops.
      std::map<std::tuple<int, std::size_t, std::size_t>,
               std::tuple<std::uint64_t, std::uint64_t, int>>
          sim;
      const std::size_t gx = (cols + 127) / 128, gy = (rows + 127) / 128;
      for (std::size_t by = 0; by < gy; ++by) {
        for (std::size_t bx = 0; bx < gx; ++bx) {
          for (std::size_t t = 0; t < 128; ++t) {
            const std::uint64_t seq = t + bx * 128 + by * gx * 128;
            std::uint64_t n = 0;
            const auto put = [&](int out, std::size_t r, std::size_t c, std::uint64_t word,
                                 int slot) {
              if (r < rows && c < cols) sim[{out, r, c}] = {seq, word, slot};
            };
            for (std::size_t stage = 0; stage < 4; ++stage) {
              const std::size_t r0 = by * 128 + (stage / 2) * 64, c0 = bx * 128 + (stage % 2) * 64;
              const std::size_t lane = t % 32, warp = t / 32;
              for (std::size_t it = 0; it < 2; ++it) {  // rowwise_scaling
                const std::size_t r = r0 + t / 4 + it * 32, cb = c0 + (t % 4) * 16;
                for (std::size_t w = 0; w < 2; ++w) {
                  const std::size_t group = ((w + lane / 16) * 8) % 16;
                  for (std::size_t e = 0; e < 8; ++e) put(0, r, cb + group + e, n + e / 4, e % 4);
                  n += 2;
                }
              }
              if (!both) continue;
              const std::size_t yb = (lane / 2 + warp) % 4;  // colwise_scaling
              for (std::size_t w = 0; w < 2; ++w) {
                for (std::size_t e = 0; e < 2; ++e) {
                  for (std::size_t i = 0; i < 8; ++i) {
                    put(1, r0 + yb * 16 + 8 * e + i, c0 + 2 * lane + w, n + i / 4, i % 4);
                  }
                  n += 2;
                }
              }
            }
          }
        }
      }
      std::size_t checked = 0;
      std::set<std::tuple<std::uint64_t, std::uint64_t, int>> used;
      for (int out = 0; out < (both ? 2 : 1); ++out) {
        for (std::size_t r = 0; r < rows; ++r) {
          for (std::size_t c = 0; c < cols; ++c) {
            const TeSrWord w = te_tuned_1d_word(rows, cols, r, c, both, out == 1);
            const auto it = sim.find({out, r, c});
            REQUIRE(it != sim.end());
            CHECK(std::get<0>(it->second) == w.subsequence);
            CHECK(std::get<1>(it->second) == w.n);
            CHECK(std::get<2>(it->second) == w.slot);
            used.insert({w.subsequence, w.n, w.slot});
            ++checked;
          }
        }
      }
      CHECK(checked == (both ? 2 : 1) * rows * cols);
      CHECK(used.size() == checked);  // no two elements share a random byte
    }
  }
}

namespace {

// e2m1 values of the codes (cast_from_fp4x2's table).
float e2m1_value(std::uint8_t c) {
  static const float v[16] = {0,     0.5f,  1,  1.5f,  2,  3,  4,  6,
                              -0.0f, -0.5f, -1, -1.5f, -2, -3, -4, -6};
  return v[c & 15];
}
// cast_to_fp4x2's comparison table.
std::uint8_t te_fp4(float x) {
  std::uint8_t r = 0;
  if (x >= 0.0f && x <= 0.25f) r = 0;
  if (x > 0.25f && x < 0.75f) r = 1;
  if (x >= 0.75f && x <= 1.25f) r = 2;
  if (x > 1.25f && x < 1.75f) r = 3;
  if (x >= 1.75f && x <= 2.5f) r = 4;
  if (x > 2.5f && x < 3.5f) r = 5;
  if (x >= 3.5f && x <= 5.0f) r = 6;
  if (x > 5.0f) r = 7;
  if (x >= -0.25f && x < -0.0f) r = 8;
  if (x < -0.25f && x > -0.75f) r = 9;
  if (x <= -0.75f && x >= -1.25f) r = 10;
  if (x < -1.25f && x > -1.75f) r = 11;
  if (x <= -1.75f && x >= -2.5f) r = 12;
  if (x < -2.5f && x > -3.5f) r = 13;
  if (x <= -3.5f && x >= -5.0f) r = 14;
  if (x < -5.0f) r = 15;
  return r;
}
// torch's .to(float8_e4m3fn) of a value in [-448, 448]: nearest, ties to the even code.
std::uint8_t e4m3_of(float v, float& value) {
  std::uint8_t best = 0;
  double bd = 1e300;
  for (int c = 0; c < 0x7F; ++c) {
    const int e = (c >> 3) & 0xF, m = c & 7;
    const double mag = e == 0 ? std::ldexp(double(m), -9) : std::ldexp(double(8 + m), e - 10);
    const double d = std::fabs(mag - std::fabs(double(v)));
    if (d < bd || (d == bd && (c & 1) == 0)) {
      bd = d;
      best = static_cast<std::uint8_t>(c);
    }
  }
  const int e = (best >> 3) & 0xF, m = best & 7;
  value =
      static_cast<float>(e == 0 ? std::ldexp(double(m), -9) : std::ldexp(double(8 + m), e - 10));
  if (std::signbit(v)) {
    best |= 0x80;
    value = -value;
  }
  return best;
}
float clampf(float x, float lo, float hi) {
  return x < lo ? lo : x > hi ? hi : x;
}

}  // namespace

TEST_CASE("nvfp4 four-over-six: 1x16 blocks against the reference's steps",
          "[layer][nvfp4_train]") {
  std::mt19937 rng(7);
  std::printf("nvfp4 4over6: seed 7\n");
  std::normal_distribution<float> nd;
  const std::size_t rows = 8, cols = 64;
  std::vector<float> x(rows * cols);
  for (auto& v : x)
    v = float_of_bf16(static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(nd(rng)) >> 16));
  x[5] = 4.0f;  // a block whose max maps to 6 and 4 on the grid both
  for (const bool mse : {false, true}) {
    for (const int emax : {256, 448}) {
      for (const bool fast : {false, true}) {
        quant::Options opt;
        opt.scheme = quant::parse_scheme("nvfp4");
        opt.target = quant::parse_target("e2m1fn");
        opt.variant = native::CastVariant::te;
        opt.two_level = true;
        Nvfp4TrainOptions t;
        t.four_over_six = true;
        t.mse = mse;
        t.e4m3_max = emax;
        t.err_fast = fast;
        const quant::Quantized q = nvfp4_train_quantize(quant::Values(x), {}, {rows, cols}, opt, t);
        float g = 0;
        for (const float v : x) g = std::max(g, std::fabs(v));
        const float denom = 6.0f * static_cast<float>(emax);
        float ges = std::min(denom / g, std::numeric_limits<float>::max());
        const float gds = 1.0f / ges;
        CHECK(q.tensor_scale == gds);
        int picked4 = 0;
        for (std::size_t r = 0; r < rows; ++r) {
          for (std::size_t b = 0; b < cols / 16; ++b) {
            float vmax = 0;
            for (int i = 0; i < 16; ++i) vmax = std::max(vmax, std::fabs(x[r * cols + 16 * b + i]));
            const float base = (vmax / 6.0f) * ges;
            float sf[2], es[2], err[2] = {0, 0};
            std::uint8_t code[2], e[2][16];
            for (int k = 0; k < 2; ++k) {
              const float d = clampf(k == 0 ? base * 1.5f : base, -448.0f, 448.0f);
              code[k] = e4m3_of(d, sf[k]);
              es[k] = std::min(1.0f / (sf[k] * gds), std::numeric_limits<float>::max());
              for (int i = 0; i < 16; ++i) {
                const float xv = x[r * cols + 16 * b + i];
                e[k][i] = te_fp4(clampf(xv * es[k], -6.0f, 6.0f));
                // fast: _ref_nvfp4_4over6_fp16_candidate (the exact product) - x * ges
                const float prod = e2m1_value(e[k][i]) * sf[k];
                const float val = fast ? prod : (prod * g) / denom;
                const float diff = val - (fast ? xv * ges : xv);
                err[k] = err[k] + (mse ? diff * diff : std::fabs(diff));
              }
            }
            const int pick = err[0] < err[1] ? 0 : 1;
            picked4 += pick == 0;
            CHECK(q.scale_codes[r * (cols / 16) + b] == code[pick]);
            for (int i = 0; i < 16; ++i) CHECK(q.codes[r * cols + 16 * b + i] == e[pick][i]);
          }
        }
        INFO("blocks mapped to 4: " << picked4);
        CHECK(picked4 > 0);
        CHECK(picked4 < static_cast<int>(rows * cols / 16));
      }
    }
  }
}

TEST_CASE("nvfp4 sr: codes are a neighbour of the scaled value on the e2m1 grid",
          "[layer][nvfp4_train]") {
  std::mt19937 rng(11);
  std::normal_distribution<float> nd;
  const std::size_t rows = 64, cols = 64;
  std::vector<std::uint16_t> bits(rows * cols);
  std::vector<float> x(rows * cols);
  for (std::size_t k = 0; k < x.size(); ++k) {
    bits[k] = static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(nd(rng)) >> 16);
    x[k] = float_of_bf16(bits[k]);
  }
  quant::Options opt;
  opt.scheme = quant::parse_scheme("nvfp4");
  opt.target = quant::parse_target("e2m1fn");
  opt.variant = native::CastVariant::te;
  opt.two_level = true;
  Nvfp4TrainOptions t;
  t.sr = true;
  t.seed = 1234;
  const quant::Quantized rn = quant::quantize(quant::Values(x), {rows, cols}, opt);
  const quant::Quantized sr = nvfp4_train_quantize(quant::Values(x), bits, {rows, cols}, opt, t);
  CHECK(sr.scale_codes == rn.scale_codes);
  CHECK(sr.tensor_scale == rn.tensor_scale);
  std::size_t differ = 0;
  for (std::size_t k = 0; k < x.size(); ++k) {
    const float a = e2m1_value(sr.codes[k]), b = e2m1_value(rn.codes[k]);
    // One grid step at most from the nearest (the two neighbours of the scaled value).
    const float step = std::fabs(b) >= 4 ? 2 : std::fabs(b) >= 2 ? 1 : 0.5f;
    CHECK(std::fabs(a - b) <= step * 2);
    differ += a != b;
  }
  CHECK(differ > 0);
  t.seed = 1235;  // another seed, other codes
  const quant::Quantized sr2 = nvfp4_train_quantize(quant::Values(x), bits, {rows, cols}, opt, t);
  CHECK(sr2.codes != sr.codes);
}

TEST_CASE("CLI nvfp4 training options: inapplicable combinations are refused by name",
          "[layer][nvfp4_train][cli]") {
  if (testing::cli().empty()) {
    WARN("exmy not found: CLI refusals not exercised");
    return;
  }
  testing::TempDir dir("exmy_nvfp4_train");
  const std::string xb = dir / "xb.npy", xf = dir / "xf.npy", q = dir / "q.npy", s = dir / "s.npy",
                    ts = dir / "t.npy";
  std::vector<std::uint16_t> b(64 * 64, 0x3F80);
  std::vector<float> f(64 * 64, 1.0f);
  io::write_npy(xb, io::make_npy(b, {64, 64}));
  io::write_npy(xf, io::make_npy(f, {64, 64}));
  const std::string base = "quantize --scheme nvfp4 --to e2m1fn --variant te --two-level --out " +
                           q + " --state-out " + s + " --tensor-scale-out " + ts;
  const std::string bf = base + " --in-format bf16 --in " + xb;
  const struct {
    std::string args, names;
  } bad[] = {
      {bf + " --rht", "--columnwise"},
      {base + " --in " + xf + " --columnwise --rht", "bf16"},
      {bf + " --columnwise --rht --four-over-six", "RHT"},
      {bf + " --sr --four-over-six", "stochastic"},
      {bf + " --columnwise --sr", "--sr-both"},
      {bf + " --columnwise --rht --sr --sr-both", "--sr-both"},
      {base + " --in " + xf + " --sr", "bf16"},
      {bf + " --e4m3-max 256 --e4m3-max 300", "--e4m3-max"},
      {bf + " --e4m3-max 448", "expected --rht, --sr or --four-over-six"},
      {bf + " --sr --e4m3-max 448", "--e4m3-max"},
      {bf + " --rht-accum fp32-seq", "--rht"},
      {bf + " --columnwise --sr-both", "--sr-both"},
      {bf + " --rht-out " + (dir / "y.npy"), "--rht-out: expected --rht"},
      {bf + " --columnwise --rht --rht-accum bogus", "bogus"},
      {bf + " --columnwise --device cuda", "--device cuda"},
      {"quantize --scheme nvfp4:16x16 --to e2m1fn --variant te --two-level --in-format bf16 --in " +
           xb + " --out " + q + " --state-out " + s + " --tensor-scale-out " + ts + " --sr",
       "16x16"},
      {"quantize --scheme nvfp4 --to e2m1fn --variant torchao --in " + xf + " --out " + q +
           " --state-out " + s + " --four-over-six",
       "--variant te"},
  };
  for (const auto& c : bad) {
    INFO(c.args);
    std::filesystem::remove(q);
    const testing::Captured r = testing::run_captured(c.args, "exmy_nvfp4_train_cli");
    CHECK(r.status == 2);
    CHECK(r.err.find(c.names) != std::string::npos);
    CHECK_FALSE(testing::exists(q));
  }
  // And the combinations TE runs work.
  CHECK(testing::run(bf + " --columnwise --rht") == 0);
  CHECK(testing::run(bf + " --columnwise --rht --sr --seed 5 --philox-offset 1024") == 0);
  CHECK(testing::run(bf + " --sr --sr-both --seed 5") == 0);
  CHECK(testing::run(bf + " --columnwise --sr --sr-both") == 0);
  CHECK(testing::run(bf + " --four-over-six --four-over-six-err mse --e4m3-max 448") == 0);
}

TEST_CASE("nvfp4 training quantizer: blocks of rows give the codes of one block",
          "[layer][nvfp4_train][memory]") {
  // Guards issue 36's memory fix: nvfp4_train_quantize makes and quantizes the tensor (X, X^T or
  // RHT(X^T)) 16-row tiles at a time with the tensor level from a first pass; every array must
  // be the one-block result's (the path that held the whole tensor in fp32). 64 x 96 bf16 input,
  // blocks of 16 or 32 rows (block_elements 16 and 2048) against one block (SIZE_MAX).
  std::mt19937 rng(36);
  std::printf("nvfp4 blocked: seed 36\n");
  std::student_t_distribution<float> td(3.0f);
  const std::size_t rows = 64, cols = 96;
  std::vector<std::uint16_t> bits(rows * cols);
  std::vector<float> x(rows * cols);
  for (std::size_t k = 0; k < x.size(); ++k) {
    bits[k] = static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(td(rng)) >> 16);
    x[k] = float_of_bf16(bits[k]);
  }
  struct Case {
    const char* name;
    const char* scheme;
    bool columnwise, rht, sr, four_over_six;
  };
  const Case cases[] = {{"rowwise", "nvfp4", false, false, false, false},
                        {"columnwise", "nvfp4", true, false, false, false},
                        {"rht", "nvfp4", true, true, false, false},
                        {"2-d tiles", "nvfp4:16x16", false, false, false, false},
                        {"4over6", "nvfp4", false, false, false, true},
                        {"4over6 2-d", "nvfp4:16x16", false, false, false, true},
                        {"sr rowwise", "nvfp4", false, false, true, false},
                        {"sr rht", "nvfp4", true, true, true, false}};
  for (const Case& cs : cases) {
    for (const bool pack : {false, true}) {
      quant::Options opt;
      opt.scheme = quant::parse_scheme(cs.scheme);
      opt.target = quant::parse_target("e2m1fn");
      opt.variant = native::CastVariant::te;
      opt.two_level = true;
      Nvfp4TrainOptions t;
      t.columnwise = cs.columnwise;
      t.rht = cs.rht;
      t.sr = cs.sr;
      t.seed = 99;
      t.sr_transposed_too = cs.sr && cs.columnwise && !cs.rht;
      t.four_over_six = cs.four_over_six;
      INFO(cs.name << " pack " << pack);
      std::vector<std::uint16_t> y_one, y_blocks;
      const quant::Quantized one = detail::nvfp4_train_quantize_blocked(
          quant::Values(x), bits, {rows, cols}, opt, t, &y_one, pack, SIZE_MAX);
      for (const std::size_t be : {std::size_t{16}, std::size_t{4096}}) {
        INFO("block_elements " << be);
        const quant::Quantized b = detail::nvfp4_train_quantize_blocked(
            quant::Values(x), bits, {rows, cols}, opt, t, &y_blocks, pack, be);
        CHECK(b.codes == one.codes);
        CHECK(b.scale_codes == one.scale_codes);
        CHECK(b.state_shape == one.state_shape);
        CHECK(b.shape == one.shape);
        CHECK(b.packed == one.packed);
        CHECK(b.flags == one.flags);
        CHECK(std::bit_cast<std::uint32_t>(b.tensor_scale) ==
              std::bit_cast<std::uint32_t>(one.tensor_scale));
        CHECK(y_blocks == y_one);
      }
    }
  }
  // A NaN in the tensor: the level is degenerate, so the blocked call keeps the one-block result
  // (the fallback), codes included.
  std::vector<float> xn = x;
  xn[1000] = std::numeric_limits<float>::quiet_NaN();
  quant::Options opt;
  opt.scheme = quant::parse_scheme("nvfp4");
  opt.target = quant::parse_target("e2m1fn");
  opt.variant = native::CastVariant::te;
  opt.two_level = true;
  const Nvfp4TrainOptions t;
  const quant::Quantized one = detail::nvfp4_train_quantize_blocked(
      quant::Values(xn), {}, {rows, cols}, opt, t, nullptr, false, SIZE_MAX);
  const quant::Quantized b = detail::nvfp4_train_quantize_blocked(
      quant::Values(xn), {}, {rows, cols}, opt, t, nullptr, false, 16);
  CHECK(b.codes == one.codes);
  CHECK(b.scale_codes == one.scale_codes);
}
