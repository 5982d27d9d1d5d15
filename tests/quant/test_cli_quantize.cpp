// exmy quantize / dequantize round trips through the CLI (EXMY_CLI is set by ctest), compared
// with the library calls, and its input errors (exit code 2, no output file).
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <string>

#include "sim/common/error.hpp"
#include "sim/io/npy.hpp"
#include "sim/quant/quantize.hpp"
#include "tests/quant/quant_test_util.hpp"
#include "tests/support/cli_run.hpp"

using namespace exmy;

namespace {

// Only $EXMY_CLI: these tests are skipped when ctest did not name the executable.
std::string cli() {
  const char* p = std::getenv("EXMY_CLI");
  return p ? p : "";
}
using testing::run;
using testing::slurp;

std::filesystem::path tmpdir() {
  auto d = std::filesystem::temp_directory_path() / ("exmy_quant_cli_" + std::to_string(getpid()));
  std::filesystem::create_directories(d);
  return d;
}

}  // namespace

TEST_CASE("CLI quantize -> dequantize round trip equals the library", "[quant][cli]") {
  if (cli().empty()) {
    WARN("EXMY_CLI not set (run through ctest): CLI round trip not exercised");
    return;
  }
  const auto dir = tmpdir();
  std::mt19937_64 rng(5150);
  const auto x = quant_test::random_floats(rng, 6 * 50);
  const std::string xin = (dir / "x.npy").string();
  io::write_npy(xin, io::make_npy(x, {6, 50}));
  struct Case {
    const char* scheme;
    const char* target;
    const char* extra;
  };
  const Case cases[] = {{"rowwise", "int8", ""},
                        {"colwise", "int8", "--order recip-mul"},
                        {"tensor", "int8", "--transpose --round sr:8 --seed 9"},
                        {"block:32", "e4m3fn", "--variant absmax"},
                        {"tensor", "e5m2", "--variant te --margin 1"},
                        {"rowwise", "e4m3fn", "--variant torchao"},
                        {"mx", "e2m1fn", ""},
                        {"block:64", "dynamic", "--norm div"}};
  for (const Case& c : cases) {
    INFO(c.scheme << " " << c.target << " " << c.extra);
    const std::string q = (dir / "q.npy").string(), s = (dir / "s.npy").string(),
                      xh = (dir / "xh.npy").string();
    REQUIRE(run(std::string("quantize --scheme ") + c.scheme + " --to " + c.target + " " + c.extra +
                " --in " + xin + " --out " + q + " --state-out " + s) == 0);
    REQUIRE(run(std::string("dequantize --scheme ") + c.scheme + " --from " + c.target + " " +
                c.extra + " --in " + q + " --state " + s + " --out " + xh) == 0);
    // The same through the library.
    quant::Options o;
    o.scheme = quant::parse_scheme(c.scheme);
    o.target = quant::parse_target(c.target);
    const std::string extra = c.extra;
    if (extra.find("recip-mul") != std::string::npos) o.order = native::ScaleOrder::recip_mul;
    if (extra.find("--transpose") != std::string::npos) o.transpose = true;
    if (extra.find("sr:8") != std::string::npos) {
      o.mode = RoundMode::sr;
      o.sr_bits = 8;
      o.seed = 9;
    }
    if (extra.find("te") != std::string::npos) {
      o.variant = native::CastVariant::te;
      o.te_margin = 1;
    }
    if (extra.find("torchao") != std::string::npos) o.variant = native::CastVariant::torchao;
    if (extra.find("div") != std::string::npos) o.norm = native::NormOrder::div;
    const quant::Quantized want = quant::quantize(x, {6, 50}, o);
    const io::NpyArray qa = io::read_npy(q);
    CHECK(qa.shape == want.shape);
    CHECK(qa.data == want.codes);
    const io::NpyArray sa = io::read_npy(s);
    if (o.scheme.kind == quant::Granularity::mx) {
      CHECK(io::as_u8(sa, s) == want.scale_codes);
    } else {
      CHECK(io::as_f32(sa, s) == want.state);
    }
    const auto back = io::as_f32(io::read_npy(xh), xh);
    const auto want_back = quant::dequantize(want, o);
    REQUIRE(back.size() == want_back.size());
    bool same = true;
    for (std::size_t i = 0; i < back.size(); ++i) {
      same &= native::bits_of(back[i]) == native::bits_of(want_back[i]);
    }
    CHECK(same);
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("CLI quantize input errors exit 2 and write nothing", "[quant][cli]") {
  if (cli().empty()) {
    WARN("EXMY_CLI not set (run through ctest): CLI errors not exercised");
    return;
  }
  const auto dir = tmpdir();
  const std::string xin = (dir / "x.npy").string(), q = (dir / "q.npy").string(),
                    s = (dir / "s.npy").string();
  io::write_npy(xin, io::make_npy(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3}));
  const std::string io_args = " --in " + xin + " --out " + q + " --state-out " + s;
  CHECK(run("quantize --scheme block:16 --to int8" + io_args) == 2);
  CHECK(run("quantize --scheme tensor --to int4" + io_args) == 2);
  CHECK(run("quantize --scheme mx --to int8" + io_args) == 2);
  CHECK(run("quantize --scheme tensor --to int8 --variant te" + io_args) == 2);
  CHECK(run("quantize --scheme tensor --to int8 --round sr:0" + io_args) == 2);
  CHECK(run("quantize --scheme tensor --to int8" + io_args + " --bogus") == 2);
  CHECK(run("quantize --scheme tensor --to int8 --in-format bf16" + io_args) == 2);
  CHECK_FALSE(std::filesystem::exists(q));
  CHECK_FALSE(std::filesystem::exists(s));
  // A 3-d tensor cannot be quantized with --transpose.
  io::write_npy(xin, io::make_npy(std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8}, {2, 2, 2}));
  CHECK(run("quantize --scheme tensor --to int8 --transpose" + io_args) == 2);
  // State of the wrong length for dequantize.
  io::write_npy(xin, io::make_npy(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3}));
  REQUIRE(run("quantize --scheme rowwise --to int8" + io_args) == 0);
  CHECK(run("dequantize --scheme colwise --from int8 --in " + q + " --state " + s + " --out " +
            (dir / "xh.npy").string()) == 2);
  CHECK_FALSE(std::filesystem::exists(dir / "xh.npy"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("CLI quantize reads fp16 and bf16 inputs exactly", "[quant][cli]") {
  if (cli().empty()) {
    WARN("EXMY_CLI not set (run through ctest): CLI dtypes not exercised");
    return;
  }
  const auto dir = tmpdir();
  // fp16 codes 0x3C00 (1.0), 0xC500 (-5.0), 0x0001 (2^-24); bf16 0x3F80 (1.0), 0xC0A0 (-5.0).
  const std::string h = (dir / "h.npy").string(), b = (dir / "b.npy").string(),
                    q = (dir / "q.npy").string(), s = (dir / "s.npy").string();
  io::NpyArray ha = io::make_npy(std::vector<std::uint16_t>{0x3C00, 0xC500, 0x0001}, {3});
  ha.descr = io::kDescrF16;
  io::write_npy(h, ha);
  io::write_npy(b, io::make_npy(std::vector<std::uint16_t>{0x3F80, 0xC0A0}, {2}));
  REQUIRE(run("quantize --scheme tensor --to int8 --in " + h + " --out " + q + " --state-out " +
              s) == 0);
  CHECK(io::as_f32(io::read_npy(s), s) == std::vector<float>{5.0f});
  const auto codes = io::as_i8(io::read_npy(q), q);
  CHECK(codes == std::vector<std::int8_t>{25, -127, 0});  // 127/5 = 25.4 -> 25
  REQUIRE(run("quantize --scheme tensor --to int8 --in-format bf16 --in " + b + " --out " + q +
              " --state-out " + s) == 0);
  CHECK(io::as_i8(io::read_npy(q), q) == std::vector<std::int8_t>{25, -127});
  // bf16 bit patterns without --in-format are rejected (uint16 is not a float dtype).
  CHECK(run("quantize --scheme tensor --to int8 --in " + b + " --out " + q + " --state-out " + s) ==
        2);
  std::filesystem::remove_all(dir);
}

// --device cuda: on a machine with a GPU the files must equal the CPU path's byte for byte (the
// same NPY headers and bits); without one (CI) the command must fail cleanly with exit code 2
// and write nothing. Covers quantize, dequantize and cast.
TEST_CASE("CLI --device cuda equals --device cpu, or fails cleanly without a GPU", "[quant][cli]") {
  if (cli().empty()) {
    WARN("EXMY_CLI not set (run through ctest): --device not exercised");
    return;
  }
  const auto dir = tmpdir();
  std::mt19937_64 rng(777);
  const auto x = quant_test::random_floats(rng, 7 * 96);
  const std::string xin = (dir / "xd.npy").string();
  io::write_npy(xin, io::make_npy(x, {7, 96}));
  CHECK(run("quantize --scheme rowwise --to int8 --device gpu --in " + xin + " --out " +
            (dir / "bad.npy").string() + " --state-out " + (dir / "bads.npy").string()) == 2);
  CHECK_FALSE(std::filesystem::exists(dir / "bad.npy"));
  const char* cases[] = {"quantize --scheme rowwise --to int8",
                         "quantize --scheme tensor --to e4m3fn --round sr:8 --seed 3",
                         "quantize --scheme block:32 --to dynamic",
                         "quantize --scheme mx --to e2m1fn",
                         "quantize --scheme rowwise --to int8 --transpose",
                         "cast e4m3fn --round sr:5 --seed 11",
                         "cast e5m2 --decoded",
                         "cast bf16 --round rtz"};
  for (const char* c : cases) {
    INFO(c);
    const bool is_cast = std::string(c).rfind("cast", 0) == 0;
    const auto io_args = [&](const std::string& tag) {
      const std::string out = (dir / ("o_" + tag + ".npy")).string();
      return " --in " + xin + " --out " + out +
             (is_cast ? "" : " --state-out " + (dir / ("s_" + tag + ".npy")).string());
    };
    std::filesystem::remove(dir / "o_cuda.npy");
    REQUIRE(run(std::string(c) + io_args("cpu")) == 0);
    const int rc = run(std::string(c) + " --device cuda" + io_args("cuda"));
    if (rc != 0) {
      CHECK(rc == 2);
      CHECK_FALSE(std::filesystem::exists(dir / "o_cuda.npy"));
      continue;
    }
    CHECK(slurp(dir / "o_cpu.npy") == slurp(dir / "o_cuda.npy"));
    if (!is_cast) CHECK(slurp(dir / "s_cpu.npy") == slurp(dir / "s_cuda.npy"));
    if (std::string(c).find("quantize") == 0) {  // and back, on each device
      const std::string deq = std::string("dequantize ") + (std::string(c).substr(9)) + " --in ";
      const std::string from = std::regex_replace(deq, std::regex("--to "), "--from ");
      REQUIRE(run(from + (dir / "o_cpu.npy").string() + " --state " + (dir / "s_cpu.npy").string() +
                  " --out " + (dir / "d_cpu.npy").string()) == 0);
      REQUIRE(run(from + (dir / "o_cpu.npy").string() + " --state " + (dir / "s_cpu.npy").string() +
                  " --device cuda --out " + (dir / "d_cuda.npy").string()) == 0);
      CHECK(slurp(dir / "d_cpu.npy") == slurp(dir / "d_cuda.npy"));
    }
  }
}

TEST_CASE("every --variant and --scale-mode named in the usage text parses (te-current drift)",
          "[quant][cli][regression]") {
  // Regression: `te-current` was listed in exmy quantize's usage and in SEMANTICS but the parser
  // refused it, so --amax-epsilon could not be reached.
  for (const char* v : quant::kVariantNames) CHECK_NOTHROW(quant::parse_variant(v));
  for (const char* m : quant::kScaleModeNames) CHECK_NOTHROW(quant::parse_scale_mode(m));
  CHECK(quant::parse_variant("te-current") == native::CastVariant::te_current);
  if (cli().empty()) {
    WARN("EXMY_CLI not set (run through ctest): usage text not read");
    return;
  }
  // The help text's own lists: each alternative of the option's value ("--variant a|b|c") must
  // parse.
  const std::string cmd = cli() + " quantize --help";
  FILE* f = popen(cmd.c_str(), "r");
  REQUIRE(f != nullptr);
  std::string usage;
  char buf[512];
  while (std::fgets(buf, sizeof buf, f)) usage += buf;
  pclose(f);
  for (const std::string flag : {"--variant ", "--scale-mode "}) {
    const std::size_t at = usage.find(flag);
    REQUIRE(at != std::string::npos);
    const std::size_t end = usage.find_first_of(" \n", at + flag.size());
    std::string list = usage.substr(at + flag.size(), end - at - flag.size());
    std::size_t start = 0;
    int names = 0;
    while (start <= list.size()) {
      const std::size_t bar = std::min(list.find('|', start), list.size());
      const std::string name = list.substr(start, bar - start);
      INFO(flag << name);
      if (flag == "--variant ") {
        CHECK_NOTHROW(quant::parse_variant(name));
      } else {
        CHECK_NOTHROW(quant::parse_scale_mode(name));
      }
      ++names;
      start = bar + 1;
    }
    CHECK(names >= 4);
  }
  // And the CLI itself accepts te-current with its epsilon.
  const auto d = tmpdir();
  io::write_npy((d / "x.npy").string(), io::make_npy(std::vector<float>{0.0f, 1e-30f, -2.0f}, {3}));
  CHECK(run("quantize --scheme tensor --to e4m3fn --variant te-current --amax-epsilon 1 --in " +
            (d / "x.npy").string() + " --out " + (d / "q.npy").string() + " --state-out " +
            (d / "s.npy").string()) == 0);
  CHECK(io::as_f32(io::read_npy((d / "s.npy").string()), "s")[0] == 224.0f);  // 448 / max(2, 1)
}

TEST_CASE("dequantize refuses codes wider than the format (e2m1 code 16)", "[quant][regression]") {
  // A 4-bit format's codes are 0..15; a byte of 16 or more is corrupt input, not a code.
  quant::Options o;
  o.scheme = quant::parse_scheme("tensor");
  o.target = quant::parse_target("e2m1fn");
  quant::Quantized q;
  q.shape = {4};
  q.codes = {0, 15, 16, 1};
  q.state = {1.0f};
  q.state_shape = {1};
  CHECK_THROWS_WITH(quant::dequantize(q, o), Catch::Contains("element 2 holds 16"));
  q.codes[2] = 7;
  CHECK_NOTHROW(quant::dequantize(q, o));
}

TEST_CASE("mx with --transpose is still accepted (regression: the plan refused it)",
          "[quant][regression]") {
  // MX had a fused transpose before the plan; validate_options briefly refused it, which the
  // GPU scheme test caught on a device run.
  quant::Options o;
  o.scheme = quant::parse_scheme("mx");
  o.target = quant::parse_target("e4m3fn");
  o.transpose = true;
  std::vector<float> x(2 * 64);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i) - 50.0f;
  const quant::Quantized q = quant::quantize(x, {2, 64}, o);
  CHECK(q.shape == std::vector<std::size_t>{64, 2});
  const std::vector<float> back = quant::dequantize(q, o);
  o.transpose = false;
  const quant::Quantized plain = quant::quantize(x, {2, 64}, o);
  CHECK(back == quant::dequantize(plain, o));
  CHECK(q.codes[1] == plain.codes[64]);  // code of (r=1, c=0) at c * rows + r
}

TEST_CASE("a user codebook that cannot be read is named by its own error", "[quant][regression]") {
  // parse_target once replaced every registry error by the list of targets, hiding why a
  // table:PATH / codebook:PATH failed.
  for (const char* spelling : {"codebook:", "table:"}) {
    const std::string name = std::string(spelling) + "/nonexistent/exmy_table.bin";
    INFO(name);
    try {
      (void)quant::parse_target(name);
      FAIL("accepted an unreadable codebook");
    } catch (const InputError& e) {
      CHECK_THAT(e.what(), Catch::Contains("/nonexistent/exmy_table.bin"));
      CHECK_THAT(e.what(), !Catch::Contains("expected int8"));
    }
  }
  CHECK_THROWS_WITH(quant::parse_target("bogus"), Catch::Contains("expected int8"));
}

TEST_CASE("CLI nvfp4: a tensor scale or amax of 0, NaN or inf is refused, nothing written",
          "[quant][cli][nvfp4]") {
  if (cli().empty()) {
    WARN("EXMY_CLI not set (run through ctest): not exercised");
    return;
  }
  const auto d = tmpdir();
  io::write_npy((d / "x.npy").string(), io::make_npy(std::vector<float>(32, 1.5f), {2, 16}));
  for (const char* flag : {"--tensor-scale", "--tensor-amax"}) {
    for (const char* v : {"0", "nan", "inf", "-2"}) {
      INFO(flag << " " << v);
      const auto q = d / "q_bad.npy";
      CHECK(run(std::string("quantize --scheme nvfp4 --to e2m1fn --two-level ") + flag + " " + v +
                " --in " + (d / "x.npy").string() + " --out " + q.string() + " --state-out " +
                (d / "s_bad.npy").string() + " --tensor-scale-out " + (d / "t_bad.npy").string()) ==
            2);
      CHECK(!std::filesystem::exists(q));
    }
  }
  // Two-level without --tensor-scale-out, and an odd last dimension: refused too.
  CHECK(run("quantize --scheme nvfp4 --to e2m1fn --two-level --in " + (d / "x.npy").string() +
            " --out " + (d / "q2.npy").string() + " --state-out " + (d / "s2.npy").string()) == 2);
  io::write_npy((d / "odd.npy").string(), io::make_npy(std::vector<float>(24, 1.0f), {24}));
  CHECK(run("quantize --scheme nvfp4 --to e2m1fn --in " + (d / "odd.npy").string() + " --out " +
            (d / "q3.npy").string() + " --state-out " + (d / "s3.npy").string()) == 2);
  CHECK(!std::filesystem::exists(d / "q3.npy"));
}
