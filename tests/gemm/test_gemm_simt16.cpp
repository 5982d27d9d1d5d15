// cuBLAS's CUDA-core GEMM kernels with bf16/fp16 inputs (issue 30; docs/SEMANTICS.md 15.6;
// bench/results/2026-12-02-h200-gemm-simt16.md): the family rules of launch_rules.cpp for the
// 16-bit instances of dot_kernel, gemmSN, gemvx and the new gemv2T family, gemv2T's order against
// counts measured on the H200 (FPRev trees) and against a reference written from the
// description, and `exmy gemm --accum cublas-sm90-h200` on captured shapes ($EXMY_CLI).
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "sim/gemm/gemm.hpp"
#include "sim/gemm/launch_rules.hpp"
#include "sim/io/npy.hpp"

using namespace exmy;
using namespace exmy::gemm;
namespace fs = std::filesystem;

namespace {

LaunchRecord rec16(const char* family, const std::string& key, std::uint64_t S,
                   const char* reduce) {
  LaunchRecord r;
  r.family = family;
  r.key = key;
  r.reduce = reduce;
  r.split = S;
  return r;
}

float dot(const std::vector<double>& a, const std::vector<double>& b, const std::string& model) {
  const AccumModel m = parse_accum_model(model, 16);
  return dot_fp32(a.data(), b.data(), a.size(), -133, -133, m);
}

const std::string kGemvxPost =
    " false, cublasGemvParamsEx<int, cublasGemvTensorStridedBatched<__nv_bfloat16 const>, "
    "cublasGemvTensorStridedBatched<__nv_bfloat16 const>, cublasGemvTensorStridedBatched<float>, "
    "float> >";

}  // namespace

TEST_CASE("family rules: dot, gemmSN, gemvx and gemv2T with bf16/fp16 inputs",
          "[gemm][launch][simt16]") {
  using S = LaunchRule::Status;
  // dot_kernel<float, 128, 0> + reduce_1Block: dot=G for G = gridDim.x, the input type in its
  // parameter types; both outputs.
  LaunchRecord d = rec16("dot",
                         "dot_kernel<float, 128, 0, cublasDotParams<cublasGemvTensorStridedBatched<"
                         "__nv_bfloat16 const>, cublasGemvTensorStridedBatched<float> > >",
                         32, "reduce_1Block");
  for (const char* out : {"bf16", "fp32"}) {
    const LaunchRule r = launch_rule(d, "bf16", out, 1549);
    REQUIRE(r.status == S::verified);
    REQUIRE(r.model == "fp32-seq:dot=32");
  }
  REQUIRE(launch_rule(d, "fp16", "fp32", 1549).status == S::none);  // a bf16 kernel's name
  REQUIRE(launch_rule(d, "bf16", "fp16", 1549).status == S::none);  // no such output
  d.split = 496;  // 1 x 1 x K launches: 496 CTAs (trees and outputs)
  REQUIRE(launch_rule(d, "bf16", "bf16", 50).status == S::verified);
  d.split = 128;  // in the records, in no tree or output: announced
  REQUIRE(launch_rule(d, "bf16", "fp32", 9000).status == S::unverified);
  // gemmSN: the fp32 rule.
  LaunchRecord sn = rec16("gemmSN",
                          "gemmSN_TN_kernel<float, 128, 16, 2, 4, 6, 7, false, "
                          "cublasGemvTensorStridedBatched<__half const>, "
                          "cublasGemvTensorStridedBatched<__half const>, "
                          "cublasGemvTensorStridedBatched<__half> >",
                          1, "");
  REQUIRE(launch_rule(sn, "fp16", "fp16", 1285).model ==
          "fp32-seq:lanes=16,lanesum=seq,lanechunk=16");
  REQUIRE(launch_rule(sn, "fp16", "fp16", 1285).status == S::verified);
  REQUIRE(launch_rule(sn, "bf16", "bf16", 1285).status == S::none);
  // gemvx: the template's input and output types; 2x64 blocks (true, ..., 7): 2 lanes of one
  // run each; 32x4 (false, ..., 7): one run per lane up to the type's bound, strided above.
  const std::string bb =
      "internal::gemvx::kernel<int, int, __nv_bfloat16, __nv_bfloat16, "
      "__nv_bfloat16, float, ";
  const std::string bf = "internal::gemvx::kernel<int, int, __nv_bfloat16, float, float, float, ";
  LaunchRecord g = rec16("gemvx", bb + "true, true, true, false, 7," + kGemvxPost, 1, "");
  REQUIRE(launch_rule(g, "bf16", "bf16", 43).model == "fp32-seq:lanes=2,vec=auto");
  REQUIRE(launch_rule(g, "bf16", "bf16", 43).status == S::verified);
  REQUIRE(launch_rule(g, "bf16", "fp32", 43).status == S::none);  // the bf16-output kernel
  g.key = bf + "false, true, true, false, 7," + kGemvxPost;
  REQUIRE(launch_rule(g, "bf16", "fp32", 1, 40, 700).model == "fp32-seq:lanes=32,vec=auto");
  REQUIRE(launch_rule(g, "bf16", "fp32", 1, 40, 700).status == S::verified);
  // Above 700: strided where the launch has at least 21 CTAs (ceil(M N / 4)), as seen.
  REQUIRE(launch_rule(g, "bf16", "fp32", 100, 1, 758).model == "fp32-seq:lanes=32");
  REQUIRE(launch_rule(g, "bf16", "fp32", 100, 1, 758).status == S::verified);
  REQUIRE(launch_rule(g, "bf16", "fp32", 100, 1, 730).status == S::unverified);  // the gap
  // Few CTAs above the bound (fp16 3x1x857: one run per lane): announced, one run per lane.
  LaunchRule few = launch_rule(g, "bf16", "fp32", 3, 1, 857);
  REQUIRE(few.model == "fp32-seq:lanes=32,vec=auto");
  REQUIRE(few.status == S::unverified);
  REQUIRE(few.why.find("1 CTAs") != std::string::npos);
  REQUIRE(launch_rule(g, "bf16", "fp32", 857).status == S::unverified);  // M, N unknown
  // fp16: one run per lane seen up to 523 (from 514 to 700 cuBLAS runs the 16x4 kernel).
  const std::string hf = "internal::gemvx::kernel<int, int, __half, float, float, float, ";
  g.key = hf + "false, true, true, false, 7," + kGemvxPost;
  REQUIRE(launch_rule(g, "fp16", "fp32", 1, 3, 523).model == "fp32-seq:lanes=32,vec=auto");
  REQUIRE(launch_rule(g, "fp16", "fp32", 1, 3, 523).status == S::verified);
  REQUIRE(launch_rule(g, "fp16", "fp32", 1, 336, 2060).model == "fp32-seq:lanes=32");
  REQUIRE(launch_rule(g, "fp16", "fp32", 1, 336, 2060).status == S::verified);
  REQUIRE(launch_rule(g, "fp16", "fp32", 15, 1, 886).status == S::unverified);
  // fp16 4x64 (true, ..., 8) and 16x4 (false, ..., 6): 4 and 16 lanes of one run each, up to
  // the K of their trees.
  g.key = hf + "true, true, true, false, 8," + kGemvxPost;
  REQUIRE(launch_rule(g, "fp16", "fp32", 1, 89, 115).model == "fp32-seq:lanes=4,vec=auto");
  REQUIRE(launch_rule(g, "fp16", "fp32", 1, 89, 115).status == S::verified);
  REQUIRE(launch_rule(g, "fp16", "fp32", 1, 89, 133).status == S::unverified);
  g.key = hf + "false, true, true, false, 6," + kGemvxPost;
  REQUIRE(launch_rule(g, "fp16", "fp32", 100, 1, 700).model == "fp32-seq:lanes=16,vec=auto");
  REQUIRE(launch_rule(g, "fp16", "fp32", 100, 1, 700).status == S::verified);
  REQUIRE(launch_rule(g, "bf16", "fp32", 100, 1, 700).status == S::none);  // an fp16 kernel
  g.key = bf + "false, true, true, false, 7," + kGemvxPost;
  g.reduce = "splitKreduce/f32";  // no 16-bit split gemvx seen
  REQUIRE(launch_rule(g, "bf16", "fp32", 4000).status == S::none);
  // gemv2T + splitKreduce/f32: 16 strided lanes restarting every 32 of their k, split = S.
  LaunchRecord v = rec16("gemv2",
                         "gemv2T_kernel_val<int, int, __nv_bfloat16, float, float, float, 128, "
                         "16, 4, 4, false, false, cublasGemvParamsEx<int, "
                         "cublasGemvTensorStridedBatched<__nv_bfloat16 const>, "
                         "cublasGemvTensorStridedBatched<__nv_bfloat16 const>, "
                         "cublasGemvTensorStridedBatched<float>, float> >",
                         9, "splitKreduce/f32");
  for (const char* out : {"bf16", "fp32"}) {
    const LaunchRule r = launch_rule(v, "bf16", out, 6696);
    REQUIRE(r.model == "fp32-seq:lanes=16,lanesum=seq,lanechunk=32,split=9");
    REQUIRE(r.status == S::verified);
  }
  REQUIRE(launch_rule(v, "fp16", "fp32", 6696).status == S::none);
  v.reduce = "";
  REQUIRE(launch_rule(v, "bf16", "fp32", 6696).status == S::none);
}

TEST_CASE("gemv2T: the FPRev counts measured on the H200 (1x508x6696 S = 9, 1x205x7453 S = 8)",
          "[gemm][simt16]") {
  // BIG = 2^40 at k = 0, -BIG at k = j, 1 elsewhere: the fp32 result is the number of units
  // outside the smallest sub-sum holding k = 0 and k = j (gemm_launch_probe.py). The counts are
  // the H200's (h200-2026-12-01/call1 fprev_bf16.npz; the results note
  // bench/results/2026-12-02-h200-gemm-simt16.md): lane 0 (k = 0, 16, ...) restarts after 32 of its
  // k (k = 512), lanes join in lane order, parts of ceil(K/S) k in part order.
  struct Case {
    std::size_t K, S;
    std::vector<std::pair<std::size_t, float>> j_count;
  };
  const Case cases[] = {
      {6696,
       9,
       {{1, 6602},
        {2, 6555},
        {15, 5952},
        {16, 6694},
        {496, 6664},
        {512, 6649},
        {743, 6320},
        {744, 5208},
        {1488, 4464},
        {5952, 0},
        {6695, 0}}},
      {7453,
       8,
       {{1, 7335},
        {16, 7451},
        {512, 7394},
        {931, 7217},
        {932, 5589},
        {1864, 4657},
        {5952, 929},
        {6524, 0}}},
  };
  for (const Case& c : cases) {
    const std::string model =
        "fp32-seq:lanes=16,lanesum=seq,lanechunk=32,split=" + std::to_string(c.S);
    for (const auto& [j, count] : c.j_count) {
      INFO("K " << c.K << " S " << c.S << " j " << j);
      std::vector<double> a(c.K, 1.0), b(c.K, 1.0);
      a[0] = std::ldexp(1.0, 40);
      a[j] = -std::ldexp(1.0, 40);
      REQUIRE(dot(a, b, model) == count);
    }
  }
  // Without the restart (one chain per lane) k = 512 would join lane 0 at 33, not 47.
  std::vector<double> a(6696, 1.0), b(6696, 1.0);
  a[0] = std::ldexp(1.0, 40);
  a[512] = -std::ldexp(1.0, 40);
  REQUIRE(dot(a, b, "fp32-seq:lanes=16,lanesum=seq,split=9") == 6696 - 33);
}

TEST_CASE("gemv2T: the model against a reference written from the description", "[gemm][simt16]") {
  // SEMANTICS 15.6 (gemv2T): parts p of P = ceil(K/S) k; in a part, lane l holds its j-th k at
  // j = l, l + 16, ... (j from the part's start), an FMA chain from +0 restarted after every 32
  // of its k, the chunk sums added in order; lanes 0 .. 15 added in order; parts in order from +0.
  auto add = [](float x, float y) {
    volatile float t = x + y;
    return static_cast<float>(t);
  };
  auto fma = [](float a, float b, float c) { return std::fma(a, b, c); };
  std::vector<double> a(9000), b(9000);
  std::uint32_t s = 20261202;
  for (std::size_t i = 0; i < a.size(); ++i) {
    s = s * 1103515245u + 12345u;
    a[i] = std::ldexp(static_cast<double>((s >> 8) & 0xFF) - 128.0, -7);  // bf16-exact
    s = s * 1103515245u + 12345u;
    b[i] = std::ldexp(static_cast<double>((s >> 8) & 0xFF) - 128.0, static_cast<int>(s % 5) - 9);
  }
  auto ref = [&](std::size_t K, std::size_t S) {
    const std::size_t P = (K + S - 1) / S;
    float total = 0.0f;
    for (std::size_t p0 = 0; p0 < K; p0 += P) {
      const std::size_t n = std::min(P, K - p0);
      float part = 0.0f;
      for (std::size_t l = 0; l < 16; ++l) {
        float lane = 0.0f, c = 0.0f;
        std::size_t cnt = 0;
        for (std::size_t j = l; j < n; j += 16) {
          c = fma(static_cast<float>(a[p0 + j]), static_cast<float>(b[p0 + j]), c);
          if (++cnt == 32) {
            lane = add(lane, c);
            c = 0.0f;
            cnt = 0;
          }
        }
        if (cnt > 0) lane = add(lane, c);
        part = l == 0 ? lane : add(part, lane);
      }
      total = add(total, part);
    }
    return total;
  };
  for (auto [K, S] : {std::pair<std::size_t, std::size_t>{6696, 9},
                      {7453, 8},
                      {8111, 8},
                      {8999, 16},
                      {5703, 32},
                      {600, 3}}) {
    INFO("K " << K << " S " << S);
    const std::vector<double> x(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(K));
    const std::vector<double> y(b.begin(), b.begin() + static_cast<std::ptrdiff_t>(K));
    REQUIRE(dot(x, y, "fp32-seq:lanes=16,lanesum=seq,lanechunk=32,split=" + std::to_string(S)) ==
            ref(K, S));
  }
}

namespace {
std::string cli16() {
  const char* p = std::getenv("EXMY_CLI");
  return p ? p : "";
}
int run16(const std::string& args, const std::string& err) {
  const int rc = std::system((cli16() + " " + args + " >/dev/null 2>" + err).c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}
std::string slurp16(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
}  // namespace

TEST_CASE("exmy gemm --accum cublas-sm90-h200 on captured 16-bit CUDA-core shapes",
          "[cli][launch][simt16]") {
  if (cli16().empty()) {
    WARN("EXMY_CLI not set (run through ctest): skipped");
    return;
  }
  const fs::path d = fs::temp_directory_path() / ("exmy_test_simt16_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  const std::string dir = d.string(), err = dir + "/err.txt";
  // Shapes of the held-out capture (seed 20261201) whose H200 launch records are compiled in:
  // (type, M, N, K, output, the family rule's model, silent).
  struct Case {
    const char* t;
    std::size_t M, N, K;
    const char* out;
    const char* model;
    bool silent;
  };
  const Case cases[] = {
      {"bf16", 1, 201, 8111, "fp32", "fp32-seq:lanes=16,lanesum=seq,lanechunk=32,split=8", true},
      {"bf16", 1, 201, 8111, "bf16", "fp32-seq:lanes=16,lanesum=seq,lanechunk=32,split=8", true},
      {"bf16", 4, 135, 1676, "fp32", "fp32-seq:lanes=16,lanesum=seq,lanechunk=16", true},
      {"bf16", 1, 296, 2431, "fp32", "fp32-seq:lanes=32", true},
      {"bf16", 64, 1, 43, "bf16", "fp32-seq:lanes=2,vec=auto", true},
      {"fp16", 1, 7, 5727, "fp32", "fp32-seq:dot=31", true},
      {"fp16", 1, 89, 115, "fp32", "fp32-seq:lanes=4,vec=auto", true},
      {"fp16", 15, 1, 886, "fp32", "fp32-seq:lanes=32,vec=auto", false},
  };
  std::uint32_t s = 7;
  for (const Case& c : cases) {
    INFO(c.t << " " << c.M << "x" << c.N << "x" << c.K << " -> " << c.out);
    std::vector<std::uint16_t> a(c.M * c.K), b(c.N * c.K);
    const std::uint16_t base = std::string(c.t) == "bf16" ? 0x3E00 : 0x3000;
    for (auto* v : {&a, &b}) {
      for (auto& x : *v) {
        s = s * 1103515245u + 12345u;
        x = static_cast<std::uint16_t>(base + ((s >> 12) % 0x400) + ((s & 1u) << 15));
      }
    }
    io::write_npy(dir + "/a.npy", io::make_npy(a, {c.M, c.K}));
    io::write_npy(dir + "/b.npy", io::make_npy(b, {c.N, c.K}));
    const std::string g = "gemm --a " + dir + "/a.npy --b " + dir + "/b.npy --a-format " + c.t +
                          " --b-format " + c.t + " --out-format " + c.out + " ";
    REQUIRE(run16(g + "--accum " + c.model + " --out " + dir + "/e.npy", err) == 0);
    if (c.silent) {
      REQUIRE(run16(g + "--accum cublas-sm90-h200 --strict --out " + dir + "/c.npy", err) == 0);
      REQUIRE(slurp16(err).empty());
    } else {
      REQUIRE(run16(g + "--accum cublas-sm90-h200 --out " + dir + "/c.npy", err) == 0);
      REQUIRE(slurp16(err).find("outside the verified set") != std::string::npos);
      REQUIRE(slurp16(err).find(c.model) != std::string::npos);
      REQUIRE(run16(g + "--accum cublas-sm90-h200 --strict --out " + dir + "/x.npy", err) == 2);
    }
    REQUIRE(io::read_npy(dir + "/c.npy").data == io::read_npy(dir + "/e.npy").data);
  }
  fs::remove_all(d);
}
