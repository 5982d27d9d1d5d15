// `exmy cast --in/--out` (docs/SEMANTICS.md 11.4): the file equals, byte for byte, the per-element
// native engine's codes written by io::write_npy (the path the CLI took before the fast engine),
// for several formats, modes and input dtypes, under OMP_NUM_THREADS=1 and 2; the compat
// profiles against golden tables written from the libraries' source (section 12); --pack; the
// masking regression.
#include <sys/wait.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "sim/format/registry.hpp"
#include "sim/io/npy.hpp"
#include "sim/native/compat_amd_ocp.hpp"
#include "sim/native/convert.hpp"
#include "sim/native/int_format.hpp"
#include "sim/native/pack4.hpp"
#include "sim/native/philox.hpp"
#include "tests/support/cli_run.hpp"

using namespace exmy;

namespace {

const std::filesystem::path kDir =
    std::filesystem::temp_directory_path() / "exmy_test_cli_cast_arrays";

struct Run {
  int rc;
  std::string err;
};

using testing::slurp;

// `env exmy args`, stdout discarded, stderr kept.
Run run_exmy(const std::string& args, const std::string& env = "") {
  REQUIRE(std::getenv("EXMY_CLI") != nullptr);
  std::filesystem::create_directories(kDir);
  const auto err = kDir / "stderr.txt";
  const int rc = testing::run(args, err.string(), env);
  return {rc, slurp(err)};
}

// fp32 bit patterns: every class and boundary of the small formats (zeros, fp32 subnormals
// around 2^-127, ties of 1..7-bit mantissas, e4m3fn / e5m2 / fp16 / bf16 limits, inf, NaNs with
// payloads), then random patterns; an odd count so that no piece boundary lines up.
std::vector<std::uint32_t> test_bits(std::size_t random_count) {
  std::vector<std::uint32_t> v = {
      0x00000000u, 0x80000000u, 0x00000001u, 0x803FFFFFu, 0x00400000u, 0x00400001u, 0x00600000u,
      0x007FFFFFu, 0x00800000u, 0x7F800000u, 0xFF800000u, 0x7FC00000u, 0xFFC00001u, 0x7F800001u,
      0x7F7FFFFFu, 0xFF7FFFFFu, 0x7F000000u, 0x7F400000u, 0x43E00000u, 0x43E80000u, 0x43E80001u,
      0x47600000u, 0x47700000u, 0x477FE000u, 0x477FF000u, 0x3F880000u, 0x3F900000u, 0x3F980000u,
      0x3FC00000u, 0x3FBFFFFFu, 0x3B000000u, 0x3A800000u, 0x3A000000u, 0x37800000u, 0x33800000u,
      0x33000000u, 0x3F800000u, 0xBF800000u, 0x40C00000u, 0x40E00000u, 0x3E800000u, 0xC0D00000u};
  std::mt19937 rng(9);
  for (std::size_t i = 0; i < random_count; ++i) {
    const std::uint32_t r = rng();
    // Half the random patterns near 1 (where the small formats' grids are), half anywhere.
    v.push_back((i & 1) ? r : (r & 0x807FFFFFu) | ((112u + (rng() % 32u)) << 23));
  }
  return v;
}

std::uint32_t word_of(const Rounding& r, std::uint64_t seed, std::uint64_t i) {
  if (r.mode != RoundMode::sr) return 0;
  return native::sr_word(native::philox_word(seed, 0, i), r.sr_bits);
}

// The codes (or decoded values) of the per-element native engine, as the .npy bytes io::write_npy
// writes: SEMANTICS 11.4 item by item.
std::string expected_file(const Format& f, const FloatFormat& from,
                          const std::vector<std::uint64_t>& x, const Rounding& r,
                          std::uint64_t seed, bool decoded, const std::vector<std::size_t>& shape,
                          const std::filesystem::path& path) {
  std::vector<std::uint64_t> codes(x.size());
  std::vector<float> values(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (f.kind == FormatKind::floating) {
      codes[i] = native::convert(from, f.fp, r, x[i], word_of(r, seed, i)).code;
      values[i] = native::to_float(f.fp, codes[i]);
    } else {
      codes[i] = native::int_convert(from, f.in, r, x[i], word_of(r, seed, i)).code;
      values[i] = static_cast<float>(f.in.value_of(codes[i]));
    }
  }
  io::NpyArray a;
  if (decoded) {
    a = io::make_npy(values, shape);
  } else if (f.code_bits() <= 8) {
    a = io::make_npy(std::vector<std::uint8_t>(codes.begin(), codes.end()), shape);
  } else if (f.code_bits() <= 16) {
    a = io::make_npy(std::vector<std::uint16_t>(codes.begin(), codes.end()), shape);
  } else {
    a = io::make_npy(std::vector<std::uint32_t>(codes.begin(), codes.end()), shape);
  }
  io::write_npy(path.string(), a);
  return slurp(path);
}

}  // namespace

TEST_CASE("cast --in/--out equals the per-element native engine, for any thread count",
          "[cli][cast]") {
  const std::vector<std::uint32_t> bits = test_bits(70001);
  const std::size_t n = bits.size();
  const std::vector<std::size_t> shape = {n};
  // The same values as fp32, fp64 (exact), fp16 and bf16 (each pattern's top half) files.
  std::vector<float> f32(n);
  std::vector<double> f64(n);
  std::vector<std::uint16_t> h16(n);
  for (std::size_t i = 0; i < n; ++i) {
    f32[i] = native::float_of(bits[i]);
    f64[i] =
        native::double_of(native::convert(formats::fp32, formats::fp64, Rounding{}, bits[i]).code);
    h16[i] = static_cast<std::uint16_t>(bits[i] >> 16);
  }
  std::filesystem::create_directories(kDir);
  const auto p32 = kDir / "x32.npy", p64 = kDir / "x64.npy", p16 = kDir / "x16.npy",
             pbf = kDir / "xbf.npy", out = kDir / "y.npy", want = kDir / "want.npy";
  io::write_npy(p32.string(), io::make_npy(f32, shape));
  io::write_npy(p64.string(), io::make_npy(f64, shape));
  io::NpyArray half = io::make_npy(h16, shape);
  half.descr = io::kDescrF16;
  io::write_npy(p16.string(), half);
  io::write_npy(pbf.string(), io::make_npy(h16, shape));

  struct Input {
    std::filesystem::path path;
    const char* flag;
    FloatFormat from;
    std::vector<std::uint64_t> codes;
  };
  std::vector<Input> inputs = {{p32, "", formats::fp32, {}},
                               {p64, "", formats::fp64, {}},
                               {p16, "", formats::fp16, {}},
                               {pbf, " --in-format bf16", formats::bf16, {}}};
  for (std::size_t i = 0; i < n; ++i) {
    inputs[0].codes.push_back(bits[i]);
    inputs[1].codes.push_back(native::bits_of(f64[i]));
    inputs[2].codes.push_back(h16[i]);
    inputs[3].codes.push_back(h16[i]);
  }
  struct Case {
    const char* format;
    const char* options;
    Rounding r;
    std::uint64_t seed;
    bool decoded;
  };
  const Rounding rne{}, rtz{RoundMode::rtz, 0, Overflow::none},
      rna{RoundMode::rna, 0, Overflow::none}, rup{RoundMode::rup, 0, Overflow::none},
      rto{RoundMode::rto, 0, Overflow::none}, sr8{RoundMode::sr, 8, Overflow::none},
      sr3{RoundMode::sr, 3, Overflow::none}, sr20{RoundMode::sr, 20, Overflow::none},
      sat{RoundMode::rne, 0, Overflow::satfinite};
  const Case cases[] = {
      {"e4m3fn", "", rne, 0, false},
      {"e4m3fn", " --round sr:8 --seed 5", sr8, 5, false},
      {"e4m3fn", " --round rtz", rtz, 0, true},
      {"e5m2", " --round sr:3 --seed 77", sr3, 77, false},
      {"e5m2", " --overflow satfinite", sat, 0, false},
      {"e2m1fn", " --round rna", rna, 0, false},
      {"e2m1fn", " --round sr:8 --seed 2", sr8, 2, true},
      {"e8m0fnu", "", rne, 0, false},
      {"e8m0fnu", " --round sr:8 --seed 3", sr8, 3, false},
      {"e4m3fnuz", " --round rup", rup, 0, false},
      {"e3m4", " --round rto", rto, 0, false},
      {"fp16", "", rne, 0, false},
      {"fp16", " --round sr:8 --seed 9", sr8, 9, false},
      {"fp16", " --round sr:20 --seed 9", sr20, 9, true},
      {"bf16", " --round rtz", rtz, 0, false},
      {"e6m5", " --round sr:8 --seed 1", sr8, 1, false},
      {"int8", " --round sr:8 --seed 4", sr8, 4, false},
      {"uint4", "", rne, 0, true},
  };
  for (const Case& c : cases) {
    const Format f = parse_format(c.format);
    for (const Input& in : inputs) {
      const std::string expect =
          expected_file(f, in.from, in.codes, c.r, c.seed, c.decoded, shape, want);
      for (const char* threads : {"OMP_NUM_THREADS=1", "OMP_NUM_THREADS=2"}) {
        INFO(c.format << c.options << " from " << in.path.filename().string() << " " << threads);
        std::filesystem::remove(out);
        const Run r =
            run_exmy(std::string("cast ") + c.format + c.options + (c.decoded ? " --decoded" : "") +
                         in.flag + " --in " + in.path.string() + " --out " + out.string(),
                     threads);
        REQUIRE(r.rc == 0);
        CHECK(slurp(out) == expect);
      }
    }
  }
  std::filesystem::remove_all(kDir);
}

// Golden tables of the compat profiles: expected codes written from the rules of the libraries'
// source (PyTorch c10::detail::fp8e8m0fnu_from_fp32_value; ml_dtypes 0.6 ConvertImpl<float,
// float8_e8m0fnu>), not by running exmy. torch ignores the sign, sends exponent field 255 to 0xFF
// and otherwise adds 1 to the exponent field when guard && (round || sticky || field > 0);
// ml_dtypes sends zeros, negatives, inf and NaN to 0xFF and rounds positives as torch does.
TEST_CASE("cast e8m0fnu --compat torch|ml_dtypes: golden codes", "[cli][cast][compat]") {
  struct Row {
    std::uint32_t bits;
    std::uint8_t torch, ml_dtypes;
  };
  const Row rows[] = {
      {0x00000000u, 0x00, 0xFF},  // +0
      {0x80000000u, 0x00, 0xFF},  // -0
      {0x3F800000u, 0x7F, 0x7F},  // 1
      {0xBF800000u, 0x7F, 0xFF},  // -1
      {0x40000000u, 0x80, 0x80},  // 2
      {0x3FC00000u, 0x80, 0x80},  // 1.5: guard set, lsb (implicit 1) set -> up
      {0x3FBFFFFFu, 0x7F, 0x7F},  // just below 1.5
      {0x3FC00001u, 0x80, 0x80},  // just above 1.5
      {0xC0400000u, 0x81, 0xFF},  // -3 = -1.5 * 2
      {0x3E800000u, 0x7D, 0x7D},  // 0.25
      {0x00400000u, 0x00, 0x00},  // 2^-127 exactly: subnormal, guard alone does not round up
      {0x00400001u, 0x01, 0x01},  // just above 2^-127
      {0x00500000u, 0x01, 0x01},  // 1.25 * 2^-127
      {0x005FFFFFu, 0x01, 0x01},  // just below 1.5 * 2^-127
      {0x00600000u, 0x01, 0x01},  // 1.5 * 2^-127
      {0x003FFFFFu, 0x00, 0x00},  // just below 2^-127
      {0x00000001u, 0x00, 0x00},  // 2^-149
      {0x007FFFFFu, 0x01, 0x01},  // largest fp32 subnormal
      {0x80400001u, 0x01, 0xFF},  // negative subnormal above 2^-127 in magnitude
      {0x00800000u, 0x01, 0x01},  // 2^-126
      {0x00C00000u, 0x02, 0x02},  // 1.5 * 2^-126
      {0x7F000000u, 0xFE, 0xFE},  // 2^127 (the largest e8m0fnu value)
      {0x7F3FFFFFu, 0xFE, 0xFE},  // just below 1.5 * 2^127
      {0x7F400000u, 0xFF, 0xFF},  // 1.5 * 2^127 rounds past the largest: 0xFF
      {0x7F7FFFFFu, 0xFF, 0xFF},  // fp32 max
      {0x7F800000u, 0xFF, 0xFF},  // inf
      {0xFF800000u, 0xFF, 0xFF},  // -inf
      {0x7FC00000u, 0xFF, 0xFF},  // NaN
      {0xFFC00001u, 0xFF, 0xFF},  // -NaN with payload
  };
  std::filesystem::create_directories(kDir);
  const auto in = kDir / "c.npy", out = kDir / "c_out.npy";
  std::vector<float> x;
  for (const Row& r : rows) x.push_back(native::float_of(r.bits));
  io::write_npy(in.string(), io::make_npy(x));
  for (const bool torch : {true, false}) {
    const std::string name = torch ? "torch" : "ml_dtypes";
    REQUIRE(run_exmy("cast e8m0fnu --compat " + name + " --in " + in.string() + " --out " +
                     out.string())
                .rc == 0);
    const auto codes = io::as_u8(io::read_npy(out.string()), out.string());
    REQUIRE(codes.size() == std::size(rows));
    for (std::size_t i = 0; i < codes.size(); ++i) {
      INFO(name << " input 0x" << std::hex << rows[i].bits);
      CHECK(static_cast<int>(codes[i]) == (torch ? rows[i].torch : rows[i].ml_dtypes));
    }
  }
  // bf16 inputs widen exactly: 0x3FC0 is 1.5, 0x0040 is 2^-127 (fp32 0x00400000).
  io::write_npy(in.string(), io::make_npy(std::vector<std::uint16_t>{0x3FC0, 0x0040, 0x8000}));
  REQUIRE(run_exmy("cast e8m0fnu --compat torch --in-format bf16 --in " + in.string() + " --out " +
                   out.string())
              .rc == 0);
  CHECK(io::as_u8(io::read_npy(out.string()), out.string()) ==
        std::vector<std::uint8_t>{0x80, 0x00, 0x00});
  std::filesystem::remove_all(kDir);
}

TEST_CASE("cast --compat: scalars, and the errors", "[cli][cast][compat]") {
  const char* cli = std::getenv("EXMY_CLI");
  REQUIRE(cli != nullptr);
  std::filesystem::create_directories(kDir);
  const auto out = kDir / "stdout.txt";
  const auto json = [&](const std::string& args) {
    const std::string cmd = std::string("'") + cli + "' " + args + " >'" + out.string() + "'";
    REQUIRE(std::system(cmd.c_str()) == 0);
    return slurp(out);
  };
  // torch: 0 -> 0x00 (2^-127, inexact), -2 -> 0x80 (2, the sign ignored); ml_dtypes: 0 -> NaN.
  CHECK(json("cast e8m0fnu --compat torch --json 0 -2 0x1.8p-127") ==
        "[\n{\"input\": \"0\", \"code\": 0, \"class\": \"normal\", \"value\": \"0x1p-127\", "
        "\"flags\": [\"inexact\"]},\n{\"input\": \"-2\", \"code\": 128, \"class\": \"normal\", "
        "\"value\": \"0x1p+1\", \"flags\": [\"inexact\"]},\n{\"input\": \"0x1.8p-127\", \"code\": "
        "1, \"class\": \"normal\", \"value\": \"0x1p-126\", \"flags\": [\"inexact\"]}\n]\n");
  CHECK(json("cast e8m0fnu --compat ml_dtypes --json 0").find("\"code\": 255") !=
        std::string::npos);
  struct Case {
    const char* args;
    const char* message;
  };
  const Case cases[] = {
      {"cast e8m0fnu --compat numpy 1",
       "--compat 'numpy': unknown profile (known: torch, ml_dtypes, amd-gfx950, torch-cpu, "
       "torch-cuda, torch-cuda-foreach, torch-cuda-fused, triton, bnb-cuda, torchao-cpu, "
       "torchao-cuda)"},
      {"cast e4m3fn --compat torch 1", "--compat torch does not cover cast to e4m3fn"},
      {"cast int8 --compat ml_dtypes 1", "--compat ml_dtypes does not cover cast to int8"},
      {"cast e8m0fnu --compat torch --round rtz 1", "--compat torch fixes the rounding"},
      {"cast e2m1fn --pack 1", "--pack needs --in and --out"},
  };
  for (const Case& c : cases) {
    INFO(c.args);
    const Run r = run_exmy(c.args);
    CHECK(r.rc == 2);
    CHECK(r.err.find(c.message) != std::string::npos);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  }
  std::filesystem::remove_all(kDir);
}

// SEMANTICS 7.10: element 2i in the low nibble of byte i, shape (..., last / 2).
TEST_CASE("cast --pack: two 4-bit codes per byte along the last dimension", "[cli][cast][pack]") {
  std::filesystem::create_directories(kDir);
  const auto in = kDir / "p.npy", out = kDir / "p_out.npy", never = kDir / "never.npy";
  const std::vector<float> x = {0.0f,  0.5f,  1.0f, 1.5f,  2.0f,  3.0f, 4.0f,  6.0f,
                                -0.5f, -6.0f, 7.0f, 0.25f, -0.0f, 2.5f, 100.f, -1.0f};
  io::write_npy(in.string(), io::make_npy(x, {2, 2, 4}));
  for (const char* name : {"e2m1fn", "int4", "uint4", "e2m1", "e3m0"}) {
    INFO(name);
    const Format f = parse_format(name);
    REQUIRE(run_exmy(std::string("cast ") + name + " --pack --in " + in.string() + " --out " +
                     out.string())
                .rc == 0);
    const io::NpyArray a = io::read_npy(out.string());
    CHECK(a.descr == "|u1");
    CHECK(a.shape == std::vector<std::size_t>{2, 2, 2});
    const auto packed = io::as_u8(a, out.string());
    for (std::size_t i = 0; i < x.size(); ++i) {
      const std::uint64_t code =
          f.kind == FormatKind::floating
              ? native::convert(formats::fp32, f.fp, Rounding{}, native::bits_of(x[i])).code
              : native::int_convert(formats::fp32, f.in, Rounding{}, native::bits_of(x[i])).code;
      const std::uint8_t nibble = (i % 2 == 0) ? (packed[i / 2] & 0x0F) : (packed[i / 2] >> 4);
      CHECK(nibble == code);
    }
  }
  // An odd last dimension, a format wider than 4 bits, --decoded: exit 2, nothing written.
  io::write_npy(kDir.string() + "/odd.npy", io::make_npy(std::vector<float>(6, 1.0f), {2, 3}));
  const struct {
    std::string args;
    const char* message;
  } bad[] = {
      {"cast e2m1fn --pack --in " + kDir.string() + "/odd.npy", "odd last dimension 3"},
      {"cast e4m3fn --pack --in " + in.string(), "format e4m3fn has 8-bit codes"},
      {"cast e2m1fn --pack --decoded --in " + in.string(), "--pack and --decoded"},
  };
  for (const auto& b : bad) {
    INFO(b.args);
    const Run r = run_exmy(b.args + " --out " + never.string());
    CHECK(r.rc == 2);
    CHECK(r.err.find(b.message) != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(never));
  }
  std::filesystem::remove_all(kDir);
}

// Regression (exmy issue 9): masking truncated before the inner rule, so 2^-140 (an fp32
// subnormal whose top two field bits are zero) gave 0 instead of e5m2's min_normal 2^-14.
TEST_CASE("cast e5m2 --round mask: 0x1p-140 and 0x1p-127 both go to 2^-14", "[cli][mask]") {
  const char* cli = std::getenv("EXMY_CLI");
  REQUIRE(cli != nullptr);
  std::filesystem::create_directories(kDir);
  const auto out = kDir / "m.txt";
  const std::string cmd = std::string("'") + cli +
                          "' cast e5m2 --json --round mask 0x1p-140 0x1p-127 >'" + out.string() +
                          "'";
  REQUIRE(std::system(cmd.c_str()) == 0);
  const std::string s = slurp(out);
  CHECK(std::count(s.begin(), s.end(), '\n') == 4);
  std::size_t at = 0, hits = 0;
  while ((at = s.find("\"value\": \"0x1p-14\"", at)) != std::string::npos) {
    ++hits;
    ++at;
  }
  CHECK(hits == 2);
  std::filesystem::remove_all(kDir);
}

// SEMANTICS 12.1: `--compat amd-gfx950` arrays are native::amd_ocp_encode / amd_ocp_decode per
// element (the group's Philox word under --stochastic), and its own errors are one line, exit 2.
TEST_CASE("cast --compat amd-gfx950: arrays, decode and errors", "[cli][cast][compat]") {
  std::filesystem::create_directories(kDir);
  const auto in = kDir / "amd.npy", out = kDir / "amd_out.npy";
  const std::vector<std::uint32_t> bits = test_bits(1001);
  std::vector<float> x;
  for (std::uint32_t b : bits) x.push_back(native::float_of(b));
  io::write_npy(in.string(), io::make_npy(x));
  REQUIRE(run_exmy("cast e2m1fn --compat amd-gfx950 --scale-exp 2 --stochastic --seed 5 --in " +
                   in.string() + " --out " + out.string())
              .rc == 0);
  const auto codes = io::as_u8(io::read_npy(out.string()), out.string());
  REQUIRE(codes.size() == bits.size());
  for (std::size_t i = 0; i < bits.size(); ++i) {
    const std::uint32_t seed = native::philox_word(5, 0, i / 2);  // fp4: one seed per pair
    INFO("element " << i);
    CHECK(codes[i] == native::amd_ocp_encode(native::AmdOcp::e2m1, native::AmdWide::fp32, bits[i],
                                             2, true, seed));
  }
  // Decode every e4m3 code to bf16 at scale -3.
  std::vector<std::uint8_t> all(256);
  for (int c = 0; c < 256; ++c) all[c] = static_cast<std::uint8_t>(c);
  io::write_npy(in.string(), io::make_npy(all));
  REQUIRE(run_exmy("cast e4m3fn --compat amd-gfx950 --decode-to bf16 --scale-exp -3 --in " +
                   in.string() + " --out " + out.string())
              .rc == 0);
  const io::NpyArray d = io::read_npy(out.string());
  REQUIRE(d.descr == "<u2");
  for (int c = 0; c < 256; ++c) {
    std::uint16_t v;
    std::memcpy(&v, d.data.data() + 2 * c, 2);
    INFO("code " << c);
    CHECK(v == native::amd_ocp_decode(native::AmdOcp::e4m3, native::AmdWide::bf16, c, -3));
  }
  struct Case {
    const char* args;
    const char* message;
  };
  const Case cases[] = {
      {"cast e8m0fnu --compat amd-gfx950 1", "--compat amd-gfx950 does not cover cast to e8m0fnu"},
      {"cast e4m3fn --compat amd-gfx950 --scale-exp 200 1", "--scale-exp '200'"},
      {"cast e4m3fn --compat amd-gfx950 --sr-seed 1 --stochastic 1", "exclude each other"},
      {"cast e4m3fn --compat amd-gfx950 --decode-to fp8 1", "--decode-to 'fp8'"},
      {"cast e4m3fn --compat amd-gfx950 --round rtz 1", "unknown option '--round'"},
  };
  for (const Case& c : cases) {
    INFO(c.args);
    const Run r = run_exmy(c.args);
    CHECK(r.rc == 2);
    CHECK(r.err.find(c.message) != std::string::npos);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  }
  std::filesystem::remove_all(kDir);
}
