// exmy analyze (docs/SEMANTICS.md 18): the metrics against hand-worked tiny tensors, the round
// trips through the quantizer on inputs whose codes are worked out by hand, the fp64 products,
// and the command end to end through $EXMY_CLI: the CSV parses (RFC 4180), is the same bytes for
// 1 and 2 threads, and bad input is one line, exit 2, nothing written.
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "../io/rfc4180_parse.hpp"
#include "reports/analyze.hpp"
#include "sim/common/error.hpp"
#include "sim/io/npy.hpp"

extern char** environ;
namespace fs = std::filesystem;
using namespace exmy;
using reports::AnalyzeCombo;

namespace {

AnalyzeCombo combo(const std::string& format, const std::string& scheme) {
  std::vector<AnalyzeCombo> c = reports::analyze_combos(format, scheme, nullptr);
  REQUIRE(c.size() == 1);
  return c[0];
}

int run_cli(const std::vector<std::string>& args, std::string* err = nullptr) {
  const char* cli = std::getenv("EXMY_CLI");
  REQUIRE(cli != nullptr);
  const std::string errfile =
      (fs::temp_directory_path() / ("exmy_analyze_err_" + std::to_string(getpid()))).string();
  std::string cmd = std::string("'") + cli + "' analyze";
  for (const auto& a : args) cmd += " '" + a + "'";
  cmd += " 2>'" + errfile + "' >/dev/null";
  const int st = std::system(cmd.c_str());
  if (err != nullptr) {
    std::ifstream in(errfile);
    std::stringstream ss;
    ss << in.rdbuf();
    *err = ss.str();
  }
  fs::remove(errfile);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A deterministic pseudo-random matrix (an LCG; the values only need to be fixed).
std::vector<float> matrix(std::size_t n, std::uint32_t seed, float scale) {
  std::vector<float> v(n);
  std::uint32_t s = seed;
  for (auto& x : v) {
    s = s * 1664525u + 1013904223u;
    x = scale * (static_cast<float>(s >> 8) / 16777216.0f - 0.5f);
  }
  return v;
}

}  // namespace

TEST_CASE("analyze: element metrics of a hand-worked tensor", "[analyze]") {
  // x = 1, -2, 2^-7, 4; d = 1, -2.5, 0, 4: e = 0, -0.5, -2^-7, 0.
  const float x[] = {1.0f, -2.0f, 0.0078125f, 4.0f};
  const float d[] = {1.0f, -2.5f, 0.0f, 4.0f};
  const reports::ElementStats s = reports::element_stats(x, d, 4, 1);
  const double sx = 21.0 + std::ldexp(1.0, -14), se = 0.25 + std::ldexp(1.0, -14);
  CHECK(s.sum_x2 == sx);
  CHECK(s.sum_e2 == se);
  CHECK(s.rel_mse == se / sx);
  CHECK(s.nsr == std::sqrt(se / sx));
  CHECK(s.snr_db == Approx(-10.0 * std::log10(se / sx)).epsilon(1e-15));
  CHECK(s.max_abs_err == 0.5);
  CHECK(s.underflow == 0.25);
  CHECK(s.saturated == 0.25);
  // An all-zero tensor: 0 error is rel_mse 0 (SNR inf); any error is rel_mse inf.
  const float z[] = {0.0f, 0.0f};
  const float one[] = {0.0f, 1.0f};
  CHECK(reports::element_stats(z, z, 2, 0).rel_mse == 0.0);
  CHECK(std::isinf(reports::element_stats(z, z, 2, 0).snr_db));
  CHECK(std::isinf(reports::element_stats(z, one, 2, 0).rel_mse));
}

TEST_CASE("analyze: int8 tensor-wise round trip worked by hand", "[analyze]") {
  // absmax 127: the scale is 1, codes are RNE(x): 127, 64 (63.5 ties to even), 0, -127.
  const std::vector<float> x = {127.0f, 63.5f, 0.4f, -127.0f};
  const reports::RoundTrip r = reports::fake_quantize(combo("int8", "tensor"), x, {4});
  REQUIRE(r.d == std::vector<float>({127.0f, 64.0f, 0.0f, -127.0f}));
  CHECK(r.saturated == 0);  // the top code holds its own value: not saturated
  const reports::ElementStats s = reports::element_stats(x.data(), r.d.data(), 4, r.saturated);
  CHECK(s.underflow == 0.25);
  CHECK(s.max_abs_err == Approx(0.5));
}

TEST_CASE("analyze: MX e4m3fn floor scale saturates beyond the top code", "[analyze]") {
  // One block of 32, absmax 500: E8M0 scale 2^(floor(log2 500) - 8) = 1 (OCP MX, floor), so 500
  // clamps to 448 (saturated: 52 > half the top spacing 16), 440 rounds up to 448 and 460 down to
  // 448 (within half a spacing: rounding, not saturation).
  std::vector<float> x(32, 1.0f);
  x[0] = 500.0f;
  x[1] = 440.0f;
  x[2] = -460.0f;
  const reports::RoundTrip r = reports::fake_quantize(combo("mx:e4m3fn", "tensor"), x, {32});
  CHECK(r.d[0] == 448.0f);
  CHECK(r.d[1] == 448.0f);
  CHECK(r.d[2] == -448.0f);
  CHECK(r.d[3] == 1.0f);
  CHECK(r.saturated == 1);
}

TEST_CASE("analyze: nvfp4 one level underflows where two levels do not", "[analyze]") {
  // 16 values 1e-4 .. 1.6e-3: the E4M3 block scale amax / 6 = 2.7e-4 lies below half E4M3's
  // smallest subnormal (2^-10), so one level gives a zero scale and every element is 0; the
  // per-tensor fp32 scale of two levels lifts the block scale into E4M3's range.
  std::vector<float> x(16);
  for (int i = 0; i < 16; ++i) x[i] = 1e-4f * static_cast<float>(i + 1);
  const reports::RoundTrip one =
      reports::fake_quantize(combo("nvfp4:one-level", "tensor"), x, {16});
  const reports::ElementStats s1 = reports::element_stats(x.data(), one.d.data(), 16, 0);
  CHECK(s1.underflow == 1.0);
  CHECK(s1.nsr == 1.0);
  const reports::RoundTrip two = reports::fake_quantize(combo("nvfp4", "tensor"), x, {16});
  const reports::ElementStats s2 = reports::element_stats(x.data(), two.d.data(), 16, 0);
  CHECK(s2.nsr < 0.2);
}

TEST_CASE("analyze: bf16 and fp16 casts (RNE, overflow counted as saturated)", "[analyze]") {
  // fp16: 1 + 2^-11 ties to 1 (even), 70000 overflows to infinity, 2^-26 underflows to 0.
  const std::vector<float> x = {1.0f + 0x1p-11f, 70000.0f, 0x1p-26f};
  const reports::RoundTrip r = reports::fake_quantize(combo("fp16", "tensor"), x, {3});
  CHECK(r.d[0] == 1.0f);
  CHECK(std::isinf(r.d[1]));
  CHECK(r.d[2] == 0.0f);
  CHECK(r.saturated == 1);
  const reports::RoundTrip b = reports::fake_quantize(combo("bf16", "tensor"), x, {3});
  CHECK(b.d[0] == 1.0f);
  CHECK(b.d[1] == 70144.0f);  // 70000 = 1.068 x 2^16: bf16 spacing 512 there
  CHECK(b.saturated == 0);
}

TEST_CASE("analyze: combinations", "[analyze]") {
  std::vector<std::string> skipped;
  const auto all =
      reports::analyze_combos(reports::kDefaultFormats, reports::kDefaultSchemes, &skipped);
  std::size_t mx = 0, nv = 0, cast = 0;
  for (const auto& c : all) {
    mx += c.scheme == "mx";
    nv += c.scheme == "nvfp4";
    cast += c.cast;
  }
  CHECK(mx == 2);
  CHECK(nv == 1);
  CHECK(cast == 2);
  INFO("combinations " << all.size() << ", skipped " << skipped.size());
  CHECK(all.size() + skipped.size() == 3 * 5 + 2 + 1 + 2);
  CHECK_THROWS_AS(reports::analyze_combos("int9", "tensor", nullptr), InputError);
  CHECK_THROWS_AS(reports::analyze_combos("int8", "mx", nullptr), InputError);
  CHECK_THROWS_AS(reports::analyze_combos("int8,", "tensor", nullptr), InputError);
  CHECK_THROWS_AS(reports::analyze_combos("dynamic", "block:256", nullptr), InputError);
  CHECK_THROWS_AS(reports::analyze_combos("mx:int8", "tensor", nullptr), InputError);
}

TEST_CASE("analyze: fp64 products and sampled rows worked by hand", "[analyze]") {
  const float a[] = {1, 2, 3, 4}, b[] = {5, 6, 7, 8};
  using reports::ProductForm;
  CHECK(reports::product_rows(ProductForm::nt, a, b, 2, 2, 2, {0, 1}) ==
        std::vector<double>({17, 23, 39, 53}));
  CHECK(reports::product_rows(ProductForm::nn, a, b, 2, 2, 2, {0, 1}) ==
        std::vector<double>({19, 22, 43, 50}));
  CHECK(reports::product_rows(ProductForm::tn, a, b, 2, 2, 2, {1}) ==
        std::vector<double>({38, 44}));
  CHECK(reports::sampled_rows(10, 4) == std::vector<std::size_t>({0, 2, 5, 7}));
  CHECK(reports::sampled_rows(3, 0) == std::vector<std::size_t>({0, 1, 2}));
  CHECK(reports::sampled_rows(3, 8) == std::vector<std::size_t>({0, 1, 2}));
  const reports::ProductStats s = reports::product_stats({1, 2}, {1, 1});
  CHECK(s.rel_err == std::sqrt(0.5));
  CHECK(s.max_abs_err == 1.0);
}

TEST_CASE("analyze: the command: CSV parses, same bytes for 1 and 2 threads, refusals",
          "[analyze][cli]") {
  const fs::path root = fs::temp_directory_path() / ("exmy_analyze_" + std::to_string(getpid()));
  fs::remove_all(root);
  const fs::path in = root / "in";
  fs::create_directories(in);
  io::write_npy((in / "lin.x.npy").string(), io::make_npy(matrix(8 * 64, 1, 2.0f), {8, 64}));
  io::write_npy((in / "lin.w.npy").string(), io::make_npy(matrix(16 * 64, 2, 0.25f), {16, 64}));
  io::write_npy((in / "lin.g.npy").string(), io::make_npy(matrix(8 * 16, 3, 1e-3f), {8, 16}));
  // bf16 bit patterns (<u2): 1.0 everywhere (0x3F80).
  io::write_npy((in / "bias.npy").string(),
                io::make_npy(std::vector<std::uint16_t>(32, 0x3F80), {2, 16}));
  const std::vector<std::string> common = {"--tensors",    in.string(),
                                           "--no-figures", "--quiet",
                                           "--formats",    "int8,e4m3fn,mx:e2m1fn,nvfp4,bf16"};
  auto args = [&](const std::string& out, const std::string& threads) {
    std::vector<std::string> a = common;
    a.insert(a.end(), {"--out-dir", (root / out).string(), "--threads", threads});
    return a;
  };
  REQUIRE(run_cli(args("t1", "1")) == 0);
  REQUIRE(run_cli(args("t2", "2")) == 0);
  const std::string csv1 = slurp(root / "t1" / "analyze.csv");
  CHECK(csv1 == slurp(root / "t2" / "analyze.csv"));
  CHECK(fs::exists(root / "t1" / "index.md"));
  const test::CsvRows rows = test::parse_csv_rfc4180(csv1);
  REQUIRE(rows.size() > 1);
  CHECK(rows[0] == std::vector<std::string>({"item", "kind", "product", "shape", "format", "scheme",
                                             "elements", "rows_used", "rel_mse", "nsr", "snr_db",
                                             "max_abs_err", "underflow", "saturated"}));
  std::size_t products = 0, tensors = 0;
  for (std::size_t i = 1; i < rows.size(); ++i) {
    REQUIRE(rows[i].size() == rows[0].size());
    if (rows[i][1] == "matmul") {
      ++products;
      if (rows[i][4] == "bf16") CHECK(std::stod(rows[i][9]) < 0x1p-8);
    } else {
      ++tensors;
    }
  }
  // 4 tensors, 3 products; int8 and e4m3fn x 5 schemes (where valid), mx, nvfp4, bf16.
  CHECK(products > 0);
  CHECK(tensors > products);
  // Refusals: one line, exit 2, nothing written.
  std::string err;
  CHECK(run_cli(args("t1", "1"), &err) == 2);  // exists
  CHECK(err.find("exists") != std::string::npos);
  auto refused = [&](const std::vector<std::string>& a, const std::string& what) {
    std::string e;
    CHECK(run_cli(a, &e) == 2);
    CHECK(e.find(what) != std::string::npos);
    CHECK(std::count(e.begin(), e.end(), '\n') == 1);
    CHECK_FALSE(fs::exists(root / "bad"));
  };
  std::vector<std::string> bad = args("bad", "1");
  bad[5] = "int8,bogus";
  refused(bad, "bogus");
  refused({"--tensors", (root / "none").string(), "--out-dir", (root / "bad").string()},
          "not a directory");
  const fs::path in2 = root / "in2";
  fs::create_directories(in2);
  io::write_npy((in2 / "a.x.npy").string(), io::make_npy(matrix(4 * 8, 1, 1.0f), {4, 8}));
  refused({"--tensors", in2.string(), "--out-dir", (root / "bad").string()}, "a.w.npy missing");
  io::write_npy((in2 / "a.w.npy").string(), io::make_npy(matrix(4 * 9, 1, 1.0f), {4, 9}));
  refused({"--tensors", in2.string(), "--out-dir", (root / "bad").string()}, "matmul a");
  fs::remove(in2 / "a.x.npy");
  fs::remove(in2 / "a.w.npy");
  std::vector<float> nan = matrix(8, 1, 1.0f);
  nan[3] = std::nanf("");
  io::write_npy((in2 / "t.npy").string(), io::make_npy(nan, {8}));
  refused({"--tensors", in2.string(), "--out-dir", (root / "bad").string()}, "non-finite");
  io::write_npy((in2 / "t.npy").string(), io::make_npy(std::vector<std::int32_t>(4, 1), {4}));
  refused({"--tensors", in2.string(), "--out-dir", (root / "bad").string()}, "dtype <i4");
  // No staging directory left behind.
  for (const auto& e : fs::directory_iterator(root)) {
    CHECK(e.path().filename().string().rfind(".exmy-stage", 0) != 0);
  }
  fs::remove_all(root);
}
