// The report's small language model (reports/lm/): its backward pass against finite differences
// of an fp64 forward written here from the architecture's equations (lm_model.hpp's header, not
// its code), the GEMM operand hook, the corpus floors and a tiny training run.
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "reports/claims.hpp"
#include "reports/lm/corpus.hpp"
#include "reports/lm/gemm.hpp"
#include "reports/lm/lm_model.hpp"
#include "reports/lm/lm_train.hpp"
#include "reports/report_context.hpp"
#include "reports/sections.hpp"
#include "sim/fast/simd.hpp"
#include "sim/native/philox.hpp"

using namespace exmy::reports::lm;

namespace {

using Vec = std::vector<double>;
using Params = std::map<std::string, Vec>;

Params to_double(const Model& m) {
  Params p;
  for (const auto& t : m.tensors()) p[t.name] = Vec(t.w.begin(), t.w.end());
  return p;
}

// Row-wise layer norm of an n x d matrix (eps 1e-5, biased variance).
Vec layer_norm(const Vec& x, int n, int d, const Vec& g, const Vec& b) {
  Vec y(x.size());
  for (int r = 0; r < n; ++r) {
    double mu = 0, var = 0;
    for (int j = 0; j < d; ++j) mu += x[r * d + j] / d;
    for (int j = 0; j < d; ++j) var += (x[r * d + j] - mu) * (x[r * d + j] - mu) / d;
    for (int j = 0; j < d; ++j) {
      y[r * d + j] = (x[r * d + j] - mu) / std::sqrt(var + 1e-5) * g[j] + b[j];
    }
  }
  return y;
}
// y = x W + b, x n x k, W k x m.
Vec linear(const Vec& x, int n, int k, int m, const Vec& W, const Vec* b) {
  Vec y(static_cast<std::size_t>(n) * m, 0.0);
  for (int r = 0; r < n; ++r) {
    for (int c = 0; c < m; ++c) {
      double s = b ? (*b)[c] : 0.0;
      for (int i = 0; i < k; ++i) s += x[r * k + i] * W[i * m + c];
      y[r * m + c] = s;
    }
  }
  return y;
}

// The mean next-token cross-entropy of the architecture, in fp64.
double reference_loss(const Params& P, const ModelConfig& c, const std::vector<int>& tok, int B) {
  const int T = c.seq, d = c.d, H = c.heads, dh = d / H, V = c.vocab, n = B * T;
  Vec x(static_cast<std::size_t>(n) * d);
  Vec e(x.size());
  for (int b = 0; b < B; ++b) {
    for (int t = 0; t < T; ++t) {
      const int id = tok[b * (T + 1) + t];
      for (int j = 0; j < d; ++j) e[(b * T + t) * d + j] = P.at("emb")[id * d + j];
    }
  }
  if (c.stable_embedding) e = layer_norm(e, n, d, P.at("emb_ln.g"), P.at("emb_ln.b"));
  for (int r = 0; r < n; ++r) {
    for (int j = 0; j < d; ++j) x[r * d + j] = e[r * d + j] + P.at("pos")[(r % T) * d + j];
  }
  for (int l = 0; l < c.layers; ++l) {
    const std::string p = "l" + std::to_string(l) + ".";
    const Vec a = layer_norm(x, n, d, P.at(p + "ln1.g"), P.at(p + "ln1.b"));
    const Vec qkv = linear(a, n, d, 3 * d, P.at(p + "qkv.w"), &P.at(p + "qkv.b"));
    Vec ctx(x.size(), 0.0);
    for (int b = 0; b < B; ++b) {
      for (int h = 0; h < H; ++h) {
        for (int i = 0; i < T; ++i) {
          std::vector<double> s(i + 1);
          double mx = -1e300;
          for (int j = 0; j <= i; ++j) {
            double dot = 0;
            for (int u = 0; u < dh; ++u) {
              dot +=
                  qkv[(b * T + i) * 3 * d + h * dh + u] * qkv[(b * T + j) * 3 * d + d + h * dh + u];
            }
            s[j] = dot / std::sqrt(static_cast<double>(dh));
            mx = std::max(mx, s[j]);
          }
          double z = 0;
          for (int j = 0; j <= i; ++j) z += std::exp(s[j] - mx);
          for (int j = 0; j <= i; ++j) {
            const double pj = std::exp(s[j] - mx) / z;
            for (int u = 0; u < dh; ++u) {
              ctx[(b * T + i) * d + h * dh + u] +=
                  pj * qkv[(b * T + j) * 3 * d + 2 * d + h * dh + u];
            }
          }
        }
      }
    }
    const Vec o = linear(ctx, n, d, d, P.at(p + "out.w"), &P.at(p + "out.b"));
    for (std::size_t i = 0; i < x.size(); ++i) x[i] += o[i];
    const Vec a2 = layer_norm(x, n, d, P.at(p + "ln2.g"), P.at(p + "ln2.b"));
    Vec u = linear(a2, n, d, 4 * d, P.at(p + "up.w"), &P.at(p + "up.b"));
    for (double& v : u) v = 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)));
    const Vec m = linear(u, n, 4 * d, d, P.at(p + "down.w"), &P.at(p + "down.b"));
    for (std::size_t i = 0; i < x.size(); ++i) x[i] += m[i];
  }
  const Vec f = layer_norm(x, n, d, P.at("lnf.g"), P.at("lnf.b"));
  const Vec lg = linear(f, n, d, V, P.at("head.w"), nullptr);
  double loss = 0;
  for (int r = 0; r < n; ++r) {
    double mx = -1e300, z = 0;
    for (int j = 0; j < V; ++j) mx = std::max(mx, lg[r * V + j]);
    for (int j = 0; j < V; ++j) z += std::exp(lg[r * V + j] - mx);
    const int target = tok[(r / T) * (T + 1) + r % T + 1];
    loss += mx + std::log(z) - lg[r * V + target];
  }
  return loss / n;
}

std::vector<int> random_tokens(int B, int T, int V, std::uint64_t seed) {
  std::vector<int> t(static_cast<std::size_t>(B) * (T + 1));
  for (std::size_t i = 0; i < t.size(); ++i) {
    t[i] = static_cast<int>(exmy::native::philox_word(seed, 7, i) % static_cast<unsigned>(V));
  }
  return t;
}

}  // namespace

TEST_CASE("lm backward equals finite differences of an fp64 forward", "[lm]") {
  for (bool stable : {false, true}) {
    ModelConfig c;
    c.vocab = 11;
    c.d = 8;
    c.heads = 2;
    c.layers = 2;
    c.seq = 5;
    c.stable_embedding = stable;
    Model m(c, 42);
    // Larger-than-init weights and biases so that every path carries gradient of similar size
    // (init leaves biases 0 and gains 1, where a bug in their gradients could hide).
    for (auto& t : m.tensors()) {
      for (std::size_t j = 0; j < t.w.size(); ++j) {
        const double u = exmy::native::philox_word(99, 1, j + 1000 * t.name.size()) * 0x1p-32;
        t.w[j] += static_cast<float>(0.3 * (u - 0.5));
      }
    }
    const int B = 3;
    const auto tok = random_tokens(B, c.seq, c.vocab, 5);
    const double loss32 = m.forward_backward(tok, B, true);
    Params P = to_double(m);
    const double loss64 = reference_loss(P, c, tok, B);
    INFO("stable " << stable << " fp32 loss " << loss32 << " fp64 loss " << loss64);
    REQUIRE(std::abs(loss32 - loss64) < 1e-5);
    const double h = 1e-5;
    int checked = 0;
    for (const auto& t : m.tensors()) {
      double gmax = 0;
      for (float g : t.g) gmax = std::max(gmax, std::abs(static_cast<double>(g)));
      // Up to 12 elements per tensor, spread over it.
      const std::size_t stride = std::max<std::size_t>(1, t.w.size() / 12);
      for (std::size_t j = 0; j < t.w.size(); j += stride) {
        Params pp = P, pm = P;
        pp[t.name][j] += h;
        pm[t.name][j] -= h;
        const double fd = (reference_loss(pp, c, tok, B) - reference_loss(pm, c, tok, B)) / (2 * h);
        INFO(t.name << "[" << j << "] backward " << t.g[j] << " finite difference " << fd);
        REQUIRE(std::abs(fd - t.g[j]) <= 1e-4 * std::max(1.0, gmax) + 2e-3 * std::abs(fd));
        ++checked;
      }
    }
    REQUIRE(checked > 150);
  }
}

TEST_CASE("lm GEMM hook: identity policies are bit-identical to no hook; E8M3 is not", "[lm]") {
  ModelConfig c;
  c.vocab = 17;
  c.d = 16;
  c.heads = 2;
  c.seq = 7;
  const int B = 4;
  const auto tok = random_tokens(B, c.seq, c.vocab, 3);
  auto run = [&](const GemmPolicy* p, std::vector<std::vector<float>>& g) {
    Model m(c, 8);
    const double l = m.forward_backward(tok, B, true, p);
    g.clear();
    for (const auto& t : m.tensors()) g.push_back(t.g);
    return l;
  };
  std::vector<std::vector<float>> g0, g1;
  const double l0 = run(nullptr, g0);
  OperandCast rne23{CastMode::rne, 8, 23};
  OperandCast mask23{CastMode::mask, 8, 23};
  const GemmPolicy ident{}, p_rne = GemmPolicy::all(rne23), p_mask = GemmPolicy::all(mask23);
  for (const GemmPolicy* p : {&ident, &p_rne, &p_mask}) {
    const double l1 = run(p, g1);
    REQUIRE(std::memcmp(&l0, &l1, sizeof l0) == 0);
    REQUIRE(g0 == g1);
  }
  const GemmPolicy e8m3 = GemmPolicy::all(OperandCast{CastMode::rne, 8, 3});
  const double l3 = run(&e8m3, g1);
  REQUIRE(l3 != l0);
  REQUIRE(std::abs(l3 - l0) < 0.05);
}

TEST_CASE("lm operand casts: RNE and masking onto E8M3 (boundary table)", "[lm]") {
  const OperandCast rne{CastMode::rne, 8, 3}, mask{CastMode::mask, 8, 3};
  // E8M3 near 1: spacing 2^-3. 1 + 2^-4 is a tie -> even (1); 1 + 3 2^-4 -> 1.25 (even 2^-2);
  // 1 + 2^-4 + 2^-20 -> 1.125. Masking truncates all of them toward zero.
  struct Row {
    float x, r, m;
  } rows[] = {{1.0625f, 1.0f, 1.0f},
              {1.1875f, 1.25f, 1.125f},
              {1.0f + 0x1p-4f + 0x1p-20f, 1.125f, 1.0f},
              {-1.1875f, -1.25f, -1.125f},
              {0.0f, 0.0f, 0.0f}};
  for (const auto& r : rows) {
    INFO(r.x);
    REQUIRE(cast_operand(r.x, rne) == r.r);
    REQUIRE(cast_operand(r.x, mask) == r.m);
  }
  // Overflow saturates: E8M3's max is 1.875 2^127.
  REQUIRE(cast_operand(3.4e38f, rne) == 1.875f * 0x1p127f);
}

TEST_CASE("lm operand casts: the per-matrix cast equals the per-element one, bit for bit", "[lm]") {
  std::vector<std::uint32_t> in = {0x00000000u, 0x80000000u, 0x7F800000u, 0xFF800000u, 0x7FC00000u,
                                   0xFFC00001u, 0x7F800001u, 0x00000001u, 0x80000001u, 0x007FFFFFu,
                                   0x00800000u, 0x7F7FFFFFu, 0xFF7FFFFFu, 0x3F880000u, 0x3F980000u,
                                   0x3F7FFFFFu, 0x7F780000u, 0x7F700000u, 0x00400000u, 0x00080000u};
  for (std::uint32_t i = 0; i < (1u << 17); ++i) in.push_back(i * 0x8001u + (i >> 3));
  std::vector<OperandCast> casts;
  for (int m : {3, 4, 5, 6, 7, 10, 23}) {
    casts.push_back({CastMode::rne, 8, m});
    for (exmy::MaskOuter o : {exmy::MaskOuter::clamp, exmy::MaskOuter::keep}) {
      for (exmy::MaskInner n :
           {exmy::MaskInner::keep, exmy::MaskInner::zero, exmy::MaskInner::min}) {
        casts.push_back({CastMode::mask, 8, m, o, n});
      }
    }
  }
  casts.push_back({CastMode::rne, 5, 2});
  casts.push_back({CastMode::rne, 4, 3});
  casts.push_back({CastMode::identity, 8, 23});
  for (int k = 0; k < 2 * static_cast<int>(casts.size()); ++k) {
    const OperandCast& c = casts[static_cast<std::size_t>(k / 2)];
    if (k % 2) exmy::fast::simd::set_isa_limit(exmy::fast::simd::Isa::sse2);
    INFO("mode " << static_cast<int>(c.mode) << " E" << c.exp_bits << "M" << c.man_bits << " isa "
                 << exmy::fast::simd::isa_name(exmy::fast::simd::active_isa()));
    std::vector<float> x(in.size());
    std::memcpy(x.data(), in.data(), in.size() * 4);
    cast_operands(x.data(), x.size(), c);
    std::size_t bad = 0;
    for (std::size_t i = 0; i < in.size(); ++i) {
      float v;
      std::memcpy(&v, &in[i], 4);
      const float r = cast_operand(v, c);
      bad += std::memcmp(&r, &x[i], 4) != 0 ? 1 : 0;
    }
    exmy::fast::simd::clear_isa_limit();
    REQUIRE(bad == 0);
  }
}

TEST_CASE("lm GEMM: blocked kernels equal the scalar k-order sum, bit for bit, on every ISA",
          "[lm]") {
  std::uint64_t st = 99;
  auto rnd = [&]() {
    st = st * 6364136223846793005ull + 1442695040888963407ull;
    const int e = static_cast<int>((st >> 40) % 40) - 20;
    return std::ldexp(static_cast<float>(static_cast<std::int64_t>(st >> 33) % 2001 - 1000), e);
  };
  const GemmPolicy pol = GemmPolicy::all(OperandCast{CastMode::mask, 8, 5});
  for (int isa = 0; isa < 2; ++isa) {
    if (isa == 0) exmy::fast::simd::set_isa_limit(exmy::fast::simd::Isa::sse2);
    for (int M : {1, 5, 16}) {
      for (int N : {3, 16, 19}) {
        for (int K : {1, 7, 33}) {
          for (int t = 0; t < 8; ++t) {
            const bool tA = t & 1, tB = t & 2, acc = t & 4;
            std::vector<float> A(static_cast<std::size_t>(M) * K),
                B(static_cast<std::size_t>(K) * N);
            for (auto& v : A) v = rnd();
            for (auto& v : B) v = rnd();
            std::vector<float> C(static_cast<std::size_t>(M) * N), R;
            for (auto& v : C) v = rnd();
            R = C;
            const GemmCall call{GemmSite::mlp_up, Pass::fwd, (M + N) % 2 ? &pol : nullptr};
            const int lda = tA ? M : K, ldb = tB ? K : N;
            gemm(call, M, N, K, A.data(), lda, tA, B.data(), ldb, tB, C.data(), N, acc);
            for (int i = 0; i < M; ++i) {
              for (int j = 0; j < N; ++j) {
                float s = 0;
                for (int k = 0; k < K; ++k) {
                  float a = tA ? A[static_cast<std::size_t>(k) * lda + i]
                               : A[static_cast<std::size_t>(i) * lda + k];
                  float b = tB ? B[static_cast<std::size_t>(j) * ldb + k]
                               : B[static_cast<std::size_t>(k) * ldb + j];
                  if (call.policy) {
                    a = cast_operand(a, call.policy->at(call.site, call.pass, 0));
                    b = cast_operand(b, call.policy->at(call.site, call.pass, 1));
                  }
                  const float p = a * b;
                  s = s + p;
                }
                float& r = R[static_cast<std::size_t>(i) * N + j];
                r = acc ? r + s : s;
              }
            }
            INFO("isa " << isa << " M " << M << " N " << N << " K " << K << " t " << t);
            REQUIRE(std::memcmp(C.data(), R.data(), C.size() * 4) == 0);
          }
        }
      }
    }
    exmy::fast::simd::clear_isa_limit();
  }
}

TEST_CASE("lm corpus: floors are ordered and the process floor is below the unigram one", "[lm]") {
  CorpusConfig cc;
  cc.vocab = 64;
  cc.marginal_tokens = 1 << 16;
  const Corpus corpus(cc, 11);
  const auto ev = eval_tokens(corpus, 16, 64);
  const double uni = corpus.unigram_loss(ev, 16), proc = corpus.process_loss(ev, 16);
  INFO("unigram " << uni << " process " << proc << " entropy " << entropy_nats(corpus.marginal()));
  REQUIRE(proc < uni - 0.5);
  REQUIRE(uni < std::log(64.0));
  REQUIRE(std::abs(uni - entropy_nats(corpus.marginal())) < 0.1);
  // A pure function of the seed.
  std::vector<int> a(17), b(17);
  corpus.sequence(0, 5, 16, a.data());
  Corpus(cc, 11).sequence(0, 5, 16, b.data());
  REQUIRE(a == b);
}

TEST_CASE("lm: a tiny config trains below the unigram entropy in 150 steps, fp32 and 8-bit",
          "[lm]") {
  CorpusConfig cc;
  cc.vocab = 64;
  cc.marginal_tokens = 1 << 16;
  const Corpus corpus(cc, 11);
  TrainConfig tc;
  tc.model.vocab = 64;
  tc.model.d = 32;
  tc.model.seq = 16;
  tc.batch = 16;
  tc.steps = 150;
  tc.warmup = 15;
  tc.lr = 3e-3;
  tc.min_8bit_size = 1024;
  const auto ev = eval_tokens(corpus, 16, 64);
  const double uni = corpus.unigram_loss(ev, 16), proc = corpus.process_loss(ev, 16);
  for (bool s8 : {false, true}) {
    tc.state8 = s8;
    const TrainResult r = train_lm(tc, corpus, 1, ev);
    INFO("8-bit " << s8 << " first " << r.first_loss << " final eval " << r.final_eval
                  << " unigram " << uni << " process " << proc);
    REQUIRE(!r.stopped);
    REQUIRE(r.final_eval < uni - 0.1);
    REQUIRE(r.final_eval > proc);
    if (s8) {
      REQUIRE(r.vblocks.empty());
    } else {
      REQUIRE(!r.vblocks.empty());
    }
  }
}

TEST_CASE("lm-8bit equivalence rule: every branch, boundaries included", "[lm]") {
  REQUIRE(equivalence_verdict(-0.01, 0.01, 0.01, 0, 0) == "reproduced");
  REQUIRE(equivalence_verdict(-0.0101, 0.005, 0.01, 0, 0) ==
          "inconclusive (interval wider than the margin)");
  REQUIRE(equivalence_verdict(0.0101, 0.05, 0.01, 0, 0) == "not reproduced");
  REQUIRE(equivalence_verdict(-0.05, -0.0101, 0.01, 0, 0) ==
          "not reproduced (8-bit lower: better than fp32 beyond the margin)");
  REQUIRE(equivalence_verdict(0.0, 0.001, 0.01, 1, 0) == "not reproduced (8-bit runs unstable)");
  REQUIRE(equivalence_verdict(0.0, 0.001, 0.01, 1, 1) == "inconclusive (unstable fp32 runs)");
  REQUIRE(equivalence_verdict(NAN, 0.001, 0.01, 0, 0) == "inconclusive (unstable fp32 runs)");
}

TEST_CASE("lm-8bit section: identical CSV bytes for 1 and 2 threads", "[lm]") {
  const auto base =
      std::filesystem::temp_directory_path() / ("exmy_test_lm8bit_" + std::to_string(::getpid()));
  std::filesystem::remove_all(base);
  const std::string dirs[2] = {(base / "a").string(), (base / "b").string()};
  std::vector<exmy::reports::Claim> claims;
  for (int i = 0; i < 2; ++i) {
    exmy::reports::ReportOptions o;
    o.out_dir = dirs[i];
    o.seed = 4;
    o.threads = i + 1;
    o.tiny = 1;
    o.figures = false;
    claims = exmy::reports::run_lm8bit_section(exmy::reports::ReportContext(o)).claims;
  }
  auto slurp = [](const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  for (const char* f : {"runs.csv", "curves.csv", "pairs.csv", "equivalence.csv", "grid.csv",
                        "v_range.csv", "v_blocks.csv", "floors.csv"}) {
    INFO(f);
    const std::string a = slurp(dirs[0] + "/lm-8bit/" + f);
    REQUIRE(a.find('\n') != std::string::npos);
    REQUIRE(a == slurp(dirs[1] + "/lm-8bit/" + f));
  }
  // 4 equivalence rows (2 blocks x 2 embeddings), the grid row and the v-range row; the tiny
  // configuration's verdicts say "preliminary".
  REQUIRE(claims.size() == 6);
  for (const auto& c : claims) {
    INFO(c.verdict);
    REQUIRE(c.verdict.find("preliminary") != std::string::npos);
  }
  REQUIRE(claims[0].kind == "reproduction");
  for (const auto& c : claims) REQUIRE(exmy::reports::claim_problem(c).empty());
  std::filesystem::remove_all(base);
}

TEST_CASE("lm-mantissa section: identical CSV bytes for 1 and 2 threads, valid claims", "[lm]") {
  const auto base =
      std::filesystem::temp_directory_path() / ("exmy_test_lmmant_" + std::to_string(::getpid()));
  std::filesystem::remove_all(base);
  const std::string dirs[2] = {(base / "a").string(), (base / "b").string()};
  std::vector<exmy::reports::Claim> claims;
  for (int i = 0; i < 2; ++i) {
    exmy::reports::ReportOptions o;
    o.out_dir = dirs[i];
    o.seed = 6;
    o.threads = i + 1;
    o.tiny = 1;
    o.figures = false;
    claims = exmy::reports::run_lm_mantissa_section(exmy::reports::ReportContext(o)).claims;
  }
  auto slurp = [](const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  for (const char* f : {"runs.csv", "summary.csv", "curves.csv", "sharpness.csv",
                        "sharpness_summary.csv", "operand_range.csv", "operand_hist.csv"}) {
    INFO(f);
    const std::string a = slurp(dirs[0] + "/lm-mantissa/" + f);
    REQUIRE(a.find('\n') != std::string::npos);
    REQUIRE(a == slurp(dirs[1] + "/lm-mantissa/" + f));
  }
  // 11 sweep formats x 2 seeds and 5 EbM7 ablation variants x 2 seeds (the tiny plan), Eb the
  // width operand_range.csv marks (7 rows per pass: E2..E8, passes all, fwd, dgrad, wgrad).
  const std::string rng = slurp(dirs[0] + "/lm-mantissa/operand_range.csv");
  REQUIRE(std::count(rng.begin(), rng.end(), '\n') == 1 + 4 * 7);
  const std::size_t mark = rng.find(",1\n");
  REQUIRE(mark != std::string::npos);
  const std::size_t row = rng.rfind('\n', mark) + 1;
  REQUIRE(rng.compare(row, 4, "all,") == 0);
  const std::string eb = rng.substr(row + 4, rng.find(',', row + 4) - row - 4);
  const std::string runs = slurp(dirs[0] + "/lm-mantissa/runs.csv");
  REQUIRE(std::count(runs.begin(), runs.end(), '\n') == 1 + 22 + 10);
  REQUIRE(runs.find("\nablation,e" + eb + "m7_outer-keep_inner-min,mask," + eb +
                    ",7,keep,min,0,") != std::string::npos);
  // summary.csv: one row per format, 16 columns each (one header comma count for all rows).
  const std::string summ = slurp(dirs[0] + "/lm-mantissa/summary.csv");
  REQUIRE(std::count(summ.begin(), summ.end(), '\n') == 1 + 16);
  {
    std::istringstream in(summ);
    std::string line;
    while (std::getline(in, line)) REQUIRE(std::count(line.begin(), line.end(), ',') == 15);
  }
  // Sharpness at step 1 and every 5th of 20 steps, for each of the 32 runs: 5 points a run.
  const std::string sh = slurp(dirs[0] + "/lm-mantissa/sharpness.csv");
  REQUIRE(std::count(sh.begin(), sh.end(), '\n') == 1 + 32 * 5);
  REQUIRE(claims.size() == 4);
  for (const auto& c : claims) {
    INFO(c.verdict);
    REQUIRE(exmy::reports::claim_problem(c).empty());
    REQUIRE(c.verdict.find("preliminary") != std::string::npos);
  }
  std::filesystem::remove_all(base);
}
