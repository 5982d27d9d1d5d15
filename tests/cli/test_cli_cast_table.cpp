// The `exmy table` / `exmy cast` contract (docs/SEMANTICS.md section 11): exact JSON for a fixed
// set of inputs, every error path's exit code 2 and one-line message, and .npy array casts.
#include <sys/wait.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "sim/io/npy.hpp"
#include "sim/native/convert.hpp"
#include "sim/native/int_format.hpp"

using namespace exmy;

namespace {

struct Run {
  int rc;
  std::string out, err;
};

const std::filesystem::path kDir = std::filesystem::temp_directory_path() / "exmy_test_cli_cast";

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

Run run_exmy(const std::string& args) {
  const char* cli = std::getenv("EXMY_CLI");
  REQUIRE(cli != nullptr);
  std::filesystem::create_directories(kDir);
  const auto out = kDir / "stdout.txt", err = kDir / "stderr.txt";
  const std::string cmd =
      std::string("'") + cli + "' " + args + " >'" + out.string() + "' 2>'" + err.string() + "'";
  const int status = std::system(cmd.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(out), slurp(err)};
}

}  // namespace

TEST_CASE("cast e4m3fn: exact JSON", "[cli]") {
  const Run r = run_exmy("cast e4m3fn --json 0.1 448 464 465 -0 nan");
  REQUIRE(r.rc == 0);
  CHECK(r.out ==
        "[\n"
        "{\"input\": \"0.1\", \"code\": 29, \"class\": \"normal\", \"value\": \"0x1.ap-4\", "
        "\"flags\": [\"inexact\"]},\n"
        "{\"input\": \"448\", \"code\": 126, \"class\": \"normal\", \"value\": \"0x1.cp+8\", "
        "\"flags\": []},\n"
        "{\"input\": \"464\", \"code\": 126, \"class\": \"normal\", \"value\": \"0x1.cp+8\", "
        "\"flags\": [\"inexact\"]},\n"
        "{\"input\": \"465\", \"code\": 127, \"class\": \"nan\", \"value\": \"nan\", "
        "\"flags\": [\"inexact\",\"overflow\"]},\n"
        "{\"input\": \"-0\", \"code\": 128, \"class\": \"zero\", \"value\": \"-0x0p+0\", "
        "\"flags\": []},\n"
        "{\"input\": \"nan\", \"code\": 127, \"class\": \"nan\", \"value\": \"nan\", "
        "\"flags\": []}\n"
        "]\n");
  CHECK(r.err.empty());
}

TEST_CASE("cast: modes, overflow policies, hex input, stochastic words", "[cli]") {
  // 465 under satfinite is max; rtz keeps max without overflow-to-NaN.
  CHECK(run_exmy("cast e4m3fn --json --overflow satfinite 465").out.find("\"code\": 126") !=
        std::string::npos);
  CHECK(run_exmy("cast e4m3fn --json --round rtz 1000").out.find("\"code\": 126") !=
        std::string::npos);
  // Hex-float input and negative values after the format.
  CHECK(run_exmy("cast e5m2 --json 0x1.cp+15 -0x1p-16").out ==
        "[\n{\"input\": \"0x1.cp+15\", \"code\": 123, \"class\": \"normal\", \"value\": "
        "\"0x1.cp+15\", \"flags\": []},\n{\"input\": \"-0x1p-16\", \"code\": 129, \"class\": "
        "\"subnormal\", \"value\": \"-0x1p-16\", \"flags\": []}\n]\n");
  // sr:3 with a fixed word: 0.1 = 12.8 quanta of 2^-7, floor(0.8 * 8) = 6; 6 + 1 < 8 stays down
  // (0x1.8p-4), 6 + 2 = 8 carries up (0x1.ap-4).
  CHECK(run_exmy("cast e4m3fn --json --round sr:3 --rand 1 0.1").out.find("0x1.8p-4") !=
        std::string::npos);
  CHECK(run_exmy("cast e4m3fn --json --round sr:3 --rand 2 0.1").out.find("0x1.ap-4") !=
        std::string::npos);
  // Philox words: the same seed gives the same output, and the output is a valid bracket.
  const Run a = run_exmy("cast e4m3fn --round sr:8 --seed 7 0.1 0.1 0.1 0.1 0.1 0.1 0.1 0.1");
  CHECK(a.rc == 0);
  CHECK(a.out == run_exmy("cast e4m3fn --round sr:8 --seed 7 0.1 0.1 0.1 0.1 0.1 0.1 0.1 0.1").out);
  // Integers and codebooks.
  CHECK(run_exmy("cast int8 --json 2.5 -200").out ==
        "[\n{\"input\": \"2.5\", \"code\": 2, \"class\": \"normal\", \"value\": \"0x1p+1\", "
        "\"flags\": [\"inexact\"]},\n{\"input\": \"-200\", \"code\": 129, \"class\": \"normal\", "
        "\"value\": \"-0x1.fcp+6\", \"flags\": [\"inexact\",\"overflow\"]}\n]\n");
  CHECK(run_exmy("cast dynamic --json 1").out.find("\"code\": 255") != std::string::npos);
  // Masking: 1000 clamps to e4m3's IEEE-style max 240; a tiny value goes to min_normal 2^-6.
  CHECK(run_exmy("cast e4m3 --json --round mask 1000 1e-9").out.find("0x1.ep+7") !=
        std::string::npos);
  CHECK(run_exmy("cast e4m3 --json --round mask:inner=zero 1e-9").out.find("\"0x0p+0\"") !=
        std::string::npos);
}

// Regression: "-Inf" and "-NaN" (any case) were taken for unknown options instead of values.
TEST_CASE("cast: negative specials in any spelling are values", "[cli]") {
  const Run r = run_exmy("cast e5m2 --json -Inf -NaN -infinity -.5");
  REQUIRE(r.rc == 0);
  CHECK(r.out ==
        "[\n{\"input\": \"-Inf\", \"code\": 252, \"class\": \"inf\", \"value\": \"-inf\", "
        "\"flags\": []},\n{\"input\": \"-NaN\", \"code\": 254, \"class\": \"nan\", \"value\": "
        "\"-nan\", \"flags\": []},\n{\"input\": \"-infinity\", \"code\": 252, \"class\": \"inf\", "
        "\"value\": \"-inf\", \"flags\": []},\n{\"input\": \"-.5\", \"code\": 184, \"class\": "
        "\"normal\", \"value\": \"-0x1p-1\", \"flags\": []}\n]\n");
}

TEST_CASE("table e2m1fn --json in full", "[cli]") {
  const Run r = run_exmy("table e2m1fn --json");
  REQUIRE(r.rc == 0);
  CHECK(r.out ==
        "[\n"
        "{\"code\": 0, \"class\": \"zero\", \"value\": \"0x0p+0\"},\n"
        "{\"code\": 1, \"class\": \"subnormal\", \"value\": \"0x1p-1\"},\n"
        "{\"code\": 2, \"class\": \"normal\", \"value\": \"0x1p+0\"},\n"
        "{\"code\": 3, \"class\": \"normal\", \"value\": \"0x1.8p+0\"},\n"
        "{\"code\": 4, \"class\": \"normal\", \"value\": \"0x1p+1\"},\n"
        "{\"code\": 5, \"class\": \"normal\", \"value\": \"0x1.8p+1\"},\n"
        "{\"code\": 6, \"class\": \"normal\", \"value\": \"0x1p+2\"},\n"
        "{\"code\": 7, \"class\": \"normal\", \"value\": \"0x1.8p+2\"},\n"
        "{\"code\": 8, \"class\": \"zero\", \"value\": \"-0x0p+0\"},\n"
        "{\"code\": 9, \"class\": \"subnormal\", \"value\": \"-0x1p-1\"},\n"
        "{\"code\": 10, \"class\": \"normal\", \"value\": \"-0x1p+0\"},\n"
        "{\"code\": 11, \"class\": \"normal\", \"value\": \"-0x1.8p+0\"},\n"
        "{\"code\": 12, \"class\": \"normal\", \"value\": \"-0x1p+1\"},\n"
        "{\"code\": 13, \"class\": \"normal\", \"value\": \"-0x1.8p+1\"},\n"
        "{\"code\": 14, \"class\": \"normal\", \"value\": \"-0x1p+2\"},\n"
        "{\"code\": 15, \"class\": \"normal\", \"value\": \"-0x1.8p+2\"}\n"
        "]\n");
}

TEST_CASE("table: every kind of format, one row per code", "[cli]") {
  for (const char* f : {"e4m3fn", "e5m2", "int8", "uint8", "dynamic", "linear-unsigned", "fp16"}) {
    INFO(f);
    const Run r = run_exmy(std::string("table ") + f + " --json");
    REQUIRE(r.rc == 0);
    const std::size_t rows = static_cast<std::size_t>(std::count(r.out.begin(), r.out.end(), '\n'));
    CHECK(rows == (std::string(f) == "fp16" ? 65536u : 256u) + 2);
  }
  const Run t = run_exmy("table int8");
  CHECK(t.out.find("0x7f  normal     0x1.fcp+6") != std::string::npos);
  CHECK(t.out.find("127\n") != std::string::npos);
}

TEST_CASE("table and cast on a user codebook table:PATH", "[cli]") {
  std::filesystem::create_directories(kDir);
  const std::string path = (kDir / "cb.npy").string();
  std::vector<float> v(256);
  for (int i = 0; i < 256; ++i) v[static_cast<std::size_t>(i)] = (i - 128) / 128.0f;
  io::write_npy(path, io::make_npy(v));
  const Run t = run_exmy("table table:" + path + " --json");
  REQUIRE(t.rc == 0);
  CHECK(t.out.find("{\"code\": 0, \"class\": \"normal\", \"value\": \"-0x1p+0\"}") !=
        std::string::npos);
  CHECK(t.out.find("{\"code\": 128, \"class\": \"zero\", \"value\": \"0x0p+0\"}") !=
        std::string::npos);
  // 1/256 is the exact midpoint of codes 128 and 129: the even code wins, or the lower one.
  CHECK(run_exmy("cast table:" + path + " --json 0x1p-8").out.find("\"code\": 128") !=
        std::string::npos);
  CHECK(run_exmy("cast table:" + path + " --json 0x1.8p-7").out.find("\"code\": 130") !=
        std::string::npos);
  CHECK(run_exmy("cast table:" + path + " --tie lower --json 0x1.8p-7").out.find("\"code\": 129") !=
        std::string::npos);
  std::filesystem::remove_all(kDir);
}

TEST_CASE("every error path: exit code 2 and a one-line message naming the input", "[cli]") {
  struct Case {
    const char* args;
    const char* message;
  };
  const Case cases[] = {
      {"cast e9m9zz 1", "unknown format 'e9m9zz'"},
      {"table nosuch", "unknown format 'nosuch'"},
      {"cast e4m3fn --round rnx 1", "unknown rounding mode 'rnx'"},
      {"cast e4m3fn --round sr:0 1", "sr:R with R = 1..32"},
      {"cast e4m3fn --round mask:outer=wrap 1", "mask[:outer=clamp|keep]"},
      {"cast e4m3fn --overflow clip 1", "overflow policy 'clip'"},
      {"cast e4m3fn 1.2.3", "1.2.3"},
      {"cast e4m3fn 0x1.g", "0x1.g"},
      {"cast uint8 -- -1", "input '-1' is negative"},
      {"cast e8m0fnu -- -2", "input '-2' is negative"},
      {"cast e2m1fn nan", "input 'nan': format e2m1fn has no NaN"},
      {"cast int8 nan", "format int8 has no NaN"},
      {"cast e4m3fn --rand 3 1", "--rand needs --round sr:R"},
      {"cast e4m3fn --round sr:2 --rand 4 1", "2-bit word"},
      {"cast e4m3fn --seed x 1", "--seed 'x'"},
      {"cast e4m3fn", "no VALUE given"},
      {"cast", "missing FORMAT"},
      {"cast e4m3fn --bogus 1", "unknown option '--bogus'"},
      {"cast dynamic --round rto 0.5", "round-to-odd is not defined for codebook"},
      {"cast int8 --round mask 1", "--round mask needs a float format"},
      {"cast e4m3 --round mask:inner=keep 1e-9", "not representable in e4m3"},
      {"table fp32", "at most 16 bits"},
      {"cast e4m3fn --in /nonexistent/x.npy --out /tmp/y.npy", "/nonexistent/x.npy: cannot open"},
  };
  for (const Case& c : cases) {
    INFO(c.args);
    const Run r = run_exmy(c.args);
    CHECK(r.rc == 2);
    CHECK(r.out.empty());
    CHECK(r.err.find(c.message) != std::string::npos);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  }
}

TEST_CASE("cast --in/--out: codes, decoded values, bf16 bits, and truncated files", "[cli]") {
  std::filesystem::create_directories(kDir);
  const std::string in = (kDir / "x.npy").string(), out = (kDir / "y.npy").string();
  std::vector<float> x;
  for (std::uint32_t h = 0; h < 65536; h += 3) x.push_back(native::float_of(h << 16 | 0x1234u));
  io::write_npy(in, io::make_npy(x, {x.size()}));
  for (const char* f : {"e4m3fn", "e5m2", "e2m1fn", "fp16"}) {
    INFO(f);
    REQUIRE(run_exmy(std::string("cast ") + f + " --in " + in + " --out " + out).rc == 0);
    const io::NpyArray a = io::read_npy(out);
    CHECK(a.shape == std::vector<std::size_t>{x.size()});
    const FloatFormat ff = std::string(f) == "e4m3fn"   ? formats::e4m3fn
                           : std::string(f) == "e5m2"   ? formats::e5m2
                           : std::string(f) == "e2m1fn" ? formats::e2m1fn
                                                        : formats::fp16;
    if (ff.total_bits() <= 8) {
      const auto codes = io::as_u8(a, out);
      for (std::size_t i = 0; i < x.size(); ++i) {
        REQUIRE(codes[i] ==
                native::convert(formats::fp32, ff, Rounding{}, native::bits_of(x[i])).code);
      }
    } else {
      const auto codes = io::as_u16(a, out);
      for (std::size_t i = 0; i < x.size(); ++i) {
        REQUIRE(codes[i] ==
                native::convert(formats::fp32, ff, Rounding{}, native::bits_of(x[i])).code);
      }
    }
  }
  REQUIRE(run_exmy("cast int8 --decoded --in " + in + " --out " + out).rc == 0);
  const auto dec = io::as_f32(io::read_npy(out), out);
  for (std::size_t i = 0; i < x.size(); ++i) {
    const auto e =
        native::int_convert(formats::fp32, int_formats::int8, Rounding{}, native::bits_of(x[i]));
    REQUIRE(native::bits_of(dec[i]) ==
            native::bits_of(static_cast<float>(int_formats::int8.value_of(e.code))));
  }
  // bf16 bit patterns in, codes out.
  const std::string bin = (kDir / "b.npy").string();
  io::write_npy(bin, io::make_npy(std::vector<std::uint16_t>{0x3F80, 0x43E8, 0x7FC0}, {3}));
  REQUIRE(run_exmy("cast e4m3fn --in-format bf16 --in " + bin + " --out " + out).rc == 0);
  CHECK(io::as_u8(io::read_npy(out), out) == std::vector<std::uint8_t>{0x38, 0x7E, 0x7F});
  // A truncated input: exit 2, the file named, and no output written.
  const std::string bytes = slurp(in);
  const std::string trunc = (kDir / "t.npy").string();
  std::ofstream(trunc, std::ios::binary) << bytes.substr(0, bytes.size() - 3);
  const std::string never = (kDir / "never.npy").string();
  std::filesystem::remove(never);
  const Run r = run_exmy("cast e4m3fn --in " + trunc + " --out " + never);
  CHECK(r.rc == 2);
  CHECK(r.err.find("t.npy: truncated .npy data") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(never));
  // Wrong dtype.
  io::write_npy(bin, io::make_npy(std::vector<std::int32_t>{1}));
  const Run w = run_exmy("cast e4m3fn --in " + bin + " --out " + out);
  CHECK(w.rc == 2);
  CHECK(w.err.find("dtype '<i4'") != std::string::npos);
  // A 2-d Fortran-order array (io::require_c_order): refused by name, nothing written.
  io::NpyArray f = io::make_npy(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3});
  f.fortran_order = true;
  io::write_npy(bin, f);
  const Run fo = run_exmy("cast e4m3fn --in " + bin + " --out " + never);
  CHECK(fo.rc == 2);
  CHECK(fo.err.find("b.npy: Fortran-order arrays are not supported") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(never));
  std::filesystem::remove_all(kDir);
}
