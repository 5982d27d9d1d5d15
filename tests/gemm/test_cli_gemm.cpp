// exmy gemm end to end: the CLI contract's dtypes and every bad input exits 2 with nothing
// written ($EXMY_CLI, set by ctest).
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "sim/io/npy.hpp"

namespace fs = std::filesystem;
using namespace exmy;

namespace {
std::string cli() {
  const char* p = std::getenv("EXMY_CLI");
  return p ? p : "";
}
int run(const std::string& args) {
  const int rc = std::system((cli() + " " + args + " >/dev/null 2>&1").c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}
}  // namespace

TEST_CASE("exmy gemm: e4m3fn and bf16 inputs, fp32/bf16 outputs, bad inputs exit 2", "[cli]") {
  if (cli().empty()) {
    WARN("EXMY_CLI not set (run through ctest): skipped");
    return;
  }
  const fs::path d = fs::temp_directory_path() / ("exmy_test_gemm_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  const std::string s = d.string();
  // A: 2 x 3 e4m3fn codes of 1.0 (0x38); B: 2 x 3 codes of 2.0 (0x40): every output is 6.
  io::write_npy(s + "/a.npy", io::make_npy(std::vector<std::uint8_t>(6, 0x38), {2, 3}));
  io::write_npy(s + "/b.npy", io::make_npy(std::vector<std::uint8_t>(6, 0x40), {2, 3}));
  io::write_npy(s + "/b4.npy", io::make_npy(std::vector<std::uint8_t>(8, 0x40), {2, 4}));
  io::write_npy(s + "/h.npy", io::make_npy(std::vector<std::uint16_t>(6, 0x3F80), {2, 3}));
  const std::string base = "gemm --a " + s + "/a.npy --b " + s + "/b.npy --a-format e4m3fn ";
  REQUIRE(run(base + "--b-format e4m3fn --out-format fp32 --accum sm90 --out " + s + "/c.npy") ==
          0);
  const io::NpyArray c = io::read_npy(s + "/c.npy");
  REQUIRE(c.descr == "<f4");
  REQUIRE(c.shape == std::vector<std::size_t>{2, 2});
  for (float v : io::as_f32(c, "c")) REQUIRE(v == 6.0f);
  REQUIRE(run("gemm --a " + s + "/h.npy --b " + s + "/h.npy --a-format bf16 --b-format bf16 " +
              "--out-format bf16 --accum exact --out " + s + "/e.npy") == 0);
  const io::NpyArray e = io::read_npy(s + "/e.npy");
  REQUIRE(e.descr == "<u2");
  for (auto v : io::as_u16(e, "e")) REQUIRE(v == 0x4040);  // 3.0 in bf16
  REQUIRE(run("gemm --help") == 0);
  // Bad inputs: nothing written.
  const std::string out = " --out " + s + "/bad.npy";
  REQUIRE(run(base + "--b-format e4m3fn --out-format fp32 --accum sm99" + out) == 2);
  REQUIRE(run(base + "--b-format e4m3fn --out-format fp64 --accum exact" + out) == 2);
  REQUIRE(run(base + "--b-format fp64 --out-format fp32 --accum exact" + out) == 2);
  REQUIRE(run("gemm --a " + s + "/a.npy --b " + s +
              "/b4.npy --a-format e4m3fn --b-format e4m3fn "
              "--out-format fp32 --accum exact" +
              out) == 2);                                                             // K differs
  REQUIRE(run(base + "--b-format bf16 --out-format fp32 --accum exact" + out) == 2);  // |u1 as bf16
  REQUIRE(run(base + "--out-format fp32 --accum exact" + out) == 2);  // --b-format missing
  REQUIRE(run(base + "--b-format e4m3fn --out-format fp32 --accum sm80" + out) == 2);  // no FP8
  // --compat: torch-cuda names cuBLASLt's model (the same bytes as --accum cublas-sm90); a
  // profile without a gemm entry, or both options, exit 2.
  REQUIRE(run(base + "--b-format e4m3fn --out-format fp32 --compat torch-cuda --out " + s +
              "/p.npy") == 0);
  REQUIRE(run(base + "--b-format e4m3fn --out-format fp32 --accum cublas-sm90 --out " + s +
              "/q.npy") == 0);
  REQUIRE(io::read_npy(s + "/p.npy").data == io::read_npy(s + "/q.npy").data);
  REQUIRE(run(base + "--b-format e4m3fn --out-format fp32 --compat bnb-cuda" + out) == 2);
  REQUIRE(run(base + "--b-format e4m3fn --out-format fp32 --compat torch-cuda --accum exact" +
              out) == 2);
  REQUIRE_FALSE(fs::exists(s + "/bad.npy"));
  fs::remove_all(d);
}

TEST_CASE("exmy gemm: MX and NVFP4 block scales, bad scale inputs exit 2", "[cli]") {
  if (cli().empty()) {
    WARN("EXMY_CLI not set (run through ctest): skipped");
    return;
  }
  const fs::path d =
      fs::temp_directory_path() / ("exmy_test_gemm_bs_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  const std::string s = d.string();
  // A, B: 2 x 64 e2m1fn codes of 1.0 (0x2). MX scales: A's block 0 = 2^2 (0x81), block 1 = 1
  // (0x7F); B's all 1: every output is 32 * 4 + 32 = 160. NVFP4 scales (UE4M3 per 16):
  // 1.5 (0x3C) for A, 1 (0x38) for B: 64 * 1.5 = 96.
  io::write_npy(s + "/a.npy", io::make_npy(std::vector<std::uint8_t>(128, 0x2), {2, 64}));
  io::write_npy(s + "/sa.npy",
                io::make_npy(std::vector<std::uint8_t>{0x81, 0x7F, 0x81, 0x7F}, {2, 2}));
  io::write_npy(s + "/sb.npy", io::make_npy(std::vector<std::uint8_t>(4, 0x7F), {2, 2}));
  io::write_npy(s + "/na.npy", io::make_npy(std::vector<std::uint8_t>(8, 0x3C), {2, 4}));
  io::write_npy(s + "/nb.npy", io::make_npy(std::vector<std::uint8_t>(8, 0x38), {2, 4}));
  io::write_npy(s + "/neg.npy", io::make_npy(std::vector<std::uint8_t>(8, 0xB8), {2, 4}));
  const std::string base = "gemm --a " + s + "/a.npy --b " + s + "/a.npy --a-format e2m1fn " +
                           "--b-format e2m1fn --out-format fp32 ";
  for (const char* model : {"exact", "sm100", "fp32-seq"}) {
    INFO(model);
    REQUIRE(run(base + "--accum " + model + " --block-scale-a " + s + "/sa.npy --block-scale-b " +
                s + "/sb.npy --out " + s + "/mx.npy") == 0);
    for (float v : io::as_f32(io::read_npy(s + "/mx.npy"), "mx")) CHECK(v == 160.0f);
    REQUIRE(run(base + "--accum " + model + " --block-scale-a " + s + "/na.npy --block-scale-b " +
                s + "/nb.npy --block-scale-format e4m3fn --out " + s + "/nv.npy") == 0);
    for (float v : io::as_f32(io::read_npy(s + "/nv.npy"), "nv")) CHECK(v == 96.0f);
  }
  const std::string out = " --out " + s + "/bad.npy";
  const std::string mx = " --block-scale-a " + s + "/sa.npy --block-scale-b " + s + "/sb.npy";
  REQUIRE(run(base + "--accum sm90" + mx + out) == 2);                               // no MX MMA
  REQUIRE(run(base + "--accum exact --block-scale-a " + s + "/sa.npy" + out) == 2);  // one side
  REQUIRE(run(base + "--accum exact" + mx + " --block 48" + out) == 2);              // 64 % 48
  REQUIRE(run(base + "--accum exact" + mx + " --block 16" + out) == 2);              // shape 2 x 4
  REQUIRE(run(base + "--accum exact --block-scale-a " + s + "/neg.npy --block-scale-b " + s +
              "/nb.npy --block-scale-format e4m3fn" + out) == 2);    // signed UE4M3
  REQUIRE(run(base + "--accum exact --block 32" + out) == 2);        // no scales
  REQUIRE(run(base + "--accum hw:k=64,frac=35,sub=16" + out) == 2);  // sub, no scales
  REQUIRE(run(base + "--accum exact" + mx + " --block-scale-format e5m2" + out) == 2);
  REQUIRE_FALSE(fs::exists(s + "/bad.npy"));
  fs::remove_all(d);
}

TEST_CASE("exmy probe gemm: bad arguments exit 2 before anything runs", "[cli]") {
  if (cli().empty()) {
    WARN("EXMY_CLI not set (run through ctest): skipped");
    return;
  }
  REQUIRE(run("probe") == 2);
  REQUIRE(run("probe gemm --help") == 0);
  REQUIRE(run("probe conv --device cuda --lib cublaslt --out /tmp/x.json") == 2);
  REQUIRE(run("probe gemm --device cpu --lib cublaslt --out /tmp/x.json") == 2);
  REQUIRE(run("probe gemm --device cuda --lib rocblas --out /tmp/x.json") == 2);
  REQUIRE(run("probe gemm --device cuda --lib cublaslt") == 2);
}

TEST_CASE("exmy gemm: cublas-sm90 outside its verified set says so in one line; --strict exits 2",
          "[cli]") {
  if (cli().empty()) {
    WARN("EXMY_CLI not set (run through ctest): skipped");
    return;
  }
  const fs::path d =
      fs::temp_directory_path() / ("exmy_test_gemm_strict_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  const std::string s = d.string();
  // Runs exmy with stderr into a file; returns the exit status and the lines written there.
  auto run_err = [&](const std::string& args, std::vector<std::string>& lines) {
    const std::string err = s + "/err.txt";
    const int rc = std::system((cli() + " " + args + " >/dev/null 2>" + err).c_str());
    lines.clear();
    std::FILE* f = std::fopen(err.c_str(), "r");
    REQUIRE(f != nullptr);
    char buf[4096];
    while (std::fgets(buf, sizeof buf, f) != nullptr) lines.emplace_back(buf);
    std::fclose(f);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  };
  // bf16 ones: 32 x 32 x 32 is a probed (verified) shape of the compiled-in profile; 600 x 2 x 3
  // is not (M beyond every probe and campaign); e4m3fn the same two shapes.
  auto ones = [&](const std::string& name, std::size_t r, std::size_t k, bool fp8) {
    if (fp8) {
      io::write_npy(s + "/" + name, io::make_npy(std::vector<std::uint8_t>(r * k, 0x38), {r, k}));
    } else {
      io::write_npy(s + "/" + name,
                    io::make_npy(std::vector<std::uint16_t>(r * k, 0x3F80), {r, k}));
    }
  };
  ones("a32.npy", 32, 32, false);
  ones("a600.npy", 600, 3, false);
  ones("b2.npy", 2, 3, false);
  ones("f32.npy", 32, 32, true);
  ones("f600.npy", 600, 3, true);
  ones("g2.npy", 2, 3, true);
  std::vector<std::string> lines;
  for (const std::string strict : {"", " --strict"}) {
    for (const bool fp8 : {false, true}) {
      INFO("strict '" << strict << "' fp8 " << fp8);
      const std::string fmt = fp8 ? "e4m3fn" : "bf16";
      const std::string a = fp8 ? "/f" : "/a", b = fp8 ? "/f" : "/a", b2 = fp8 ? "/g" : "/b";
      const std::string common =
          " --a-format " + fmt + " --b-format " + fmt + " --out-format fp32 --accum cublas-sm90";
      // Verified: nothing on stderr, also under --strict.
      REQUIRE(run_err("gemm --a " + s + a + "32.npy --b " + s + b + "32.npy" + common + " --out " +
                          s + "/v.npy" + strict,
                      lines) == 0);
      REQUIRE(lines.empty());
      fs::remove(s + "/u.npy");
      const int rc = run_err("gemm --a " + s + a + "600.npy --b " + s + b2 + "2.npy" + common +
                                 " --out " + s + "/u.npy" + strict,
                             lines);
      // Outside: exactly one line naming the rule and the shape; --strict refuses, writes nothing.
      REQUIRE(lines.size() == 1);
      REQUIRE(lines[0].find(fmt + " 600x2x3 lies outside the verified set") != std::string::npos);
      REQUIRE(lines[0].find("rule") != std::string::npos);
      REQUIRE(rc == (strict.empty() ? 0 : 2));
      REQUIRE(fs::exists(s + "/u.npy") == strict.empty());
    }
  }
  // Models that are not a library's have no verified set: nothing said, --strict passes.
  REQUIRE(run_err("gemm --a " + s + "/a600.npy --b " + s +
                      "/b2.npy --a-format bf16 --b-format "
                      "bf16 --out-format fp32 --accum sm90 --strict --out " +
                      s + "/w.npy",
                  lines) == 0);
  REQUIRE(lines.empty());
  fs::remove_all(d);
}
