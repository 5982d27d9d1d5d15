// The GEMM reference's accumulation models against values worked out by hand from
// docs/SEMANTICS.md 15 (each case names the rule it pins), and the model grammar.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <vector>

#include "sim/common/error.hpp"
#include "sim/gemm/gemm.hpp"

using namespace exmy::gemm;

namespace {
float dot(const std::vector<double>& a, const std::vector<double>& b, const std::string& model,
          int bits = 32) {
  const AccumModel m = parse_accum_model(model, bits);
  return dot_fp32(a.data(), b.data(), a.size(), -126, -126, m);
}
std::uint32_t gemm1(const std::vector<double>& a, const std::vector<double>& b,
                    const std::string& model, OutFormat out = OutFormat::fp32) {
  Operand A, B;
  A.rows = B.rows = 1;
  A.cols = B.cols = a.size();
  A.v = a;
  B.v = b;
  return gemm(A, B, parse_accum_model(model, 32), out)[0];
}
float f32(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
const double p = 1.0;
}  // namespace

TEST_CASE("exact rounds the exact sum once; fp32-seq rounds after every fma", "[gemm]") {
  // 2^24 + 1 - 2^24: exactly 1; the fma chain loses the 1 (2^24 + 1 ties to 2^24).
  const std::vector<double> a{16777216.0, 1.0, -16777216.0}, b{p, p, p};
  REQUIRE(f32(gemm1(a, b, "exact")) == 1.0f);
  REQUIRE(dot(a, b, "fp32-seq") == 0.0f);
  // pairwise: leaves 2^24 | (1 + -2^24) = 2^24 + RN(1 - 2^24) = 2^24 - 2^24 + 1 = 1.
  REQUIRE(dot(a, b, "pairwise") == 1.0f);
}

TEST_CASE("hw: products below 2^(E - frac) are truncated away (swamping)", "[gemm]") {
  const std::vector<double> a{1.0, std::ldexp(1.0, -20)}, b{p, p};
  REQUIRE(dot(a, b, "hw:k=2,frac=25") == static_cast<float>(1.0 + std::ldexp(1.0, -20)));
  REQUIRE(dot(a, b, "hw:k=2,frac=16") == 1.0f);
  // In separate groups the small product meets c = 1 in the second group: same rule.
  REQUIRE(dot(a, b, "hw:k=1,frac=16") == 1.0f);
}

TEST_CASE("hw: terms truncate toward zero; the sum normalises toward zero or to nearest",
          "[gemm]") {
  // 1 - 1.5 2^-25: the negative term truncates to -2^-25 (toward zero), the sum 1 - 2^-25
  // normalises in [1/2, 1) with ulp 2^-24: RZ gives 1 - 2^-24.
  const std::vector<double> a{1.0, -1.5 * std::ldexp(1.0, -26) * 2}, b{p, p};
  REQUIRE(dot(a, b, "hw:k=2,frac=25") == static_cast<float>(1.0 - std::ldexp(1.0, -24)));
  // 1 + 3 2^-25 = 1 + 0.75 ulp: RZ keeps 1, RNE rounds up.
  const std::vector<double> c{1.0, 3 * std::ldexp(1.0, -25)};
  REQUIRE(dot(c, b, "hw:k=2,frac=25") == 1.0f);
  REQUIRE(dot(c, b, "hw:k=2,frac=25,rne") == static_cast<float>(1.0 + std::ldexp(1.0, -23)));
  // e8m13 intermediate: 1 + 2^-13 survives, 1 + 2^-14 does not.
  REQUIRE(dot({1.0, std::ldexp(1.0, -13)}, b, "hw:k=2,frac=25,inter=13") ==
          static_cast<float>(1.0 + std::ldexp(1.0, -13)));
  REQUIRE(dot({1.0, std::ldexp(1.0, -14)}, b, "hw:k=2,frac=25,inter=13") == 1.0f);
}

TEST_CASE("hw: the alignment exponent is e_a + e_b, not the product's own binade", "[gemm]") {
  // 1.5 x 1.5 = 2.25 has e = 0 + 0 (significand 2.25 in [1, 4)); with frac = 2 a term 2^-2
  // survives (2^-2 = 2^(E - 2) with E = 0); had E been 1 (2.25's binade) it would be dropped.
  const std::vector<double> a{1.5, 0.25}, b{1.5, 1.0};
  REQUIRE(dot(a, b, "hw:k=2,frac=2") == 2.5f);
}

TEST_CASE("hw: NaN and infinities", "[gemm]") {
  REQUIRE(std::isnan(dot({INFINITY, 1.0}, {0.0, 1.0}, "hw:k=2,frac=25")));
  REQUIRE(dot({INFINITY, 1.0}, {1.0, 1.0}, "hw:k=2,frac=25") == INFINITY);
  REQUIRE(std::isnan(dot({INFINITY, -INFINITY}, {1.0, 1.0}, "hw:k=2,frac=25")));
  REQUIRE(gemm1({NAN}, {1.0}, "hw:k=1,frac=25") == 0x7FFFFFFFu);
}

TEST_CASE("split-K adds the chunks' fp32 sums in chunk order", "[gemm]") {
  const std::vector<double> a{16777216.0, 1.0, 1.0, -16777216.0}, b{p, p, p, p};
  // One chain: 2^24 + 1 -> 2^24, + 1 -> 2^24, - 2^24 -> 0. Two chunks: (2^24 + 1 -> 2^24) and
  // (1 - 2^24 = -(2^24 - 1), exact) added: 1.
  REQUIRE(dot(a, b, "fp32-seq") == 0.0f);
  REQUIRE(dot(a, b, "hw:k=1,frac=40,split=2") == 1.0f);
}

TEST_CASE("chunk: the hw sum restarts every P k and chunks add in fp32", "[gemm]") {
  // k = 1 groups, frac 2: 1 + 0.25 + 0.25 + 0.25 + 0.25: one chain keeps every quarter (E = 0,
  // 2 fraction bits) = 2. With chunk=2 the chunks are 1.25 and 0.5, added in fp32: 1.75... no:
  // chunk 1 = 1 + 0.25 = 1.25, chunk 2 = 0.25 + 0.25 = 0.5, chunk 3 = 0.25: 2.0 either way; use
  // frac=1 instead: one chain drops every quarter after the 1 (below 2^(0-1)), giving 1; chunks
  // of 2 give 1 (the quarter dropped against 1), 0.5 (0.25 + 0.25 with E = -2 keeps both) and
  // 0.25: 1.75.
  const std::vector<double> a{1.0, 0.25, 0.25, 0.25, 0.25}, b{p, p, p, p, p};
  REQUIRE(dot(a, b, "hw:k=1,frac=1") == 1.0f);
  REQUIRE(dot(a, b, "hw:k=1,frac=1,chunk=2") == 1.75f);
}

TEST_CASE("split tile tail: the extra tiles go to the last parts", "[gemm][split]") {
  // SEMANTICS 15.2: split=S,tile=T cuts K into whole tiles, the first (tiles mod S) parts one
  // tile longer; tail gives the extra tiles to the last parts. K = 10, T = 2, S = 4: 5 tiles,
  // one extra: [0,4) [4,6) [6,8) [8,10), with tail [0,2) [2,4) [4,6) [6,10). FPRev's operands:
  // +2^40 at k = 0, -2^40 at k = 7, 1 elsewhere; k = 16 holds a whole part in one group, where a
  // 1 beside 2^40 is truncated away; the parts add in fp32 in order.
  // Without tail: 2^40, + 2 (absorbed), + (-2^40 with k = 6's 1 dropped) = 0, + 2: 2.
  // With tail: 2^40, + 2, + 2 (absorbed), + (-2^40, k = 6, 8, 9 dropped) = 0.
  std::vector<double> a(10, 1.0), b(10, 1.0);
  a[0] = 0x1p40;
  a[7] = -0x1p40;
  REQUIRE(dot(a, b, "hw:k=16,frac=25,split=4,tile=2") == 2.0f);
  REQUIRE(dot(a, b, "hw:k=16,frac=25,split=4,tile=2,tail") == 0.0f);
  // The tree of the same parts: (p0 + p1) + (p2 + p3) = (2^40 + 2 -> 2^40) + (2 - 2^40 ->
  // -2^40) = 0 without tail; with tail (2^40 + 2 -> 2^40) + (2 - 2^40 -> -2^40) = 0 too; a
  // multiple of S tiles is the plain split.
  REQUIRE(dot(a, b, "hw:k=16,frac=25,split=4,tile=2,tail,tree") == 0.0f);
  std::vector<double> a8(8, 1.0), b8(8, 1.0);
  a8[0] = 0x1p40;
  a8[5] = -0x1p40;
  REQUIRE(dot(a8, b8, "hw:k=16,frac=25,split=4,tile=2,tail") ==
          dot(a8, b8, "hw:k=16,frac=25,split=4,tile=2"));
  REQUIRE(parse_accum_model("hw:k=8,frac=25,split=4,tile=32,tail", 32).tile_tail);
  REQUIRE_THROWS_AS(parse_accum_model("hw:k=8,frac=25,split=4,tail", 32), exmy::InputError);
  REQUIRE_THROWS_AS(parse_accum_model("hw:k=8,frac=25,split=4,tile=32,tail=1", 32),
                    exmy::InputError);
}

TEST_CASE("ktile: the k-tile residue first, groups from each tile's start", "[gemm][ktile]") {
  // FPRev's operands (Xie et al.): +2^40 at k = i, -2^40 at k = j, 1 elsewhere. In one k = 8
  // group with 25 fraction bits a 1 beside 2^40 is truncated away (1 < 2^(40 - 25)), so the
  // result counts the ones outside the groups that hold i and j and the chain before them.
  // K = 20, ktile=16: the residue tile holds 20 mod 16 = 4 k, then one tile of 16: groups
  // [0,4) [4,12) [12,20). i = 0, j = 5: +2^40 in [0,4), cancelled in [4,12), then 8 ones: 8.
  // Without ktile the groups are [0,8) [8,16) [16,20): both in [0,8), then 8 + 4 ones: 12.
  std::vector<double> a(20, 1.0), b(20, 1.0);
  a[0] = 0x1p40;
  a[5] = -0x1p40;
  REQUIRE(dot(a, b, "hw:k=8,frac=25") == 12.0f);
  REQUIRE(dot(a, b, "hw:k=8,frac=25,ktile=16") == 8.0f);
  // j = 3: both in the residue tile [0,4): the 16 later ones survive.
  std::vector<double> a3(20, 1.0);
  a3[0] = 0x1p40;
  a3[3] = -0x1p40;
  REQUIRE(dot(a3, b, "hw:k=8,frac=25,ktile=16") == 16.0f);
  // A residue of 12 (K = 28, ktile=16) is one group of 8 and one of 4: [0,8) [8,12) [12,20)
  // [20,28). i = 0, j = 9: cancelled in [8,12), then 16 ones. (Groups from the start: [0,8)
  // [8,16) ...: j = 9 in [8,16), then 12 ones.)
  std::vector<double> a9(28, 1.0), b28(28, 1.0);
  a9[0] = 0x1p40;
  a9[9] = -0x1p40;
  REQUIRE(dot(a9, b28, "hw:k=8,frac=25,ktile=16") == 16.0f);
  REQUIRE(dot(a9, b28, "hw:k=8,frac=25") == 12.0f);
  // K a multiple of the tile: no residue, the same groups as without ktile.
  std::vector<double> a32(32, 1.0), b32(32, 1.0);
  a32[0] = 0x1p40;
  a32[9] = -0x1p40;
  REQUIRE(dot(a32, b32, "hw:k=8,frac=25,ktile=16") == dot(a32, b32, "hw:k=8,frac=25"));
  // Within each promotion chunk (split part): chunk=12, ktile=8 on K = 24: parts [0,12) and
  // [12,24), each with a residue tile of 4: [0,4) [4,12) | [12,16) [16,24). i = 12, j = 17:
  // part 2's ones sit beside +-2^40 in both its groups, so part 2 = 0; part 1 = 12 ones: 12.
  // Without ktile part 2's groups are [12,20) [20,24): both in [12,20), then 4 ones: 12 + 4.
  std::vector<double> c(24, 1.0), d(24, 1.0);
  c[12] = 0x1p40;
  c[17] = -0x1p40;
  REQUIRE(dot(c, d, "hw:k=8,frac=25,chunk=12,ktile=8") == 12.0f);
  REQUIRE(dot(c, d, "hw:k=8,frac=25,chunk=12") == 16.0f);
  // Grammar: hw and amd (SEMANTICS 15.2), positive.
  REQUIRE_THROWS_AS(parse_accum_model("fp32-seq:ktile=16", 32), exmy::InputError);
  REQUIRE(parse_accum_model("amd:k=8,ktile=16", 32).ktile == 16);
  REQUIRE_THROWS_AS(parse_accum_model("hw:k=8,frac=25,ktile=0", 32), exmy::InputError);
  REQUIRE(parse_accum_model("hw:k=8,frac=25,ktile=32", 32).ktile == 32);
}

TEST_CASE("tf32 inputs: toward zero, ties away or ties to even", "[gemm]") {
  // 1 + 2^-11 is exactly half a tf32 ulp above 1 (tf32 keeps 10 fraction bits): a tie.
  const double tie = 1.0 + std::ldexp(1.0, -11);
  const double above = 1.0 + 3 * std::ldexp(1.0, -11);  // 1.5 ulps: tie between 1+2^-10, 1+2^-9
  // (tf32 conversion happens when gemm() reads fp32 operands.)
  REQUIRE(f32(gemm1({tie}, {p}, "hw:k=1,frac=25,tf32=rz")) == 1.0f);
  REQUIRE(f32(gemm1({tie}, {p}, "hw:k=1,frac=25,tf32=rna")) ==
          static_cast<float>(1.0 + std::ldexp(1.0, -10)));
  REQUIRE(f32(gemm1({tie}, {p}, "hw:k=1,frac=25,tf32=rne")) == 1.0f);
  REQUIRE(f32(gemm1({above}, {p}, "hw:k=1,frac=25,tf32=rne")) ==
          static_cast<float>(1.0 + std::ldexp(1.0, -9)));
}

TEST_CASE("presets follow the published models", "[gemm]") {
  const AccumModel f8 = parse_accum_model("sm90", 8);
  REQUIRE(f8.kind == AccumKind::hw);
  REQUIRE(f8.k_group == 32);
  REQUIRE(f8.frac_bits == 13);
  REQUIRE(f8.inter_bits == 13);
  const AccumModel b16 = parse_accum_model("cublas-sm90", 16);
  REQUIRE(b16.k_group == 16);
  REQUIRE(b16.frac_bits == 25);
  REQUIRE(b16.inter_bits == 23);
  REQUIRE(parse_accum_model("sm90", 32).truncate_tf32);
  // cublas-sm90: the measured promotion of FP8 partial sums every 128 k and RNE tf32 inputs.
  REQUIRE(parse_accum_model("cublas-sm90", 8).chunk == 128);
  REQUIRE(parse_accum_model("sm90", 8).chunk == 0);
  // 16-bit and TF32: the chunk comes from the probed profile by shape (model_for_shape).
  REQUIRE(parse_accum_model("cublas-sm90", 16).by_shape);
  REQUIRE(parse_accum_model("cublas-sm90", 32).by_shape);
  REQUIRE(!parse_accum_model("cublas-sm90", 8).by_shape);
  REQUIRE(parse_accum_model("cublas-sm90", 32).tf32_round == AccumModel::Tf32Round::rne);
  REQUIRE(parse_accum_model("sm80", 16).k_group == 8);
  REQUIRE(parse_accum_model("sm80", 16).frac_bits == 24);
  REQUIRE(parse_accum_model("sm100", 8).frac_bits == 25);
  for (const char* bad : {"", "sm70", "hw:", "hw:k=16", "hw:frac=3", "hw:k=0,frac=3",
                          "hw:k=16,frac=99", "hw:k=16,frac=3,bogus", "hw:k=16,,frac=3"}) {
    INFO(bad);
    REQUIRE_THROWS_AS(parse_accum_model(bad, 16), exmy::InputError);
  }
  REQUIRE_THROWS_AS(parse_accum_model("sm80", 8), exmy::InputError);  // no FP8 on Ampere
}

TEST_CASE("bf16 / fp16 outputs round the fp32 accumulator to nearest even; exact rounds once",
          "[gemm]") {
  // 1 + 2^-8 + 2^-20: bf16 (7 fraction bits) from the fp32 accumulator 1 + 2^-8 + 2^-20 rounds
  // up to 1 + 2^-7; exact also (one rounding of the same exact value).
  const std::vector<double> a{1.0, std::ldexp(1.0, -8), std::ldexp(1.0, -20)}, b{p, p, p};
  REQUIRE(gemm1(a, b, "fp32-seq", OutFormat::bf16) == 0x3F81u);
  REQUIRE(gemm1(a, b, "exact", OutFormat::bf16) == 0x3F81u);
  // Double rounding: 1 + 2^-8 + 2^-30 -> fp32 1 + 2^-8 (the 2^-30 is lost: < half an fp32 ulp)
  // -> bf16 tie -> 1 (even); exact: above the tie -> 1 + 2^-7.
  const std::vector<double> t{1.0, std::ldexp(1.0, -8), std::ldexp(1.0, -30)};
  REQUIRE(gemm1(t, b, "fp32-seq", OutFormat::bf16) == 0x3F80u);
  REQUIRE(gemm1(t, b, "exact", OutFormat::bf16) == 0x3F81u);
}

TEST_CASE("cublas-sm90 takes the probed chunk by input type and shape", "[gemm]") {
  const AccumModel b16 = parse_accum_model("cublas-sm90", 16);
  const AccumModel t32 = parse_accum_model("cublas-sm90", 32);
  struct Want {
    const AccumModel* m;
    const char* type;
    std::size_t M, N, K;
    int chunk;
  };
  // Values from golden/profiles/sm90/cublaslt-h100-gemm.json (probed on an H100): bf16 and
  // fp16 agree except at 256x128x16384; no chunk up to K = 2048.
  for (const Want& w : {Want{&b16, "bf16", 256, 128, 8192, 1664},
                        {&b16, "bf16", 128, 64, 8192, 1408},
                        {&b16, "bf16", 256, 128, 2048, 0},
                        {&b16, "bf16", 256, 128, 16384, 2048},
                        {&b16, "fp16", 256, 128, 16384, 2752},
                        {&t32, "tf32", 128, 64, 8192, 160},
                        {&t32, "tf32", 32, 32, 16384, 288},
                        {&t32, "tf32", 256, 128, 1024, 64}}) {
    INFO(w.type << " " << w.M << "x" << w.N << "x" << w.K);
    const ShapeModel s = model_for_shape(*w.m, w.M, w.N, w.K, w.type, "");
    REQUIRE(s.measured);
    REQUIRE(s.model.chunk == w.chunk);
    REQUIRE(s.model.k_group == (std::string(w.type) == "tf32" ? 8 : 16));
    REQUIRE(s.model.truncate_tf32 == (std::string(w.type) == "tf32"));
  }
  // Not probed: the nearest probed shape's model, flagged ("" output: no launch record consulted).
  const ShapeModel near = model_for_shape(b16, 128, 64, 8000, "bf16", "");
  REQUIRE(!near.measured);
  REQUIRE(near.model.chunk == 1408);
  REQUIRE(near.from.find("128x64x8192") != std::string::npos);
  // Other models are not by shape.
  REQUIRE(model_for_shape(parse_accum_model("sm90", 16), 1, 1, 1, "bf16", "").model.chunk == 0);
  REQUIRE_THROWS_AS(model_for_shape(b16, 64, 64, 64, "e6m9", ""), exmy::InputError);
}

TEST_CASE("ktile: the residue tile first, groups restart at each tile (CUTLASS 2.x mainloop)",
          "[gemm][ktile]") {
  // SEMANTICS 15.2 ktile=T. K = 5, k = 2, T = 4: the residue 5 mod 4 = 1 k is its own group,
  // then the tile [1, 5) in groups [1, 3), [3, 5); without ktile the groups are [0, 2), [2, 4),
  // [4, 5). frac 2, s = 3/16 (exponent -3), L = 1:
  //   plain: [s, s] E = -3, both exact: 0.375; [c = 0.375, L, s] E = 0, quantum 1/4: 0.25 + 1 + 0
  //          = 1.25; [c = 1.25, s] E = 0: 1.25 + 0 = 1.25.
  //   ktile: [s] = 0.1875; [c = 0.1875, s, L] E = 0: 0 + 0 + 1 = 1; [c = 1, s, s]: 1.
  const double s = 0.1875, L = 1.0;
  const std::vector<double> a{s, s, L, s, s}, b(5, p);
  REQUIRE(dot(a, b, "hw:k=2,frac=2") == 1.25f);
  REQUIRE(dot(a, b, "hw:k=2,frac=2,ktile=4") == 1.0f);
  // A residue of 0 (K a multiple of T) is the plain grouping: K = 4 of [s, s, L, s].
  const std::vector<double> a4{s, s, L, s}, b4(4, p);
  REQUIRE(dot(a4, b4, "hw:k=2,frac=2,ktile=4") == dot(a4, b4, "hw:k=2,frac=2"));
  // Every accumulation from +0 has its own residue: chunk=5 (split-K parts as cuBLAS's
  // splitKreduce reads them) over two copies: 1 + 1 = 2 with ktile, 1.25 + 1.25 = 2.5 without;
  // the same for split=2 (parts of ceil(10/2) = 5) and for rp's per-chunk sums (bf16 out).
  std::vector<double> a10(a);
  a10.insert(a10.end(), a.begin(), a.end());
  const std::vector<double> b10(10, p);
  REQUIRE(dot(a10, b10, "hw:k=2,frac=2,chunk=5") == 2.5f);
  REQUIRE(dot(a10, b10, "hw:k=2,frac=2,ktile=4,chunk=5") == 2.0f);
  REQUIRE(dot(a10, b10, "hw:k=2,frac=2,ktile=4,split=2") == 2.0f);
  REQUIRE(gemm1(a10, b10, "hw:k=2,frac=2,ktile=4,chunk=5,rp", OutFormat::bf16) == 0x4000u);
  REQUIRE(gemm1(a10, b10, "hw:k=2,frac=2,chunk=5,rp", OutFormat::bf16) == 0x4020u);
  // Grammar: hw and amd only, a multiple of k, not with sub.
  REQUIRE(parse_accum_model("hw:k=16,frac=25,ktile=128", 16).ktile == 128);
  REQUIRE(parse_accum_model("amd:k=8,ktile=32", 16).ktile == 32);
  REQUIRE(parse_accum_model("hw:k=16,frac=25", 16).ktile == 0);
  REQUIRE_THROWS_AS(parse_accum_model("hw:k=16,frac=25,ktile=40", 16), exmy::InputError);
  REQUIRE_THROWS_AS(parse_accum_model("fp32-seq:ktile=32", 32), exmy::InputError);
  REQUIRE_THROWS_AS(parse_accum_model("hw:k=32,frac=25,sub=16,ktile=64", 8), exmy::InputError);
}

TEST_CASE("rp: 16-bit split-K partials are rounded to the output format before the fp32 sum",
          "[gemm]") {
  // K = 4 in chunks of 2: part 0 = 1 + 2^-8 (a bf16 tie), part 1 = 2^-8. rp: RNE(part 0) = 1,
  // 1 + 2^-8 in fp32, bf16 tie to even = 1 (0x3F80). Without rp: 1 + 2^-7 (0x3F81). fp32 out:
  // 1 + 2^-7 either way (rp leaves it alone).
  const double e8 = std::ldexp(1.0, -8);
  const std::vector<double> a{1.0, e8, e8, 0.0}, b{1.0, 1.0, 1.0, 1.0};
  REQUIRE(gemm1(a, b, "hw:k=16,frac=25,chunk=2,rp", OutFormat::bf16) == 0x3F80u);
  REQUIRE(gemm1(a, b, "hw:k=16,frac=25,chunk=2", OutFormat::bf16) == 0x3F81u);
  REQUIRE(f32(gemm1(a, b, "hw:k=16,frac=25,chunk=2,rp")) == 1.0f + 2 * static_cast<float>(e8));
  // fp16 (10 fraction bits): part 0 = 1 + 2^-11 (a tie) -> 1, + 2^-11 -> tie -> 1 (0x3C00);
  // without rp 1 + 2^-10 (0x3C01).
  const double e11 = std::ldexp(1.0, -11);
  const std::vector<double> h{1.0, e11, e11, 0.0};
  REQUIRE(gemm1(h, b, "hw:k=16,frac=25,chunk=2,rp", OutFormat::fp16) == 0x3C00u);
  REQUIRE(gemm1(h, b, "hw:k=16,frac=25,chunk=2", OutFormat::fp16) == 0x3C01u);
  // rp needs chunk and no split.
  REQUIRE_THROWS_AS(parse_accum_model("hw:k=16,frac=25,rp", 16), exmy::InputError);
  REQUIRE_THROWS_AS(parse_accum_model("hw:k=16,frac=25,chunk=8,split=2,rp", 16), exmy::InputError);
}

TEST_CASE("row/column scales: the three fp32 orders and exact", "[gemm]") {
  // acc = 3 (exact in every model); sa = 1 + 2^-23, sb = 1 - 2^-24 (both fp32).
  Operand A, B;
  A.rows = B.rows = 1;
  A.cols = B.cols = 1;
  A.v = {3.0};
  B.v = {1.0};
  const float sa = 1.0f + std::ldexp(1.0f, -23), sb = 1.0f - std::ldexp(1.0f, -24);
  RowColScales rc;
  rc.a_rows = {sa};
  rc.b_cols = {sb};
  auto run = [&](RowColScales::Order o, const char* model) {
    rc.order = o;
    return f32(gemm(A, B, parse_accum_model(model, 32), OutFormat::fp32, 1.0, &rc)[0]);
  };
  // By the document: product RN32(RN32(sa sb) acc); a-first RN32(sb RN32(sa acc)); b-first
  // RN32(sa RN32(sb acc)) -- fp32 operations of the host (one rounding each).
  const float p = (sa * sb) * 3.0f, a = sb * (sa * 3.0f), b = sa * (sb * 3.0f);
  REQUIRE(run(RowColScales::Order::product, "fp32-seq") == p);
  REQUIRE(run(RowColScales::Order::a_first, "fp32-seq") == a);
  REQUIRE(run(RowColScales::Order::b_first, "fp32-seq") == b);
  REQUIRE(run(RowColScales::Order::product, "sm90") == p);
  // The orders differ here (why the choice matters), and exact rounds 3 sa sb once.
  REQUIRE((p != a || a != b || p != b));
  REQUIRE(run(RowColScales::Order::product, "exact") ==
          static_cast<float>(3.0 * double{sa} * double{sb}));
  rc.a_rows = {1.0f, 2.0f};  // wrong size: M = 1
  REQUIRE_THROWS_AS(gemm(A, B, parse_accum_model("sm90", 32), OutFormat::fp32, 1.0, &rc),
                    exmy::InputError);
  REQUIRE(parse_scale_order("b-first") == RowColScales::Order::b_first);
  REQUIRE_THROWS_AS(parse_scale_order("first"), exmy::InputError);
}

namespace {
// One output under block scales: a and b hold K values, sa and sb K / block scales each.
std::uint32_t gemm_scaled(const std::vector<double>& a, const std::vector<double>& b,
                          const std::vector<double>& sa, const std::vector<double>& sb,
                          std::size_t block, const std::string& model, int value_bits = 8) {
  Operand A, B;
  A.rows = B.rows = 1;
  A.cols = B.cols = a.size();
  A.v = a;
  B.v = b;
  A.code_bits = B.code_bits = 8;
  A.emin = B.emin = -14;  // e5m2's: the sub-group sums are exact integers above 2^(2 emin - 46)
  A.value_bits = B.value_bits = value_bits;
  A.scales = sa;
  B.scales = sb;
  A.scale_block = B.scale_block = block;
  A.scale_emin = B.scale_emin = -127;
  return gemm(A, B, parse_accum_model(model, 8), OutFormat::fp32)[0];
}
}  // namespace

TEST_CASE("block scales: exponents enter the hw alignment; chains multiply RN32(x s)",
          "[gemm][block-scales]") {
  // SEMANTICS 15.5. Products 1·1 under scale 4 (block 0) and 1·1 under scale 1 (block 1): the
  // terms sit at exponents 2 and 0; frac = 1 keeps multiples of 2^(2 - 1) = 2, so the second
  // term truncates to 0 and the group is 4. exact and fp32-seq see 4 + 1 = 5.
  const std::vector<double> one2{1.0, 1.0};
  CHECK(f32(gemm_scaled(one2, one2, {4.0, 1.0}, {1.0, 1.0}, 1, "hw:k=2,frac=1")) == 4.0f);
  CHECK(f32(gemm_scaled(one2, one2, {4.0, 1.0}, {1.0, 1.0}, 1, "exact")) == 5.0f);
  CHECK(f32(gemm_scaled(one2, one2, {4.0, 1.0}, {1.0, 1.0}, 1, "fp32-seq")) == 5.0f);
  // UE4M3 significands multiply: 1.5 x 1.25 = 1.875 per product, exact with enough bits.
  CHECK(f32(gemm_scaled(one2, one2, {1.5}, {1.25}, 2, "hw:k=2,frac=25")) == 3.75f);
  // The chain rounds x·s to fp32 first: 2^-24 · 2^-127 = 2^-151 is below half of fp32's
  // smallest subnormal (2^-149), so RN32(x s) = 0 and the chain gives 0; the exact sum keeps it,
  // 2^-151 · 2^3 = 2^-148, a subnormal the output holds.
  CHECK(f32(gemm_scaled({0x1p-24, 0.0}, {1.0, 0.0}, {0x1p-127}, {0x1p3}, 2, "fp32-seq")) == 0.0f);
  CHECK(f32(gemm_scaled({0x1p-24, 0.0}, {1.0, 0.0}, {0x1p-127}, {0x1p3}, 2, "exact")) == 0x1p-148f);
  // The hw model adds the scales' exponents to the product's (no fp32 rounding of x·s): 2^-148.
  CHECK(f32(gemm_scaled({0x1p-24, 0.0}, {1.0, 0.0}, {0x1p-127}, {0x1p3}, 2, "hw:k=2,frac=25")) ==
        0x1p-148f);
  // A NaN scale (E8M0 0xFF) makes the output NaN under every model.
  CHECK(std::isnan(f32(gemm_scaled(one2, one2, {NAN}, {1.0}, 2, "hw:k=2,frac=25"))));
  CHECK(std::isnan(f32(gemm_scaled(one2, one2, {NAN}, {1.0}, 2, "fp32-seq"))));
}

TEST_CASE("block scales: sub-groups are summed exactly before the alignment (Blackwell mxf4)",
          "[gemm][block-scales]") {
  // Eight products 0.5 · 0.25 = 2^-3, one 1 · 1 and seven zeros, scales 1, frac = 2. Per
  // product the terms align to the largest (exponent 0: multiples of 2^-2), so each 2^-3
  // truncates to 0 and the group is 1. As one sub-group of 16 the exact sum 2.0 is the term,
  // at the scales' exponent 0: 2.
  std::vector<double> a(16, 0.0), b(16, 0.0);
  for (int k = 0; k < 8; ++k) {
    a[k] = 0.5;
    b[k] = 0.25;
  }
  a[8] = b[8] = 1.0;
  const std::vector<double> s1{1.0}, s1b{1.0};
  CHECK(f32(gemm_scaled(a, b, s1, s1b, 16, "hw:k=16,frac=2")) == 1.0f);
  CHECK(f32(gemm_scaled(a, b, s1, s1b, 16, "hw:k=16,frac=2,sub=16")) == 2.0f);
  // The term's exponent is the scales' (2^4 · 2^-2 = 2), not the sum's own: with scales 2^4 and
  // 2^-2 the sub-group 1.0 becomes 4.0; a second block at scale 2^8 raises emax to 8, and
  // frac = 2 then keeps multiples of 2^6 = 64: 4 truncates to 0, the second block's 2^8 stays.
  std::vector<double> a2(32, 0.0), b2(32, 0.0);
  for (int k = 0; k < 8; ++k) a2[k] = 0.5, b2[k] = 0.25;  // block 0: sum 1
  a2[16] = 1.0, b2[16] = 1.0;                             // block 1: sum 1
  CHECK(f32(gemm_scaled(a2, b2, {0x1p4, 0x1p8}, {0x1p-2, 1.0}, 16, "hw:k=32,frac=2,sub=16")) ==
        256.0f);
  CHECK(f32(gemm_scaled(a2, b2, {0x1p4, 0x1p8}, {0x1p-2, 1.0}, 16, "exact")) == 260.0f);
  // sm100 with FP4 operands is kind::mxf4 (k = 64, frac = 35, sub = 16); with FP8, mxf8f6f4.
  const AccumModel m4 = block_scaled_model(parse_accum_model("sm100", 8), 4, 4);
  CHECK((m4.k_group == 64 && m4.frac_bits == 35 && m4.sub_group == 16));
  const AccumModel m8 = block_scaled_model(parse_accum_model("sm100", 8), 8, 4);
  CHECK((m8.k_group == 32 && m8.frac_bits == 25 && m8.sub_group == 0));
  CHECK_THROWS_AS(block_scaled_model(parse_accum_model("sm90", 8), 8, 8), exmy::InputError);
  CHECK_THROWS_AS(block_scaled_model(parse_accum_model("cublas-sm90", 8), 8, 8), exmy::InputError);
}

TEST_CASE("block scales: bad combinations are errors", "[gemm][block-scales]") {
  Operand A, B;
  A.rows = B.rows = 1;
  A.cols = B.cols = 32;
  A.v.assign(32, 1.0);
  B.v.assign(32, 1.0);
  A.code_bits = B.code_bits = 8;
  // sub-groups need block scales
  CHECK_THROWS_AS(gemm(A, B, parse_accum_model("hw:k=32,frac=25,sub=16", 8), OutFormat::fp32),
                  exmy::InputError);
  A.scales.assign(1, 1.0);
  A.scale_block = 32;
  // one side only
  CHECK_THROWS_AS(gemm(A, B, parse_accum_model("exact", 8), OutFormat::fp32), exmy::InputError);
  B.scales.assign(2, 1.0);
  B.scale_block = 16;
  // different blocks
  CHECK_THROWS_AS(gemm(A, B, parse_accum_model("exact", 8), OutFormat::fp32), exmy::InputError);
  // sub must divide k
  CHECK_THROWS_AS(parse_accum_model("hw:k=32,frac=25,sub=12", 8), exmy::InputError);
  // e5m2-sized operands leave the sub-group model's integer range; 16-bit operands are refused
  B.scales.assign(1, 1.0);
  B.scale_block = 32;
  A.v.assign(32, 57344.0);
  B.v.assign(32, 57344.0);
  A.emin = B.emin = -14;
  CHECK_THROWS_AS(gemm(A, B, parse_accum_model("hw:k=32,frac=35,sub=16", 8), OutFormat::fp32),
                  exmy::InputError);
  CHECK_NOTHROW(gemm(A, B, parse_accum_model("hw:k=32,frac=25", 8), OutFormat::fp32));
  A.v.assign(32, 1.0);
  B.v.assign(32, 1.0);
  A.code_bits = 16;
  CHECK_THROWS_AS(gemm(A, B, parse_accum_model("hw:k=32,frac=25,sub=16", 8), OutFormat::fp32),
                  exmy::InputError);
}

TEST_CASE("amd (CDNA3): truncated products, floored alignment, RNE per group", "[gemm][amd]") {
  // SEMANTICS 15.2 amd. k = 1 groups: the first leaves c = -2^-30 exactly; the second group's
  // product 1 sets E' = 0 and c is floored to 24 bits below it: -2^-24 (toward minus infinity),
  // so the result is 1 - 2^-24. The hw model truncates c toward zero (1.0); the FMA chain
  // rounds 1 - 2^-30 to 1.0.
  const std::vector<double> a{-0x1p-15, 1.0}, b{0x1p-15, 1.0};
  CHECK(dot(a, b, "amd:k=1") == 1.0f - 0x1p-24f);
  CHECK(dot(a, b, "hw:k=1,frac=24") == 1.0f);
  CHECK(dot(a, b, "fp32-seq") == 1.0f);
  // Two stages (FP8): odd products 3·2^-25 twice. One stage aligns them to the product 1
  // (24 bits: 1.5 units each truncate to 1): 1 + 2^-23. Two stages sum them first (3·2^-24),
  // then floor to 3 units: 1 + 3·2^-24, which RNE takes to 1 + 2^-22.
  const std::vector<double> a2{1.0, 3 * 0x1p-13, 0.0, 3 * 0x1p-13}, b2{1.0, 0x1p-12, 0.0, 0x1p-12};
  CHECK(dot(a2, b2, "amd:k=4") == 1.0f + 0x1p-23f);
  CHECK(dot(a2, b2, "amd:k=4,two-stage") == 1.0f + 0x1p-22f);
  // A zero sum is +0; an infinite product gives infinity; inf - inf gives NaN.
  CHECK(std::signbit(dot({-1.0, 1.0}, {1.0, 1.0}, "amd:k=2")) == false);
  CHECK(dot({0x1p100, 1.0}, {0x1p100, 1.0}, "amd:k=2") == INFINITY);
  CHECK(std::isnan(dot({0x1p100, -0x1p100}, {0x1p100, 0x1p100}, "amd:k=2")));
  // The preset: FP8 k = 16 two-stage, 16-bit k = 8, fp32 the FMA chain.
  const AccumModel f8 = parse_accum_model("cdna3", 8), h = parse_accum_model("cdna3", 16);
  CHECK((f8.kind == AccumKind::amd && f8.k_group == 16 && f8.two_stage && f8.frac_bits == 24));
  CHECK((h.kind == AccumKind::amd && h.k_group == 8 && !h.two_stage));
  CHECK(parse_accum_model("cdna3", 32).kind == AccumKind::fp32_seq);
  CHECK_THROWS_AS(parse_accum_model("amd:k=8,sub=4", 16), exmy::InputError);
  CHECK_THROWS_AS(parse_accum_model("hw:k=8,frac=24,two-stage", 16), exmy::InputError);
  CHECK_THROWS_AS(parse_accum_model("amd:frac=24", 16), exmy::InputError);
}

TEST_CASE("lanes: strided FMA chains added by the halving tree or in lane order", "[gemm][lanes]") {
  // b = 1: every fma adds a value of fp32, so each chain is a sequence of fp32 additions.
  const double big = 16777216.0;  // 2^24: 2^24 + 1 ties back to 2^24
  const std::vector<double> one4{p, p, p, p};
  // lanes=4 hold one product each: halving adds (x0 + x2) + (x1 + x3) = 0 + 2; in lane order
  // ((x0 + x1) + x2) + x3 = (2^24 - 2^24) + 1 = 1.
  const std::vector<double> x{big, 1.0, -big, 1.0};
  REQUIRE(dot(x, one4, "fp32-seq:lanes=4") == 2.0f);
  REQUIRE(dot(x, one4, "fp32-seq:lanes=4,lanesum=seq") == 1.0f);
  // lanes=2: vec=1 chains {x0, x2} = 0 and {x1, x3} = 2; vec=2 (= auto here) chains {x0, x1} =
  // 2^24 and {x2, x3} = -2^24 + 1, whose sum is 1.
  REQUIRE(dot(x, one4, "fp32-seq:lanes=2") == 2.0f);
  REQUIRE(dot(x, one4, "fp32-seq:lanes=2,vec=2") == 1.0f);
  REQUIRE(dot(x, one4, "fp32-seq:lanes=2,vec=auto") == 1.0f);
  REQUIRE(dot(x, one4, "fp32-seq") == 1.0f);
}

TEST_CASE("lanes: agree with an explicit shared-memory reduction written from the description",
          "[gemm][lanes]") {
  // Values of many binades so that every order rounds differently.
  std::vector<double> a(203), b(203);
  std::uint32_t s = 12345;
  for (std::size_t i = 0; i < a.size(); ++i) {
    s = s * 1103515245u + 12345u;
    const int e = static_cast<int>((s >> 8) % 40) - 20;
    const double m = static_cast<double>((s >> 12) & 0xFFF) / 4096.0 + 1.0;
    a[i] = ((s & 1u) ? -m : m) * std::ldexp(1.0, e);
    b[i] = 1.0;
  }
  // lanes L, vec v, over [k0, k1): volatile floats keep every addition a rounded fp32 one.
  auto chains = [&](std::size_t k0, std::size_t k1, std::size_t L, std::size_t v) {
    std::vector<float> acc(L, 0.0f);
    for (std::size_t k = k0; k < k1; ++k) {
      volatile float t = acc[((k - k0) / v) % L] + static_cast<float>(a[k]);
      acc[((k - k0) / v) % L] = t;
    }
    return acc;
  };
  auto halving = [](std::vector<float> acc) {
    for (std::size_t h = acc.size() / 2; h >= 1; h /= 2) {
      for (std::size_t i = 0; i < h; ++i) {
        volatile float t = acc[i] + acc[i + h];
        acc[i] = t;
      }
    }
    return acc[0];
  };
  auto in_order = [](const std::vector<float>& acc) {
    volatile float t = acc[0];
    for (std::size_t i = 1; i < acc.size(); ++i) t = t + acc[i];
    return static_cast<float>(t);
  };
  const std::size_t K = a.size();
  REQUIRE(dot(a, b, "fp32-seq:lanes=8") == halving(chains(0, K, 8, 1)));
  REQUIRE(dot(a, b, "fp32-seq:lanes=32,vec=4") == halving(chains(0, K, 32, 4)));
  REQUIRE(dot(a, b, "fp32-seq:lanes=16,lanesum=seq") == in_order(chains(0, K, 16, 1)));
  // vec=auto: one run of ceil(203 / 32) = 7 k per lane.
  REQUIRE(dot(a, b, "fp32-seq:lanes=32,vec=auto") == halving(chains(0, K, 32, 7)));
  // split=3: parts of ceil(203 / 3) = 68 k (the last 67), each over the lanes with its own
  // auto run (ceil(68 / 32) = 3), the parts added in order from +0.
  volatile float split = 0.0f;
  for (std::size_t k0 = 0; k0 < K; k0 += 68) {
    const std::size_t k1 = std::min(K, k0 + 68);
    split = split + halving(chains(k0, k1, 32, (k1 - k0 + 31) / 32));
  }
  REQUIRE(dot(a, b, "fp32-seq:lanes=32,vec=auto,split=3") == split);
  // The orders differ on these values (the test separates them).
  REQUIRE(halving(chains(0, K, 8, 1)) != in_order(chains(0, K, 8, 1)));
  REQUIRE(dot(a, b, "fp32-seq:lanes=8") != dot(a, b, "fp32-seq"));
}

TEST_CASE("lanes: the xmma fold and in-order sums over any number of lanes (lanesum=fold|seq)",
          "[gemm][lanes]") {
  // SEMANTICS 15.2 (cuBLAS's sm80 xmma FFMA kernels, bench/results/2026-12-01-h200-gemm-simt.md):
  // with h = ceil(L/2), v_0 = (lane 0 + lane h) + lane L-1, v_s = lane s + lane s+h for 0 < s < h
  // and s + h < L - 1, else v_s = lane s; the total is v_0 + v_1 + ... in order.
  const double big = 16777216.0;  // 2^24: 2^24 + 1 ties back to 2^24
  // L = 5 (h = 3), one product per lane: ((x0 + x3) + x4) + x1 + x2 = ((2^24 - 2^24) + 1) + 1 + 1
  // = 3; in lane order (((2^24 + 1) + 1) - 2^24) + 1 = 1.
  const std::vector<double> one5{p, p, p, p, p};
  const std::vector<double> x5{big, 1.0, 1.0, -big, 1.0};
  REQUIRE(dot(x5, one5, "fp32-seq:lanes=5,lanesum=fold") == 3.0f);
  REQUIRE(dot(x5, one5, "fp32-seq:lanes=5,lanesum=seq") == 1.0f);
  // L = 6 (h = 3): ((x0 + x3) + x5) + (x1 + x4) + x2. With x1 = 2^24, x4 = -2^24 and 1 elsewhere:
  // ((1 + 1) + 1) + 0 + 1 = 4; in order ((1 + 2^24) + 1 + 1 - 2^24) + 1 = 1 (2^24 + 1 ties to
  // 2^24 twice).
  const std::vector<double> one6{p, p, p, p, p, p};
  const std::vector<double> x6{1.0, big, 1.0, 1.0, -big, 1.0};
  REQUIRE(dot(x6, one6, "fp32-seq:lanes=6,lanesum=fold") == 4.0f);
  REQUIRE(dot(x6, one6, "fp32-seq:lanes=6,lanesum=seq") == 1.0f);
  // Against the description on values of many binades: lane of k is (k / vec) mod L (tiles of
  // vec = 8 k round-robin over L CTAs, as the xmma kernels deal their k-tiles), each lane an FMA
  // chain in k order; volatile floats keep every addition a rounded fp32 one.
  std::vector<double> a(1003), b(1003, 1.0);
  std::uint32_t s = 777;
  for (std::size_t i = 0; i < a.size(); ++i) {
    s = s * 1103515245u + 12345u;
    const int e = static_cast<int>((s >> 8) % 40) - 20;
    const double m = static_cast<double>((s >> 12) & 0xFFF) / 4096.0 + 1.0;
    a[i] = ((s & 1u) ? -m : m) * std::ldexp(1.0, e);
  }
  auto lanes = [&](std::size_t L, std::size_t v) {
    std::vector<float> acc(L, 0.0f);
    for (std::size_t k = 0; k < a.size(); ++k) {
      volatile float t = acc[(k / v) % L] + static_cast<float>(a[k]);
      acc[(k / v) % L] = t;
    }
    return acc;
  };
  auto fold = [](const std::vector<float>& l) {
    const std::size_t L = l.size(), h = (L + 1) / 2;
    volatile float t = l[0] + l[h];
    if (h < L - 1) t = t + l[L - 1];
    for (std::size_t i = 1; i < h; ++i) {
      volatile float v = l[i];
      if (i + h < L - 1) v = v + l[i + h];
      t = t + v;
    }
    return static_cast<float>(t);
  };
  auto in_order = [](const std::vector<float>& l) {
    volatile float t = l[0];
    for (std::size_t i = 1; i < l.size(); ++i) t = t + l[i];
    return static_cast<float>(t);
  };
  for (std::size_t L : {2, 3, 5, 26, 39, 126, 264}) {
    INFO("lanes " << L);
    const std::string m = "fp32-seq:lanes=" + std::to_string(L) + ",vec=8";
    REQUIRE(dot(a, b, m + ",lanesum=fold") == fold(lanes(L, 8)));
    REQUIRE(dot(a, b, m + ",lanesum=seq") == in_order(lanes(L, 8)));
  }
  // The orders differ on these values (the test separates them).
  REQUIRE(fold(lanes(26, 8)) != in_order(lanes(26, 8)));
  // The halving tree needs a power of two; fold and seq take any L.
  REQUIRE_THROWS_AS(parse_accum_model("fp32-seq:lanes=26,vec=8", 32), exmy::InputError);
  REQUIRE_THROWS_AS(parse_accum_model("fp32-seq:lanes=26,lanesum=tree", 32), exmy::InputError);
  REQUIRE_THROWS_AS(parse_accum_model("fp32-seq:lanesum=fold", 32), exmy::InputError);
  REQUIRE(parse_accum_model("fp32-seq:lanes=39,vec=8,lanesum=fold", 32).lane_sum ==
          exmy::native::DotModel::LaneSum::fold);
}

TEST_CASE(
    "dot=G and lanechunk: cuBLAS's dot_kernel + reduce_1Block and gemmSN, from the "
    "description",
    "[gemm][lanes]") {
  // SEMANTICS 15.2 (bench/results/2026-12-01-h200-gemm-simt.md), written out with volatile fp32
  // additions: dot=G: thread g of 128 G holds chains over k = 2g + 256 G i and 2g + 1 + 256 G i,
  // added; each CTA's 128 threads by the halving tree; the reduction's 128 partials (zeros past
  // G) halved twice, then four chains over t = r, r + 4, ..., r + 28 from +0, added in order.
  std::vector<double> a(9000), b(9000, 1.0);
  std::uint32_t s = 4242;
  for (std::size_t i = 0; i < a.size(); ++i) {
    s = s * 1103515245u + 12345u;
    const int e = static_cast<int>((s >> 8) % 12) - 6;
    const double m = static_cast<double>((s >> 12) & 0xFFF) / 4096.0 + 1.0;
    a[i] = ((s & 1u) ? -m : m) * std::ldexp(1.0, e);
  }
  auto add = [](float x, float y) {
    volatile float t = x + y;
    return static_cast<float>(t);
  };
  auto ref_dot = [&](std::size_t K, std::size_t G) {
    std::vector<float> part(128, 0.0f);
    for (std::size_t c = 0; c < G; ++c) {
      std::vector<float> th(128);
      for (std::size_t t = 0; t < 128; ++t) {
        float x = 0.0f, y = 0.0f;
        for (std::size_t k = 2 * (c * 128 + t); k < K; k += 256 * G) {
          x = add(x, static_cast<float>(a[k]));
          if (k + 1 < K) y = add(y, static_cast<float>(a[k + 1]));
        }
        th[t] = add(x, y);
      }
      for (std::size_t h = 64; h >= 1; h /= 2) {
        for (std::size_t t = 0; t < h; ++t) th[t] = add(th[t], th[t + h]);
      }
      part[c] = th[0];
    }
    for (std::size_t h = 64; h >= 32; h /= 2) {
      for (std::size_t t = 0; t < h; ++t) part[t] = add(part[t], part[t + h]);
    }
    float total = 0.0f;
    for (std::size_t r = 0; r < 4; ++r) {
      float c = 0.0f;
      for (std::size_t t = r; t < 32; t += 4) c = add(c, part[t]);
      total = r == 0 ? c : add(total, c);
    }
    return total;
  };
  auto first = [&](std::size_t K) {
    return std::vector<double>(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(K));
  };
  for (auto [K, G] : {std::pair<std::size_t, std::size_t>{541, 16},
                      {4371, 16},
                      {9000, 16},
                      {9000, 8},
                      {9000, 33},
                      {9000, 66},
                      {3, 16}}) {
    INFO("K " << K << " G " << G);
    const std::vector<double> ones(K, 1.0);
    REQUIRE(dot(first(K), ones, "fp32-seq:dot=" + std::to_string(G)) == ref_dot(K, G));
  }
  REQUIRE(ref_dot(9000, 16) != ref_dot(9000, 66));  // G matters once K > 256 G
  // lanechunk=C: each lane's chain restarts every C of its k, its chunk sums added in order;
  // gemmSN is lanes=16,lanesum=seq,lanechunk=16.
  auto ref_sn = [&](std::size_t K) {
    float total = 0.0f;
    for (std::size_t l = 0; l < 16; ++l) {
      float lane = 0.0f, c = 0.0f;
      std::size_t n = 0;
      for (std::size_t k = l; k < K; k += 16) {
        c = add(c, static_cast<float>(a[k]));
        if (++n == 16) {
          lane = add(lane, c);
          c = 0.0f;
          n = 0;
        }
      }
      if (n > 0) lane = add(lane, c);
      total = l == 0 ? lane : add(total, lane);
    }
    return total;
  };
  for (std::size_t K : {2, 200, 256, 257, 655, 2770}) {
    INFO("K " << K);
    const std::vector<double> ones(K, 1.0);
    REQUIRE(dot(first(K), ones, "fp32-seq:lanes=16,lanesum=seq,lanechunk=16") == ref_sn(K));
  }
  // Up to 256 k (16 per lane) the restart changes nothing; beyond it does on these values.
  const std::vector<double> o200(200, 1.0), o2770(2770, 1.0);
  REQUIRE(dot(first(200), o200, "fp32-seq:lanes=16,lanesum=seq,lanechunk=16") ==
          dot(first(200), o200, "fp32-seq:lanes=16,lanesum=seq"));
  REQUIRE(dot(first(2770), o2770, "fp32-seq:lanes=16,lanesum=seq,lanechunk=16") !=
          dot(first(2770), o2770, "fp32-seq:lanes=16,lanesum=seq"));
  REQUIRE_THROWS_AS(parse_accum_model("fp32-seq:dot=16,lanes=4", 32), exmy::InputError);
  REQUIRE_THROWS_AS(parse_accum_model("fp32-seq:dot=16,split=2", 32), exmy::InputError);
  REQUIRE_THROWS_AS(parse_accum_model("fp32-seq:lanechunk=16", 32), exmy::InputError);
  REQUIRE_THROWS_AS(parse_accum_model("fp32-seq:dot=0", 32), exmy::InputError);
}

TEST_CASE("lanes: grammar", "[gemm][lanes]") {
  REQUIRE_THROWS_AS(parse_accum_model("fp32-seq:lanes=3", 32), exmy::InputError);
  REQUIRE_THROWS_AS(parse_accum_model("fp32-seq:lanes=4,chunk=8", 32), exmy::InputError);
  REQUIRE_THROWS_AS(parse_accum_model("fp32-seq:vec=2", 32), exmy::InputError);
  REQUIRE_THROWS_AS(parse_accum_model("fp32-seq:lanes=4,lanesum=bfly", 32), exmy::InputError);
  REQUIRE_THROWS_AS(parse_accum_model("hw:k=16,frac=25,lanes=4", 16), exmy::InputError);
  const AccumModel m = parse_accum_model("fp32-seq:lanes=32,vec=auto,split=5", 32);
  REQUIRE(m.lanes == 32);
  REQUIRE(m.vec == 0);
  REQUIRE(m.split_k == 5);
}

TEST_CASE("stored operands: views read in place give the bits of the same values held as doubles",
          "[gemm][stored]") {
  // gemm() decodes stored operands a block of rows at a time (about 4 MiB of doubles: 128 rows
  // at K = 4096), so 130 rows cross a block boundary on either side. A is a transposed view
  // (column stride != 1), B a row-major view; the reference holds the same values in v.
  const std::size_t K = 4096;
  for (const auto& [M, N] : {std::pair<std::size_t, std::size_t>{130, 3}, {3, 130}}) {
    std::vector<float> at(K * M), b(N * K);  // at: A^T, K x M row-major
    std::uint32_t s = 12345;
    const auto next = [&] {
      s = s * 1664525u + 1013904223u;
      return static_cast<float>(static_cast<std::int32_t>(s >> 8) - (1 << 23)) * 0x1p-20f;
    };
    for (float& x : at) x = next();
    for (float& x : b) x = next();
    const Operand Av = operand_view_f32(at.data(), M, K, 1, M);
    const Operand Bv = operand_view_f32(b.data(), N, K, K, 1);
    Operand A, B;
    A.rows = M;
    B.rows = N;
    A.cols = B.cols = K;
    for (std::size_t i = 0; i < M; ++i)
      for (std::size_t k = 0; k < K; ++k) A.v.push_back(at[k * M + i]);
    B.v.assign(b.begin(), b.end());
    REQUIRE(Av.values() == A.v);
    // Each element is its own dot product, whatever the blocks: fp32-seq's, one by one.
    const std::vector<std::uint32_t> c =
        gemm(Av, Bv, parse_accum_model("fp32-seq", 32), OutFormat::fp32);
    for (std::size_t i = 0; i < M; ++i) {
      for (std::size_t j = 0; j < N; ++j) {
        const float d =
            dot_fp32(&A.v[i * K], &B.v[j * K], K, -126, -126, parse_accum_model("fp32-seq", 32));
        std::uint32_t u;
        std::memcpy(&u, &d, 4);
        REQUIRE(c[i * N + j] == u);
      }
    }
    for (const char* model : {"fp32-seq", "pairwise", "hw:k=8,frac=24,tf32=rne,split=3",
                              "hw:k=8,frac=24,chunk=64,rp"}) {
      INFO(model << " M " << M << " N " << N);
      const AccumModel m = parse_accum_model(model, 32);
      for (const OutFormat out : {OutFormat::fp32, OutFormat::bf16}) {
        CHECK(gemm(Av, Bv, m, out, 0.75) == gemm(A, B, m, out, 0.75));
      }
    }
  }
}
